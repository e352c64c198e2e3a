# SPDX-License-Identifier: Apache-2.0
"""Export and programs from Python: a Partitioner made from options exports a program whose
logits equal, bit for bit, those of the program `staticlm export` makes (read back through
`staticlm logits`); the partitioner's skip sets and the backend's passes run from Python; a method
runs over numpy arrays, updating the KV caches in place; bad arguments raise with the library's
messages."""
import json
import os

import numpy as np
import pytest

import staticlm

TOKENS = [1, 17, 42, 99, 5, 260, 3, 77]


def prefill_inputs(program, tokens):
    meta = program.method_meta("prefill")
    inputs = {}
    for info in meta["inputs"]:
        dtype = {"f32": np.float32, "f16": np.float16, "i64": np.int64, "i32": np.int32}[info["dtype"]]
        inputs[info["name"]] = np.zeros(info["shape"], dtype=dtype)
    inputs["input_ids"][0, :] = tokens
    inputs["cache_position"][:] = np.arange(len(tokens))
    return inputs


def test_a_partitioner_from_options_exports_what_the_cli_exports(tmp_path, fixture_dir, cli):
    cli_program = str(tmp_path / "cli.slm")
    code, _, err = cli("export", fixture_dir("llama3"), "-o", cli_program, "--prefill-len", "8", "--max-cache-len",
                       "64")
    assert code == 0, err
    code, out, err = cli("logits", cli_program, "--tokens", ",".join(map(str, TOKENS)))
    assert code == 0, err
    expected = np.frombuffer(out, dtype=np.float32)

    progress = []
    summary = staticlm.export(fixture_dir("llama3"), str(tmp_path / "py.slm"), prefill_len=8, max_cache_len=64,
                              partitioner=staticlm.Partitioner.from_options("cpu", {}),
                              progress=lambda done, total: progress.append((done, total)))
    assert summary["architecture"] == "LlamaForCausalLM"
    assert summary["methods"] == ["prefill", "decode"]
    assert summary["backend"] == "cpu" and "nodes on cpu" in summary["placement"]
    assert progress and progress[-1][0] == progress[-1][1] == summary["file_bytes"]
    assert all(a[0] <= b[0] for a, b in zip(progress, progress[1:]))

    program = staticlm.load_program(str(tmp_path / "py.slm"), threads=2)
    assert program.method_names() == ["prefill", "decode"]
    assert program.metadata["contract"] == "hf_static" and program.metadata["prefill_len"] == 8
    inputs = prefill_inputs(program, TOKENS)
    logits = program.run_method("prefill", inputs)["logits"]
    assert logits.dtype == np.float32 and logits.shape == (1, 8, program.metadata["vocab_size"])
    assert np.array_equal(logits.reshape(-1), expected)
    # The caches are updated in place: position 7's key row is written, position 8's is not.
    k0 = inputs["k_cache_0"]
    assert np.any(k0[0, :, 7, :] != 0) and np.all(k0[0, :, 8, :] == 0)


def test_the_partitioner_runs_the_backends_passes_and_its_skip_sets(tmp_path, fixture_dir, cli):
    partitioner = staticlm.Partitioner.from_options("cpu", {"skip_node_op_set": ["rope"], "weight_dtype": "bf16"})
    path = str(tmp_path / "skip.slm")
    summary = staticlm.export(fixture_dir("llama"), path, prefill_len=8, max_cache_len=64, partitioner=partitioner)
    assert "bf16 x " in summary["matrix_formats"]  # the backend's passes ran
    code, out, err = cli("inspect", path, "--json")
    assert code == 0, err
    placement = json.loads(out)["placement"]
    rope = [n for n in placement["methods"][0]["nodes"] if n["op"] == "rope"]
    assert rope and all(n["on"] == "portable" and "skip_node_op_set" in n["reason"] for n in rope)
    assert any(n["op"] == "multi_linear" for n in placement["methods"][0]["nodes"])
    # The portable reference program: no delegate at all.
    plain = staticlm.export(fixture_dir("llama"), str(tmp_path / "plain.slm"), prefill_len=8, max_cache_len=64,
                            partitioner="none")
    assert plain["backend"] == "" and plain["placement"] == ""


def test_export_errors_carry_the_librarys_message(tmp_path, fixture_dir):
    with pytest.raises(staticlm.Error, match="dtype: expected one of f32, f16, bf16, found 'f64'"):
        staticlm.export(fixture_dir("llama"), str(tmp_path / "x.slm"), dtype="f64")
    with pytest.raises(staticlm.Error) as missing:
        staticlm.export(str(tmp_path / "nowhere"), str(tmp_path / "x.slm"))
    assert "config.json" in str(missing.value)
    with pytest.raises(staticlm.Error, match="partitioner: expected a staticlm.Partitioner"):
        staticlm.export(fixture_dir("llama"), str(tmp_path / "x.slm"), partitioner="qnn")

    def stop(done, total):
        raise KeyboardInterrupt("stopped by the callback")
    with pytest.raises(KeyboardInterrupt, match="stopped by the callback"):
        staticlm.export(fixture_dir("llama"), str(tmp_path / "x.slm"), prefill_len=8, max_cache_len=64, progress=stop)


def test_q8_0_caches_export_and_generate_as_f32_caches_do(tmp_path, fixture_dir):
    # The bundled model's head_dim is 32: one q8_0 block per cache row.
    model = os.path.join(os.environ["STATICLM_SOURCE_DIR"], "models", "kjv-llama-6m")
    texts = []
    for cache_dtype in ("f32", "q8_0"):
        path = str(tmp_path / f"kjv_{cache_dtype}.slm")
        staticlm.export(model, path, prefill_len=32, max_cache_len=256, cache_dtype=cache_dtype)
        runner = staticlm.TextLLMRunner(path)
        assert staticlm.program_metadata(path)["cache_dtype"] == cache_dtype
        texts.append(runner.generate("In the beginning", staticlm.GenerationConfig(max_new_tokens=16,
                                                                                temperature=0.0)).text)
    assert texts[0] == texts[1]
    # The fixtures' heads of 16 values are not whole q8_0 blocks: refused, naming what is needed.
    with pytest.raises(staticlm.Error, match="head_dim that is a multiple of 32"):
        staticlm.export(fixture_dir("llama"), str(tmp_path / "x.slm"), cache_dtype="q8_0")


def test_run_method_checks_what_it_binds(tmp_path, fixture_dir):
    path = str(tmp_path / "p.slm")
    staticlm.export(fixture_dir("llama"), path, prefill_len=8, max_cache_len=64)
    program = staticlm.load_program(path)
    meta = program.method_meta("decode")
    assert meta["outputs"][0]["name"] == "logits"
    cache = next(i for i in meta["inputs"] if i["name"] == "k_cache_0")
    assert cache["mutable"] and cache["dtype"] == "f32" and cache["nbytes"] == int(np.prod(cache["shape"])) * 4
    inputs = prefill_inputs(program, TOKENS)
    with pytest.raises(staticlm.Error, match=r"input 'input_ids': expected dtype int64 \(i64\), found int32"):
        program.run_method("prefill", dict(inputs, input_ids=inputs["input_ids"].astype(np.int32)))
    with pytest.raises(staticlm.Error, match=r"input 'cache_position': expected shape \[8\], found \[7\]"):
        program.run_method("prefill", dict(inputs, cache_position=np.arange(7)))
    with pytest.raises(staticlm.Error, match="input 'v_cache_1' .* is not given"):
        program.run_method("prefill", {k: v for k, v in inputs.items() if k != "v_cache_1"})
    with pytest.raises(staticlm.Error, match="method 'prefill' has no input 'tokens'"):
        program.run_method("prefill", dict(inputs, tokens=inputs["input_ids"]))
    strided = np.zeros(inputs["k_cache_0"].shape + (2,), np.float32)[..., 0]
    with pytest.raises(staticlm.Error, match="input 'k_cache_0' is updated in place"):
        program.run_method("prefill", dict(inputs, k_cache_0=strided))
    with pytest.raises(staticlm.Error, match="NotFound|no method"):
        program.method_meta("forward")
    # A read-only input is read through a copy where its layout is not C order.
    ids = np.asfortranarray(inputs["input_ids"])
    assert program.run_method("prefill", dict(inputs, input_ids=ids))["logits"].shape[1] == 8
    with pytest.raises(staticlm.Error) as bad_file:
        staticlm.load_program(str(tmp_path / "missing.slm"))
    assert "missing.slm" in str(bad_file.value)
