# SPDX-License-Identifier: Apache-2.0
"""Log-probabilities over HTTP against an independent computation: the served logprobs of greedy
tokens equal log_softmax of the logits `staticlm logits` writes for the same token ids (numpy),
streamed and not, in both APIs' shapes; the fields' refusals name them."""
import json
import subprocess

import numpy
import pytest

from conftest import CLI, ROOT, read_events

GREEDY = {"temperature": 0, "frequency_penalty": 0, "presence_penalty": 0, "repeat_penalty": 1}


@pytest.fixture(scope="module")
def f32_model(tmp_path_factory):
    """An f32 program: its prefill and decode logits agree to float rounding."""
    path = tmp_path_factory.mktemp("f32") / "kjv_f32.slm"
    subprocess.run([CLI, "export", str(ROOT / "models" / "kjv-llama-6m"), "-o", str(path), "--dtype", "f32",
                    "--max-cache-len", "256", "--prefill-len", "16"], check=True, capture_output=True)
    return path


def reference_logprobs(program, tokens):
    """log_softmax of each fed token's logits (rows: the distribution of the next token)."""
    done = subprocess.run([CLI, "logits", str(program), "--mode", "decode", "--tokens", *map(str, tokens)],
                          check=True, capture_output=True)
    logits = numpy.frombuffer(done.stdout, dtype=numpy.float32).astype(numpy.float64).reshape(len(tokens), -1)
    shifted = logits - logits.max(axis=1, keepdims=True)
    return shifted - numpy.log(numpy.exp(shifted).sum(axis=1, keepdims=True))


def test_completion_logprobs_equal_log_softmax_of_the_logits(serve, f32_model):
    server = serve(program=f32_model)
    status, _, tokenized = server.post("/tokenize", {"content": "In the beginning", "add_special": True})
    assert status == 200, tokenized
    prompt = tokenized["tokens"]
    status, _, reply = server.post("/v1/completions", {"prompt": prompt, "max_tokens": 6, "logprobs": 5, **GREEDY})
    assert status == 200, reply
    logprobs = reply["choices"][0]["logprobs"]
    assert len(logprobs["tokens"]) == reply["usage"]["completion_tokens"] == 6
    assert "".join(logprobs["tokens"]) == reply["choices"][0]["text"]
    # The generated ids: the likeliest at each step (greedy), read back from the reference rows.
    generated = []
    for step in range(6):
        rows = reference_logprobs(f32_model, prompt + generated)
        best = int(rows[-1].argmax())
        assert abs(logprobs["token_logprobs"][step] - rows[-1][best]) < 1e-4, (step, logprobs, rows[-1][best])
        top = sorted(logprobs["top_logprobs"][step].values(), reverse=True)
        assert numpy.allclose(top, numpy.sort(rows[-1])[::-1][:len(top)], atol=1e-4), (step, top)
        generated.append(best)
    offsets = [0]
    for token in logprobs["tokens"][:-1]:
        offsets.append(offsets[-1] + len(token))
    assert logprobs["text_offset"] == offsets


def test_chat_logprobs_streamed_equal_the_whole_replys(serve, f32_model):
    server = serve(program=f32_model)
    body = {"messages": [{"role": "user", "content": "Who made the heaven?"}], "max_tokens": 10, "logprobs": True,
            "top_logprobs": 4, **GREEDY}
    status, _, whole = server.post("/v1/chat/completions", body)
    assert status == 200, whole
    content = whole["choices"][0]["logprobs"]["content"]
    assert len(content) == whole["usage"]["completion_tokens"]
    assert "".join(entry["token"] for entry in content) == whole["choices"][0]["message"]["content"]
    for entry in content:
        assert bytes(entry["bytes"]).decode("utf-8", "replace") == entry["token"]
        assert len(entry["top_logprobs"]) == 4 and entry["top_logprobs"][0]["logprob"] == entry["logprob"]
        assert sum(numpy.exp(top["logprob"]) for top in entry["top_logprobs"]) <= 1 + 1e-6
    connection = server.connection()
    connection.request("POST", "/v1/chat/completions", json.dumps({**body, "stream": True}),
                       {"Content-Type": "application/json"})
    events = read_events(connection.getresponse())
    streamed = [entry for event in events[:-1] for entry in ((event["choices"][0].get("logprobs") or {})
                                                             .get("content") or [])]
    # The second request reuses the cached prompt, prefilling only its last token: equal to rounding.
    assert [entry["token"] for entry in streamed] == [entry["token"] for entry in content]
    for got, whole_entry in zip(streamed, content):
        assert abs(got["logprob"] - whole_entry["logprob"]) < 1e-4
        assert [top["token"] for top in got["top_logprobs"]] == [top["token"] for top in whole_entry["top_logprobs"]]
    # Without the fields, no logprobs.
    status, _, plain = server.post("/v1/chat/completions", {**body, "logprobs": False, "top_logprobs": None})
    assert status == 200 and plain["choices"][0]["logprobs"] is None


@pytest.mark.parametrize("endpoint,fields,param,fragment", [
    ("/v1/chat/completions", {"top_logprobs": 2}, "top_logprobs", "needs \"logprobs\": true"),
    ("/v1/chat/completions", {"logprobs": True, "top_logprobs": 21}, "top_logprobs", "[0, 20]"),
    ("/v1/chat/completions", {"logprobs": 3}, "logprobs", "a boolean"),
    ("/v1/completions", {"logprobs": True}, "logprobs", "an integer"),
    ("/v1/completions", {"logprobs": 21}, "logprobs", "[0, 20]"),
    ("/v1/completions", {"logprobs": 1, "top_logprobs": 1}, "top_logprobs", "is a chat field"),
])
def test_logprobs_fields_are_checked_by_name(serve, model, endpoint, fields, param, fragment):
    server = serve()
    prompt = {"messages": [{"role": "user", "content": "hi"}]} if "chat" in endpoint else {"prompt": "hi"}
    status, _, reply = server.post(endpoint, {**prompt, "max_tokens": 2, **fields})
    assert status == 400, reply
    assert reply["error"]["param"] == param and fragment in reply["error"]["message"], reply
