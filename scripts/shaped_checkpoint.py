#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a random-weight Hugging Face checkpoint of a real model's shape, for measurements.

Shapes: smollm-135m (SmolLM-135M: hidden 576, 30 layers, 9 / 3 heads, ffn 1536, vocab 49152,
tied), llama-3.2-1b (hidden 2048, 16 layers, 32 / 8 heads, ffn 8192, vocab 128256, tied),
gemma-3-1b (Gemma3ForCausalLM: hidden 1152, 26 layers of which five in six attend a window of 512,
4 / 1 heads of 256, GeGLU ffn 6912, vocab 262144, tied; its config.json as transformers writes it),
gemma-3-270m (the same family: hidden 640, 18 layers, 4 / 1 heads of 256, ffn 2048, vocab 262144),
phi-4-mini (Phi3ForCausalLM as microsoft/Phi-4-mini-instruct's config.json: hidden 3072, 32
layers, 24 / 8 heads of 128 of which 96 channels rotate, ffn 8192, vocab 200064, tied, fused
qkv_proj and gate_up_proj, longrope with 48 short factors all 1.0 and 48 long ones rising
geometrically from 1 to 4, original context 4096 of 131072, sliding_window 262144 as the real
one, longer than any cache) and export-1gb (untied, 8 layers of hidden 2048: the export-memory
measurement in docs/export.md). --layers N keeps a shape's config but gives it N layers (a quick
export check of a shape too large for the disk at f32).
The weights are small random bf16 values; the tokenizer files of tests/fixtures/llama3 are
copied in so `staticlm run` works (its ids are all below every shape's vocabulary).

Usage: scripts/shaped_checkpoint.py SHAPE OUT_DIR [--layers N]
"""
import argparse
import json
import os
import shutil

import numpy as np

SHAPES = {
    "smollm-135m": dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                        num_attention_heads=9, num_key_value_heads=3, tie_word_embeddings=True,
                        max_position_embeddings=2048, rope_theta=10000.0),
    "llama-3.2-1b": dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                         num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=True,
                         max_position_embeddings=131072, rope_theta=500000.0),
    "gemma-3-1b": dict(vocab_size=262144, hidden_size=1152, intermediate_size=6912, num_hidden_layers=26,
                       num_attention_heads=4, num_key_value_heads=1, head_dim=256, tie_word_embeddings=True,
                       max_position_embeddings=32768, rope_theta=1000000.0),
    "gemma-3-270m": dict(vocab_size=262144, hidden_size=640, intermediate_size=2048, num_hidden_layers=18,
                         num_attention_heads=4, num_key_value_heads=1, head_dim=256, tie_word_embeddings=True,
                         max_position_embeddings=32768, rope_theta=1000000.0),
    "phi-4-mini": dict(vocab_size=200064, hidden_size=3072, intermediate_size=8192, num_hidden_layers=32,
                       num_attention_heads=24, num_key_value_heads=8, tie_word_embeddings=True,
                       max_position_embeddings=131072, rope_theta=10000.0),
    "export-1gb": dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=8,
                       num_attention_heads=32, num_key_value_heads=4, tie_word_embeddings=False,
                       max_position_embeddings=2048, rope_theta=10000.0),
}

FIXTURE_TOKENIZER = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "llama3")


def config_for(shape, layers=None):
    config = full_config_for(shape)
    if layers is not None:
        config["num_hidden_layers"] = layers
        if "layer_types" in config:
            config["layer_types"] = config["layer_types"][:layers]
    return config


def full_config_for(shape):
    if shape.startswith("gemma-3"):
        config = {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "rms_norm_eps": 1e-6,
                  "torch_dtype": "bfloat16", "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0,
                  "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 256, "sliding_window": 512,
                  "rope_local_base_freq": 10000.0, "rope_scaling": None, "attn_logit_softcapping": None,
                  "final_logit_softcapping": None, "attention_bias": False, "_sliding_window_pattern": 6}
        config.update(SHAPES[shape])
        config["layer_types"] = ["full_attention" if (layer + 1) % 6 == 0 else "sliding_attention"
                                 for layer in range(config["num_hidden_layers"])]
        return config
    if shape.startswith("phi-"):
        # As microsoft/Phi-4-mini-instruct's config.json writes it (the factor values are made up:
        # short all 1.0, long rising geometrically from 1 to 4; speed does not depend on them).
        pairs = SHAPES[shape]["hidden_size"] // SHAPES[shape]["num_attention_heads"] * 3 // 4 // 2
        config = {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "rms_norm_eps": 1e-5,
                  "torch_dtype": "bfloat16", "bos_token_id": 199999, "eos_token_id": 199999,
                  "pad_token_id": 199999, "hidden_act": "silu", "attention_bias": False,
                  "attention_dropout": 0.0, "embd_pdrop": 0.0, "resid_pdrop": 0.0, "full_attn_mod": 1,
                  "interpolate_factor": 1, "lm_head_bias": False, "mlp_bias": False,
                  "original_max_position_embeddings": 4096, "partial_rotary_factor": 0.75,
                  "rope_scaling": {"type": "longrope", "short_factor": [1.0] * pairs,
                                   "long_factor": [round(4.0 ** (k / (pairs - 1)), 6) for k in range(pairs)]},
                  "sliding_window": 262144, "use_cache": True, "transformers_version": "4.45.0"}
        config.update(SHAPES[shape])
        return config
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "rms_norm_eps": 1e-5,
              "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2}
    config.update(SHAPES[shape])
    return config


def tensor_shapes(c):
    h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    head_dim = c.get("head_dim", h // c["num_attention_heads"])
    q, kv = head_dim * c["num_attention_heads"], head_dim * c["num_key_value_heads"]
    shapes = {"model.embed_tokens.weight": [v, h], "model.norm.weight": [h]}
    if not c["tie_word_embeddings"]:
        shapes["lm_head.weight"] = [v, h]
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        if c["model_type"] == "phi3":
            # Fused as the real checkpoint stores them: q, k, v rows in one; gate, then up rows.
            shapes.update({
                p + "input_layernorm.weight": [h], p + "post_attention_layernorm.weight": [h],
                p + "self_attn.qkv_proj.weight": [q + 2 * kv, h], p + "self_attn.o_proj.weight": [h, q],
                p + "mlp.gate_up_proj.weight": [2 * i, h], p + "mlp.down_proj.weight": [h, i],
            })
            continue
        shapes.update({
            p + "input_layernorm.weight": [h], p + "post_attention_layernorm.weight": [h],
            p + "self_attn.q_proj.weight": [q, h], p + "self_attn.k_proj.weight": [kv, h],
            p + "self_attn.v_proj.weight": [kv, h], p + "self_attn.o_proj.weight": [h, q],
            p + "mlp.gate_proj.weight": [i, h], p + "mlp.up_proj.weight": [i, h], p + "mlp.down_proj.weight": [h, i],
        })
        if c["model_type"] == "gemma3_text":
            shapes.update({
                p + "pre_feedforward_layernorm.weight": [h], p + "post_feedforward_layernorm.weight": [h],
                p + "self_attn.q_norm.weight": [head_dim], p + "self_attn.k_norm.weight": [head_dim],
            })
    return shapes


def write_checkpoint(shape, directory, layers=None):
    """Writes config.json, model.safetensors and the tokenizer; returns (bytes, largest tensor bytes)."""
    config = config_for(shape, layers)
    shapes = tensor_shapes(config)
    header, offset = {}, 0
    for name in sorted(shapes):
        size = int(np.prod(shapes[name])) * 2
        header[name] = {"dtype": "BF16", "shape": shapes[name], "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    rng = np.random.default_rng(0)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "model.safetensors"), "wb") as out:
        out.write(len(blob).to_bytes(8, "little"))
        out.write(blob)
        for name in sorted(shapes):
            count = int(np.prod(shapes[name]))
            # Small bf16 values: sign, exponent around 2^-6, random mantissa.
            bits = (rng.integers(0, 128, count, dtype=np.uint16) | np.uint16(0x3C00)) ^ \
                   (rng.integers(0, 2, count, dtype=np.uint16) << np.uint16(15))
            out.write(bits.astype("<u2").tobytes())
    with open(os.path.join(directory, "config.json"), "w") as out:
        json.dump(config, out)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(FIXTURE_TOKENIZER, name), os.path.join(directory, name))
    largest = max(int(np.prod(s)) * 2 for s in shapes.values())
    return offset, largest


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shape", choices=sorted(SHAPES))
    parser.add_argument("out_dir")
    parser.add_argument("--layers", type=int, help="this many layers instead of the shape's own")
    args = parser.parse_args()
    total, _ = write_checkpoint(args.shape, args.out_dir, args.layers)
    print(f"{args.shape}: {total / 2**20:.0f} MiB of bf16 weights in {args.out_dir}")


if __name__ == "__main__":
    main()
