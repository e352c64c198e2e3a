# SPDX-License-Identifier: Apache-2.0
"""Constrained output end to end: hundreds of sampled generations (temperature 1, fixed seeds) of
the bundled model under each schema of tests/server/schemas/, through the server's json_schema
field and response_format, every output parsed by Python's json and validated by ajv (an
independent JSON Schema validator, with ajv-formats) in node."""
import json
import shutil
import subprocess

import pytest

from conftest import ARTIFACTS, ROOT

SCHEMAS = sorted((ROOT / "tests" / "server" / "schemas").glob("*.json"))
GENERATIONS = 36  # per schema and endpoint
MAX_TOKENS = 400


def validate_with_ajv(cases, tmp_path):
    node_modules = ROOT / "tests" / "server" / "node_modules"
    if shutil.which("node") is None or not (node_modules / "ajv").is_dir():
        pytest.fail("node and tests/server/node_modules (ajv) are needed: run scripts/install-deps")
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases))
    done = subprocess.run(["node", str(ROOT / "tests" / "server" / "validate_json_outputs.mjs"), str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def check_complete(schema_name, reply_text, finish_reason):
    assert finish_reason == "stop", f"{schema_name}: finish_reason {finish_reason}: {reply_text!r}"
    value = json.loads(reply_text)  # Python's own parser: no trailing text, nothing missing
    # Generation stops the moment the grammar completes: nothing follows the closing bracket.
    assert reply_text == reply_text.strip() and reply_text[-1] in "}]", reply_text
    return value


def test_sampled_outputs_are_valid_under_every_schema(serve, tmp_path):
    server = serve()
    cases = []
    for path in SCHEMAS:
        schema = json.loads(path.read_text())
        outputs = []
        for seed in range(GENERATIONS):
            status, _, reply = server.post("/v1/completions", {
                "prompt": "And God said", "json_schema": schema, "temperature": 1, "seed": seed,
                "max_tokens": MAX_TOKENS})
            assert status == 200, reply
            choice = reply["choices"][0]
            check_complete(path.stem, choice["text"], choice["finish_reason"])
            outputs.append(choice["text"])
        for seed in range(GENERATIONS // 3):
            status, _, reply = server.post("/v1/chat/completions", {
                "messages": [{"role": "user", "content": "Describe it as JSON."}], "temperature": 1, "seed": seed,
                "max_tokens": MAX_TOKENS,
                "response_format": {"type": "json_schema", "json_schema": {"name": path.stem, "schema": schema,
                                                                           "strict": True}}})
            assert status == 200, reply
            choice = reply["choices"][0]
            check_complete(path.stem, choice["message"]["content"], choice["finish_reason"])
            outputs.append(choice["message"]["content"])
        # Temperature 1 samples differ: the schema does not reduce to one text.
        assert len(set(outputs)) >= 3, path.stem
        cases.append({"name": path.stem, "schema": schema, "outputs": outputs})
    (ARTIFACTS / "structured_output_samples.json").parent.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "structured_output_samples.json").write_text(json.dumps(cases, indent=1, ensure_ascii=False))
    report = validate_with_ajv(cases, tmp_path)
    assert f"{sum(len(c['outputs']) for c in cases)} passed, 0 failed" in report, report


def test_json_object_mode_and_streaming(serve, tmp_path):
    server = serve()
    outputs = []
    for seed in range(12):
        status, _, reply = server.post("/v1/chat/completions", {
            "messages": [{"role": "user", "content": "{"}], "temperature": 1, "seed": seed, "max_tokens": 300,
            "response_format": {"type": "json_object"}})
        assert status == 200, reply
        choice = reply["choices"][0]
        text = choice["message"]["content"]
        assert text.startswith("{")
        if choice["finish_reason"] == "stop":
            assert isinstance(json.loads(text), dict)
            outputs.append(text)
        else:
            # Cut short by max_tokens: said by "length", and the text is not yet JSON.
            assert choice["finish_reason"] == "length"
            with pytest.raises(json.JSONDecodeError):
                json.loads(text)
    assert outputs, "no JSON object completed within 300 tokens"
    validate_with_ajv([{"name": "json_object", "schema": {"type": "object"}, "outputs": outputs}], tmp_path)

    # Streamed pieces join to the same constrained text as the reply without streaming.
    body = {"prompt": "In the beginning", "temperature": 1, "seed": 3, "max_tokens": MAX_TOKENS,
            "json_schema": json.loads((ROOT / "tests" / "server" / "schemas" / "person.json").read_text())}
    status, _, whole = server.post("/v1/completions", body)
    assert status == 200
    connection = server.connection()
    connection.request("POST", "/v1/completions", json.dumps({**body, "stream": True}))
    from conftest import read_events
    events = read_events(connection.getresponse())
    assert "".join(e["choices"][0]["text"] for e in events[:-1]) == whole["choices"][0]["text"]
    assert events[-2]["choices"][0]["finish_reason"] == "stop"


def test_too_few_tokens_end_with_length_and_llama_server_grammar(serve):
    server = serve()
    schema = json.loads((ROOT / "tests" / "server" / "schemas" / "person.json").read_text())
    status, _, reply = server.post("/v1/completions", {"prompt": "And", "json_schema": schema, "max_tokens": 4,
                                                       "temperature": 1, "seed": 1})
    assert status == 200
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "length" and reply["usage"]["completion_tokens"] == 4
    with pytest.raises(json.JSONDecodeError):
        json.loads(choice["text"])
    # GBNF through llama-server's `grammar` field; greedy decoding obeys it too.
    status, _, reply = server.post("/v1/completions", {
        "prompt": "And God said", "grammar": 'root ::= ("yea" | "nay") ", " [0-9]{2}', "temperature": 0,
        "max_tokens": 50})
    assert status == 200, reply
    text = reply["choices"][0]["text"]
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert text[:3] in ("yea", "nay") and text[3:5] == ", " and text[5:].isdigit() and len(text) == 7, text


def test_the_validator_refuses_what_the_schemas_forbid(tmp_path):
    """The independent check can fail: ajv refuses outputs that break a schema's keywords."""
    schemas = {path.stem: json.loads(path.read_text()) for path in SCHEMAS}
    bad = [{"name": "person", "schema": schemas["person"],
            "outputs": ['{"name": "Aaron", "age": 121, "tribe": "Levi", "alive": true}']},
           {"name": "event", "schema": schemas["event"],
            "outputs": ['{"id": "00000000-0000-0000-0000-000000000000", "day": "2023-02-29", "at": "10:00:00Z", '
                        '"logged": "2023-01-01T00:00:00Z", "code": "AB-12"}']}]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    done = subprocess.run(["node", str(ROOT / "tests" / "server" / "validate_json_outputs.mjs"), str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "0 passed, 2 failed" in done.stdout, done.stdout + done.stderr


def test_a_grammar_too_ambiguous_to_follow_is_refused_and_the_server_goes_on(serve):
    """Every letter can be taken by any of four copies of a rule that can match nothing, at every
    depth: the ways to parse the text multiply with each letter. Past the matcher's limit the
    request ends with a 400 naming the cause instead of holding a slot without end."""
    server = serve()
    status, _, reply = server.post("/v1/completions", {
        "prompt": "And God said", "grammar": 'root ::= tail{1,4} "!"\ntail ::= [a-z] root | ""',
        "temperature": 0, "max_tokens": 200})
    assert status == 400, reply
    assert "too ambiguous" in reply["error"]["message"], reply
    status, _, reply = server.post("/v1/completions", {"prompt": "And God said", "max_tokens": 4, "temperature": 0})
    assert status == 200 and reply["usage"]["completion_tokens"] == 4, reply
