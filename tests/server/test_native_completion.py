# SPDX-License-Identifier: Apache-2.0
"""llama-server's own /completion: its request fields (n_predict, n_probs, return_tokens,
ignore_eos, grammar) and response shapes, whole and streamed, checked against the OpenAI
endpoint on the same request (the same generation under the same seed) and /detokenize."""
import json

import pytest

from conftest import ROOT, read_events

PROMPT = "And God said"
EOS = json.loads((ROOT / "models" / "kjv-llama-6m" / "config.json").read_text())["eos_token_id"]


def native(server, **fields):
    status, _, reply = server.post("/completion", {"prompt": PROMPT, **fields})
    assert status == 200, reply
    return reply


def test_the_reply_is_the_openai_endpoints_generation_in_llama_servers_shape(serve):
    server = serve()
    reply = native(server, n_predict=12, temperature=1, seed=9, return_tokens=True)
    status, _, openai = server.post("/v1/completions", {"prompt": PROMPT, "max_tokens": 12, "temperature": 1,
                                                        "seed": 9})
    assert status == 200, openai
    assert reply["content"] == openai["choices"][0]["text"]
    assert reply["stop"] is True and reply["stop_type"] == "limit" and reply["stopping_word"] == ""
    assert reply["tokens_predicted"] == 12 == len(reply["tokens"])
    assert reply["tokens_evaluated"] == openai["usage"]["prompt_tokens"]
    assert reply["generation_settings"]["seed"] == 9 and reply["generation_settings"]["n_predict"] == 12
    assert reply["timings"]["predicted_n"] == 12
    status, _, text = server.post("/detokenize", {"tokens": reply["tokens"]})
    assert status == 200 and text["content"].strip() == reply["content"].strip(), (text, reply)
    # Without return_tokens the list is empty, as llama-server's.
    assert native(server, n_predict=2)["tokens"] == []


def test_stop_types(serve):
    server = serve()
    free = native(server, n_predict=16, temperature=0)["content"]
    word = free.split()[2]
    stopped = native(server, n_predict=16, temperature=0, stop=[word])
    assert stopped["stop_type"] == "word" and stopped["content"] == free[:free.index(word)], stopped
    # llama-server names the stop string that ended the text; of two, the one that came first.
    assert stopped["stopping_word"] == word, stopped
    later = free.split()[4]
    assert native(server, n_predict=16, temperature=0, stop=[later, word])["stopping_word"] == word
    assert native(server, n_predict=16, temperature=0)["stopping_word"] == ""
    assert native(server, n_predict=16, grammar='root ::= " yea"')["stop_type"] == "eos"
    # The end-of-sequence token made certain: the reply ends there, unless ignore_eos.
    certain = {"logit_bias": [[EOS, 100]], "n_predict": 4, "temperature": 0}
    ended = native(server, **certain)
    assert ended["stop_type"] == "eos" and ended["tokens_predicted"] == 0, ended
    ignored = native(server, ignore_eos=True, **certain)
    assert ignored["stop_type"] == "limit" and ignored["tokens_predicted"] == 4, ignored


def test_n_probs_are_the_openai_endpoints_logprobs(serve):
    server = serve()
    reply = native(server, n_predict=6, temperature=0, n_probs=3)
    status, _, openai = server.post("/v1/completions", {"prompt": PROMPT, "max_tokens": 6, "temperature": 0,
                                                        "logprobs": 3})
    assert status == 200, openai
    expected = openai["choices"][0]["logprobs"]
    probabilities = reply["completion_probabilities"]
    assert len(probabilities) == 6
    # The second request reuses the first's cache: a position computed by a decode step rather
    # than the prefill differs in the last float bits.
    for entry, token, logprob, top in zip(probabilities, expected["tokens"], expected["token_logprobs"],
                                          expected["top_logprobs"]):
        assert entry["token"] == token and entry["logprob"] == pytest.approx(logprob, abs=1e-4)
        assert bytes(entry["bytes"]).decode("utf-8", "replace") == token or len(token) == 0
        assert {t["token"]: t["logprob"] for t in entry["top_logprobs"]} == pytest.approx(top, abs=1e-4)
        assert entry["top_logprobs"][0]["id"] == entry["id"], "greedy: the chosen token is the most likely"


def test_a_stream_is_llama_servers_chunks_ending_with_the_totals(serve):
    server = serve()
    whole = native(server, n_predict=10, temperature=1, seed=3, n_probs=1)
    connection = server.connection()
    connection.request("POST", "/completion", body=json.dumps({
        "prompt": PROMPT, "n_predict": 10, "temperature": 1, "seed": 3, "n_probs": 1, "stream": True}),
        headers={"Content-Type": "application/json"})
    events = read_events(connection.getresponse())
    connection.close()
    assert "[DONE]" not in events, "llama-server's /completion stream has no [DONE] marker"
    assert all(e["stop"] is False for e in events[:-1]) and events[-1]["stop"] is True
    assert "".join(e["content"] for e in events) == whole["content"]
    streamed = [p for e in events for p in e.get("completion_probabilities", [])]
    assert [p["id"] for p in streamed] == [p["id"] for p in whole["completion_probabilities"]]
    assert events[-1]["tokens_predicted"] == 10 and events[-1]["stop_type"] == "limit"
    # The slot that generated it (one slot: 0), in every chunk, as llama-server's.
    assert {e["id_slot"] for e in events} == {0} and whole["id_slot"] == 0
    # Each chunk carries the ids sampled since the one before and the running counts.
    ids = native(server, n_predict=10, temperature=1, seed=3, return_tokens=True)["tokens"]
    assert [t for e in events[:-1] for t in e["tokens"]] == ids
    predicted = [e["tokens_predicted"] for e in events[:-1]]
    assert predicted == sorted(predicted) and predicted[-1] == 10
    assert all(e["tokens_predicted"] >= len(e["tokens"]) for e in events[:-1])
    assert {e["tokens_evaluated"] for e in events} == {whole["tokens_evaluated"]}


def test_a_streams_ids_add_up_to_the_generated_tokens_when_a_stop_string_ends_it(serve):
    server = serve()
    text = native(server, n_predict=24, temperature=0)["content"]
    stop = text[len(text) // 2:len(text) // 2 + 3]
    whole = native(server, n_predict=24, temperature=0, stop=[stop], return_tokens=True)
    assert whole["stop_type"] == "word", whole
    connection = server.connection()
    connection.request("POST", "/completion", body=json.dumps({
        "prompt": PROMPT, "n_predict": 24, "temperature": 0, "stop": [stop], "stream": True}),
        headers={"Content-Type": "application/json"})
    events = read_events(connection.getresponse())
    connection.close()
    # The stop string's tokens show no text: their ids come with the last event.
    assert [t for e in events for t in e["tokens"]] == whole["tokens"]
    assert "".join(e["content"] for e in events) == whole["content"]


@pytest.mark.parametrize("fields, param, fragment", [
    ({"n": 2}, "n", "an OpenAI field"),
    ({"logprobs": 2}, "logprobs", "takes n_probs"),
    ({"id_slot": 1}, "id_slot", "give -1"),
    ({"echo": True}, "echo", "unrecognized request argument"),
    ({"n_probs": 50}, "n_probs", "[0, 20]"),
])
def test_openai_fields_and_bad_values_are_refused_by_name(serve, fields, param, fragment):
    status, _, reply = serve().post("/completion", {"prompt": PROMPT, **fields})
    assert status == 400, reply
    assert reply["error"]["param"] == param and fragment in reply["error"]["message"], reply
