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


def test_an_evaluation_harness_scores_a_continuation_with_echo(serve, f32_model):
    """lm-evaluation-harness's loglikelihood request: context + continuation as token ids, echo,
    logprobs, max_tokens 0; the continuation's summed logprobs equal the reference's."""
    server = serve(program=f32_model)
    status, _, context = server.post("/tokenize", {"content": "In the beginning God", "add_special": True})
    status, _, continuation = server.post("/tokenize", {"content": " created the heaven", "add_special": False})
    tokens = context["tokens"] + continuation["tokens"]
    status, _, reply = server.post("/v1/completions", {"prompt": tokens, "echo": True, "logprobs": 1,
                                                       "max_tokens": 0, "temperature": 0})
    assert status == 200, reply
    logprobs = reply["choices"][0]["logprobs"]
    assert len(logprobs["tokens"]) == len(tokens) and reply["usage"]["completion_tokens"] == 0
    assert logprobs["token_logprobs"][0] is None and logprobs["top_logprobs"][0] is None
    rows = reference_logprobs(f32_model, tokens)  # row i predicts token i + 1
    expected = [rows[i - 1][tokens[i]] for i in range(1, len(tokens))]
    assert numpy.allclose(logprobs["token_logprobs"][1:], expected, atol=1e-4)
    ctx = len(context["tokens"])
    score = sum(logprobs["token_logprobs"][ctx:])
    assert abs(score - sum(expected[ctx - 1:])) < 1e-3
    # lm-eval's is_greedy: every continuation token is its position's likeliest.
    greedy = all(max(top.values()) == lp for top, lp in zip(logprobs["top_logprobs"][ctx:],
                                                             logprobs["token_logprobs"][ctx:]))
    assert greedy == all(int(rows[i - 1].argmax()) == tokens[i] for i in range(ctx, len(tokens)))
    assert reply["choices"][0]["text"].startswith("In the beginning God"), reply  # the prompt, special tokens left out


def test_echo_without_logprobs_starts_the_text_with_the_prompt(serve, model):
    server = serve()
    body = {"prompt": "And God said", "echo": True, "max_tokens": 4, "temperature": 0}
    status, _, reply = server.post("/v1/completions", body)
    assert status == 200 and reply["choices"][0]["text"].startswith("And God said"), reply
    connection = server.connection()
    connection.request("POST", "/v1/completions", json.dumps({**body, "stream": True}),
                       {"Content-Type": "application/json"})
    events = read_events(connection.getresponse())
    assert "".join(event["choices"][0]["text"] for event in events[:-1]) == reply["choices"][0]["text"]


def test_echo_with_logprobs_needs_every_positions_logits(serve, tmp_path):
    last = tmp_path / "last.slm"
    subprocess.run([CLI, "export", str(ROOT / "models" / "kjv-llama-6m"), "-o", str(last), "--max-cache-len", "128",
                    "--prefill-len", "16", "--logits", "last"], check=True, capture_output=True)
    server = serve(program=last)
    status, _, reply = server.post("/v1/completions", {"prompt": "And", "echo": True, "logprobs": 0, "max_tokens": 0})
    assert status == 400 and reply["error"]["param"] == "echo" and "--logits all" in reply["error"]["message"], reply
    status, _, reply = server.post("/v1/completions", {"prompt": "And", "echo": True, "logprobs": 0, "stream": True})
    assert status == 400 and "not streamed" in reply["error"]["message"], reply
