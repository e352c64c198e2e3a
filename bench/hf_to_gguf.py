#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes an f32 GGUF of a Llama-architecture Hugging Face checkpoint with the gguf-py of the
llama.cpp tree bench/llama_cpp_side_by_side.py builds, for the side-by-side benchmark only.

Tensors are named and laid out as llama.cpp's convert_hf_to_gguf.py does for LlamaForCausalLM
(q / k rows permuted into its rope layout, the lm_head omitted when tied); the tokenizer is a
synthetic SentencePiece-style vocabulary of the checkpoint's size (llama-bench feeds token ids,
never text). f16 / bf16 files are made from this one by llama-quantize, as users make them.

Usage: bench/hf_to_gguf.py HF_DIR OUT.gguf --gguf-py LLAMA_CPP/gguf-py
"""
import argparse
import json
import os
import struct
import sys

import numpy as np


def read_safetensors(path):
    """Yields (name, f32 array) for every tensor of a single safetensors file."""
    with open(path, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
        base = 8 + header_len
        for name, info in header.items():
            if name == "__metadata__":
                continue
            begin, end = info["data_offsets"]
            f.seek(base + begin)
            raw = f.read(end - begin)
            dtype = info["dtype"]
            if dtype == "BF16":
                values = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
            elif dtype == "F16":
                values = np.frombuffer(raw, dtype=np.float16).astype(np.float32)
            elif dtype == "F32":
                values = np.frombuffer(raw, dtype=np.float32)
            else:
                sys.exit(f"hf_to_gguf: {path}: tensor {name} has dtype {dtype}; expected BF16, F16 or F32")
            yield name, values.reshape(info["shape"])


def permute(weights, n_head, n_head_kv):
    # As convert_hf_to_gguf.py's LlamaModel.permute: HF's rotate-half rows to llama.cpp's pairs.
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


NAMES = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}
LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def gguf_name(name):
    if name in NAMES:
        return NAMES[name]
    parts = name.split(".")
    if len(parts) >= 4 and parts[0] == "model" and parts[1] == "layers":
        rest = ".".join(parts[3:])
        if rest in LAYER_NAMES:
            return f"blk.{parts[2]}.{LAYER_NAMES[rest]}"
    sys.exit(f"hf_to_gguf: no GGUF name for tensor {name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("hf_dir")
    parser.add_argument("out")
    parser.add_argument("--gguf-py", required=True, help="the gguf-py folder of the llama.cpp tree")
    args = parser.parse_args()
    sys.path.insert(0, args.gguf_py)
    import gguf  # noqa: E402  (from the llama.cpp tree, not installed)

    with open(os.path.join(args.hf_dir, "config.json")) as f:
        config = json.load(f)
    if config.get("architectures") != ["LlamaForCausalLM"]:
        sys.exit(f"hf_to_gguf: {args.hf_dir}: only LlamaForCausalLM, found {config.get('architectures')}")
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads", heads)
    hidden = config["hidden_size"]
    vocab = config["vocab_size"]

    writer = gguf.GGUFWriter(args.out, "llama")
    writer.add_name(os.path.basename(os.path.normpath(args.hf_dir)))
    writer.add_context_length(config.get("max_position_embeddings", 2048))
    writer.add_embedding_length(hidden)
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(config.get("head_dim", hidden // heads))
    writer.add_rope_freq_base(config.get("rope_theta", 10000.0))
    writer.add_layer_norm_rms_eps(config.get("rms_norm_eps", 1e-5))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_vocab_size(vocab)

    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    tokens += [f"\u2581t{i}" for i in range(vocab - len(tokens))]
    types += [gguf.TokenType.NORMAL] * (vocab - len(types))
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * vocab)
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)

    files = sorted(f for f in os.listdir(args.hf_dir) if f.endswith(".safetensors"))
    for file in files:
        for name, values in read_safetensors(os.path.join(args.hf_dir, file)):
            if name.endswith("q_proj.weight"):
                values = permute(values, heads, heads)
            elif name.endswith("k_proj.weight"):
                values = permute(values, heads, kv_heads)
            writer.add_tensor(gguf_name(name), np.ascontiguousarray(values, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
