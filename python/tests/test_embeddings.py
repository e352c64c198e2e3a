# SPDX-License-Identifier: Apache-2.0
"""Embeddings against the PyTorch transcription of the Hugging Face equations
(scripts/fixturegen/reference_model.py, float64 from the fixtures' BF16 weights): every token's
final-normed hidden state (transformers' last_hidden_state), mean and last pooling and L2
normalisation, for each graph builder (the Llama-shaped families, Gemma 2 / 3 with windows and
soft-caps, OLMo 2's post-norms), on the portable and the cpu kernels, both KV update forms, with
prompts that span prefill chunks and leave a padded last chunk. Then what embedding leaves in the
cache, text and batch inputs, and the refusals."""
import json
import sys

import numpy as np
import pytest
import torch

import staticlm
from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from fixturegen import checkpoint, family_specs, reference_model  # noqa: E402

FAMILIES = ["llama", "llama3", "qwen2", "qwen3", "mistral", "gemma2", "gemma3", "phi3", "smollm3", "granite", "olmo2"]
# f32 arithmetic against float64 on values up to 4: the largest error seen is 5.7e-6.
TOLERANCE = 2e-5


def fixture(family):
    return ROOT / "tests" / "fixtures" / family


def prompt_of(family):
    reference = json.loads((fixture(family) / "reference.json").read_text())
    return reference["prompt_tokens"] + reference["greedy_tokens"]


def reference_hidden_states(family, tokens):
    config = json.loads((fixture(family) / "config.json").read_text())
    raw = checkpoint.read_safetensors(fixture(family) / "model.safetensors")
    weights = {name: torch.from_numpy(checkpoint.bf16_bits_to_float64(bits)) for name, bits in raw.items()}
    return reference_model.hidden_states(weights, family_specs.model_spec(config), tokens).numpy()


def export(folder, family, **options):
    path = str(folder / f"{family}-{'-'.join(f'{k}={v}' for k, v in sorted(options.items()))}.slm")
    # A chunk of 7 does not divide the prompts: the last chunk is padded.
    staticlm.export(str(fixture(family)), path, prefill_len=7, max_cache_len=64,
                    **{"embeddings": "mean", **options})
    return path


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("kernels", ["portable", "cpu"])
def test_every_tokens_hidden_state_is_the_references(tmp_path, family, kernels):
    tokens = prompt_of(family)
    path = export(tmp_path, family, partitioner="none" if kernels == "portable" else None)
    runner = staticlm.TextLLMRunner(path, threads=1)
    assert runner.hidden_size == reference_hidden_states(family, tokens[:1]).shape[1]
    actual = runner.embed(tokens, pooling="none")
    expected = reference_hidden_states(family, tokens)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("family", ["llama", "gemma3"])
def test_pooling_and_normalisation(tmp_path, family):
    tokens = prompt_of(family)
    expected = reference_hidden_states(family, tokens)
    runner = staticlm.TextLLMRunner(export(tmp_path, family, embeddings="last"), threads=1)
    assert runner.embedding_pooling == "last"
    np.testing.assert_allclose(runner.embed(tokens), expected[-1], rtol=0, atol=TOLERANCE)
    mean = expected.mean(axis=0)
    np.testing.assert_allclose(runner.embed(tokens, pooling="mean"), mean, rtol=0, atol=TOLERANCE)
    normalized = runner.embed(tokens, pooling="mean", normalize=True)
    np.testing.assert_allclose(normalized, mean / np.linalg.norm(mean), rtol=0, atol=TOLERANCE)
    assert abs(np.linalg.norm(normalized) - 1) < 1e-6
    rows = runner.embed(tokens, pooling="none", normalize=True)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1, rtol=0, atol=1e-6)


@pytest.mark.parametrize("kv_update", ["returned", "in-place"])
def test_a_prompt_as_long_as_the_cache_in_either_kv_form(tmp_path, kv_update):
    tokens = (prompt_of("gemma2") * 4)[:64]
    path = export(tmp_path, "gemma2", kv_update=kv_update, cache_dtype="f32")
    actual = staticlm.TextLLMRunner(path, threads=2).embed(tokens, pooling="none")
    np.testing.assert_allclose(actual, reference_hidden_states("gemma2", tokens), rtol=0, atol=TOLERANCE)


def test_the_cache_holds_the_embedded_tokens_as_a_prefill_leaves_them(tmp_path):
    path = export(tmp_path, "llama", partitioner="none")
    text = "the cat sat on the mat, and then the cat sat again"
    embedded = staticlm.TextLLMRunner(path, threads=1)
    tokens = embedded.tokenizer.encode(text)
    embedded.embed(text)
    assert embedded.position == len(tokens) and embedded.cached_tokens == tokens
    # A generation that reuses the cached prompt continues as one that prefilled it.
    config = staticlm.GenerationConfig(max_new_tokens=8, temperature=0, reuse_cached_prefix=True)
    continued = embedded.generate(text, config)
    assert continued.stats.cached_prompt_tokens == len(tokens) - 1
    plain = staticlm.TextLLMRunner(path, threads=1).generate(text, config)
    assert continued.tokens == plain.tokens


def test_texts_token_ids_and_batches(tmp_path):
    runner = staticlm.TextLLMRunner(export(tmp_path, "llama"), threads=1)
    texts = ["hello there", "a rather longer sentence that spans chunks"]
    batch = runner.embed(texts, normalize=True)
    assert batch.shape == (2, runner.hidden_size) and batch.dtype == np.float32
    for row, text in zip(batch, texts):
        np.testing.assert_array_equal(row, runner.embed(runner.tokenizer.encode(text), normalize=True))
        np.testing.assert_array_equal(row, runner.embed(text, normalize=True))
    assert not np.allclose(batch[0], batch[1])
    # Every token's rows of texts of different lengths: a list of arrays.
    rows = runner.embed(texts, pooling="none")
    assert [r.shape for r in rows] == [(len(runner.tokenizer.encode(t)), runner.hidden_size) for t in texts]


def test_refusals(tmp_path):
    plain = str(tmp_path / "plain.slm")
    staticlm.export(str(fixture("llama")), plain, prefill_len=7, max_cache_len=64)
    runner = staticlm.TextLLMRunner(plain, threads=1)
    assert runner.embedding_pooling is None
    with pytest.raises(staticlm.Error, match="no embeddings method: export it with --embeddings") as error:
        runner.embed("hello")
    assert error.value.code == "FailedPrecondition"

    runner = staticlm.TextLLMRunner(export(tmp_path, "llama"), threads=1)
    with pytest.raises(staticlm.Error, match="expected the pooling mean, last or none, found 'first'"):
        runner.embed("hello", pooling="first")
    with pytest.raises(staticlm.Error, match=r"token id 320 is outside the vocabulary \[0, 320\)"):
        runner.embed([1, 320])
    with pytest.raises(staticlm.Error, match="nothing to embed"):
        runner.embed([])
    runner.embed("hello there")
    held = runner.cached_tokens
    with pytest.raises(staticlm.Error, match="would exceed the cache length 64") as error:
        runner.embed([5] * 65)
    assert error.value.code == "OutOfRange"
    for refused in ([5] * 65, [1, 320], [], "x" * 200):
        with pytest.raises(staticlm.Error):
            runner.embed(refused, pooling="none")
    assert runner.cached_tokens == held  # refused before the cache was touched
    with pytest.raises(staticlm.Error, match="embeddings: expected 'mean', 'last' or None, found True"):
        staticlm.export(str(fixture("llama")), str(tmp_path / "bad.slm"), embeddings=True)
    with pytest.raises(staticlm.Error, match="option 'embeddings': expected the pooling, mean or last, found 'max'"):
        staticlm.export(str(fixture("llama")), str(tmp_path / "bad.slm"), embeddings="max")
