# SPDX-License-Identifier: Apache-2.0
"""`staticlm serve` over real HTTP: every endpoint, streaming, the requests it refuses (and that it
keeps serving after them), API keys, the queue, prefix reuse, concurrency and disconnects."""
import json
import os
import shutil
import socket
import subprocess
import threading
import time

import pytest

from conftest import ARTIFACTS, CONTEXT, ROOT, read_events, start_server

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
QUESTION = [{"role": "user", "content": "Who made the heaven and the earth?"}]


def test_health_models_and_metrics(serve):
    server = serve()
    assert server.get_json("/health") == (200, {"status": "ok"})
    status, models = server.get_json("/v1/models")
    assert status == 200
    (model,) = models["data"]
    assert model["id"] == f"kjv_{CONTEXT}" and model["object"] == "model"  # the file name, without .slm
    assert model["meta"]["n_ctx"] == CONTEXT
    server.post(COMPLETIONS, {"prompt": "In the beginning", "max_tokens": 4})
    counted = 'staticlm_requests_total{endpoint="/v1/completions",status="200"} 1'
    metrics = server.metrics_with(counted)
    assert counted in metrics
    assert "staticlm_generated_tokens_total 4" in metrics
    assert "staticlm_requests_queued 0" in metrics


def test_llama_servers_props_slots_and_one_model(serve, long_model):
    server = serve("--parallel", "2")
    status, model = server.get_json(f"/v1/models/kjv_{CONTEXT}")
    assert status == 200 and model["id"] == f"kjv_{CONTEXT}" and model["object"] == "model"
    status, missing = server.get_json("/v1/models/gpt-4o")
    assert status == 404 and missing["error"]["code"] == "model_not_found" and missing["error"]["param"] == "model"
    status, props = server.get_json("/props")
    assert status == 200 and props["total_slots"] == 2 and props["model_alias"] == f"kjv_{CONTEXT}"
    settings = props["default_generation_settings"]
    # The bundled model's generation_config.json, as a request without sampling fields gets it.
    assert settings["n_ctx"] == CONTEXT
    assert settings["params"]["temperature"] == 0.7 and settings["params"]["top_k"] == 40
    assert settings["params"]["repeat_penalty"] == 1.1 and settings["params"]["repeat_last_n"] == 64
    assert "{%" in props["chat_template"]
    status, slots = server.get_json("/slots")
    assert status == 200 and [slot["id"] for slot in slots] == [0, 1]
    assert not any(slot["is_processing"] for slot in slots) and all(slot["n_ctx"] == CONTEXT for slot in slots)
    # While a streamed reply is generating, its slot says so: a long one on the long program
    # (seeded: it runs to max_tokens), so that it still holds the slot when /slots answers, however
    # slowly this client gets there.
    busy = serve("--parallel", "2", program=long_model)
    connection = busy.connection()
    connection.request("POST", COMPLETIONS, json.dumps({"prompt": "In the beginning", "stream": True,
                                                        "max_tokens": 1000, "temperature": 1, "seed": 1}))
    response = connection.getresponse()
    response.readline()  # the first event: generation has started
    status, slots = busy.get_json("/slots")
    assert status == 200 and sum(slot["is_processing"] for slot in slots) == 1
    events = read_events(response)
    finish = [choice["finish_reason"] for event in events[:-1] for choice in event["choices"] if choice["finish_reason"]]
    assert events[-1] == "[DONE]" and finish == ["length"], finish
    connection.close()


def test_chat_completion_streamed_and_not(serve):
    server = serve()
    body = {"messages": QUESTION, "max_tokens": 10, "temperature": 0}
    status, _, reply = server.post(CHAT, body)
    assert status == 200
    assert reply["object"] == "chat.completion"
    choice = reply["choices"][0]
    assert choice["message"]["role"] == "assistant" and choice["finish_reason"] in ("stop", "length")
    usage = reply["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert 1 <= usage["completion_tokens"] <= 10
    assert reply["timings"]["predicted_n"] == usage["completion_tokens"]

    connection = server.connection()
    connection.request("POST", CHAT, json.dumps({**body, "stream": True, "stream_options": {"include_usage": True}}))
    response = connection.getresponse()
    assert response.status == 200
    assert response.getheader("Content-Type").startswith("text/event-stream")
    events = read_events(response)
    assert events[-1] == "[DONE]"
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events[1:-2] if e["choices"])
    assert text == choice["message"]["content"]  # greedy: the same reply either way
    assert events[-3]["choices"][0]["finish_reason"] == choice["finish_reason"]
    assert events[-2]["choices"] == [] and events[-2]["usage"]["completion_tokens"] == usage["completion_tokens"]


def test_completion_from_text_and_from_tokens(serve):
    server = serve()
    status, _, tokenized = server.post("/tokenize", {"content": "In the beginning", "add_special": True})
    assert status == 200 and len(tokenized["tokens"]) >= 2
    status, _, from_text = server.post(COMPLETIONS, {"prompt": "In the beginning", "max_tokens": 8, "temperature": 0})
    status2, _, from_tokens = server.post(COMPLETIONS, {"prompt": tokenized["tokens"], "max_tokens": 8,
                                                         "temperature": 0})
    assert status == status2 == 200
    assert from_text["object"] == "text_completion"
    assert from_text["choices"][0]["text"] == from_tokens["choices"][0]["text"] != ""
    assert from_text["usage"]["prompt_tokens"] == len(tokenized["tokens"])

    connection = server.connection()
    connection.request("POST", COMPLETIONS, json.dumps({"prompt": "In the beginning", "max_tokens": 8,
                                                        "temperature": 0, "stream": True}))
    events = read_events(connection.getresponse())
    assert events[-1] == "[DONE]"
    assert "".join(e["choices"][0]["text"] for e in events[:-1]) == from_text["choices"][0]["text"]


def test_tokenize_and_detokenize_round_trip(serve):
    server = serve()
    text = "And God said, Let there be light: and there was light."
    status, _, tokens = server.post("/tokenize", {"content": text, "with_pieces": True})
    assert status == 200
    ids = [piece["id"] for piece in tokens["tokens"]]
    assert all(isinstance(piece["piece"], str) for piece in tokens["tokens"])
    status, _, detokenized = server.post("/detokenize", {"tokens": ids})
    assert status == 200 and detokenized["content"].strip() == text


@pytest.mark.parametrize("body, param, fragment", [
    ({"messages": QUESTION, "temperature": "hot"}, "temperature", "expected a number"),
    ({"messages": QUESTION, "temperature": 3}, "temperature", "[0, 2]"),
    ({"messages": QUESTION, "n": 17}, "n", "[1, 16]"),
    ({"messages": QUESTION, "logprobs": "yes"}, "logprobs", "a boolean"),
    ({"messages": QUESTION, "response_format": {"type": "xml"}}, "response_format", "json_schema"),
    ({"messages": QUESTION, "response_format": {"type": "json_schema", "json_schema": {
        "name": "n", "schema": {"type": "object", "properties": {"a": {"not": {}}}}}}}, "response_format",
     "unsupported keyword 'not' at /properties/a"),
    ({"messages": QUESTION, "grammar": "root ::= missing"}, "grammar", "rule 'missing' is not defined"),
    ({"messages": QUESTION, "json_schema": {"type": "string", "format": "email"}}, "json_schema",
     "format \"email\" is not supported"),
    ({"messages": QUESTION, "tools": [{"type": "function", "function": {"name": "f"}}]}, "tools",
     "does not support tools"),
    ({"messages": QUESTION, "frobnicate": 1}, "frobnicate", "unrecognized"),
    ({"messages": []}, "messages", "non-empty"),
    ({"messages": [{"role": "wizard", "content": "hi"}]}, "messages[0].role", "expected one of"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]}, "messages[0].content",
     "text only"),
    ({"messages": QUESTION, "max_tokens": CONTEXT}, "max_tokens", "at most"),
    ({"messages": QUESTION, "max_tokens": 0}, "max_tokens", "[1,"),
    ({"messages": QUESTION, "stop": ["a"] * 17}, "stop", "at most 16"),
    ({"messages": QUESTION, "stream_options": {"include_usage": True}}, "stream_options", "stream is true"),
])
def test_bad_chat_requests_get_a_400_naming_the_field(serve, body, param, fragment):
    server = serve()
    status, _, reply = server.post(CHAT, body)
    assert status == 400, reply
    assert reply["error"]["param"] == param
    assert reply["error"]["type"] == "invalid_request_error"
    assert fragment in reply["error"]["message"]
    assert server.get_json("/health")[0] == 200


def test_malformed_and_oversized_bodies_and_unknown_paths(serve):
    server = serve("--max-body-bytes", "4096")
    for body in [b"{not json", b"[1, 2]", b"{" * 200 + b"}" * 200, b"\xff\xfe"]:
        status, _, reply = server.post(CHAT, body, headers={"Content-Type": "application/json"})
        assert status == 400 and reply["error"]["message"], body
    status, _, reply = server.post(COMPLETIONS, {"prompt": "x" * 5000})
    assert status == 413 and "4096 bytes" in reply["error"]["message"]
    status, _, reply = server.post(COMPLETIONS, {"prompt": "In the beginning " * 200})
    assert status == 400 and reply["error"]["param"] == "prompt" and str(CONTEXT) in reply["error"]["message"]
    status, _, reply = server.post(COMPLETIONS, {"prompt": [5, 99999999]})
    assert status == 400 and "outside the vocabulary" in reply["error"]["message"]
    status, _, data = server.request("GET", "/v2/nothing")
    assert status == 404 and "no endpoint" in json.loads(data)["error"]["message"]
    status, _, reply = server.post("/detokenize", {"tokens": [-1]})
    assert status == 400 and reply["error"]["param"] == "tokens"
    # Still serving.
    status, _, reply = server.post(COMPLETIONS, {"prompt": "In the beginning", "max_tokens": 2})
    assert status == 200


def test_api_key_is_required_everywhere_but_health(serve):
    server = serve(api_key="s3cret-key")
    assert server.request("GET", "/health", key=False)[0] == 200
    assert server.request("GET", "/", key=False)[0] == 200  # the page itself; it asks for the key
    for path in ["/v1/models", "/metrics"]:
        status, headers, data = server.request("GET", path, key=False)
        assert status == 401 and headers.get("WWW-Authenticate") == "Bearer"
        assert json.loads(data)["error"]["code"] == "invalid_api_key"
        status, _, _ = server.request("GET", path, headers={"Authorization": "Bearer s3cret-kez"}, key=False)
        assert status == 401
        assert server.request("GET", path)[0] == 200
    status, _, _ = server.post(COMPLETIONS, {"prompt": "In", "max_tokens": 1}, key=False)
    assert status == 401


def test_chat_turn_extending_a_conversation_reuses_the_cache(serve):
    server = serve()
    first = server.post(CHAT, {"messages": QUESTION, "max_tokens": 8, "temperature": 0})[2]
    assert first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    reply = first["choices"][0]["message"]["content"]
    turn = QUESTION + [{"role": "assistant", "content": reply}, {"role": "user", "content": "And then?"}]
    second = server.post(CHAT, {"messages": turn, "max_tokens": 8, "temperature": 0})[2]
    cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert cached >= first["usage"]["prompt_tokens"], second["usage"]
    assert second["timings"]["prompt_n"] == second["usage"]["prompt_tokens"] - cached


def test_a_full_queue_answers_503_with_retry_after(serve, long_model):
    server = serve("--parallel", "1", "--queue", "0", program=long_model)
    connection = server.connection()
    # Seeded: this sample runs to max_tokens, long enough on the long program that the request
    # still holds the session below however slowly this client gets there.
    connection.request("POST", COMPLETIONS, json.dumps({"prompt": "In the beginning", "stream": True,
                                                        "max_tokens": 1000, "temperature": 1, "seed": 1}))
    response = connection.getresponse()
    response.readline()  # generating now
    status, headers, reply = server.post(COMPLETIONS, {"prompt": "And", "max_tokens": 2})
    assert status == 503 and headers.get("Retry-After") == "1"
    assert reply["error"]["code"] == "server_busy"
    connection.close()


def test_a_client_that_disconnects_frees_its_session(serve):
    server = serve("--parallel", "1", "--queue", "4")
    connection = server.connection()
    # Seeded: this sample runs to max_tokens, so it is still generating when the client leaves.
    connection.request("POST", COMPLETIONS, json.dumps({"prompt": "In the beginning", "stream": True,
                                                        "max_tokens": 450, "temperature": 1, "seed": 1}))
    response = connection.getresponse()
    for _ in range(4):
        response.readline()
    connection.sock.shutdown(socket.SHUT_RDWR)
    connection.close()
    started = time.monotonic()
    status, _, reply = server.post(COMPLETIONS, {"prompt": "And", "max_tokens": 2})
    assert status == 200
    assert time.monotonic() - started < 10
    metrics = server.metrics_with("staticlm_generations_cancelled_total 1", "staticlm_requests_processing 0")
    assert "staticlm_generations_cancelled_total 1" in metrics
    assert "staticlm_requests_processing 0" in metrics


def test_eight_clients_twenty_requests_each(serve):
    server = serve("--parallel", "2", "--queue", "16")
    prompts = ["In the beginning", "And God said", "The LORD is my shepherd", "Blessed are",
               "And it came to pass", "Now the serpent", "Let there be", "In my Father's house"]
    expected = {}
    for prompt in prompts:
        status, _, reply = server.post(COMPLETIONS, {"prompt": prompt, "max_tokens": 6, "temperature": 0})
        assert status == 200
        expected[prompt] = reply["choices"][0]["text"]
    rss_before = server.rss_bytes()
    failures = []

    def client(index):
        for round_ in range(20):
            prompt = prompts[(index + round_) % len(prompts)]
            stream = round_ % 2 == 1
            body = {"prompt": prompt, "max_tokens": 6, "temperature": 0, "stream": stream}
            try:
                connection = server.connection()
                connection.request("POST", COMPLETIONS, json.dumps(body))
                response = connection.getresponse()
                if response.status != 200:
                    failures.append((prompt, response.status, response.read()))
                    continue
                if stream:
                    events = read_events(response)
                    text = "".join(e["choices"][0]["text"] for e in events if e != "[DONE]")
                else:
                    text = json.loads(response.read())["choices"][0]["text"]
                connection.close()
                if text != expected[prompt]:
                    failures.append((prompt, text, expected[prompt]))
            except Exception as error:  # noqa: BLE001 - every failure is reported below
                failures.append((prompt, repr(error)))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    counted = 'staticlm_requests_total{endpoint="/v1/completions",status="200"} 168'
    assert counted in server.metrics_with(counted)
    # Memory stays flat: every request reuses the two sessions' buffers.
    assert server.rss_bytes() - rss_before < 16 << 20, (rss_before, server.rss_bytes())


def test_health_answers_503_while_the_model_loads(tmp_path):
    fifo = tmp_path / "loading.slm"
    os.mkfifo(fifo)
    process, port, _ = start_server(fifo, wait_ready=False)
    try:
        import http.client
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/health")
        response = connection.getresponse()
        assert response.status == 503 and json.loads(response.read()) == {"status": "loading"}
        connection.request("GET", "/v1/models")
        response = connection.getresponse()
        assert response.status == 503 and json.loads(response.read())["error"]["code"] == "model_loading"
        with open(fifo, "wb"):
            pass  # opening the pipe for writing lets the server's open() return: it fails to map it
        assert process.wait(timeout=30) == 1
        assert "loading.slm" in process.stderr.read()
    finally:
        process.kill()


def node_test(script, *args):
    node_modules = ROOT / "tests" / "server" / "node_modules"
    if shutil.which("node") is None or not node_modules.is_dir():
        pytest.fail("node and tests/server/node_modules are needed: run scripts/install-deps")
    done = subprocess.run(["node", str(ROOT / "tests" / "server" / script), *args], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_official_openai_client(serve):
    server = serve(api_key="client-key")
    node_test("openai_client_test.mjs", f"http://127.0.0.1:{server.port}", "client-key")


def test_the_web_page_in_headless_chromium(serve, long_model):
    if not os.path.exists(os.environ.get("CHROMIUM", "/usr/bin/chromium")):
        pytest.fail("Debian's chromium is needed: run scripts/install-deps")
    server = serve(program=long_model)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    node_test("web_page_test.mjs", f"http://127.0.0.1:{server.port}", str(ARTIFACTS / "web_page.png"))


@pytest.fixture
def page_origin(tmp_path):
    """An empty page served from another origin (another port) than the server's."""
    import functools
    import http.server

    (tmp_path / "index.html").write_text("<!doctype html><title>another origin</title>")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_a_page_of_another_origin_in_headless_chromium(serve, page_origin):
    if not os.path.exists(os.environ.get("CHROMIUM", "/usr/bin/chromium")):
        pytest.fail("Debian's chromium is needed: run scripts/install-deps")
    allowed = serve("--cors-origin", page_origin, api_key="page-key")
    node_test("cors_page_test.mjs", page_origin + "/", f"http://127.0.0.1:{allowed.port}", "page-key", "allowed")
    elsewhere = serve("--cors-origin", "http://127.0.0.1:1", api_key="page-key")
    node_test("cors_page_test.mjs", page_origin + "/", f"http://127.0.0.1:{elsewhere.port}", "page-key", "blocked")


def test_a_request_without_sampling_fields_samples_as_the_program_says(serve):
    # The bundled model's generation_config.json: do_sample, temperature 0.7, top_k 40, top_p 0.9,
    # repetition_penalty 1.1.
    server = serve()

    def text(**fields):
        status, _, reply = server.post(COMPLETIONS, {"prompt": "And God said", "max_tokens": 24, **fields})
        assert status == 200, reply
        return reply["choices"][0]["text"]
    defaults = text(seed=5)
    assert defaults == text(seed=5, temperature=0.7, top_k=40, top_p=0.9, repeat_penalty=1.1)
    assert defaults != text(seed=5, temperature=1.0, top_k=0, top_p=1.0, repeat_penalty=1.0)  # OpenAI's
    assert defaults != text(seed=6)
    # A field given replaces its own: temperature 0 is greedy, whatever the seed.
    assert text(temperature=0, seed=1) == text(temperature=0, seed=2)
    # Without a seed, each request draws its own.
    assert len({text() for _ in range(3)}) > 1


def test_a_request_without_max_tokens_stops_where_the_context_ends(serve):
    server = serve()
    status, _, reply = server.post(COMPLETIONS, {"prompt": "And God said", "temperature": 0})
    assert status == 200, reply
    assert reply["choices"][0]["finish_reason"] == "length"
    assert reply["usage"]["total_tokens"] == CONTEXT + 1  # the last token is never fed back


def test_n_choices_are_the_single_requests_with_successive_seeds(serve, f32_model):
    """Choice i of n samples with seed + i: it equals a request for one choice with that seed, and
    the prompt is prefilled once for all of them."""
    server = serve(program=f32_model)
    body = {"prompt": "And God said", "max_tokens": 6, "temperature": 1, "seed": 11}
    status, _, many = server.post(COMPLETIONS, {**body, "n": 3})
    assert status == 200, many
    assert [choice["index"] for choice in many["choices"]] == [0, 1, 2]
    singles = []
    for i in range(3):
        status, _, one = server.post(COMPLETIONS, {**body, "seed": 11 + i})
        assert status == 200, one
        singles.append(one)
    assert [c["text"] for c in many["choices"]] == [one["choices"][0]["text"] for one in singles]
    assert many["usage"]["completion_tokens"] == sum(one["usage"]["completion_tokens"] for one in singles)
    assert many["usage"]["prompt_tokens"] == singles[0]["usage"]["prompt_tokens"]
    assert many["timings"]["prompt_n"] <= many["usage"]["prompt_tokens"] + 2, many["timings"]
    # Streamed: each choice's chunks carry its index, and together they spell the same texts.
    connection = server.connection()
    connection.request("POST", COMPLETIONS, json.dumps({**body, "n": 3, "stream": True}),
                       {"Content-Type": "application/json"})
    events = read_events(connection.getresponse())
    texts = ["", "", ""]
    finished = []
    for event in events[:-1]:
        for choice in event["choices"]:
            texts[choice["index"]] += choice["text"]
            if choice["finish_reason"]:
                finished.append(choice["index"])
    assert texts == [c["text"] for c in many["choices"]] and finished == [0, 1, 2]
