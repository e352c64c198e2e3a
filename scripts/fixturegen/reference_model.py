# SPDX-License-Identifier: Apache-2.0
"""A plain PyTorch forward pass of the Hugging Face Llama / Qwen2 / Mistral / Qwen3 / Gemma 2 / Gemma 3
decoders.

This is the correctness oracle for staticlm's C++ tests, so it favours being obviously right over
being fast: no KV cache, no fused kernels, every step written as in transformers' modeling files
(modeling_llama.py, modeling_qwen2.py, modeling_mistral.py, modeling_qwen3.py, modeling_gemma2.py,
modeling_gemma3.py). It computes in the dtype it is given (float64 for the fixtures) from the BF16
weights upcast exactly; it does NOT mimic the BF16 rounding of intermediate activations that an HF
run in bfloat16 would do.
"""

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class RopeSpec:
    """One layer's rotary embedding: what LlamaRotaryEmbedding / Gemma3RotaryEmbedding compute."""

    head_dim: int
    rope_theta: float
    rope_scaling: dict  # None, or the config's rope_scaling dict


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
    sandwich_norms: bool = False
    layers: tuple = None  # per layer: (LayerAttention, RopeSpec); None: Llama's for every layer
    final_softcap: float = None

    @staticmethod
    def from_config(config):
        model_type = config["model_type"]
        if model_type in ("gemma2", "gemma3_text"):
            return gemma_spec(config)
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

    def layer(self, i):
        """(LayerAttention, RopeSpec) of layer i."""
        if self.layers is not None:
            return self.layers[i]
        return LayerAttention(), RopeSpec(self.head_dim, self.rope_theta, self.rope_scaling)


def gemma_layer_types(config):
    """transformers' Gemma2Config / Gemma3TextConfig: layer_types, else every `pattern`-th layer
    (1-based) global and the rest sliding; Gemma 2 alternates (pattern 2)."""
    if config.get("layer_types") is not None:
        return list(config["layer_types"])
    default_pattern = 6 if config["model_type"] == "gemma3_text" else 2
    pattern = config.get("sliding_window_pattern", config.get("_sliding_window_pattern", default_pattern))
    return [
        "sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(config["num_hidden_layers"])
    ]


def gemma_spec(config):
    """Gemma2ForCausalLM / Gemma3ForCausalLM: sliding layers use the window and, in Gemma 3, their
    own unscaled rope base (rope_local_base_freq); rope_scaling applies to the global layers."""
    gemma3 = config["model_type"] == "gemma3_text"
    head_dim = config["head_dim"]
    scale = config["query_pre_attn_scalar"] ** -0.5
    layers = []
    for kind in gemma_layer_types(config):
        sliding = kind == "sliding_attention"
        if gemma3 and sliding:
            rope = RopeSpec(head_dim, config["rope_local_base_freq"], None)
        else:
            rope = RopeSpec(head_dim, config["rope_theta"], config.get("rope_scaling"))
        window = config["sliding_window"] if sliding else None
        layers.append((LayerAttention(scale, window, config.get("attn_logit_softcapping")), rope))
    # Gemma3TextScaledWordEmbedding: sqrt(hidden) as a float32 tensor, cast to the weights' dtype.
    embed_scale = torch.tensor(config["hidden_size"] ** 0.5).to(dtype_of(config)).item()
    return ModelSpec(
        vocab_size=config["vocab_size"],
        hidden_size=config["hidden_size"],
        intermediate_size=config["intermediate_size"],
        num_layers=config["num_hidden_layers"],
        num_heads=config["num_attention_heads"],
        num_kv_heads=config["num_key_value_heads"],
        head_dim=head_dim,
        rms_norm_eps=config["rms_norm_eps"],
        rope_theta=config["rope_theta"],
        rope_scaling=config.get("rope_scaling"),
        # Gemma's configs leave the tie out: PretrainedConfig's default (True) holds.
        tie_word_embeddings=config.get("tie_word_embeddings", True),
        qkv_bias=False,
        qk_norm=gemma3,
        norm_offset=1.0,
        embed_scale=embed_scale,
        activation=config["hidden_activation"],
        sandwich_norms=True,
        layers=tuple(layers),
        final_softcap=config.get("final_logit_softcapping"),
    )


def dtype_of(config):
    return {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[config["torch_dtype"]]


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


def forward(weights, spec, tokens, dtype=torch.float64, attention=causal_attention, rope=apply_rope):
    """Logits [S, V] of the full causal forward over `tokens` (positions 0 .. S-1).

    weights: name -> tensor with Hugging Face checkpoint names (any float dtype; cast to dtype).
    attention / rope: replaceable so the self-checks can substitute naive implementations.
    """
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
        x = norm(h, p + "input_layernorm.weight")
        q = linear(x, w, p + "self_attn.q_proj", spec.qkv_bias).view(seq_len, spec.num_heads, spec.head_dim)
        k = linear(x, w, p + "self_attn.k_proj", spec.qkv_bias).view(seq_len, spec.num_kv_heads, spec.head_dim)
        v = linear(x, w, p + "self_attn.v_proj", spec.qkv_bias).view(seq_len, spec.num_kv_heads, spec.head_dim)
        if spec.qk_norm:
            q = norm(q, p + "self_attn.q_norm.weight")
            k = norm(k, p + "self_attn.k_norm.weight")
        q = rope(q, positions, layer_rope)
        k = rope(k, positions, layer_rope)
        attn = attention(q, k, v, layer).reshape(seq_len, spec.num_heads * spec.head_dim)
        attn = linear(attn, w, p + "self_attn.o_proj")
        if spec.sandwich_norms:
            h = h + norm(attn, p + "post_attention_layernorm.weight")
            x = norm(h, p + "pre_feedforward_layernorm.weight")
        else:
            h = h + attn
            x = norm(h, p + "post_attention_layernorm.weight")
        gate = linear(x, w, p + "mlp.gate_proj")
        up = linear(x, w, p + "mlp.up_proj")
        mlp = linear(ACTIVATIONS[spec.activation](gate) * up, w, p + "mlp.down_proj")
        if spec.sandwich_norms:
            mlp = norm(mlp, p + "post_feedforward_layernorm.weight")
        h = h + mlp
    h = norm(h, "model.norm.weight")
    head = w["model.embed_tokens.weight"] if spec.tie_word_embeddings else w["lm_head.weight"]
    return softcap(h @ head.T, spec.final_softcap)


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
