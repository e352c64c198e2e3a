#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""staticlm beside llama.cpp on the same random-weight checkpoints, run interleaved (A B A B), at
matched precision. Run by hand (building the peer takes about 10 minutes on 2 cores); never in CI.

The peer is llama.cpp's CPU backend from the source tree the npm package node-llama-cpp ships
(pinned below: its package holds the tree as a git bundle), built with -DGGML_NATIVE=ON, no
downloads of its own. The GGUFs are written by bench/hf_to_gguf.py with that tree's gguf-py (f32)
and made f16 / bf16 / q8_0 / q4_0 by its llama-quantize, as users make them (quantized with --pure, so every
matrix has the format; staticlm's weight_dtype=int8 / int4 at group 32 stores the same bits per weight). Precision by precision, each round runs
`llama-bench -p P -n N -t T -r 1 -o json` and `staticlm bench -p P -n N -t T -r 1 --json`; the
report gives medians and ratios (staticlm / llama.cpp), staticlm's roofline fraction and load time.
With --json-out FILE it also writes them, with the host (CPU model, the features staticlm's probes
used), the date and the peer's version, as bench/plot_side_by_side.py and bench/results/ read them.

Shapes: smollm-135m, llama-3.2-1b (Llama), gemma-3-270m, gemma-3-1b (Gemma-3: five layers in six
slide over 512 positions, GeGLU) and phi-4-mini (Phi-3: fused qkv / gate_up, partial rotary,
longrope; both sides rotate with the short factors, the context being under 4096).

  bench/llama_cpp_side_by_side.py --build-peer          # once: npm pack, clone, build
  bench/llama_cpp_side_by_side.py --shape smollm-135m --rounds 3 --json-out build/bench/side_by_side.json
  bench/llama_cpp_side_by_side.py --shape gemma-3-270m --precision f32,q4_0 --rounds 3
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
NODE_LLAMA_CPP = "node-llama-cpp@3.22.1"
PEER = os.path.join(ROOT, "build", "peer", "llama.cpp")
WORK = os.path.join(ROOT, "build", "bench")
PYTHON = "/usr/bin/python3"
# The shapes of scripts/shaped_checkpoint.py that bench/hf_to_gguf.py converts (llama, gemma3, phi3).
SHAPES = ["smollm-135m", "llama-3.2-1b", "gemma-3-270m", "gemma-3-1b", "phi-4-mini"]
# llama.cpp's quantized types and the cpu backend's weight_dtype of the same bits per weight.
QUANTIZED = {"q8_0": "int8", "q4_0": "int4"}


def run(command, **kwargs):
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        sys.exit(f"side_by_side: {' '.join(command)} failed ({done.returncode}):\n{done.stderr.strip()[-2000:]}")
    return done.stdout


def build_peer():
    os.makedirs(os.path.dirname(PEER), exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tarball = run(["npm", "pack", NODE_LLAMA_CPP, "--silent"], cwd=tmp).strip().splitlines()[-1]
        run(["tar", "xzf", tarball, "package/llama/gitRelease.bundle"], cwd=tmp)
        if os.path.exists(PEER):
            shutil.rmtree(PEER)
        run(["git", "clone", "-q", os.path.join(tmp, "package/llama/gitRelease.bundle"), PEER])
    # No AMX: -march=native turns on llama.cpp's AMX kernels (quantized types only) on Intel
    # hosts that have them, and they stopped every q8_0 run on the two Xeons measured: SIGSEGV in
    # ggml_backend_amx_mul_mat in a VM that does not grant the tile state, and SIGILL at a tile
    # load in tinygemm_kernel_amx on one that does (staticlm's tiles run there). Where the tiles
    # are granted, staticlm's q8_0 / q4_0 rows are its AMX prefill against llama.cpp's AVX-512.
    no_amx = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    run(["cmake", "-S", PEER, "-B", os.path.join(PEER, "build"), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
         "-DGGML_NATIVE=ON", f"-DCMAKE_C_FLAGS={no_amx}", f"-DCMAKE_CXX_FLAGS={no_amx}", "-DLLAMA_CURL=OFF",
         "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_SERVER=OFF"])
    run(["cmake", "--build", os.path.join(PEER, "build"), "--target", "llama-bench", "llama-quantize", "-j",
         str(os.cpu_count() or 2)])


def prepare(shape, precisions, staticlm, prompt_tokens, decode_tokens):
    """Checkpoint, staticlm programs and GGUFs of one shape; returns {precision: (program, gguf)}."""
    checkpoint = os.path.join(WORK, shape)
    if not os.path.exists(os.path.join(checkpoint, "config.json")):
        run([PYTHON, os.path.join(ROOT, "scripts", "shaped_checkpoint.py"), shape, checkpoint])
    f32_gguf = os.path.join(WORK, f"{shape}-f32.gguf")
    if not os.path.exists(f32_gguf):
        run([PYTHON, os.path.join(ROOT, "bench", "hf_to_gguf.py"), checkpoint, f32_gguf, "--gguf-py",
             os.path.join(PEER, "gguf-py")])
    cases = {}
    cache = max(512, prompt_tokens + decode_tokens + 16)
    for precision in precisions:
        # A prompt length other than 128 names its own file, so it never replaces the pp128 programs
        # that staticlm bench and the other scripts are run on by hand.
        length = "" if prompt_tokens == 128 else f"-p{prompt_tokens}"
        program = os.path.join(WORK, f"{shape}-{precision}{length}-cpu.slm")
        # --logits last: llama-bench's prefill computes the logits of the last token only.
        export = [staticlm, "export", checkpoint, "-o", program, "--prefill-len", str(prompt_tokens), "--max-cache-len",
                  str(cache), "--backend", "cpu", "--logits", "last"]
        quantize = [os.path.join(PEER, "build", "bin", "llama-quantize")]
        if precision in QUANTIZED:
            # The same bits per weight on both sides: every matrix at the format, group 32, the
            # tied table / lm_head too (--pure: no wider k-quant head, as llama-quantize would
            # otherwise give it).
            export += ["--dtype", "f32", "--option", f"weight_dtype={QUANTIZED[precision]}", "--option",
                       "group_size=32"]
            quantize.append("--pure")
        else:
            export += ["--dtype", precision]
        run(export)
        gguf = f32_gguf if precision == "f32" else os.path.join(WORK, f"{shape}-{precision}.gguf")
        if not os.path.exists(gguf):
            run(quantize + [f32_gguf, gguf, precision.upper()])
        cases[precision] = (program, gguf)
    return cases


def llama_bench(gguf, args):
    out = json.loads(run([os.path.join(PEER, "build", "bin", "llama-bench"), "-m", gguf, "-p",
                          str(args.prompt_tokens), "-n", str(args.decode_tokens), "-t", str(args.threads), "-r", "1",
                          "-o", "json"]))
    pp = next(r["avg_ts"] for r in out if r["n_prompt"] == args.prompt_tokens and r["n_gen"] == 0)
    tg = next(r["avg_ts"] for r in out if r["n_gen"] == args.decode_tokens and r["n_prompt"] == 0)
    return pp, tg


def staticlm_bench(staticlm, program, args):
    doc = json.loads(run([staticlm, "bench", program, "--json", "-p", str(args.prompt_tokens), "-n",
                          str(args.decode_tokens), "-t", str(args.threads), "-r", "1"]))
    return doc


def cpu_model():
    with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        for line in cpuinfo:
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "CPU part"):
                return value.strip()
    return "unknown (no model name in /proc/cpuinfo)"


def peer_version():
    commit = run(["git", "-C", PEER, "rev-parse", "--short=12", "HEAD"]).strip()
    return f"llama.cpp {commit} from {NODE_LLAMA_CPP}"


def write_json(path, args, medians, probe_features):
    doc = {
        "schema": "staticlm-side-by-side/1",
        "source": "bench/llama_cpp_side_by_side.py",
        "date": datetime.date.today().isoformat(),
        "host": {"cpu": cpu_model(), "isa": probe_features, "threads": args.threads},
        "peer": peer_version(),
        "prompt_tokens": args.prompt_tokens,
        "decode_tokens": args.decode_tokens,
        "rounds": args.rounds,
        "shapes": medians,
    }
    with open(path, "w", encoding="utf-8") as out:
        json.dump(doc, out, indent=2)
        out.write("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-peer", action="store_true", help=f"build llama.cpp from {NODE_LLAMA_CPP} and exit")
    parser.add_argument("--shape", action="append", choices=SHAPES)
    parser.add_argument("--precision", default="f32,f16,bf16", help="comma-separated: f32, f16, bf16, q8_0, q4_0")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("-p", "--prompt-tokens", type=int, default=128)
    parser.add_argument("-n", "--decode-tokens", type=int, default=64)
    parser.add_argument("-t", "--threads", type=int, default=2)
    parser.add_argument("--staticlm", default=os.path.join(ROOT, "build", "release", "bin", "staticlm"))
    parser.add_argument("--json-out", metavar="FILE", help="also write the medians, host and peer version as JSON")
    args = parser.parse_args()
    if args.build_peer:
        build_peer()
        return
    if not os.path.exists(os.path.join(PEER, "build", "bin", "llama-bench")):
        sys.exit(f"side_by_side: no llama-bench under {PEER}; run with --build-peer first")
    precisions = args.precision.split(",")
    medians = {}
    probe_features = None
    for shape in args.shape or ["smollm-135m"]:
        cases = prepare(shape, precisions, args.staticlm, args.prompt_tokens, args.decode_tokens)
        results = {p: {"llama_pp": [], "llama_tg": [], "slm_pp": [], "slm_tg": [], "roofline": [], "load_s": []}
                   for p in precisions}
        # One precision at a time, its rounds interleaved: only that precision's GGUF and program
        # need to stay in the page cache (the 1B shape's six files are 20 GB, and a file evicted
        # between runs is read back into smaller, partly 4 KiB-mapped folios).
        for precision in precisions:
            program, gguf = cases[precision]
            for round_index in range(args.rounds):
                pp, tg = llama_bench(gguf, args)
                results[precision]["llama_pp"].append(pp)
                results[precision]["llama_tg"].append(tg)
                doc = staticlm_bench(args.staticlm, program, args)
                probe_features = doc["probe_features"]
                results[precision]["slm_pp"].append(doc["prefill"]["tokens_per_s"])
                results[precision]["slm_tg"].append(doc["decode"]["tokens_per_s"])
                results[precision]["roofline"].append(doc["decode"]["roofline_fraction"])
                results[precision]["load_s"].append(doc["load_s"])
                print(f"{shape} {precision}: round {round_index + 1}/{args.rounds} done", file=sys.stderr)
        print(f"\n{shape}, {args.threads} threads, {args.rounds} rounds interleaved, medians (tokens/s)\n")
        print(f"| precision | llama.cpp pp{args.prompt_tokens} | staticlm pp{args.prompt_tokens} | ratio "
              f"| llama.cpp tg{args.decode_tokens} | staticlm tg{args.decode_tokens} | ratio | staticlm roofline "
              f"| staticlm load (s) |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        medians[shape] = {}
        for precision in precisions:
            m = {key: statistics.median(values) for key, values in results[precision].items()}
            m["pp_ratio"] = m["slm_pp"] / m["llama_pp"]
            m["tg_ratio"] = m["slm_tg"] / m["llama_tg"]
            medians[shape][precision] = m
            print(f"| {precision} | {m['llama_pp']:.1f} | {m['slm_pp']:.1f} | {m['pp_ratio']:.2f} "
                  f"| {m['llama_tg']:.1f} | {m['slm_tg']:.1f} | {m['tg_ratio']:.2f} "
                  f"| {m['roofline']:.2f} | {m['load_s']:.3f} |")
    if args.json_out:
        write_json(args.json_out, args, medians, probe_features)


if __name__ == "__main__":
    main()
