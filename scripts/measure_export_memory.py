#!/usr/bin/python3
"""Measures staticlm export's peak resident memory on a ~1 GB checkpoint.

Writes a random Llama-style BF16 checkpoint (no tokenizer) of about 1 GB into a scratch
directory, exports it with `staticlm export`, and reports the export's peak RSS (from
/usr/bin/time) next to the checkpoint size and the largest tensor. The result is recorded in
docs/export.md. Usage: scripts/measure_export_memory.py [--staticlm build/release/bin/staticlm]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "vocab_size": 32000,
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "num_hidden_layers": 8,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def tensor_shapes(c):
    h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    kv = h // c["num_attention_heads"] * c["num_key_value_heads"]
    shapes = {"model.embed_tokens.weight": [v, h], "model.norm.weight": [h], "lm_head.weight": [v, h]}
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        shapes.update({
            p + "input_layernorm.weight": [h], p + "post_attention_layernorm.weight": [h],
            p + "self_attn.q_proj.weight": [h, h], p + "self_attn.k_proj.weight": [kv, h],
            p + "self_attn.v_proj.weight": [kv, h], p + "self_attn.o_proj.weight": [h, h],
            p + "mlp.gate_proj.weight": [i, h], p + "mlp.up_proj.weight": [i, h], p + "mlp.down_proj.weight": [h, i],
        })
    return shapes


def write_checkpoint(directory):
    shapes = tensor_shapes(CONFIG)
    header, offset = {}, 0
    for name in sorted(shapes):
        size = int(np.prod(shapes[name])) * 2
        header[name] = {"dtype": "BF16", "shape": shapes[name], "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    rng = np.random.default_rng(0)
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
        json.dump(CONFIG, out)
    largest = max(int(np.prod(s)) * 2 for s in shapes.values())
    return offset, largest


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--staticlm", default="build/release/bin/staticlm")
    parser.add_argument("--dtype", default="f32", choices=["f32", "f16", "bf16"])
    args = parser.parse_args()
    extra = ["--dtype", args.dtype]
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR", "/tmp")) as scratch:
        total, largest = write_checkpoint(scratch)
        output = os.path.join(scratch, "model.slm")
        run = subprocess.run(["/usr/bin/time", "-v", args.staticlm, "export", scratch, "-o", output,
                              "--prefill-len", "64", "--max-cache-len", "512"] + extra,
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"export failed: {run.stderr}")
        peak_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr).group(1))
        mib = 1024 * 1024
        print(f"checkpoint: {total / mib:.0f} MiB, largest tensor: {largest / mib:.0f} MiB, "
              f"program: {os.path.getsize(output) / mib:.0f} MiB")
        print(f"export peak RSS: {peak_kib / 1024:.0f} MiB "
              f"({peak_kib * 1024 / total:.2f} x checkpoint, {peak_kib * 1024 / largest:.2f} x largest tensor)")


if __name__ == "__main__":
    main()
