# SPDX-License-Identifier: Apache-2.0
"""How each family's config.json becomes the reference's ModelSpec, as transformers' config classes
and modeling files read it: which layers slide and with what window, each layer's rope (or none),
the attention scale, the norms' placement and the multipliers."""

import math

import torch

from .reference_model import LayerAttention, ModelSpec, RopeSpec


def model_spec(config):
    model_type = config["model_type"]
    if model_type in ("gemma2", "gemma3_text"):
        return gemma_spec(config)
    if config.get("attention_bias", False):
        raise ValueError("attention_bias (q/k/v and o biases) is not covered by this reference")
    specs = {"phi3": phi3_spec, "smollm3": smollm3_spec, "granite": granite_spec, "olmo2": olmo2_spec}
    if model_type in specs:
        return specs[model_type](config)
    windows = sliding_windows(config)
    layers = None
    if any(window is not None for window in windows):
        rope = RopeSpec(head_dim_of(config), config["rope_theta"], config.get("rope_scaling"))
        layers = tuple((LayerAttention(window=window), rope) for window in windows)
    return ModelSpec(
        **llama_fields(config), qkv_bias=model_type == "qwen2", qk_norm=model_type == "qwen3", layers=layers
    )


def head_dim_of(config):
    return config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]


def llama_fields(config, tie_default=None):
    """The fields every Llama-shaped config has. tie_word_embeddings may be left out where the
    config class's default (tie_default) holds."""
    if tie_default is None and "tie_word_embeddings" not in config:
        raise KeyError("tie_word_embeddings")
    return dict(
        vocab_size=config["vocab_size"],
        hidden_size=config["hidden_size"],
        intermediate_size=config["intermediate_size"],
        num_layers=config["num_hidden_layers"],
        num_heads=config["num_attention_heads"],
        num_kv_heads=config["num_key_value_heads"],
        head_dim=head_dim_of(config),
        rms_norm_eps=config["rms_norm_eps"],
        rope_theta=config["rope_theta"],
        rope_scaling=config.get("rope_scaling"),
        tie_word_embeddings=config.get("tie_word_embeddings", tie_default),
    )


def sliding_windows(config):
    """Each layer's window (None: the whole sequence), as the mask of each family's model says.
    Mistral: sliding_window on every layer. Qwen2 / Qwen3 (Qwen2Config): only with
    use_sliding_window, on the layers layer_types marks, else from max_window_layers on."""
    count = config["num_hidden_layers"]
    window = config.get("sliding_window")
    if config["model_type"] == "mistral":
        return [window] * count
    if config["model_type"] in ("qwen2", "qwen3"):
        if not config.get("use_sliding_window", False) or window is None:
            return [None] * count
        types = config.get("layer_types") or [
            "sliding_attention" if i >= config["max_window_layers"] else "full_attention" for i in range(count)
        ]
        return [window if kind == "sliding_attention" else None for kind in types]
    return [None] * count


def phi3_spec(config):
    """Phi3ForCausalLM: fused qkv_proj / gate_up_proj, partial rotary, longrope (with the attention
    factor of _compute_longrope_parameters), sliding_window on every layer."""
    head_dim = head_dim_of(config)
    scaling = config.get("rope_scaling")
    original = config.get("original_max_position_embeddings")
    attention_factor = 1.0
    if scaling is not None:
        factor = config["max_position_embeddings"] / original
        attention_factor = scaling.get("attention_factor") or (
            1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
        )
    rope = RopeSpec(
        head_dim,
        config["rope_theta"],
        scaling,
        rotary_dim=int(head_dim * config.get("partial_rotary_factor", 1.0)),
        original_max_position_embeddings=original,
        attention_factor=attention_factor,
    )
    layer = LayerAttention(window=config.get("sliding_window"))
    return ModelSpec(
        **llama_fields(config),
        qkv_bias=False,
        qk_norm=False,
        fused_projections=True,
        layers=tuple((layer, rope) for _ in range(config["num_hidden_layers"])),
    )


def smollm3_spec(config):
    """SmolLM3ForCausalLM: Llama's blocks; the layers no_rope_layers marks 0 do not rotate
    (SmolLM3Config fills it from no_rope_layer_interval); windows only with use_sliding_window."""
    count = config["num_hidden_layers"]
    uses_rope = config.get("no_rope_layers") or [
        int((i + 1) % config["no_rope_layer_interval"] != 0) for i in range(count)
    ]
    types = config.get("layer_types") or ["full_attention"] * count
    rope = RopeSpec(head_dim_of(config), config["rope_theta"], config.get("rope_scaling"))
    layers = []
    for i in range(count):
        slides = config.get("use_sliding_window", False) and types[i] == "sliding_attention"
        window = config["sliding_window"] if slides else None
        layers.append((LayerAttention(window=window), rope if uses_rope[i] else None))
    return ModelSpec(**llama_fields(config), qkv_bias=False, qk_norm=False, layers=tuple(layers))


def granite_spec(config):
    """GraniteForCausalLM: embeddings times embedding_multiplier, scores times attention_multiplier,
    attention's and the MLP's outputs times residual_multiplier, logits divided by logits_scaling."""
    rope = RopeSpec(head_dim_of(config), config["rope_theta"], config.get("rope_scaling"))
    layer = LayerAttention(scale=config["attention_multiplier"])
    return ModelSpec(
        **llama_fields(config),
        qkv_bias=False,
        qk_norm=False,
        embed_scale=config["embedding_multiplier"],
        residual_scale=config["residual_multiplier"],
        logits_scaling=config["logits_scaling"],
        layers=tuple((layer, rope) for _ in range(config["num_hidden_layers"])),
    )


def olmo2_spec(config):
    """Olmo2ForCausalLM: norms after attention and the MLP only; q_norm / k_norm over the whole
    projection, before the split into heads."""
    return ModelSpec(**llama_fields(config), qkv_bias=False, qk_norm=True, qk_norm_whole=True, norms="post")


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
        # Gemma's configs leave the tie out: PretrainedConfig's default (True) holds.
        **llama_fields(config, tie_default=True),
        qkv_bias=False,
        qk_norm=gemma3,
        norm_offset=1.0,
        embed_scale=embed_scale,
        activation=config["hidden_activation"],
        norms="sandwich",
        layers=tuple(layers),
        final_softcap=config.get("final_logit_softcapping"),
    )


def dtype_of(config):
    return {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[config["torch_dtype"]]
