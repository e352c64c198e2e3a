#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Two or more (binary, program) cases of `staticlm bench`, run interleaved (A B A B ...), so a
before/after or a precision comparison sees the same machine noise. Stdlib only.

Each round runs `BINARY bench PROGRAM --json -r 1 ...` once per case; the report gives per case
the median over rounds of prefill and decode tokens/s, the decode roofline fraction and fixed
cost (each measured against the bandwidth that run measured), and for every case after the
first its ratio to the first. See docs/performance.md.

  bench/compare.py --case after:build/release/bin/staticlm:build/bench/smol_f32_cpu.slm \\
      --case before:/tmp/before/bin/staticlm:build/bench/smol_f32_cpu.slm --rounds 5

An optional fourth field holds extra `bench` arguments (split on spaces).
"""
import argparse
import json
import statistics
import subprocess
import sys


def parse_case(text):
    parts = text.split(":", 3)
    if len(parts) < 3 or not all(parts[:3]):
        raise argparse.ArgumentTypeError(f"--case '{text}': expected LABEL:BINARY:PROGRAM[:EXTRA ARGS]")
    return parts[0], parts[1], parts[2], parts[3].split() if len(parts) == 4 else []


def bench(binary, program, extra, args):
    command = [binary, "bench", program, "--json", "-r", "1", "-p", str(args.prompt_tokens), "-n",
               str(args.decode_tokens), "-t", str(args.threads)] + extra
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"compare: {' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")
    doc = json.loads(done.stdout)
    return {
        "prefill": doc["prefill"]["tokens_per_s"],
        "decode": doc["decode"]["tokens_per_s"],
        "roofline": doc["decode"]["roofline_fraction"],
        "fixed_ms": doc["decode"]["fixed_cost_ms"],
        "bandwidth": doc["read_bandwidth_gbs"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", type=parse_case, action="append", required=True,
                        help="LABEL:BINARY:PROGRAM[:EXTRA ARGS], e.g. portable:bin/staticlm:m.slm:"
                             "--runtime-option cpu.isa=portable")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("-p", "--prompt-tokens", type=int, default=128)
    parser.add_argument("-n", "--decode-tokens", type=int, default=64)
    parser.add_argument("-t", "--threads", type=int, default=2)
    args = parser.parse_args()
    if args.rounds < 1:
        sys.exit("compare: --rounds must be >= 1")

    results = {label: [] for label, _, _, _ in args.case}
    for round_index in range(args.rounds):
        for label, binary, program, extra in args.case:
            results[label].append(bench(binary, program, extra, args))
        print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr)

    first = None
    for label, _, _, _ in args.case:
        median = {key: statistics.median(r[key] for r in results[label]) for key in results[label][0]}
        line = (f"{label}: pp{args.prompt_tokens} {median['prefill']:.1f} tok/s, tg{args.decode_tokens} "
                f"{median['decode']:.1f} tok/s, roofline fraction {median['roofline']:.3f}, fixed cost "
                f"{median['fixed_ms']:.2f} ms/token (bandwidth {median['bandwidth']:.1f} GB/s)")
        if first is None:
            first = median
        else:
            line += (f"; vs {args.case[0][0]}: prefill x{median['prefill'] / first['prefill']:.3f}, "
                     f"decode x{median['decode'] / first['decode']:.3f}")
        print(line)


if __name__ == "__main__":
    main()
