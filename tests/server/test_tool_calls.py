# SPDX-License-Identifier: Apache-2.0
"""Tool calls end to end: tool_choice "required" and a named function force a call whose
arguments hold to the tool's parameters (validated by ajv, independently of the grammar), in the
chat template's own syntax (Qwen 3's <tool_call> tags, or a plain JSON object for a template with
none), returned as OpenAI tool_calls, streamed and not; tool_choice "auto" and "none" leave text
as text."""
import json

import pytest

from conftest import ROOT, read_events
from test_server import node_test
from test_structured_output import validate_with_ajv

QWEN3_TEMPLATE = ROOT / "tests" / "fixtures" / "chat_templates" / "templates" / "qwen3.jinja"
# A ChatML template that lists the tools but has no call syntax of its own.
PLAIN_TEMPLATE = """{%- if tools -%}<|im_start|>system
Tools: {{ tools | tojson }}<|im_end|>
{% endif -%}
{%- for message in messages -%}<|im_start|>{{ message.role }}
{{ message.content or '' }}<|im_end|>
{% endfor -%}{%- if add_generation_prompt -%}<|im_start|>assistant
{% endif -%}"""

WEATHER = {"type": "object",
           "properties": {"city": {"type": "string", "minLength": 1, "maxLength": 10},
                          "unit": {"enum": ["celsius", "fahrenheit"]},
                          "days": {"type": "integer", "minimum": 1, "maximum": 7}},
           "required": ["city", "unit"], "additionalProperties": False}
SEARCH = {"type": "object",
          "properties": {"query": {"type": "string", "maxLength": 12},
                         "filters": {"type": "array", "items": {"$ref": "#/$defs/filter"}, "maxItems": 2}},
          "required": ["query"], "additionalProperties": False,
          "$defs": {"filter": {"type": "object", "properties": {"field": {"enum": ["book", "chapter"]},
                                                               "value": {"type": "string", "maxLength": 6}},
                               "required": ["field", "value"], "additionalProperties": False}}}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                           "parameters": WEATHER}},
         {"type": "function", "function": {"name": "search", "parameters": SEARCH}}]
SCHEMAS = {"get_weather": WEATHER, "search": SEARCH}
QUESTION = [{"role": "user", "content": "What is the weather in Jerusalem?"}]
SEEDS = 16


@pytest.fixture
def tagged(serve, long_model):
    """Qwen 3's template writes the tools' schemas into a prompt of about 840 tokens: the 1024-token
    program has room for it and a call."""
    return serve("--chat-template", str(QWEN3_TEMPLATE), program=long_model)


def ask(server, seed, **fields):
    status, _, reply = server.post("/v1/chat/completions", {
        "messages": QUESTION, "tools": TOOLS, "temperature": 1, "seed": seed, "max_tokens": 180, **fields})
    assert status == 200, reply
    return reply["choices"][0]


def validate_arguments(calls, tmp_path):
    """Every call's arguments against its tool's parameters, by ajv."""
    cases = [{"name": name, "schema": schema,
              "outputs": [call["function"]["arguments"] for call in calls if call["function"]["name"] == name]}
             for name, schema in SCHEMAS.items()]
    report = validate_with_ajv(cases, tmp_path)
    assert f"{len(calls)} passed, 0 failed" in report, report


def test_required_forces_valid_calls_in_the_templates_syntax(tagged, tmp_path):
    calls = []
    for seed in range(SEEDS):
        choice = ask(tagged, seed, tool_choice="required")
        assert choice["finish_reason"] == "tool_calls", choice
        message = choice["message"]
        assert message["content"] is None, message
        assert len(message["tool_calls"]) == 1, message
        call = message["tool_calls"][0]
        assert call["type"] == "function" and call["id"].startswith("call_"), call
        assert call["function"]["name"] in SCHEMAS, call
        calls.append(call)
    assert len({c["function"]["name"] for c in calls}) == 2, "temperature 1 picks both tools over 16 seeds"
    assert len({c["function"]["arguments"] for c in calls}) >= 3
    validate_arguments(calls, tmp_path)


def test_a_named_function_is_the_only_one_called(tagged, tmp_path):
    calls = []
    for seed in range(SEEDS // 2):
        choice = ask(tagged, seed, tool_choice={"type": "function", "function": {"name": "search"}})
        assert choice["finish_reason"] == "tool_calls", choice
        calls += choice["message"]["tool_calls"]
    assert {c["function"]["name"] for c in calls} == {"search"}
    validate_arguments(calls, tmp_path)


def test_parallel_calls_and_the_call_fed_back(tagged, tmp_path):
    calls = []
    counts = []
    for seed in range(SEEDS // 2):
        choice = ask(tagged, seed, tool_choice={"type": "function", "function": {"name": "get_weather"}},
                     parallel_tool_calls=True)
        if choice["finish_reason"] == "length":
            # Cut inside a call: what was written comes back as text, never as a partial call.
            assert "tool_calls" not in choice["message"] and choice["message"]["content"].startswith("<tool_call>")
            continue
        assert choice["finish_reason"] == "tool_calls", choice
        ids = [c["id"] for c in choice["message"]["tool_calls"]]
        assert len(set(ids)) == len(ids)
        counts.append(len(ids))
        calls += choice["message"]["tool_calls"]
    # The bundled model ends after one call where it may; that a second may follow is grammar_test's.
    assert counts, "every reply was cut"
    validate_arguments(calls, tmp_path)
    # The assistant's call and the tool's answer go back through the template as the model wrote them.
    first = ask(tagged, 0, tool_choice="required")["message"]
    first["content"] = ""  # Qwen 3's template tests `'</think>' in message.content`: null fails there (and in Jinja)
    status, _, reply = tagged.post("/v1/chat/completions", {
        "messages": QUESTION + [first, {"role": "tool", "tool_call_id": first["tool_calls"][0]["id"],
                                        "content": "{\"temperature\": 31}"}],
        "max_tokens": 8, "temperature": 0})
    assert status == 200, reply
    assert reply["choices"][0]["message"]["content"], reply
    status, _, alone = tagged.post("/v1/chat/completions", {"messages": QUESTION, "max_tokens": 1})
    assert reply["usage"]["prompt_tokens"] > alone["usage"]["prompt_tokens"] + 20, (reply, alone)


def test_streamed_call_equals_the_whole_one(tagged):
    whole = ask(tagged, 3, tool_choice="required")
    connection = tagged.connection()
    connection.request("POST", "/v1/chat/completions", body=json.dumps({
        "messages": QUESTION, "tools": TOOLS, "temperature": 1, "seed": 3, "max_tokens": 180,
        "tool_choice": "required", "stream": True}), headers={"Content-Type": "application/json"})
    events = read_events(connection.getresponse())
    connection.close()
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[0].get("role") == "assistant"
    assert not any(d.get("content") for d in deltas), "a forced call streams no text"
    streamed = [call for d in deltas for call in d.get("tool_calls", [])]
    assert [c["index"] for c in streamed] == [0]
    expected = whole["message"]["tool_calls"][0]
    assert streamed[0]["function"] == expected["function"]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_a_template_without_a_syntax_gets_a_plain_json_call(serve, long_model, tmp_path):
    template = tmp_path / "plain.jinja"
    template.write_text(PLAIN_TEMPLATE)
    server = serve("--chat-template", str(template), program=long_model)
    calls = []
    for seed in range(SEEDS // 2):
        choice = ask(server, seed, tool_choice="required")
        assert choice["finish_reason"] == "tool_calls", choice
        calls += choice["message"]["tool_calls"]
    validate_arguments(calls, tmp_path)
    # The same request with parallel_tool_calls still makes one call: the syntax has one per reply.
    choice = ask(server, 1, tool_choice="required", parallel_tool_calls=True)
    assert len(choice["message"]["tool_calls"]) == 1


def test_auto_and_none_leave_text_as_text(tagged):
    for choice_field in ("auto", "none"):
        choice = ask(tagged, 5, tool_choice=choice_field, max_tokens=12)
        assert choice["finish_reason"] in ("length", "stop"), choice
        assert choice["message"]["content"], choice
        assert "tool_calls" not in choice["message"]
    # Streamed under auto, the text arrives whole and the same.
    whole = ask(tagged, 5, tool_choice="auto", max_tokens=12)["message"]["content"]
    connection = tagged.connection()
    connection.request("POST", "/v1/chat/completions", body=json.dumps({
        "messages": QUESTION, "tools": TOOLS, "temperature": 1, "seed": 5, "max_tokens": 12, "stream": True}),
        headers={"Content-Type": "application/json"})
    events = read_events(connection.getresponse())
    connection.close()
    assert "".join(e["choices"][0]["delta"].get("content", "") for e in events[:-1] if e["choices"]) == whole


def test_a_schema_the_compiler_refuses_still_reaches_the_template_unconstrained(serve, long_model, tmp_path):
    """tool_choice "none", or "auto" on a template with no call syntax, constrains nothing: the
    tools go to the template as they are, whatever their schemas say."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "a": {"not": {"type": "null"}}}}}}]
    plain = tmp_path / "plain.jinja"
    plain.write_text(PLAIN_TEMPLATE)
    for template, choice in ((QWEN3_TEMPLATE, "none"), (plain, "auto")):
        server = serve("--chat-template", str(template), program=long_model)
        status, _, reply = server.post("/v1/chat/completions", {
            "messages": QUESTION, "tools": tools, "tool_choice": choice, "max_tokens": 4})
        assert status == 200, reply
    # Where a call is constrained by it, the schema is refused by name (below).


@pytest.mark.parametrize("fields, param, fragment", [
    ({"tool_choice": "required", "tools": [{"type": "function", "function": {
        "name": "f", "parameters": {"type": "object", "properties": {"a": {"not": {}}}}}}]},
     "tools[0].function.parameters", "unsupported keyword 'not' at /properties/a"),
    ({"tool_choice": {"type": "function", "function": {"name": "g"}}}, "tool_choice", "not among `tools`"),
    ({"tool_choice": "required", "json_schema": {"type": "object"}}, "tool_choice", "not both"),
    ({"tools": [{"type": "code_interpreter"}]}, "tools[0]", "only function tools"),
])
def test_bad_tools_are_refused_by_name(tagged, fields, param, fragment):
    body = {"messages": QUESTION, "tools": TOOLS, "max_tokens": 4, **fields}
    status, _, reply = tagged.post("/v1/chat/completions", body)
    assert status == 400, reply
    assert reply["error"]["param"] == param, reply
    assert fragment in reply["error"]["message"], reply


def test_the_official_openai_client_reads_the_calls(tagged):
    node_test("openai_tools_test.mjs", f"http://127.0.0.1:{tagged.port}")


def test_granites_marked_list_is_forced_and_parsed(serve, long_model, tmp_path):
    """Granite 3.3's real template asks for <|tool_call|> and a JSON list of calls (its long
    system text and indented tools leave room for one small tool in the 1024-token program)."""
    server = serve("--chat-template", str(QWEN3_TEMPLATE.with_name("granite3_3.jinja")), program=long_model)
    unit = {"type": "object", "properties": {"unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["unit"],
            "additionalProperties": False}
    small = [{"type": "function", "function": {"name": "get_weather", "parameters": unit}}]
    calls = []
    for seed in range(SEEDS // 2):
        status, _, reply = server.post("/v1/chat/completions", {
            "messages": QUESTION, "tools": small, "tool_choice": "required",
            "temperature": 1, "seed": seed, "max_tokens": 100})
        assert status == 200, reply
        choice = reply["choices"][0]
        if choice["finish_reason"] == "length":
            assert choice["message"]["content"].startswith("<|tool_call|>["), choice
            continue
        assert choice["finish_reason"] == "tool_calls", choice
        calls += choice["message"]["tool_calls"]
    assert calls, "every reply was cut"
    report = validate_with_ajv([{"name": "get_weather", "schema": unit,
                                 "outputs": [c["function"]["arguments"] for c in calls]}], tmp_path)
    assert f"{len(calls)} passed, 0 failed" in report, report
