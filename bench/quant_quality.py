#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""How far the cpu backend's int8 / int4 weights move a model from its f32 program: for each
checkpoint, the f32 program and one program per (weight_dtype, group_size) are fed the same
teacher-forced token ids (`staticlm logits`), and the report gives, per quantized program against
the f32 one (the first tokens of --text where given, random ids otherwise): top-1 agreement of
the next-token argmax, relative logit error
(||q - f|| / ||f|| over all logits), and perplexity of the fed sequence under each (the f32 one
beside it). Run by hand (docs/performance.md has its table); never in CI.

  bench/quant_quality.py                                 # every fixture family
  bench/quant_quality.py --model models/NAME --tokens 400  # any Hugging Face directory
  bench/quant_quality.py --model models/kjv-llama-6m --text models/kjv-llama-6m/heldout.txt

With --text, each program's `staticlm eval` perplexity of that file is reported too (and the f32
program's beside it): the perplexity delta of each format on real text.

Needs Debian's numpy (/usr/bin/python3).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
FAMILIES = ["llama", "llama3", "mistral", "qwen2", "qwen3"]
FORMATS = [("int8", 32), ("int8", 128), ("int4", 32), ("int4", 128)]


def run(command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"quant_quality: {' '.join(command)} failed ({done.returncode}):\n{done.stderr.strip()[-2000:]}")
    return done.stdout


def export(staticlm, model, out, extra, tokens):
    run([staticlm, "export", model, "-o", out, "--dtype", "f32", "--prefill-len", "64", "--max-cache-len",
         str(max(512, tokens + 64))] + extra)


def logits(staticlm, program, ids, work):
    out = os.path.join(work, "logits.bin")
    run([staticlm, "logits", program, "--tokens"] + [str(i) for i in ids] + ["--out", out])
    data = np.fromfile(out, dtype=np.float32)
    return data.reshape(len(ids), -1).astype(np.float64)


def eval_perplexity(staticlm, program, text):
    return float(json.loads(run([staticlm, "eval", program, "--text", text, "--json"]))["perplexity"])


def perplexity(rows, ids):
    """exp of the mean negative log-likelihood of ids[i + 1] under rows[i]."""
    shifted = rows[:-1] - rows[:-1].max(axis=1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(np.exp(-log_softmax[np.arange(len(ids) - 1), ids[1:]].mean()))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", help="Hugging Face directory (default: every fixture family)")
    parser.add_argument("--tokens", type=int, default=300, help="teacher-forced token ids fed (default 300)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--text", help="also report `staticlm eval` perplexity of this text file")
    parser.add_argument("--staticlm", default=os.path.join(ROOT, "build", "release", "bin", "staticlm"))
    args = parser.parse_args()
    models = args.model or [os.path.join(ROOT, "tests", "fixtures", f) for f in FAMILIES]
    work = os.path.join(ROOT, "build", "quant_quality")
    os.makedirs(work, exist_ok=True)
    fed = f"the first {args.tokens} tokens of {args.text}" if args.text else f"{args.tokens} random token ids (seed {args.seed})"
    print(f"{fed}, teacher-forced; each quantized program against the f32 one\n")
    text_column = f" | eval perplexity of {os.path.basename(args.text)} (f32)" if args.text else ""
    print(f"| model | format | top-1 agreement | relative logit error | perplexity (f32){text_column} |")
    print("|---|---|---:|---:|---:|" + ("---:|" if args.text else ""))
    for model in models:
        name = os.path.basename(os.path.normpath(model))
        f32 = os.path.join(work, f"{name}-f32.slm")
        export(args.staticlm, model, f32, [], args.tokens)
        if args.text:
            # Real text teacher-forces a trained model; random ids tell it nothing.
            with open(args.text, encoding="utf-8") as f:
                words = run([args.staticlm, "tokenize", f32, f.read()]).split()
            ids = np.array([int(w) for w in words[: args.tokens]], dtype=np.int64)
        else:
            vocab = int(json.loads(run([args.staticlm, "inspect", f32, "--json"]))["metadata"]["vocab_size"])
            ids = np.random.default_rng(args.seed).integers(0, vocab, size=args.tokens)
        reference = logits(args.staticlm, f32, ids, work)
        reference_ppl = perplexity(reference, ids)
        reference_eval = eval_perplexity(args.staticlm, f32, args.text) if args.text else None
        for codes, group in FORMATS:
            program = os.path.join(work, f"{name}-{codes}-g{group}.slm")
            export(args.staticlm, model, program,
                   ["--option", f"weight_dtype={codes}", "--option", f"group_size={group}"], args.tokens)
            quantized = logits(args.staticlm, program, ids, work)
            agreement = float((quantized.argmax(axis=1) == reference.argmax(axis=1)).mean())
            error = float(np.linalg.norm(quantized - reference) / np.linalg.norm(reference))
            evaluated = ""
            if args.text:
                evaluated = f" {eval_perplexity(args.staticlm, program, args.text):.3f} ({reference_eval:.3f}) |"
            print(f"| {name} | {codes} g{group} | {agreement:.3f} | {error:.4f} | "
                  f"{perplexity(quantized, ids):.2f} ({reference_ppl:.2f}) |{evaluated}")


if __name__ == "__main__":
    main()
