#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes tests/fixtures/<family>/: tiny random Hugging Face checkpoints plus reference logits.

Run with Debian's python3 (torch 1.13, numpy):  /usr/bin/python3 scripts/make_fixtures.py
The output is byte-for-byte deterministic. See tests/fixtures/README.md for what is written.
"""

import hashlib
import json
import pathlib
import subprocess
import sys

sys.dont_write_bytecode = True  # keep scripts/ free of __pycache__

import numpy as np  # noqa: E402
import torch  # noqa: E402

from fixturegen import checkpoint, family_specs, gemma_tokenizer, reference_model, self_checks, tokenizer  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

PROMPT_LEN = 20
GREEDY_STEPS = 16
MIN_GREEDY_MARGIN = 0.02  # reseed a family whose greedy top-2 logits are closer than this
MIN_GREEDY_DISTINCT = 6  # reseed a family whose greedy continuation is (nearly) one repeated token
SIZE_BUDGET_BYTES = 2_500_000
TRANSFORMERS_VERSION = "4.51.3"
# o_proj / down_proj write into the residual stream this much louder than their input, so the
# stream outgrows the (0.3-std) token embedding; with tied embeddings a weaker stream makes the
# model predict its input token again and the greedy runs collapse into one repeated token.
RESIDUAL_GAIN = 3.0

VOCAB_SIZE = 320
BOS, EOS, IM_START, IM_END = 316, 317, 318, 319  # the special tokens, in tokenizer.SPECIAL_TOKENS order

COMMON = {
    "attention_dropout": 0.0,
    "bos_token_id": BOS,
    "hidden_act": "silu",
    "hidden_size": 64,
    "initializer_range": 0.02,
    "intermediate_size": 128,
    "max_position_embeddings": 512,
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "num_key_value_heads": 2,
    "torch_dtype": "bfloat16",
    "transformers_version": TRANSFORMERS_VERSION,
    "use_cache": True,
    "vocab_size": VOCAB_SIZE,
}

LLAMA_KEYS = {"attention_bias": False, "head_dim": 16, "mlp_bias": False, "model_type": "llama", "pretraining_tp": 1}
QWEN_KEYS = {"max_window_layers": 2, "rope_scaling": None, "rms_norm_eps": 1e-06, "use_sliding_window": False}

# Each family: config.json fields beyond COMMON, generation_config.json, tokenizer_config.json
# choices and the base seed of its weights and prompt.
FAMILIES = {
    "llama": {
        "seed": 1001,
        "config": {
            **LLAMA_KEYS,
            "architectures": ["LlamaForCausalLM"],
            "eos_token_id": EOS,
            "rms_norm_eps": 1e-05,
            "rope_scaling": {"factor": 2.0, "type": "linear"},
            "rope_theta": 10000.0,
            "tie_word_embeddings": False,
        },
        "generation": {"do_sample": True, "eos_token_id": EOS, "temperature": 0.6, "top_p": 0.9},
        "tokenizer": ("<|begin_of_text|>", "<|end_of_text|>", None, "LlamaTokenizerFast"),
    },
    "llama3": {
        "seed": 1002,
        "config": {
            **LLAMA_KEYS,
            "architectures": ["LlamaForCausalLM"],
            "eos_token_id": [EOS, IM_END],
            "rms_norm_eps": 1e-05,
            # original_max_position_embeddings is small so that positions under 50 already see
            # all three llama3 bands (kept, smoothed, divided by factor).
            "rope_scaling": {
                "factor": 8.0,
                "high_freq_factor": 4.0,
                "low_freq_factor": 1.0,
                "original_max_position_embeddings": 64,
                "rope_type": "llama3",
            },
            "rope_theta": 500000.0,
            "tie_word_embeddings": True,
        },
        "generation": {"do_sample": True, "eos_token_id": [EOS, IM_END], "temperature": 0.6, "top_p": 0.9},
        "tokenizer": ("<|begin_of_text|>", "<|end_of_text|>", None, "PreTrainedTokenizerFast"),
    },
    "qwen2": {
        "seed": 1003,
        "config": {
            **QWEN_KEYS,
            "architectures": ["Qwen2ForCausalLM"],
            "eos_token_id": IM_END,
            "model_type": "qwen2",
            "rope_theta": 1000000.0,
            "sliding_window": 4096,  # inert: use_sliding_window is false (as in Qwen2.5 configs)
            "tie_word_embeddings": True,
        },
        "generation": {
            "do_sample": True,
            "eos_token_id": [IM_END, EOS],
            "pad_token_id": EOS,
            "repetition_penalty": 1.05,
            "temperature": 0.7,
            "top_k": 20,
            "top_p": 0.8,
        },
        "tokenizer": (None, "<|im_end|>", "<|end_of_text|>", "Qwen2Tokenizer"),
    },
    "mistral": {
        "seed": 1004,
        "config": {
            "architectures": ["MistralForCausalLM"],
            "eos_token_id": EOS,
            "head_dim": 16,
            "model_type": "mistral",
            "rms_norm_eps": 1e-05,
            "rope_theta": 1000000.0,
            "sliding_window": None,
            "tie_word_embeddings": False,
        },
        "generation": {"eos_token_id": EOS},
        "tokenizer": ("<|begin_of_text|>", "<|end_of_text|>", None, "LlamaTokenizerFast"),
    },
    "qwen3": {
        "seed": 1005,
        "config": {
            **QWEN_KEYS,
            "architectures": ["Qwen3ForCausalLM"],
            "attention_bias": False,
            "eos_token_id": IM_END,
            "head_dim": 32,  # != hidden_size / num_attention_heads (16): q_proj is [128, 64]
            "model_type": "qwen3",
            "rope_theta": 1000000.0,
            "sliding_window": None,
            "tie_word_embeddings": True,
        },
        "generation": {
            "do_sample": True,
            "eos_token_id": [IM_END, EOS],
            "pad_token_id": EOS,
            "temperature": 0.6,
            "top_k": 20,
            "top_p": 0.95,
        },
        "tokenizer": (None, "<|im_end|>", "<|end_of_text|>", "Qwen2Tokenizer"),
    },
}

# The Gemma families: their own tokenizer (Gemma's layout, gemma_tokenizer.py) and config.json as
# Gemma3TextConfig (transformers 4.55: layer_types written out) and Gemma2Config (4.42: no
# layer_types, the alternation implied) write it. Every other key as the real checkpoints have it.
GEMMA_VOCAB_SIZE = 384
GEMMA_COMMON = {
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": gemma_tokenizer.BOS,
    "eos_token_id": gemma_tokenizer.EOS,
    "head_dim": 16,
    "hidden_activation": "gelu_pytorch_tanh",
    # sqrt(48) = 6.928... is not a bfloat16: the embedding scale's rounding to the model dtype shows.
    "hidden_size": 48,
    "initializer_range": 0.02,
    "intermediate_size": 64,
    "max_position_embeddings": 512,
    "num_attention_heads": 4,
    "num_hidden_layers": 4,
    "pad_token_id": gemma_tokenizer.PAD,
    "rms_norm_eps": 1e-06,
    "use_cache": True,
    "vocab_size": GEMMA_VOCAB_SIZE,
}
GEMMA_FAMILIES = {
    "gemma3": {
        "seed": 1006,
        "config": {
            **GEMMA_COMMON,
            "_sliding_window_pattern": 3,
            "architectures": ["Gemma3ForCausalLM"],
            "attn_logit_softcapping": None,
            "final_logit_softcapping": None,
            "layer_types": ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"],
            "model_type": "gemma3_text",
            "num_key_value_heads": 1,
            # != head_dim: the attention scale is query_pre_attn_scalar ** -0.5.
            "query_pre_attn_scalar": 24,
            "rope_local_base_freq": 10000.0,
            # As the 4B and larger checkpoints: linear scaling on the global layers only.
            "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
            "rope_theta": 1000000.0,
            # Shorter than the prompt and than a prefill chunk of 8.
            "sliding_window": 5,
            "torch_dtype": "bfloat16",
            "transformers_version": "4.55.0",
            "use_bidirectional_attention": False,
        },
        "generation": {
            "bos_token_id": gemma_tokenizer.BOS,
            "cache_implementation": "hybrid",
            "eos_token_id": [gemma_tokenizer.EOS, gemma_tokenizer.END_OF_TURN],
            "pad_token_id": gemma_tokenizer.PAD,
            "top_k": 64,
            "top_p": 0.95,
        },
    },
    "gemma2": {
        "seed": 1007,
        "config": {
            **GEMMA_COMMON,
            "architectures": ["Gemma2ForCausalLM"],
            # Small enough that the tanh bends the scores and logits of these random weights.
            "attn_logit_softcapping": 3.0,
            "cache_implementation": "hybrid",
            "final_logit_softcapping": 4.0,
            "hidden_act": "gelu_pytorch_tanh",
            "model_type": "gemma2",
            "num_key_value_heads": 2,
            "query_pre_attn_scalar": 16,
            "rope_theta": 10000.0,
            "sliding_window": 6,
            # As gemma-2-2b: float32, so the embedding scale is sqrt(48) rounded to float32.
            "torch_dtype": "float32",
            "transformers_version": "4.42.4",
        },
        "generation": {
            "bos_token_id": gemma_tokenizer.BOS,
            "cache_implementation": "hybrid",
            "eos_token_id": [gemma_tokenizer.EOS, gemma_tokenizer.END_OF_TURN],
            "pad_token_id": gemma_tokenizer.PAD,
        },
    },
}

# The smaller families: Phi-3, SmolLM3, Granite 3 and OLMo 2, each at hidden 32 and two layers (the
# fixtures' byte budget), with the byte-level tokenizer, and config.json as each family's config
# class writes it. Every key as the real checkpoints have it.
SMALL_COMMON = {
    **COMMON,
    "hidden_size": 32,
    "intermediate_size": 64,
}
SMALL_FAMILIES = {
    "phi3": {
        "seed": 1008,
        "config": {
            **SMALL_COMMON,
            "architectures": ["Phi3ForCausalLM"],
            "attention_bias": False,
            "embd_pdrop": 0.0,
            "eos_token_id": IM_END,
            "model_type": "phi3",
            # Phi-4-mini's layout: two query heads of 16 (no head_dim key) over one kv head, 12 of the
            # 16 channels rotating (partial_rotary_factor 0.75).
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            # Shorter than the prompt: its forward uses the long factors, its first 16 tokens the short
            # ones; max_position_embeddings / 16 = 32 makes the attention factor sqrt(1 + ln 32 / ln 16).
            "original_max_position_embeddings": 16,
            "pad_token_id": EOS,
            "partial_rotary_factor": 0.75,
            "resid_pdrop": 0.0,
            "rms_norm_eps": 1e-05,
            "rope_scaling": {
                "long_factor": [1.0, 1.25, 2.5, 5.0, 11.0, 23.0],
                "short_factor": [1.0, 1.02, 1.05, 1.1, 1.3, 1.6],
                "type": "longrope",
            },
            "rope_theta": 10000.0,
            # As Phi-3-mini-4k's 2047 of 4096: shorter than the cache (and than the prompt here).
            "sliding_window": 7,
            "tie_word_embeddings": True,
            "transformers_version": "4.45.0",
        },
        "generation": {"eos_token_id": [IM_END, EOS], "pad_token_id": EOS},
        "tokenizer": ("<|begin_of_text|>", "<|im_end|>", "<|end_of_text|>", "GPT2TokenizerFast"),
        # The short factors' reference: the first original_max_position_embeddings tokens alone.
        "short_prompt_len": 16,
    },
    "smollm3": {
        "seed": 1009,
        "config": {
            **SMALL_COMMON,
            "architectures": ["SmolLM3ForCausalLM"],
            "attention_bias": False,
            "eos_token_id": IM_END,
            "layer_types": ["full_attention", "full_attention"],
            "max_window_layers": 2,
            "mlp_bias": False,
            "model_type": "smollm3",
            # Layer 1 has no rope (as every 4th layer of SmolLM3-3B, here every 2nd).
            "no_rope_layer_interval": 2,
            "no_rope_layers": [1, 0],
            "pad_token_id": EOS,
            "rms_norm_eps": 1e-06,
            "rope_scaling": None,
            "rope_theta": 5000000.0,
            "sliding_window": None,
            "tie_word_embeddings": True,
            "transformers_version": "4.53.0",
            "use_sliding_window": False,
        },
        "generation": {"eos_token_id": IM_END, "pad_token_id": EOS},
        "tokenizer": (None, "<|im_end|>", "<|end_of_text|>", "PreTrainedTokenizerFast"),
    },
    "granite": {
        "seed": 1010,
        "config": {
            **SMALL_COMMON,
            "architectures": ["GraniteForCausalLM"],
            "attention_bias": False,
            # != 1 / sqrt(head_dim 8). (granite-3's 0.015625 = 1 / head_dim 64 would make these random
            # weights' attention almost uniform, and their greedy runs one repeated token.)
            "attention_multiplier": 0.5,
            "embedding_multiplier": 12.0,
            "eos_token_id": EOS,
            "logits_scaling": 8.0,
            "mlp_bias": False,
            "model_type": "granite",
            "pad_token_id": EOS,
            "residual_multiplier": 0.22,
            "rms_norm_eps": 1e-05,
            "rope_scaling": None,
            "rope_theta": 5000000.0,
            "tie_word_embeddings": True,
        },
        "generation": {"eos_token_id": EOS, "pad_token_id": EOS},
        "tokenizer": ("<|begin_of_text|>", "<|end_of_text|>", "<|end_of_text|>", "GPT2TokenizerFast"),
    },
    "olmo2": {
        "seed": 1011,
        "config": {
            **SMALL_COMMON,
            "architectures": ["Olmo2ForCausalLM"],
            "attention_bias": False,
            "eos_token_id": EOS,
            "model_type": "olmo2",
            "pad_token_id": EOS,
            "rms_norm_eps": 1e-06,
            "rope_scaling": None,
            "rope_theta": 500000.0,
            "tie_word_embeddings": False,
        },
        "generation": {"eos_token_id": EOS, "pad_token_id": EOS},
        "tokenizer": (None, "<|end_of_text|>", "<|end_of_text|>", "GPT2TokenizerFast"),
    },
}

# A family's weights and prompt under another config: the same checkpoint with a sliding window
# shorter than the prompt (and than a prefill chunk of 8). The directory holds that config.json and
# the reference; the checkpoint and tokenizer are the base family's (reference.json "checkpoint").
WINDOW_VARIANTS = {
    "mistral_window": ("mistral", {"sliding_window": 5}),
    # Qwen2Config without layer_types (as transformers 4.51 writes it): layers from
    # max_window_layers on slide, only with use_sliding_window.
    "qwen2_window": ("qwen2", {"max_window_layers": 1, "sliding_window": 5, "use_sliding_window": True}),
}

SHARDED_FAMILY, SHARDED_DIR = "llama", "llama_sharded"

NOTES = (
    "Logits of one causal forward over prompt_tokens (positions 0..len-1), every position, computed by "
    "scripts/fixturegen/reference_model.py: the Hugging Face modeling equations in plain PyTorch, in float64 "
    "from the BF16 checkpoint weights upcast exactly (no BF16 rounding of activations), stored as float32. "
    "greedy_tokens: argmax continuation, re-running the full forward over prompt + generated tokens at every "
    "step (no cache); greedy_min_margin is the smallest top-1 minus top-2 logit over those steps."
)


def json_text(value, sort_keys=True):
    return json.dumps(value, indent=2, sort_keys=sort_keys, ensure_ascii=False) + "\n"


def family_entry(family):
    return {**FAMILIES, **GEMMA_FAMILIES, **SMALL_FAMILIES}[family]


def make_config(family):
    if family in WINDOW_VARIANTS:
        base, edits = WINDOW_VARIANTS[family]
        return dict(sorted({**make_config(base), **edits}.items()))
    if family in GEMMA_FAMILIES or family in SMALL_FAMILIES:
        return dict(sorted(family_entry(family)["config"].items()))
    config = {**COMMON, **FAMILIES[family]["config"]}
    return dict(sorted(config.items()))


def make_weights(spec, maker):
    """Random weights in HF state_dict order. Scales keep the residual stream O(1) and the logits'
    spread a few units, and make the attention scores O(1) (neither uniform nor one-hot).

    Granite's multipliers are offset here: the table is logits_scaling times louder (the tied head
    divides the logits by it again), and the blocks' outputs, which residual_multiplier damps, as
    much louder again as the embedding_multiplier makes the embedding. Phi-3 stores its q / k / v
    and gate / up projections fused; OLMo 2 has post-norms only and q / k norms over the whole
    projection."""
    embedding_std = 0.3 * spec.logits_scaling
    gain = RESIDUAL_GAIN * spec.embed_scale * spec.logits_scaling / spec.residual_scale
    maker.normal("model.embed_tokens.weight", (spec.vocab_size, spec.hidden_size), embedding_std)
    q_width, kv_width = spec.num_heads * spec.head_dim, spec.num_kv_heads * spec.head_dim
    for i in range(spec.num_layers):
        p = f"model.layers.{i}."
        if spec.norms == "pre":
            maker.norm(p + "input_layernorm.weight", spec.hidden_size)
        if spec.fused_projections:
            maker.linear(p + "self_attn.qkv_proj.weight", q_width + 2 * kv_width, spec.hidden_size)
        else:
            maker.linear(p + "self_attn.q_proj.weight", q_width, spec.hidden_size)
            maker.linear(p + "self_attn.k_proj.weight", kv_width, spec.hidden_size)
            maker.linear(p + "self_attn.v_proj.weight", kv_width, spec.hidden_size)
        if spec.qkv_bias:
            maker.normal(p + "self_attn.q_proj.bias", (q_width,), 0.3)
            maker.normal(p + "self_attn.k_proj.bias", (kv_width,), 0.3)
            maker.normal(p + "self_attn.v_proj.bias", (kv_width,), 0.3)
        maker.linear(p + "self_attn.o_proj.weight", spec.hidden_size, q_width, gain)
        if spec.qk_norm:
            maker.norm(p + "self_attn.q_norm.weight", q_width if spec.qk_norm_whole else spec.head_dim)
            maker.norm(p + "self_attn.k_norm.weight", kv_width if spec.qk_norm_whole else spec.head_dim)
        maker.norm(p + "post_attention_layernorm.weight", spec.hidden_size)
        if spec.fused_projections:
            maker.linear(p + "mlp.gate_up_proj.weight", 2 * spec.intermediate_size, spec.hidden_size)
        else:
            maker.linear(p + "mlp.gate_proj.weight", spec.intermediate_size, spec.hidden_size)
            maker.linear(p + "mlp.up_proj.weight", spec.intermediate_size, spec.hidden_size)
        maker.linear(p + "mlp.down_proj.weight", spec.hidden_size, spec.intermediate_size, gain)
        if spec.norms == "post":
            maker.norm(p + "post_feedforward_layernorm.weight", spec.hidden_size)
    maker.norm("model.norm.weight", spec.hidden_size)
    if not spec.tie_word_embeddings:
        maker.normal("lm_head.weight", (spec.vocab_size, spec.hidden_size), 0.3)


# Gemma's norm weights apply as (1 + w). The post-attention and post-feedforward norms are centred
# on w = 3 (a gain of 4) so that the blocks' outputs outweigh the scaled embedding in the residual
# stream: weaker, the tied head predicts the input token again and greedy runs repeat one token.
GEMMA_POST_NORM_MEAN = 3.0


def make_gemma_weights(spec, maker):
    """Gemma's tensors in its modules' order; norm weights are centred on 0 (they apply as 1 + w)
    except the post-norms (GEMMA_POST_NORM_MEAN)."""
    maker.normal("model.embed_tokens.weight", (spec.vocab_size, spec.hidden_size), 0.3)
    q_width, kv_width = spec.num_heads * spec.head_dim, spec.num_kv_heads * spec.head_dim
    for i in range(spec.num_layers):
        p = f"model.layers.{i}."
        maker.linear(p + "self_attn.q_proj.weight", q_width, spec.hidden_size)
        maker.linear(p + "self_attn.k_proj.weight", kv_width, spec.hidden_size)
        maker.linear(p + "self_attn.v_proj.weight", kv_width, spec.hidden_size)
        maker.linear(p + "self_attn.o_proj.weight", spec.hidden_size, q_width)
        if spec.qk_norm:
            maker.normal(p + "self_attn.q_norm.weight", (spec.head_dim,), 0.1)
            maker.normal(p + "self_attn.k_norm.weight", (spec.head_dim,), 0.1)
        maker.linear(p + "mlp.gate_proj.weight", spec.intermediate_size, spec.hidden_size)
        maker.linear(p + "mlp.up_proj.weight", spec.intermediate_size, spec.hidden_size)
        maker.linear(p + "mlp.down_proj.weight", spec.hidden_size, spec.intermediate_size)
        for norm in ("input", "post_attention", "pre_feedforward", "post_feedforward"):
            mean = GEMMA_POST_NORM_MEAN if norm.startswith("post") else 0.0
            maker.normal(p + norm + "_layernorm.weight", (spec.hidden_size,), 0.1, mean)
    maker.normal("model.norm.weight", (spec.hidden_size,), 0.1)


def build_family(family):
    """Draws weights and a prompt, computes and self-checks the reference; reseeds on a near tie."""
    config = make_config(family)
    spec = family_specs.model_spec(config)
    gemma = family in GEMMA_FAMILIES
    for attempt in range(10):
        seed = family_entry(family)["seed"] + 100 * attempt
        maker = checkpoint.WeightMaker(seed)
        (make_gemma_weights if gemma else make_weights)(spec, maker)
        # Gemma's prompts avoid its special tokens (ids below the byte tokens).
        low, high = (len(gemma_tokenizer.SPECIAL_TOKENS), spec.vocab_size) if gemma else (0, 256)
        prompt = [int(t) for t in maker.rng.randint(low, high, size=PROMPT_LEN)]
        weights = {n: torch.from_numpy(checkpoint.bf16_bits_to_float64(b)) for n, b in maker.tensors.items()}
        logits = reference_model.forward(weights, spec, prompt)
        greedy, margins = reference_model.greedy(weights, spec, prompt, GREEDY_STEPS)
        if min(margins) >= MIN_GREEDY_MARGIN and len(set(greedy)) >= MIN_GREEDY_DISTINCT:
            break
        print(f"{family}: seed {seed}: greedy margin {min(margins):.1e}, {len(set(greedy))} distinct; reseeding")
    else:
        raise RuntimeError(f"{family}: no seed gives a greedy run without near ties and repeats")
    float32_error = self_checks.check_forward(weights, spec, prompt, greedy, logits, family)
    print(
        f"{family}: seed {seed}, logits std {float(logits.std()):.2f}, "
        f"range [{float(logits.min()):.2f}, {float(logits.max()):.2f}], greedy min margin {min(margins):.3f}, "
        f"float32 relative error {float32_error:.1e}"
    )
    reference = {
        "family": family,
        "prompt_tokens": prompt,
        "logits_file": "reference_logits.bin",
        "logits_shape": list(logits.shape),
        "greedy_tokens": greedy,
        "greedy_min_margin": round(min(margins), 6),
        "dtype": "f32",
        "seed": seed,
        "notes": NOTES,
    }
    logits_bytes = logits_file_bytes(logits)
    short_len = family_entry(family).get("short_prompt_len")
    if short_len is not None:
        # longrope's short factors: transformers picks them for a sequence no longer than
        # original_max_position_embeddings.
        assert short_len == config["original_max_position_embeddings"] < PROMPT_LEN
        short = reference_model.forward(weights, spec, prompt[:short_len])
        assert relative_error(short, logits[:short_len]) > 1e-3, f"{family}: the short factors change nothing"
        reference["short_factor_tokens"] = short_len
        reference["short_factor_logits_file"] = "reference_short_logits.bin"
        logits_bytes = {"reference_logits.bin": logits_bytes, "reference_short_logits.bin": logits_file_bytes(short)}
    return config, maker.tensors, reference, logits_bytes


def logits_file_bytes(logits):
    return logits.to(torch.float32).numpy().astype("<f4").tobytes()


def relative_error(actual, expected):
    return float((actual - expected).abs().max() / expected.abs().max())


def build_window_variant(variant, base_built):
    """The base family's weights and prompt under the variant's config (a window shorter than the
    prompt): the reference logits, self-checked, and a reference.json naming the base's checkpoint."""
    base, _ = WINDOW_VARIANTS[variant]
    base_config, tensors, base_reference, _ = base_built
    config = make_config(variant)
    spec = family_specs.model_spec(config)
    prompt = base_reference["prompt_tokens"]
    weights = {n: torch.from_numpy(checkpoint.bf16_bits_to_float64(b)) for n, b in tensors.items()}
    logits = reference_model.forward(weights, spec, prompt)
    greedy, margins = reference_model.greedy(weights, spec, prompt, GREEDY_STEPS)
    if min(margins) < MIN_GREEDY_MARGIN or len(set(greedy)) < MIN_GREEDY_DISTINCT:
        raise RuntimeError(f"{variant}: greedy margin {min(margins):.1e}, {len(set(greedy))} distinct")
    self_checks.check_forward(weights, spec, prompt, greedy, logits, variant)
    base_logits = reference_model.forward(weights, family_specs.model_spec(base_config), prompt)
    window = config["sliding_window"]
    assert relative_error(logits[:window], base_logits[:window]) < 1e-12, f"{variant}: the window bites too early"
    assert relative_error(logits, base_logits) > 1e-3, f"{variant}: the window changes nothing"
    print(f"{variant}: {base}'s weights, greedy min margin {min(margins):.3f}")
    reference = {
        **base_reference,
        "family": variant,
        "checkpoint": f"../{base}",
        "greedy_tokens": greedy,
        "greedy_min_margin": round(min(margins), 6),
    }
    return config, reference, logits_file_bytes(logits)


def generation_config(family):
    if family in GEMMA_FAMILIES or family in SMALL_FAMILIES:
        entry = family_entry(family)
        version = entry["config"]["transformers_version"]
        fields = {"bos_token_id": BOS} if family in SMALL_FAMILIES else {}
        return dict(sorted({**fields, **entry["generation"], "transformers_version": version}.items()))
    fields = {"bos_token_id": BOS, **FAMILIES[family]["generation"], "transformers_version": TRANSFORMERS_VERSION}
    return dict(sorted(fields.items()))


def reference_json_text(reference):
    # One key per line, lists on one line: readable and diff-friendly.
    lines = [f"  {json.dumps(key)}: {json.dumps(value)}" for key, value in reference.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_family(directory, family, config, tensors, reference, logits_bytes, tokenizer_text, sharded):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json_text(config))
    (directory / "generation_config.json").write_text(json_text(generation_config(family)))
    (directory / "tokenizer.json").write_text(tokenizer_text)
    if family in GEMMA_FAMILIES:
        tokenizer_config = gemma_tokenizer.tokenizer_config(config["max_position_embeddings"])
    else:
        bos, eos, pad, tokenizer_class = family_entry(family)["tokenizer"]
        tokenizer_config = tokenizer.tokenizer_config(
            VOCAB_SIZE - len(tokenizer.SPECIAL_TOKENS), bos, eos, pad, tokenizer_class, config["max_position_embeddings"]
        )
    (directory / "tokenizer_config.json").write_text(json_text(tokenizer_config))
    if sharded:
        # The logits are the unsharded family's file (same weights, same numbers); sharing it
        # keeps the fixtures inside the size budget.
        reference = {**reference, "logits_file": f"../{family}/reference_logits.bin"}
    else:
        files = logits_bytes if isinstance(logits_bytes, dict) else {"reference_logits.bin": logits_bytes}
        for name, data in files.items():
            (directory / name).write_bytes(data)
    (directory / "reference.json").write_text(reference_json_text(reference))
    if sharded:
        # HF fills shards in state_dict order; here: embeddings + layer 0, then the rest.
        def shard_of(name):
            return 0 if name.startswith(("model.embed_tokens.", "model.layers.0.")) else 1

        checkpoint.write_sharded(directory, tensors, shard_of)
        read_back = checkpoint.read_sharded(directory)
    else:
        checkpoint.write_safetensors(directory / "model.safetensors", tensors)
        read_back = checkpoint.read_safetensors(directory / "model.safetensors")
    assert set(read_back) == set(tensors), f"{directory}: tensor names changed on read-back"
    for name, bits in tensors.items():
        assert np.array_equal(read_back[name], bits), f"{directory}: tensor '{name}' changed on read-back"


def build_tokenizer():
    model_vocab_size = VOCAB_SIZE - len(tokenizer.SPECIAL_TOKENS)
    vocab, merges = tokenizer.train(tokenizer.CORPUS, model_vocab_size)
    assert len(vocab) == model_vocab_size
    special = tokenizer.special_token_ids(vocab)
    assert list(special.values()) == [BOS, EOS, IM_START, IM_END]
    ranks = {pair: rank for rank, pair in enumerate(merges)}
    cases = []
    for text in tokenizer.TOKENIZER_CASES:
        ids = tokenizer.encode(text, vocab, merges, special)
        assert tokenizer.decode(ids, vocab, special) == text, f"tokenizer round trip failed on {text!r}"
        cases.append({"text": text, "ids": ids})
    corpus_ids = tokenizer.encode(tokenizer.CORPUS, vocab, merges, special)
    assert tokenizer.decode(corpus_ids, vocab, special) == tokenizer.CORPUS
    for word in tokenizer.pretokenize(tokenizer.CORPUS):
        assert tokenizer.encode_word(word, ranks) == apply_merges_in_order(word, merges), f"BPE disagrees on {word!r}"
    text = json_text(tokenizer.tokenizer_json(vocab, merges), sort_keys=False)
    reference = {
        "tokenizer": "tokenizer.json in every family directory (all identical)",
        "notes": "ids from scripts/fixturegen/tokenizer.py encode(): special tokens split out first, "
        "GPT-2 ByteLevel pre-tokenization, then lowest-rank-first BPE merges; no BOS/EOS added.",
    }
    # One case per line, like reference.json's lists.
    lines = [f"  {json.dumps(key)}: {json.dumps(value)}," for key, value in reference.items()]
    lines.append('  "cases": [')
    lines.append(",\n".join(f"    {json.dumps(case, ensure_ascii=False)}" for case in cases))
    lines.append("  ]")
    return text, "{\n" + "\n".join(lines) + "\n}\n", len(merges)


def build_gemma_tokenizer():
    """Gemma's tokenizer.json and the ids its encoder gives the cases (no <bos> added)."""
    vocab, merges = gemma_tokenizer.train(GEMMA_VOCAB_SIZE)
    assert len(vocab) == GEMMA_VOCAB_SIZE
    cases = []
    for text in gemma_tokenizer.CASES + tokenizer.TOKENIZER_CASES:
        ids = gemma_tokenizer.encode(text, vocab, merges)
        assert gemma_tokenizer.decode(ids, vocab) == text, f"gemma tokenizer round trip failed on {text!r}"
        cases.append({"text": text, "ids": ids})
    corpus_ids = gemma_tokenizer.encode(tokenizer.CORPUS, vocab, merges)
    assert gemma_tokenizer.decode(corpus_ids, vocab) == tokenizer.CORPUS
    assert len(corpus_ids) < 0.75 * len(tokenizer.CORPUS), "the merges should shorten the corpus"
    return json_text(gemma_tokenizer.tokenizer_json(vocab, merges), sort_keys=False), cases


def apply_merges_in_order(word, merges):
    """Second BPE encoder: every merge in rank order, all occurrences. For merges learned by
    training this must agree with lowest-rank-first (a pair can only appear after its parts)."""
    symbols = list(word)
    for left, right in merges:
        i, merged = 0, []
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] == left and symbols[i + 1] == right:
                merged.append(left + right)
                i += 2
            else:
                merged.append(symbols[i])
                i += 1
        symbols = merged
    return tuple(symbols)


def file_sizes(paths):
    return {p: p.stat().st_size for p in paths}


def main():
    torch.set_num_threads(1)  # one thread: reductions in a fixed order, so reruns give the same bytes
    self_checks.check_bf16_rounding()
    tokenizer_text, tokenizer_reference_text, merge_count = build_tokenizer()
    print(f"tokenizer: 256 byte tokens + {merge_count} merges + {len(tokenizer.SPECIAL_TOKENS)} special tokens")

    gemma_tokenizer_text, gemma_cases = build_gemma_tokenizer()

    # All checks pass before any write.
    built = {family: build_family(family) for family in [*FAMILIES, *GEMMA_FAMILIES, *SMALL_FAMILIES]}
    variants = {variant: build_window_variant(variant, built[base]) for variant, (base, _) in WINDOW_VARIANTS.items()}
    written = []
    for family, (config, tensors, reference, logits_bytes) in built.items():
        family_tokenizer = tokenizer_text
        if family in GEMMA_FAMILIES:
            family_tokenizer = gemma_tokenizer_text
            reference = {**reference, "tokenizer_cases": gemma_cases}
        outputs = [(family, False)] + ([(SHARDED_DIR, True)] if family == SHARDED_FAMILY else [])
        for directory_name, sharded in outputs:
            directory = FIXTURES / directory_name
            write_family(directory, family, config, tensors, reference, logits_bytes, family_tokenizer, sharded)
            written.extend(sorted(p for p in directory.iterdir() if p.is_file()))
    for variant, (config, reference, logits_bytes) in variants.items():
        directory = FIXTURES / variant
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "config.json").write_text(json_text(config))
        (directory / "reference_logits.bin").write_bytes(logits_bytes)
        (directory / "reference.json").write_text(reference_json_text(reference))
        written.extend(sorted(p for p in directory.iterdir() if p.is_file()))
    (FIXTURES / "tokenizer_reference.json").write_text(tokenizer_reference_text)
    written.append(FIXTURES / "tokenizer_reference.json")
    written.append(FIXTURES / "README.md")

    sizes = file_sizes([p for p in written if p.exists()])
    for path, size in sizes.items():
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        print(f"{size:>9}  {digest}  {path.relative_to(ROOT)}")
    total = sum(sizes.values())
    du = subprocess.run(["du", "-sh", str(FIXTURES)], capture_output=True, text=True).stdout.strip()
    print(f"total {total} bytes in {len(sizes)} files (du -sh: {du})")
    if total > SIZE_BUDGET_BYTES:
        raise SystemExit(f"fixtures are {total} bytes, over the {SIZE_BUDGET_BYTES}-byte budget")


if __name__ == "__main__":
    main()
