# SPDX-License-Identifier: Apache-2.0
"""The LLM runner from Python on the bundled model: greedy generation equals `staticlm run`'s
output on the same program; unset sampling fields take the program's generation_config, as the
CLI's do; streaming pieces concatenate to the full text; stop strings, stop()
from a callback and from another thread (the GIL is released while generating); an exception in a
callback propagates; bad configs raise with the C++ message; rpcmem falls back to the heap where
the DSP library is absent (counted in the stats) and strict_io makes that an error; runners are
found by contract; tokenizers from files and programs agree."""
import json
import threading

import numpy as np
import pytest

import staticlm
from conftest import ROOT

PROMPT = "And God said"


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("runner") / "kjv.slm")
    staticlm.export(str(ROOT / "models" / "kjv-llama-6m"), path, prefill_len=64, max_cache_len=512)
    return path


@pytest.fixture(scope="module")
def runner(program):
    return staticlm.runner_for(program, threads=2)


def test_greedy_generation_equals_the_cli(program, runner, cli):
    code, out, err = cli("run", program, "-p", PROMPT, "-n", "24", "--temp", "0", "-q")
    assert code == 0, err
    result = runner.generate(PROMPT, staticlm.GenerationConfig(max_new_tokens=24, temperature=0))
    assert out.decode() == result.text + "\n"  # the CLI ends its output with a newline
    assert len(result.tokens) == 24 and result.finish_reason == "max_new_tokens"
    stats = result.stats
    assert stats.prompt_tokens == len(runner.tokenizer.encode(PROMPT)) and stats.generated_tokens == 24
    assert stats.decode_tokens_per_second > 0 and stats.time_to_first_token_seconds > 0
    assert stats.io_allocator == "heap" and stats.io["fallbacks"] == 0 and stats.io["buffers"] > 0
    assert set(stats.to_dict()) >= {"load_seconds", "prefill_tokens_per_second", "decode_tokens_per_second",
                                    "peak_rss_bytes", "io"}
    # The logits of the prompt's last position pick the first greedy token.
    logits = runner.prefill(PROMPT)
    assert logits.shape == (runner.tokenizer.vocab_size,) and int(np.argmax(logits)) == result.tokens[0]
    assert runner.position == stats.prompt_tokens
    runner.reset()
    assert runner.position == 0


def test_unset_fields_take_the_programs_generation_config(program, runner, cli):
    # The bundled model's generation_config.json: do_sample, temperature 0.7, top_k 40, top_p 0.9,
    # repetition_penalty 1.1.
    result = runner.generate(PROMPT, staticlm.GenerationConfig(max_new_tokens=24, seed=5))
    assert result.stats.sampling == {"temperature": 0.7, "top_k": 40, "top_p": 0.9, "min_p": 0.0,
                                     "repetition_penalty": 1.1, "seed": 5}
    explicit = staticlm.GenerationConfig(max_new_tokens=24, seed=5, temperature=0.7, top_k=40, top_p=0.9,
                                         repetition_penalty=1.1)
    assert runner.generate(PROMPT, explicit).text == result.text
    code, out, err = cli("run", program, "-p", PROMPT, "-n", "24", "--seed", "5", "-q")
    assert code == 0, err
    assert out.decode() == result.text + "\n"  # the CLI's defaults are the same
    # A field given overrides its own: temperature 0 is greedy, with no seed to report.
    greedy = runner.generate(PROMPT, staticlm.GenerationConfig(max_new_tokens=24, temperature=0))
    assert greedy.stats.sampling["temperature"] == 0 and greedy.stats.sampling["seed"] is None
    assert greedy.stats.sampling["repetition_penalty"] == 1.1
    # Without a seed each generation draws its own.
    seeds = {runner.generate(PROMPT, staticlm.GenerationConfig(max_new_tokens=2)).stats.sampling["seed"]
             for _ in range(3)}
    assert len(seeds) == 3 and None not in seeds
    with pytest.raises(staticlm.Error, match=r"GenerationConfig.seed: expected None \(a random seed\) or an integer"):
        runner.generate(PROMPT, staticlm.GenerationConfig(seed=-1))


def test_logprobs_are_the_logits_log_softmax(program, runner, cli):
    """Result.logprobs against `staticlm logits` on the same ids (numpy's log_softmax)."""
    import numpy
    result = runner.generate(PROMPT, staticlm.GenerationConfig(max_new_tokens=4, temperature=0.8, seed=3,
                                                               logprobs=3))
    assert [entry["token"] for entry in result.logprobs] == result.tokens
    fed = result.stats.prompt_tokens
    ids = runner.tokenizer.encode(PROMPT) + result.tokens[:-1]
    assert len(ids) == fed + len(result.tokens) - 1
    code, out, err = cli("logits", program, "--tokens", *map(str, ids))
    assert code == 0, err
    logits = numpy.frombuffer(out, dtype=numpy.float32).astype(numpy.float64).reshape(len(ids), -1)
    rows = logits - logits.max(axis=1, keepdims=True)
    rows -= numpy.log(numpy.exp(rows).sum(axis=1, keepdims=True))
    for step, entry in enumerate(result.logprobs):
        row = rows[fed - 1 + step]
        assert abs(entry["logprob"] - row[entry["token"]]) < 1e-3
        assert [token for token, _ in entry["top"]] == list(numpy.argsort(-row, kind="stable")[:3])
    assert runner.generate(PROMPT, staticlm.GenerationConfig(max_new_tokens=2)).logprobs is None
    for bad in (-1, 21, True, 2.0):
        with pytest.raises(staticlm.Error, match=r"GenerationConfig.logprobs: expected None or an integer in \[0, 20\]"):
            runner.generate(PROMPT, staticlm.GenerationConfig(logprobs=bad))


def test_logit_bias_forces_and_bans_tokens_as_the_cli_does(program, runner, cli):
    free = runner.generate(PROMPT, staticlm.GenerationConfig(max_new_tokens=6, temperature=0))
    first = free.tokens[0]
    banned = runner.generate(PROMPT, staticlm.GenerationConfig(max_new_tokens=6, temperature=0,
                                                               logit_bias={first: -100}))
    assert first not in banned.tokens
    forced = runner.generate(PROMPT, staticlm.GenerationConfig(max_new_tokens=3, temperature=0,
                                                               logit_bias={7: 100}))
    assert forced.tokens == [7, 7, 7]
    code, out, err = cli("run", program, "-p", PROMPT, "-n", "6", "--temp", "0", "-q", "--logit-bias", f"{first}-inf")
    assert code == 0, err
    assert out.decode() == banned.text + "\n"
    code, out, err = cli("run", program, "-p", PROMPT, "--logit-bias", "7*2")
    assert code != 0 and "--logit-bias: expected TOKEN_ID+BIAS or TOKEN_ID-BIAS" in err
    with pytest.raises(staticlm.Error, match=r"logit_bias': token id 99999999 is outside the vocabulary"):
        runner.generate(PROMPT, staticlm.GenerationConfig(logit_bias={99999999: 1.0}))
    for bad in ([(7, 1.0)], {"7": 1.0}, {-1: 1.0}, {2**40: 1.0}, {7: "up"}):
        with pytest.raises(staticlm.Error, match=r"GenerationConfig.logit_bias: expected"):
            runner.generate(PROMPT, staticlm.GenerationConfig(logit_bias=bad))


def test_without_a_length_generation_runs_to_the_end_of_the_context(runner):
    result = runner.generate(PROMPT, staticlm.GenerationConfig(max_new_tokens=None, temperature=0))
    assert result.finish_reason == "context_full"
    assert result.stats.prompt_tokens + len(result.tokens) - 1 == runner.max_cache_len


def test_streaming_pieces_concatenate_to_the_text(runner):
    config = staticlm.GenerationConfig(max_new_tokens=40, temperature=0.8, top_k=40, seed=3)
    pieces = list(runner.stream(PROMPT, config))
    assert len(pieces) > 1 and all(isinstance(p, str) and p for p in pieces)
    assert "".join(pieces) == runner.generate(PROMPT, config).text
    received = []
    result = runner.generate(PROMPT, config, received.append)
    assert "".join(received) == result.text


def test_stop_strings_end_the_text_before_them(runner):
    result = runner.generate(PROMPT, staticlm.GenerationConfig(max_new_tokens=64, temperature=0, stop=(",",)))
    assert result.finish_reason == "stop_string" and "," not in result.text


def test_stop_from_a_callback_and_from_another_thread(runner):
    seen = []

    def stop_after_three(piece):
        seen.append(piece)
        if len(seen) == 3:
            runner.stop()
    result = runner.generate(PROMPT, staticlm.GenerationConfig(max_new_tokens=100, temperature=0), stop_after_three)
    assert result.finish_reason == "cancelled" and len(result.tokens) < 10

    started = threading.Event()
    outcome = []
    worker = threading.Thread(target=lambda: outcome.append(runner.generate(
        PROMPT, staticlm.GenerationConfig(max_new_tokens=500, temperature=0), lambda piece: started.set())))
    worker.start()
    assert started.wait(30)  # this thread runs while the other generates: the GIL is released
    runner.stop()
    worker.join(30)
    assert outcome and outcome[0].finish_reason == "cancelled" and len(outcome[0].tokens) < 500


def test_an_exception_in_a_callback_stops_and_propagates(runner):
    calls = []

    def fail(piece):
        calls.append(piece)
        raise ValueError("enough")
    with pytest.raises(ValueError, match="enough"):
        runner.generate(PROMPT, staticlm.GenerationConfig(max_new_tokens=100), fail)
    assert len(calls) == 1


def test_bad_configs_raise_with_the_cpp_message(runner):
    with pytest.raises(staticlm.Error, match="temperature"):
        runner.generate(PROMPT, staticlm.GenerationConfig(temperature=-1.0))
    with pytest.raises(staticlm.Error, match="top_p"):
        runner.generate(PROMPT, staticlm.GenerationConfig(top_p=0.0))
    with pytest.raises(staticlm.Error, match="cache"):
        runner.generate(PROMPT, staticlm.GenerationConfig(max_new_tokens=100000))
    with pytest.raises(TypeError):
        staticlm.GenerationConfig(128)  # keyword-only


def test_rpcmem_falls_back_to_the_heap_and_strict_io_refuses(program):
    fallback = staticlm.TextLLMRunner(program, io_allocator="rpcmem", threads=1)
    result = fallback.generate(PROMPT, staticlm.GenerationConfig(max_new_tokens=4))
    assert result.stats.io_allocator == "rpcmem"
    assert result.stats.io["fallbacks"] > 0 and result.stats.io["fallback_bytes"] > 0
    with pytest.raises(staticlm.Error) as refused:
        staticlm.TextLLMRunner(program, io_allocator="rpcmem", strict_io=True, threads=1)
    assert "heap" in str(refused.value) or "rpcmem" in str(refused.value)
    with pytest.raises(staticlm.Error, match="ion"):
        staticlm.TextLLMRunner(program, io_allocator="ion")


def test_runners_are_found_by_contract(program, monkeypatch):
    assert staticlm.runners() == {("hf_static", 1): staticlm.TextLLMRunner}
    assert isinstance(staticlm.runner_for(staticlm.load_program(program), threads=1), staticlm.TextLLMRunner)

    class OtherRunner:
        def __init__(self, path):
            self.path = path
    monkeypatch.setattr(staticlm._runner, "_RUNNERS", {("other", 2): OtherRunner})
    with pytest.raises(staticlm.Error, match=r"declares contract hf_static v1; the registered runners take: other v2"):
        staticlm.runner_for(program)


def test_tokenizers_from_files_and_programs_agree(program):
    model = ROOT / "models" / "kjv-llama-6m"
    text = "In the beginning, 1611 — café ☃"
    from_program = staticlm.Tokenizer.from_program(program)
    for tokenizer in (staticlm.Tokenizer.from_file(str(model / "tokenizer.model")),
                      staticlm.Tokenizer.from_file(str(model / "tokenizer.json")),
                      staticlm.Tokenizer.from_file(str(model))):
        assert tokenizer.encode(text) == from_program.encode(text)
        assert tokenizer.vocab_size == 4096 and tokenizer.bos_id == 1 and tokenizer.eos_ids == [2]
    ids = from_program.encode(text)
    assert ids[0] == 1 and from_program.decode(ids) == text
    assert from_program.encode(text, add_special_tokens=False) == ids[1:]
    assert from_program.id_to_token(1) == "<s>" and from_program.is_special(1)
    assert from_program.token_to_id("<s>") == 1 and from_program.token_to_id("no such token") is None
    with pytest.raises(staticlm.Error, match="token id 5000 is not in the vocabulary"):
        from_program.decode([5000])
    with pytest.raises(staticlm.Error, match="cannot open"):
        staticlm.Tokenizer.from_file(str(model / "missing.json"))


def test_json_schema_and_grammar_constrain_the_output(runner):
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
                                               "age": {"type": "integer", "minimum": 0, "maximum": 99}},
              "required": ["name", "age"], "additionalProperties": False}
    for seed in range(8):
        result = runner.generate("And God said", staticlm.GenerationConfig(
            max_new_tokens=200, temperature=1.0, seed=seed, json_schema=schema))
        assert result.finish_reason == "grammar_complete" and result.grammar_complete is True
        value = json.loads(result.text)
        assert set(value) == {"name", "age"} and len(value["name"]) <= 10 and 0 <= value["age"] <= 99
    result = runner.generate("And", staticlm.GenerationConfig(max_new_tokens=2, temperature=0, json_schema=schema))
    assert result.finish_reason == "max_new_tokens" and result.grammar_complete is False
    result = runner.generate("And", staticlm.GenerationConfig(temperature=0, grammar='root ::= "Amen" [.!]'))
    assert result.text in ("Amen.", "Amen!") and result.finish_reason == "grammar_complete"
    unconstrained = runner.generate("And", staticlm.GenerationConfig(max_new_tokens=4, temperature=0))
    assert unconstrained.grammar_complete is None
    with pytest.raises(staticlm.Error, match="unsupported keyword 'not' at /properties/a"):
        runner.generate("And", staticlm.GenerationConfig(json_schema={"properties": {"a": {"not": {}}}}))
    with pytest.raises(staticlm.Error, match="GenerationConfig.grammar: GBNF line 1"):
        runner.generate("And", staticlm.GenerationConfig(grammar="root ::= ("))
