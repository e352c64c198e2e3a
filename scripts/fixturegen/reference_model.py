"""A plain PyTorch forward pass of the Hugging Face Llama / Qwen2 / Mistral / Qwen3 decoder.

This is the correctness oracle for staticlm's C++ tests, so it favours being obviously right over
being fast: no KV cache, no fused kernels, every step written as in transformers' modeling files
(modeling_llama.py, modeling_qwen2.py, modeling_mistral.py, modeling_qwen3.py). It computes in
the dtype it is given (float64 for the fixtures) from the BF16 weights upcast exactly; it does
NOT mimic the BF16 rounding of intermediate activations that an HF run in bfloat16 would do.
"""

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ModelSpec:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    rope_scaling: dict  # None, or the config's rope_scaling dict
    tie_word_embeddings: bool
    qkv_bias: bool  # Qwen2: q/k/v projections have a bias, o_proj does not
    qk_norm: bool  # Qwen3: RMSNorm over head_dim on q and k, before RoPE

    @staticmethod
    def from_config(config):
        model_type = config["model_type"]
        if config.get("attention_bias", False):
            raise ValueError("attention_bias (q/k/v and o biases) is not covered by this reference")
        return ModelSpec(
            vocab_size=config["vocab_size"],
            hidden_size=config["hidden_size"],
            intermediate_size=config["intermediate_size"],
            num_layers=config["num_hidden_layers"],
            num_heads=config["num_attention_heads"],
            num_kv_heads=config["num_key_value_heads"],
            head_dim=config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"],
            rms_norm_eps=config["rms_norm_eps"],
            rope_theta=config["rope_theta"],
            rope_scaling=config.get("rope_scaling"),
            tie_word_embeddings=config["tie_word_embeddings"],
            qkv_bias=model_type == "qwen2",
            qk_norm=model_type == "qwen3",
        )


def rope_type(spec):
    if spec.rope_scaling is None:
        return "default"
    return spec.rope_scaling.get("rope_type", spec.rope_scaling.get("type"))


def default_inverse_frequencies(spec, dtype):
    d = spec.head_dim
    return 1.0 / (spec.rope_theta ** (torch.arange(0, d, 2, dtype=torch.int64).to(dtype) / d))


def inverse_frequencies(spec, dtype):
    """transformers' ROPE_INIT_FUNCTIONS for rope_type default / linear / llama3."""
    inv_freq = default_inverse_frequencies(spec, dtype)
    kind = rope_type(spec)
    if kind == "default":
        return inv_freq
    factor = spec.rope_scaling["factor"]
    if kind == "linear":
        return inv_freq / factor
    if kind == "llama3":
        # _compute_llama3_parameters
        low_freq_factor = spec.rope_scaling["low_freq_factor"]
        high_freq_factor = spec.rope_scaling["high_freq_factor"]
        old_context_len = spec.rope_scaling["original_max_position_embeddings"]
        low_freq_wavelen = old_context_len / low_freq_factor
        high_freq_wavelen = old_context_len / high_freq_factor
        wavelen = 2 * math.pi / inv_freq
        inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
        smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
        smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
        is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
        return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)
    raise ValueError(f"rope_scaling type '{kind}' is not covered by this reference")


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x, positions, spec):
    """x: [S, H, Dh]; positions: int [S]. LlamaRotaryEmbedding + apply_rotary_pos_emb."""
    inv_freq = inverse_frequencies(spec, x.dtype)
    freqs = positions.to(x.dtype)[:, None] * inv_freq[None, :]  # [S, Dh/2]
    emb = torch.cat((freqs, freqs), dim=-1)  # [S, Dh]
    cos = emb.cos()[:, None, :]
    sin = emb.sin()[:, None, :]
    return x * cos + rotate_half(x) * sin


def rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def causal_attention(q, k, v):
    """q: [S, Hq, Dh]; k, v: [S, Hkv, Dh] -> [S, Hq, Dh]. repeat_kv + eager_attention_forward."""
    seq_len, num_heads, head_dim = q.shape
    group = num_heads // k.shape[1]
    k = k.repeat_interleave(group, dim=1)  # query head h reads kv head h // group
    v = v.repeat_interleave(group, dim=1)
    scores = torch.einsum("shd,thd->hst", q, k) / math.sqrt(head_dim)
    future = torch.ones(seq_len, seq_len, dtype=torch.bool).triu(diagonal=1)
    scores = scores.masked_fill(future, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum("hst,thd->shd", probs, v)


def linear(x, weights, name, bias=False):
    y = x @ weights[name + ".weight"].T
    if bias:
        y = y + weights[name + ".bias"]
    return y


def forward(weights, spec, tokens, dtype=torch.float64, attention=causal_attention, rope=apply_rope):
    """Logits [S, V] of the full causal forward over `tokens` (positions 0 .. S-1).

    weights: name -> tensor with Hugging Face checkpoint names (any float dtype; cast to dtype).
    attention / rope: replaceable so the self-checks can substitute naive implementations.
    """
    w = {name: t.to(dtype) for name, t in weights.items()}
    eps = spec.rms_norm_eps
    seq_len = len(tokens)
    positions = torch.arange(seq_len, dtype=torch.int64)
    h = w["model.embed_tokens.weight"][torch.tensor(tokens, dtype=torch.int64)]  # [S, D]
    for i in range(spec.num_layers):
        p = f"model.layers.{i}."
        x = rms_norm(h, w[p + "input_layernorm.weight"], eps)
        q = linear(x, w, p + "self_attn.q_proj", spec.qkv_bias).view(seq_len, spec.num_heads, spec.head_dim)
        k = linear(x, w, p + "self_attn.k_proj", spec.qkv_bias).view(seq_len, spec.num_kv_heads, spec.head_dim)
        v = linear(x, w, p + "self_attn.v_proj", spec.qkv_bias).view(seq_len, spec.num_kv_heads, spec.head_dim)
        if spec.qk_norm:
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q = rope(q, positions, spec)
        k = rope(k, positions, spec)
        attn = attention(q, k, v).reshape(seq_len, spec.num_heads * spec.head_dim)
        h = h + linear(attn, w, p + "self_attn.o_proj")
        x = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        gate = linear(x, w, p + "mlp.gate_proj")
        up = linear(x, w, p + "mlp.up_proj")
        h = h + linear(torch.nn.functional.silu(gate) * up, w, p + "mlp.down_proj")
    h = rms_norm(h, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if spec.tie_word_embeddings else w["lm_head.weight"]
    return h @ head.T


def greedy(weights, spec, prompt, steps, dtype=torch.float64):
    """Greedy continuation, re-running the full forward over prompt + generated at every step.

    Returns (tokens, margins): margins[j] is top-1 minus top-2 logit at step j.
    """
    tokens = list(prompt)
    generated, margins = [], []
    for _ in range(steps):
        last = forward(weights, spec, tokens, dtype)[-1]
        top2 = torch.topk(last, 2)
        generated.append(int(top2.indices[0]))
        margins.append(float(top2.values[0] - top2.values[1]))
        tokens.append(generated[-1])
    return generated, margins
