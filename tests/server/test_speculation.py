# SPDX-License-Identifier: Apache-2.0
"""`serve --lookup` and `serve --draft`: replies are those of a server without speculation (a
program on the portable kernels, whose chunk rows and decode steps compute a token's logits in one
order), whole and streamed, and two requests at once on two slots, each with its own draft
session; a draft with another tokenizer stops serve with one line naming it."""
import json
import subprocess
import threading

import pytest

from conftest import CLI, ROOT, read_events

PROMPT = ("And God said, Let there be light: and there was light. And God saw the light, that it was good: "
          "and God divided the light from the darkness. And God said, Let there be")
REQUEST = {"prompt": PROMPT, "max_tokens": 40, "temperature": 0, "repeat_penalty": 1.0}


def text_of(server, stream=False, kept=None):
    if not stream:
        status, _, reply = server.post("/v1/completions", REQUEST)
        assert status == 200, reply
        timings = reply["timings"]
        if kept is not None:  # llama-server's count of the guessed tokens, and of those kept
            assert ("draft_n" in timings) == kept, timings
            assert not kept or 0 < timings["draft_n_accepted"] <= timings["draft_n"], timings
        return reply["choices"][0]["text"]
    connection = server.connection()
    connection.request("POST", "/v1/completions", body=json.dumps({**REQUEST, "stream": True}),
                       headers={"Content-Type": "application/json"})
    events = read_events(connection.getresponse())
    connection.close()
    return "".join(event["choices"][0]["text"] for event in events[:-1] if event.get("choices"))


@pytest.fixture(scope="module")
def portable_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("portable") / "kjv_portable.slm"
    subprocess.run([CLI, "export", str(ROOT / "models" / "kjv-llama-6m"), "-o", str(path), "--backend", "none",
                    "--max-cache-len", "256", "--prefill-len", "16"], check=True, capture_output=True)
    return path


def test_lookup_and_draft_replies_are_plain_decodings(serve, portable_model):
    plain = text_of(serve(program=portable_model), kept=False)
    looked = serve("--lookup", "3", program=portable_model)
    assert text_of(looked, kept=True) == plain
    assert text_of(looked, stream=True) == plain
    drafted = serve("--draft", str(portable_model), "--parallel", "2", program=portable_model)
    assert text_of(drafted, kept=True) == plain
    assert text_of(drafted, stream=True) == plain
    # Two at once: each slot checks with its own draft session.
    texts = [None, None]

    def ask(i):
        texts[i] = text_of(drafted, kept=True)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert texts == [plain, plain]


def test_a_draft_with_another_tokenizer_stops_serve_naming_it(tmp_path, f32_model):
    other = tmp_path / "qwen3.slm"
    subprocess.run([CLI, "export", str(ROOT / "tests" / "fixtures" / "qwen3"), "-o", str(other), "--max-cache-len",
                    "64", "--prefill-len", "8"], check=True, capture_output=True)
    done = subprocess.run([CLI, "serve", str(f32_model), "--port", "0", "--draft", str(other)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0
    assert "--draft" in done.stderr and "tokenizer" in done.stderr, done.stderr
    refused = subprocess.run([CLI, "serve", str(f32_model), "--port", "0", "--lookup", "2", "--draft-max", "0"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "--draft-max" in refused.stderr, refused.stderr
