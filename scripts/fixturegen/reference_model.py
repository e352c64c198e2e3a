# SPDX-License-Identifier: Apache-2.0
"""A plain PyTorch forward pass of the Hugging Face Llama / Qwen2 / Mistral / Qwen3 / Gemma 2 / Gemma 3 /
Phi-3 / SmolLM3 / Granite / OLMo 2 decoders.

This is the correctness oracle for staticlm's C++ tests, so it favours being obviously right over
being fast: no KV cache, no fused kernels, every step written as in transformers' modeling files
(modeling_llama.py, modeling_qwen2.py, modeling_mistral.py, modeling_qwen3.py, modeling_gemma2.py,
modeling_gemma3.py, modeling_phi3.py, modeling_smollm3.py, modeling_granite.py, modeling_olmo2.py).
It computes in the dtype it is given (float64 for the fixtures) from the BF16 weights upcast
exactly; it does NOT mimic the BF16 rounding of intermediate activations that an HF run in bfloat16
would do. How each family's config.json becomes a ModelSpec is family_specs.py.
"""

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class RopeSpec:
    """One layer's rotary embedding: what LlamaRotaryEmbedding / Gemma3RotaryEmbedding /
    Phi3RotaryEmbedding compute."""

    head_dim: int
    rope_theta: float
    rope_scaling: dict  # None, or the config's rope_scaling dict
    rotary_dim: int = None  # None: the whole head; else partial_rotary_factor's leading channels
    # longrope: the short factors while the sequence is at most this long, the long ones beyond it
    # (dynamic_rope_update), and cos and sin times attention_factor.
    original_max_position_embeddings: int = None
    attention_factor: float = 1.0

    @property
    def dim(self):
        return self.head_dim if self.rotary_dim is None else self.rotary_dim


@dataclass(frozen=True)
class LayerAttention:
    """How one layer attends: eager_attention_forward's scaling and softcap, and the mask's window."""

    scale: float = None  # None: 1 / sqrt(head_dim), as a division (Llama's eager attention)
    window: int = None  # None: causal over every earlier position; else positions p - window < j <= p
    softcap: float = None  # None: no tanh soft-capping of the scores


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
    qk_norm: bool  # Qwen3, Gemma 3: RMSNorm over head_dim on q and k, before RoPE
    # Gemma: RMSNorm weights apply as (1 + w), embeddings are scaled, the MLP gate's activation is
    # GELU (tanh), post-norms wrap attention and the MLP, and each layer has its own window and rope.
    norm_offset: float = 0.0
    embed_scale: float = 1.0
    activation: str = "silu"
    # Where a block's norms sit: "pre" (Llama: before attention and the MLP), "sandwich" (Gemma:
    # before and after both), "post" (OLMo 2: after both only).
    norms: str = "pre"
    layers: tuple = None  # per layer: (LayerAttention, RopeSpec or None for no rope); None: Llama's for every layer
    final_softcap: float = None
    qk_norm_whole: bool = False  # OLMo 2: q_norm / k_norm over the whole projection, before the split into heads
    fused_projections: bool = False  # Phi-3: qkv_proj and gate_up_proj, split in the forward
    residual_scale: float = 1.0  # Granite: residual_multiplier on attention's and the MLP's outputs
    logits_scaling: float = 1.0  # Granite: the logits are divided by it

    @staticmethod
    def from_config(config):
        from . import family_specs

        return family_specs.model_spec(config)

    def layer(self, i):
        """(LayerAttention, RopeSpec or None) of layer i."""
        if self.layers is not None:
            return self.layers[i]
        return LayerAttention(), RopeSpec(self.head_dim, self.rope_theta, self.rope_scaling)


def rope_type(spec):
    if spec is None or spec.rope_scaling is None:
        return "default"
    kind = spec.rope_scaling.get("rope_type", spec.rope_scaling.get("type"))
    return "longrope" if kind == "su" else kind  # Phi3Config renames the old "su"


def default_inverse_frequencies(spec, dtype):
    d = spec.dim
    return 1.0 / (spec.rope_theta ** (torch.arange(0, d, 2, dtype=torch.int64).to(dtype) / d))


def longrope_factors(spec, seq_len):
    """_compute_longrope_parameters' ext_factors: the long list once the sequence is longer than
    original_max_position_embeddings."""
    key = "long_factor" if seq_len > spec.original_max_position_embeddings else "short_factor"
    return spec.rope_scaling[key]


def inverse_frequencies(spec, dtype, seq_len=None):
    """transformers' ROPE_INIT_FUNCTIONS for rope_type default / linear / llama3 / longrope."""
    kind = rope_type(spec)
    if kind == "longrope":
        # _compute_longrope_parameters: 1 / (ext_factors * base ** (arange(0, d, 2) / d)).
        d = spec.dim
        factors = torch.tensor(longrope_factors(spec, seq_len), dtype=dtype)
        return 1.0 / (factors * spec.rope_theta ** (torch.arange(0, d, 2, dtype=torch.int64).to(dtype) / d))
    inv_freq = default_inverse_frequencies(spec, dtype)
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
    """x: [S, H, Dh]; positions: int [S]. LlamaRotaryEmbedding + apply_rotary_pos_emb, with Phi-3's
    partial rotation (the channels past rotary_dim pass) and longrope (factors by the sequence's
    length, cos and sin times the attention factor). A layer without rope (spec None) passes x."""
    if spec is None:
        return x
    seq_len = int(positions.max()) + 1
    inv_freq = inverse_frequencies(spec, x.dtype, seq_len)
    freqs = positions.to(x.dtype)[:, None] * inv_freq[None, :]  # [S, d/2]
    emb = torch.cat((freqs, freqs), dim=-1)  # [S, d]
    cos = emb.cos()[:, None, :] * spec.attention_factor
    sin = emb.sin()[:, None, :] * spec.attention_factor
    rotated, passed = x[..., : spec.dim], x[..., spec.dim :]
    return torch.cat((rotated * cos + rotate_half(rotated) * sin, passed), dim=-1)


def rms_norm(x, weight, eps, offset=0.0):
    """Llama's x * rsqrt(mean(x²) + eps) * w; Gemma's with (1 + w) (offset 1)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (offset + weight)


def softcap(x, cap):
    """Gemma's tanh soft-capping: cap * tanh(x / cap)."""
    return x if cap is None else cap * torch.tanh(x / cap)


def causal_attention(q, k, v, layer):
    """q: [S, Hq, Dh]; k, v: [S, Hkv, Dh] -> [S, Hq, Dh]. repeat_kv + eager_attention_forward, with
    the (sliding window) causal mask of masking_utils."""
    seq_len = q.shape[0]
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)  # query head h reads kv head h // group
    v = v.repeat_interleave(group, dim=1)
    scores = torch.einsum("shd,thd->hst", q, k)
    scores = scores / math.sqrt(q.shape[2]) if layer.scale is None else scores * layer.scale
    scores = softcap(scores, layer.softcap)
    query = torch.arange(seq_len)[:, None]
    key = torch.arange(seq_len)[None, :]
    masked = key > query
    if layer.window is not None:
        masked = masked | (query - key >= layer.window)
    scores = scores.masked_fill(masked, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum("hst,thd->shd", probs, v)


def linear(x, weights, name, bias=False):
    y = x @ weights[name + ".weight"].T
    if bias:
        y = y + weights[name + ".bias"]
    return y


ACTIVATIONS = {
    "silu": torch.nn.functional.silu,
    "gelu_pytorch_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
}


def project_qkv(x, w, p, spec):
    """q [S, Hq*Dh], k and v [S, Hkv*Dh]: three projections, or Phi-3's qkv_proj sliced as
    Phi3Attention slices it (queries, then keys, then values)."""
    q_width, kv_width = spec.num_heads * spec.head_dim, spec.num_kv_heads * spec.head_dim
    if spec.fused_projections:
        qkv = linear(x, w, p + "self_attn.qkv_proj")
        return qkv[:, :q_width], qkv[:, q_width : q_width + kv_width], qkv[:, q_width + kv_width :]
    return (
        linear(x, w, p + "self_attn.q_proj", spec.qkv_bias),
        linear(x, w, p + "self_attn.k_proj", spec.qkv_bias),
        linear(x, w, p + "self_attn.v_proj", spec.qkv_bias),
    )


def mlp(x, w, p, spec):
    """down(act(gate) * up); Phi-3's gate_up_proj chunked in two, gate first (Phi3MLP)."""
    if spec.fused_projections:
        gate, up = linear(x, w, p + "mlp.gate_up_proj").chunk(2, dim=-1)
    else:
        gate, up = linear(x, w, p + "mlp.gate_proj"), linear(x, w, p + "mlp.up_proj")
    return linear(ACTIVATIONS[spec.activation](gate) * up, w, p + "mlp.down_proj")


def forward(weights, spec, tokens, dtype=torch.float64, attention=causal_attention, rope=apply_rope):
    """Logits [S, V] of the full causal forward over `tokens` (positions 0 .. S-1).

    weights: name -> tensor with Hugging Face checkpoint names (any float dtype; cast to dtype).
    attention / rope: replaceable so the self-checks can substitute naive implementations.
    """
    h = hidden_states(weights, spec, tokens, dtype, attention, rope)
    head = weights["model.embed_tokens.weight"] if spec.tie_word_embeddings else weights["lm_head.weight"]
    return softcap(h @ head.to(dtype).T, spec.final_softcap) / spec.logits_scaling


def hidden_states(weights, spec, tokens, dtype=torch.float64, attention=causal_attention, rope=apply_rope):
    """The last hidden state [S, D], after the final norm (transformers' last_hidden_state)."""
    w = {name: t.to(dtype) for name, t in weights.items()}
    eps = spec.rms_norm_eps

    def norm(x, name):
        return rms_norm(x, w[name], eps, spec.norm_offset)

    seq_len = len(tokens)
    positions = torch.arange(seq_len, dtype=torch.int64)
    h = w["model.embed_tokens.weight"][torch.tensor(tokens, dtype=torch.int64)] * spec.embed_scale  # [S, D]
    for i in range(spec.num_layers):
        p = f"model.layers.{i}."
        layer, layer_rope = spec.layer(i)
        x = h if spec.norms == "post" else norm(h, p + "input_layernorm.weight")
        q, k, v = project_qkv(x, w, p, spec)
        if spec.qk_norm and spec.qk_norm_whole:
            q = norm(q, p + "self_attn.q_norm.weight")
            k = norm(k, p + "self_attn.k_norm.weight")
        q = q.view(seq_len, spec.num_heads, spec.head_dim)
        k = k.view(seq_len, spec.num_kv_heads, spec.head_dim)
        v = v.view(seq_len, spec.num_kv_heads, spec.head_dim)
        if spec.qk_norm and not spec.qk_norm_whole:
            q = norm(q, p + "self_attn.q_norm.weight")
            k = norm(k, p + "self_attn.k_norm.weight")
        q = rope(q, positions, layer_rope)
        k = rope(k, positions, layer_rope)
        attn = attention(q, k, v, layer).reshape(seq_len, spec.num_heads * spec.head_dim)
        attn = linear(attn, w, p + "self_attn.o_proj")
        if spec.norms != "pre":
            attn = norm(attn, p + "post_attention_layernorm.weight")
        h = h + attn * spec.residual_scale
        if spec.norms == "sandwich":
            x = norm(h, p + "pre_feedforward_layernorm.weight")
        elif spec.norms == "pre":
            x = norm(h, p + "post_attention_layernorm.weight")
        else:
            x = h
        out = mlp(x, w, p, spec)
        if spec.norms != "pre":
            out = norm(out, p + "post_feedforward_layernorm.weight")
        h = h + out * spec.residual_scale
    return norm(h, "model.norm.weight")


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
