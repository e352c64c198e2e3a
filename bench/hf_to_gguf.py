#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes an f32 GGUF of a Llama, Gemma-3 or Phi-3 Hugging Face checkpoint with the gguf-py of the
llama.cpp tree bench/llama_cpp_side_by_side.py builds, for the side-by-side benchmark only.

Metadata, tensor names and layouts are those llama.cpp's convert_hf_to_gguf.py writes for the
architecture (the tensor names from gguf-py's own name map for gemma3 / phi3):

- LlamaForCausalLM -> `llama`: q / k rows permuted from HF's rotate-half order into llama.cpp's
  interleaved rope layout; the lm_head omitted when tied; linear `rope_scaling` as scaling type +
  factor (llama3's is refused: the converter's rope_freqs tensor is not written here).
- Gemma3ForCausalLM -> `gemma3`: every `*norm.weight` (the four per-layer norms, q_norm / k_norm and
  the final norm) gets +1, as Gemma3RMSNorm applies (1 + w); no permutation (llama.cpp rotates
  gemma3 in NEOX order, HF's); head_dim as the key / value length, `rope_theta` as the rope base of
  the global layers and `rope_local_base_freq` as `rope.freq_base_swa`, linear `rope_scaling` as
  scaling type + factor (llama.cpp applies it to the global layers only, as HF does),
  `sliding_window`, `final_logit_softcapping` where set. One addition to the converter: the
  sliding layers from `layer_types` as the `attention.sliding_window_pattern` bool array (the
  converter leaves it out and llama.cpp's loader then assumes every sixth layer global, which is
  also what the real checkpoints say).
- Phi3ForCausalLM -> `phi3`: `qkv_proj` and `gate_up_proj` stay fused (`attn_qkv`, `ffn_up`); no
  permutation (NEOX); `rope.dimension_count` = head_dim x partial_rotary_factor;
  `rope.scaling.original_context_length`; `sliding_window` (0 when null); for longrope the
  `rope_factors_long.weight` / `rope_factors_short.weight` tensors and `rope.scaling.attn_factor`
  sqrt(1 + ln(max / original) / ln(original)) (an explicit `rope_scaling.attention_factor` is
  used as given, as transformers does; the converter ignores it). llama.cpp picks the long factors
  when the context (`-c`, llama-bench: prompt + generated tokens) exceeds the original length.

What llama.cpp cannot express, so that its logits would differ from the checkpoint's: a gemma3
`query_pre_attn_scalar` other than head_dim (it scales queries by 1/sqrt(head_dim); refused), a
gemma3 `attn_logit_softcapping` (refused), and a phi3 `sliding_window` shorter than the context
(llama.cpp turns Phi's sliding window off; warned). llama.cpp also multiplies Gemma's embeddings by
sqrt(hidden) in f32, where transformers first rounds it to the checkpoint's dtype (bf16: 25.25
for sqrt(640) = 25.30), a ~0.2% scale on the embeddings only. Other architectures are refused.

The tokenizer is a synthetic SentencePiece-style vocabulary of the checkpoint's size (llama-bench
feeds token ids, never text): the config's bos / eos / pad ids as control tokens, unk and the 256
byte tokens in the first free ids (for phi3 also `<s>`, `</s>` and `<|endoftext|>`, which
llama.cpp's loader requires when the model's name says phi3), `\u2581tN` filler for the rest.
Tensors are read and written one at a time (an f32 Phi-4-mini is 15 GB). f16 / bf16 / q8_0 / q4_0
files are made from this one by llama-quantize, as users make them. bench/gguf_logits_check.py
compares llama.cpp's logits of converted fixtures with staticlm's.

Usage: bench/hf_to_gguf.py HF_DIR OUT.gguf --gguf-py LLAMA_CPP/gguf-py
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np

ARCHITECTURES = {"LlamaForCausalLM": "llama", "Gemma3ForCausalLM": "gemma3", "Phi3ForCausalLM": "phi3"}


def fail(message):
    sys.exit(f"hf_to_gguf: {message}")


def safetensors_entries(hf_dir):
    """(name, shape, loader) for every tensor of every *.safetensors file, in file and header order."""
    entries = []
    for file in sorted(f for f in os.listdir(hf_dir) if f.endswith(".safetensors")):
        path = os.path.join(hf_dir, file)
        with open(path, "rb") as f:
            (header_len,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(header_len))
        base = 8 + header_len
        for name, info in header.items():
            if name == "__metadata__":
                continue
            if info["dtype"] not in ("BF16", "F16", "F32"):
                fail(f"{path}: tensor {name} has dtype {info['dtype']}; expected BF16, F16 or F32")
            entries.append((name, list(info["shape"]), lambda path=path, base=base, info=info: load(path, base, info)))
    return entries


def load(path, base, info):
    """The tensor at `info` of the safetensors file `path`, as f32."""
    begin, end = info["data_offsets"]
    with open(path, "rb") as f:
        f.seek(base + begin)
        raw = f.read(end - begin)
    dtype = info["dtype"]
    if dtype == "BF16":
        values = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
    elif dtype == "F16":
        values = np.frombuffer(raw, dtype=np.float16).astype(np.float32)
    else:
        values = np.frombuffer(raw, dtype=np.float32)
    return values.reshape(info["shape"])


def permute(weights, n_head, n_head_kv):
    # As convert_hf_to_gguf.py's LlamaModel.permute: HF's rotate-half rows to llama.cpp's pairs.
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


LLAMA_NAMES = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}
LLAMA_LAYER_NAMES = {
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


def llama_name(name):
    if name in LLAMA_NAMES:
        return LLAMA_NAMES[name]
    parts = name.split(".")
    if len(parts) >= 4 and parts[0] == "model" and parts[1] == "layers":
        rest = ".".join(parts[3:])
        if rest in LLAMA_LAYER_NAMES:
            return f"blk.{parts[2]}.{LLAMA_LAYER_NAMES[rest]}"
    return None


def synthetic_vocab(gguf, writer, arch, config, vocab):
    """A SentencePiece-style vocabulary of `vocab` tokens with the config's special ids."""
    tokens = [None] * vocab
    types = [gguf.TokenType.NORMAL] * vocab

    def ids(key):
        value = config.get(key)
        values = value if isinstance(value, list) else [value]
        return [v for v in values if isinstance(v, int) and 0 <= v < vocab]

    special = {}
    for key, text in (("bos_token_id", "<s>"), ("eos_token_id", "</s>"), ("pad_token_id", "<pad>")):
        for i, token_id in enumerate(ids(key)):
            if tokens[token_id] is None:
                tokens[token_id] = text if i == 0 else f"{text[:-1]}{i}>"
                types[token_id] = gguf.TokenType.CONTROL
            special.setdefault(key, token_id)
    free = (i for i in range(vocab) if tokens[i] is None)
    unk = next(free)
    tokens[unk], types[unk] = "<unk>", gguf.TokenType.UNKNOWN
    for byte in range(256):
        i = next(free)
        tokens[i], types[i] = f"<0x{byte:02X}>", gguf.TokenType.BYTE
    # llama.cpp's vocabulary loader looks these up by text in a phi3 file whose name says phi3.
    for text in ("<s>", "</s>", "<|endoftext|>") if arch == "phi3" else ():
        if text not in tokens:
            i = next(free)
            tokens[i], types[i] = text, gguf.TokenType.CONTROL
    for i in free:
        tokens[i] = f"\u2581t{i}"
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * vocab)
    writer.add_token_types(types)
    writer.add_unk_token_id(unk)
    if "bos_token_id" in special:
        writer.add_bos_token_id(special["bos_token_id"])
    if "eos_token_id" in special:
        writer.add_eos_token_id(special["eos_token_id"])
    if "pad_token_id" in special:
        writer.add_pad_token_id(special["pad_token_id"])


def llama_metadata(gguf, writer, config, hf_dir):
    heads = config["num_attention_heads"]
    writer.add_context_length(config.get("max_position_embeddings", 2048))
    writer.add_embedding_length(config["hidden_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(config.get("num_key_value_heads", heads))
    writer.add_rope_dimension_count(config.get("head_dim", config["hidden_size"] // heads))
    writer.add_rope_freq_base(config.get("rope_theta", 10000.0))
    writer.add_layer_norm_rms_eps(config.get("rms_norm_eps", 1e-5))
    add_linear_rope_scaling(gguf, writer, config, hf_dir)
    return []


def add_linear_rope_scaling(gguf, writer, config, hf_dir):
    """The config's rope_scaling where it is linear; none passes, any other type is refused."""
    scaling = config.get("rope_scaling") or {}
    rope_type = scaling.get("rope_type", scaling.get("type"))
    if rope_type == "linear" and scaling.get("factor") is not None:
        writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(scaling["factor"])
    elif rope_type not in (None, "default"):
        fail(f"{hf_dir}: rope_scaling type {rope_type!r}: only none or linear here")


def gemma3_metadata(gguf, writer, config, hf_dir):
    # Gemma3TextConfig's defaults where the config leaves a key out, as the converter assumes them.
    head_dim = config.get("head_dim", 256)
    if config.get("attn_logit_softcapping") is not None:
        fail(f"{hf_dir}: attn_logit_softcapping is set; llama.cpp's gemma3 has no attention soft-cap")
    scalar = config.get("query_pre_attn_scalar", 256)
    if scalar != head_dim:
        fail(f"{hf_dir}: query_pre_attn_scalar {scalar} != head_dim {head_dim}; llama.cpp scales gemma3 queries "
             "by 1/sqrt(head_dim) (by 1/sqrt(hidden / heads) for 62 layers) and cannot express it")
    layers = config["num_hidden_layers"]
    writer.add_block_count(layers)
    writer.add_context_length(config.get("max_position_embeddings", 131072))
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config.get("num_attention_heads", 8))
    writer.add_head_count_kv(config.get("num_key_value_heads", 4))
    add_linear_rope_scaling(gguf, writer, config, hf_dir)
    writer.add_rope_freq_base(config.get("rope_theta", 1000000.0))
    writer.add_rope_freq_base_swa(config.get("rope_local_base_freq", 10000.0))
    writer.add_layer_norm_rms_eps(config.get("rms_norm_eps", 1e-6))
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    if config.get("final_logit_softcapping"):
        writer.add_final_logit_softcapping(config["final_logit_softcapping"])
    if config.get("sliding_window_pattern") != 1:
        writer.add_sliding_window(config.get("sliding_window", 4096))
        if config.get("layer_types"):
            writer.add_sliding_window_pattern([t == "sliding_attention" for t in config["layer_types"][:layers]])
    return []


def phi3_metadata(gguf, writer, config, hf_dir):
    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    if config.get("head_dim", hidden // heads) != hidden // heads:
        fail(f"{hf_dir}: head_dim {config['head_dim']} != hidden_size / heads; llama.cpp's phi3 assumes it")
    max_positions = config.get("max_position_embeddings", 4096)
    original = config.get("original_max_position_embeddings", max_positions)
    rope_dims = int(config.get("partial_rotary_factor", 1.0) * (hidden // heads))  # transformers' rounding
    writer.add_context_length(max_positions)
    writer.add_rope_scaling_orig_ctx_len(original)
    writer.add_embedding_length(hidden)
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(config.get("num_key_value_heads", heads))
    writer.add_layer_norm_rms_eps(config.get("rms_norm_eps", 1e-5))
    writer.add_rope_dimension_count(rope_dims)
    writer.add_rope_freq_base(config.get("rope_theta", 10000.0))
    window = config.get("sliding_window") or 0
    writer.add_sliding_window(window)
    if 0 < window < max_positions:
        print(f"hf_to_gguf: {hf_dir}: sliding_window {window}: llama.cpp runs phi3 without a window, so its "
              f"logits differ from the checkpoint's past {window} tokens", file=sys.stderr)
    scaling = config.get("rope_scaling") or {}
    if not scaling.get("long_factor"):
        return []
    rope_type = (scaling.get("rope_type") or scaling.get("type") or "").lower()
    scale = max_positions / original
    if rope_type in ("su", "longrope"):
        attn_factor = math.sqrt(1 + math.log(scale) / math.log(original)) if scale > 1.0 else 1.0
    elif rope_type == "yarn":
        attn_factor = 0.1 * math.log(scale) + 1.0 if scale > 1.0 else 1.0
    else:
        fail(f"{hf_dir}: rope_scaling type {rope_type!r} with factor lists: expected longrope, su or yarn")
    writer.add_rope_scaling_attn_factors(scaling.get("attention_factor", attn_factor))
    long_factors, short_factors = scaling["long_factor"], scaling.get("short_factor") or []
    if len(long_factors) != rope_dims // 2 or len(short_factors) != rope_dims // 2:
        fail(f"{hf_dir}: expected {rope_dims // 2} long and short rope factors, found {len(long_factors)} and "
             f"{len(short_factors)}")
    return [("rope_factors_long.weight", np.array(long_factors, dtype=np.float32)),
            ("rope_factors_short.weight", np.array(short_factors, dtype=np.float32))]


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
    found = config.get("architectures") or []
    if len(found) != 1 or found[0] not in ARCHITECTURES:
        fail(f"{args.hf_dir}: architectures {found}: only {', '.join(ARCHITECTURES)} are converted")
    arch = ARCHITECTURES[found[0]]
    heads = config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads", heads)
    vocab = config["vocab_size"]
    layers = config["num_hidden_layers"]

    writer = gguf.GGUFWriter(args.out, arch)
    writer.add_name(os.path.basename(os.path.normpath(args.hf_dir)))
    if arch == "llama":
        extra = llama_metadata(gguf, writer, config, args.hf_dir)
    elif arch == "gemma3":
        extra = gemma3_metadata(gguf, writer, config, args.hf_dir)
    else:
        extra = phi3_metadata(gguf, writer, config, args.hf_dir)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_vocab_size(vocab)
    synthetic_vocab(gguf, writer, arch, config, vocab)
    if arch == "gemma3":
        writer.add_add_space_prefix(False)

    name_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.GEMMA3 if arch == "gemma3" else gguf.MODEL_ARCH.PHI3, layers)
    tied = config.get("tie_word_embeddings", arch == "gemma3")

    def convert(name, loader):
        """The GGUF name and a loader of the f32 values for one checkpoint tensor; None to skip it."""
        if name == "lm_head.weight" and tied and arch != "llama":
            return None
        if arch == "llama":
            out = llama_name(name)
        else:
            out = name_map.get_name(name, try_suffixes=(".weight", ".bias"))
        if out is None:
            fail(f"{args.hf_dir}: no {arch} GGUF name for tensor {name}")
        if arch == "llama" and name.endswith("q_proj.weight"):
            return out, lambda: permute(loader(), heads, heads)
        if arch == "llama" and name.endswith("k_proj.weight"):
            return out, lambda: permute(loader(), heads, kv_heads)
        if arch == "gemma3" and name.endswith("norm.weight"):
            return out, lambda: loader() + np.float32(1.0)  # Gemma3RMSNorm's (1 + w)
        return out, loader

    tensors = []
    for name, shape, loader in safetensors_entries(args.hf_dir):
        converted = convert(name, loader)
        if converted is not None:
            tensors.append((converted[0], shape, converted[1]))
    tensors += [(name, list(values.shape), lambda values=values: values) for name, values in extra]
    for name, shape, _ in tensors:
        writer.add_tensor_info(name, shape, np.dtype(np.float32), int(np.prod(shape)) * 4)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _, _, loader in tensors:
        writer.write_tensor_data(np.ascontiguousarray(loader(), dtype=np.float32))
    writer.close()


if __name__ == "__main__":
    main()
