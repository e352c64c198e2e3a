# SPDX-License-Identifier: Apache-2.0
"""Second, deliberately naive implementations that the reference forward pass is checked against.

Each check raises AssertionError with what disagreed; make_fixtures.py runs them for every family
before writing anything, so a fixture is never written from a reference that fails them.
"""

import math

import numpy as np
import torch

from . import checkpoint, reference_model


def naive_attention(q, k, v, layer):
    """One query position and one head at a time, keys max(0, t - window + 1) .. t only, the
    soft-cap and the softmax by hand."""
    seq_len, num_heads, head_dim = q.shape
    group = num_heads // k.shape[1]
    out = torch.zeros_like(q)
    for t in range(seq_len):
        first = 0 if layer.window is None else max(0, t - layer.window + 1)
        for h in range(num_heads):
            kv_head = h // group
            scores = []
            for s in range(first, t + 1):
                dot = float(q[t, h] @ k[s, kv_head])
                score = dot / math.sqrt(head_dim) if layer.scale is None else dot * layer.scale
                if layer.softcap is not None:
                    score = layer.softcap * math.tanh(score / layer.softcap)
                scores.append(score)
            top = max(scores)
            exps = [math.exp(x - top) for x in scores]
            total = sum(exps)
            for s, e in zip(range(first, t + 1), exps):
                out[t, h] += (e / total) * v[s, kv_head]
    return out


def meta_llama3_inverse_frequencies(spec):
    """Meta's scalar apply_scaling from the llama3 reference code, on plain Python floats."""
    scaling = spec.rope_scaling
    factor = scaling["factor"]
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_context_len = scaling["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = old_context_len / low, old_context_len / high
    freqs = []
    for i in range(spec.head_dim // 2):
        freq = 1.0 / spec.rope_theta ** (2 * i / spec.head_dim)
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            freqs.append(freq)
        elif wavelen > low_freq_wavelen:
            freqs.append(freq / factor)
        else:
            smooth = (old_context_len / wavelen - low) / (high - low)
            freqs.append((1 - smooth) * freq / factor + smooth * freq)
    return freqs


def naive_rope(x, positions, spec):
    """Rotates each channel pair (i, i + d/2) of the leading d = rotary_dim channels by its own
    angle, one scalar at a time; the channels past d pass unchanged, and a layer without rope
    passes everything.

    Linear scaling is applied the way the HF docs describe it (position / factor) rather than by
    dividing inv_freq, so the two formulations are checked against each other; longrope divides
    each frequency by its factor (short or long by the sequence's length) and scales the rotated
    pair by the attention factor.
    """
    if spec is None:
        return x.clone()
    kind = reference_model.rope_type(spec)
    half = spec.dim // 2
    if kind == "llama3":
        freqs = meta_llama3_inverse_frequencies(spec)
    elif kind == "longrope":
        factors = reference_model.longrope_factors(spec, int(positions.max()) + 1)
        freqs = [1.0 / (factors[i] * spec.rope_theta ** (2 * i / spec.dim)) for i in range(half)]
    else:
        freqs = [1.0 / spec.rope_theta ** (2 * i / spec.dim) for i in range(half)]
    scale = spec.rope_scaling["factor"] if kind == "linear" else 1.0
    out = x.clone()
    for s in range(x.shape[0]):
        position = float(positions[s]) / scale
        for h in range(x.shape[1]):
            for i in range(half):
                c, sn = math.cos(position * freqs[i]), math.sin(position * freqs[i])
                a, b = float(x[s, h, i]), float(x[s, h, i + half])
                out[s, h, i] = (a * c - b * sn) * spec.attention_factor
                out[s, h, i + half] = (b * c + a * sn) * spec.attention_factor
    return out


def relative_error(actual, expected):
    return float((actual - expected).abs().max() / expected.abs().max())


def check_bf16_rounding(rng_seed=0):
    values = np.random.RandomState(rng_seed).standard_normal(10000).astype(np.float32)
    values[:4] = [1.00390625, 1.01171875, -1.00390625, 3.0e-39]  # ties to even, a subnormal
    ours = checkpoint.float32_to_bf16_bits(values)
    theirs = torch.from_numpy(values).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(ours, theirs), "float32 -> bf16 rounding disagrees with torch"


def check_forward(weights, spec, prompt, greedy, logits64, family):
    """float32 run of the same code; naive attention and naive RoPE; causality; greedy replay.

    Returns the float32 run's relative error.
    """
    logits32 = reference_model.forward(weights, spec, prompt, torch.float32).to(torch.float64)
    float32_error = relative_error(logits32, logits64)
    assert float32_error < 1e-4, f"{family}: float32 and float64 forwards differ by {float32_error:.2e} (relative)"

    tokens = list(prompt) + list(greedy)
    fast = reference_model.forward(weights, spec, tokens)
    naive = reference_model.forward(weights, spec, tokens, attention=naive_attention, rope=naive_rope)
    err = relative_error(naive, fast)
    assert err < 1e-10, f"{family}: naive attention/RoPE forward differs by {err:.2e} (relative)"
    err = relative_error(fast[: len(prompt)], logits64)
    assert err < 1e-10, f"{family}: appending tokens changes the prompt's logits by {err:.2e} (not causal)"
    replayed = fast[len(prompt) - 1 : -1].argmax(dim=-1).tolist()
    assert replayed == list(greedy), f"{family}: one forward over prompt + greedy disagrees with the greedy steps"

    rope = spec.layer(0)[1]
    if reference_model.rope_type(rope) == "llama3":
        ours = reference_model.inverse_frequencies(rope, torch.float64)
        meta = torch.tensor(meta_llama3_inverse_frequencies(rope), dtype=torch.float64)
        assert relative_error(ours, meta) < 1e-12, f"{family}: llama3 inverse frequencies disagree"
        base = reference_model.default_inverse_frequencies(rope, torch.float64)
        ratio = (ours / base).tolist()
        factor = rope.rope_scaling["factor"]
        assert any(abs(r - 1) < 1e-12 for r in ratio), f"{family}: no unscaled high-frequency band"
        assert any(abs(r - 1 / factor) < 1e-12 for r in ratio), f"{family}: no fully scaled band"
        assert any(1 / factor + 1e-6 < r < 1 - 1e-6 for r in ratio), f"{family}: no smoothed band"
    return float32_error
