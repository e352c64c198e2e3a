#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks bench/hf_to_gguf.py: llama.cpp's logits of a converted tiny fixture beside staticlm's of
the same checkpoint, on the fixture's prompt, at f32. Run by hand after
`bench/llama_cpp_side_by_side.py --build-peer` (it links bench/llama_cpp_logits.cpp against that
peer's libllama); never in CI.

Each fixture is copied to a scratch folder with the fields llama.cpp cannot express changed, the
same for both sides: gemma3's query_pre_attn_scalar set to head_dim (llama.cpp scales queries by
1/sqrt(head_dim)) and torch_dtype float32 (llama.cpp does not round the embedding scale to bf16);
phi3's sliding_window null (llama.cpp runs Phi without a window). The context (64) exceeds the phi3
fixture's original length (16), so both sides rotate with its long factors. llama.cpp runs with
f32 caches and without flash attention (bench/llama_cpp_logits.cpp says why). Prints, per check,
the largest absolute difference, that over the largest |logit|, and whether every position's
argmax agrees; exits 1 when one is over its tolerance (1e-4; 2e-3 for gemma3, whose GELU llama.cpp
reads from an f16 table: gemma3-attention, the same with the MLP's down_proj zeroed on both sides,
checks the rest at 1e-4).

  bench/gguf_logits_check.py [--fixture gemma3|gemma3-attention|phi3|llama ...] [--keep DIR]
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PEER = os.path.join(ROOT, "build", "peer", "llama.cpp")
PYTHON = "/usr/bin/python3"
CONTEXT = 64
# What llama.cpp cannot express, changed on both sides (see the docstring).
VARIANTS = {
    "gemma3": lambda c: c.update(query_pre_attn_scalar=c.get("head_dim", 256), torch_dtype="float32"),
    "phi3": lambda c: c.update(sliding_window=None),
}
# Each check's tolerance on max |diff| / max |logit|: llama.cpp's CPU GELU reads an f16 table
# (GGML_GELU_FP16), which alone moves Gemma's logits by ~5e-4.
TOLERANCE = {"gemma3": 2e-3}


def zero_tensors(path, suffix):
    """Zeroes, in place, every tensor of the safetensors file `path` whose name ends with `suffix`."""
    with open(path, "r+b") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
        for name, info in header.items():
            if name != "__metadata__" and name.endswith(suffix):
                begin, end = info["data_offsets"]
                f.seek(8 + header_len + begin)
                f.write(bytes(end - begin))


def run(command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"gguf_logits_check: {' '.join(command)} failed ({done.returncode}):\n{done.stderr.strip()[-3000:]}")
    return done.stdout


def logits_tool(work):
    tool = os.path.join(work, "llama_cpp_logits")
    lib = os.path.join(PEER, "build", "bin")
    if not os.path.exists(os.path.join(lib, "libllama.so")):
        sys.exit(f"gguf_logits_check: no libllama.so under {lib}; run bench/llama_cpp_side_by_side.py --build-peer")
    run(["g++", "-std=c++17", "-O2", "-I", os.path.join(PEER, "include"), "-I", os.path.join(PEER, "ggml", "include"),
         os.path.join(ROOT, "bench", "llama_cpp_logits.cpp"), "-o", tool, "-L", lib, "-lllama", "-lggml",
         "-lggml-base", f"-Wl,-rpath,{lib}"])
    return tool


def check(name, staticlm, tool, work, default_tolerance):
    # gemma3-attention: the gemma3 check with every mlp.down_proj zeroed on both sides, so the MLP
    # adds nothing and what remains (norms, q / k norms, both rope bases, the linear scaling, the
    # window pattern, the tied head) is compared without llama.cpp's f16 GELU table.
    fixture = name.split("-")[0]
    source = os.path.join(ROOT, "tests", "fixtures", fixture)
    checkpoint = os.path.join(work, name)
    shutil.copytree(source, checkpoint)
    with open(os.path.join(checkpoint, "config.json")) as f:
        config = json.load(f)
    before = dict(config)
    if VARIANTS.get(fixture):
        VARIANTS[fixture](config)
    changed = {k: (before.get(k), config[k]) for k in config if before.get(k) != config[k]}
    if name.endswith("-attention"):
        zero_tensors(os.path.join(checkpoint, "model.safetensors"), "mlp.down_proj.weight")
        changed["mlp.down_proj.weight"] = "zeroed"
    with open(os.path.join(checkpoint, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(source, "reference.json")) as f:
        tokens = [str(t) for t in json.load(f)["prompt_tokens"]]
    gguf = os.path.join(work, f"{name}.gguf")
    run([PYTHON, os.path.join(ROOT, "bench", "hf_to_gguf.py"), checkpoint, gguf, "--gguf-py",
         os.path.join(PEER, "gguf-py")])
    theirs_file = os.path.join(work, f"{name}-llama.bin")
    run([tool, gguf, theirs_file, str(CONTEXT)] + tokens)
    program = os.path.join(work, f"{name}.slm")
    run([staticlm, "export", checkpoint, "-o", program, "--backend", "cpu", "--dtype", "f32", "--max-cache-len",
         str(CONTEXT), "--prefill-len", "32", "--logits", "all"])
    ours_file = os.path.join(work, f"{name}-staticlm.bin")
    run([staticlm, "logits", program, "--out", ours_file, "-t", "1", "--tokens"] + tokens)
    vocab = config["vocab_size"]
    theirs = np.fromfile(theirs_file, dtype=np.float32).reshape(len(tokens), vocab)
    ours = np.fromfile(ours_file, dtype=np.float32).reshape(len(tokens), vocab)
    diff = np.abs(theirs.astype(np.float64) - ours)
    relative = diff.max() / np.abs(ours).max()
    same_argmax = bool((theirs.argmax(axis=1) == ours.argmax(axis=1)).all())
    tolerance = TOLERANCE.get(name, default_tolerance)
    ok = relative <= tolerance and same_argmax
    print(f"{name}: {len(tokens)} tokens x {vocab}; changed {changed or 'nothing'}; max |diff| {diff.max():.3g}, "
          f"/ max |logit| {relative:.3g} (tolerance {tolerance:g}), mean |diff| {diff.mean():.3g}, "
          f"argmax {'agrees' if same_argmax else 'DIFFERS'}: {'ok' if ok else 'FAILED'}")
    return ok


FIXTURES = ["gemma3", "gemma3-attention", "phi3", "llama"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixture", action="append", choices=FIXTURES)
    parser.add_argument("--staticlm", default=os.path.join(ROOT, "build", "release", "bin", "staticlm"))
    parser.add_argument("--tolerance", type=float, default=1e-4,
                        help="largest |diff| / largest |logit| accepted (gemma3, with GELU: 2e-3)")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR (kept) instead of a temporary folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or tmp
        os.makedirs(work, exist_ok=True)
        tool = logits_tool(work)
        results = [check(name, args.staticlm, tool, work, args.tolerance) for name in args.fixture or FIXTURES]
    if not all(results):
        sys.exit("gguf_logits_check: a check failed")


if __name__ == "__main__":
    main()
