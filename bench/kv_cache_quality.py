#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What q8_0 KV caches cost in quality, staticlm beside llama.cpp on the same weights and tokens.

The model's held-out text is tokenized once (by the program's tokenizer) and cut into windows of
--ctx tokens; each window is fed whole to staticlm (`staticlm logits`, programs exported with
--cache-dtype f32 / f16 / q8_0) and to llama.cpp (bench/llama_cpp_logits.cpp linked against the
peer that bench/llama_cpp_side_by_side.py --build-peer builds, with -ctk / -ctv f32 / f16 / q8_0
and flash attention on, which its quantized V cache needs; the GGUF from bench/hf_to_gguf.py).
Both sides score the same ids the same way: perplexity of every token of a window after its
first, and each cache type's top-1 agreement with the same engine's f32 caches. Run by hand, never
in CI.

  bench/kv_cache_quality.py [--model models/kjv-llama-6m] [--ctx 512] [--peer build/peer/llama.cpp]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PYTHON = "/usr/bin/python3"
CACHES = ["f32", "f16", "q8_0"]


def run(command, env=None):
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"kv_cache_quality: {' '.join(command[:6])} ... failed ({done.returncode}):\n"
                 f"{done.stderr.strip()[-3000:]}")
    return done.stdout


def scores(logits, tokens):
    """Per token after the first: its negative log-likelihood, and the argmax before it."""
    shifted = logits[:-1].astype(np.float64)
    shifted -= shifted.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    nll = -log_probs[np.arange(len(tokens) - 1), tokens[1:]]
    return nll, logits[:-1].argmax(axis=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=os.path.join(ROOT, "models", "kjv-llama-6m"))
    parser.add_argument("--text", help="text to score (default: the model's heldout.txt)")
    parser.add_argument("--ctx", type=int, default=512)
    parser.add_argument("--staticlm", default=os.path.join(ROOT, "build", "release", "bin", "staticlm"))
    parser.add_argument("--peer", default=os.path.join(ROOT, "build", "peer", "llama.cpp"))
    parser.add_argument("--json-out", metavar="FILE")
    args = parser.parse_args()
    text_path = args.text or os.path.join(args.model, "heldout.txt")
    lib = os.path.join(args.peer, "build", "bin")
    if not os.path.exists(os.path.join(lib, "libllama.so")):
        sys.exit(f"kv_cache_quality: no libllama.so under {lib}; run bench/llama_cpp_side_by_side.py --build-peer")
    with tempfile.TemporaryDirectory() as work, open(text_path, encoding="utf-8") as f:
        text = f.read()
        tool = os.path.join(work, "llama_cpp_logits")
        run(["g++", "-std=c++17", "-O2", "-I", os.path.join(args.peer, "include"), "-I",
             os.path.join(args.peer, "ggml", "include"), os.path.join(ROOT, "bench", "llama_cpp_logits.cpp"), "-o",
             tool, "-L", lib, "-lllama", "-lggml", "-lggml-base", f"-Wl,-rpath,{lib}"])
        gguf = os.path.join(work, "model.gguf")
        run([PYTHON, os.path.join(ROOT, "bench", "hf_to_gguf.py"), args.model, gguf, "--gguf-py",
             os.path.join(args.peer, "gguf-py")])
        programs = {}
        for cache in CACHES:
            programs[cache] = os.path.join(work, f"{cache}.slm")
            run([args.staticlm, "export", args.model, "-o", programs[cache], "--backend", "cpu", "--max-cache-len",
                 str(args.ctx), "--prefill-len", "64", "--logits", "all", "--cache-dtype", cache])
        ids = [entry["id"] for entry in json.loads(run([args.staticlm, "tokenize", programs["f32"], text, "--json"]))]
        windows = [ids[i:i + args.ctx] for i in range(0, len(ids) - 1, args.ctx) if len(ids[i:i + args.ctx]) > 1]
        with open(os.path.join(args.model, "config.json")) as f:
            vocab = json.load(f)["vocab_size"]
        results = {}
        for engine in ("staticlm", "llama.cpp"):
            for cache in CACHES:
                nll, top = [], []
                for w, window in enumerate(windows):
                    out = os.path.join(work, f"{engine}-{cache}-{w}.bin")
                    tokens = [str(t) for t in window]
                    if engine == "staticlm":
                        run([args.staticlm, "logits", programs[cache], "--out", out, "-t", "1", "--tokens"] + tokens)
                    else:
                        env = dict(os.environ, LLAMA_CPP_LOGITS_KV=cache, LLAMA_CPP_LOGITS_FA="1")
                        run([tool, gguf, out, str(args.ctx)] + tokens, env=env)
                    logits = np.fromfile(out, dtype=np.float32).reshape(len(window), vocab)
                    os.remove(out)
                    window_nll, window_top = scores(logits, np.array(window))
                    nll.append(window_nll)
                    top.append(window_top)
                results[(engine, cache)] = (np.concatenate(nll), np.concatenate(top))
    rows = []
    print(f"{os.path.basename(os.path.normpath(args.model))}: {len(ids)} tokens of {os.path.basename(text_path)} "
          f"in {len(windows)} windows of up to {args.ctx}")
    print("| engine | caches | perplexity | vs its f16 caches | top-1 agreement with its f32 caches |")
    print("|---|---|---:|---:|---:|")
    for engine in ("staticlm", "llama.cpp"):
        f32_top = results[(engine, "f32")][1]
        f16_ppl = float(np.exp(results[(engine, "f16")][0].mean()))
        for cache in CACHES:
            nll, top = results[(engine, cache)]
            ppl = float(np.exp(nll.mean()))
            agree = float((top == f32_top).mean())
            rows.append({"engine": engine, "cache": cache, "perplexity": ppl, "vs_f16": ppl / f16_ppl - 1,
                         "top1_vs_f32": agree})
            print(f"| {engine} | {cache} | {ppl:.4f} | {100 * (ppl / f16_ppl - 1):+.3f}% | {agree:.4f} |")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"model": args.model, "text": text_path, "ctx": args.ctx, "tokens": len(ids),
                       "windows": len(windows), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
