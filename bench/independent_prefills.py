#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What a host gives a prefill split over its cores, against the same prefill run on each core
alone at once. Stdlib only; run by hand, never by CI.

Each round runs T copies of `staticlm bench PROGRAM --json -t 1` at the same moment, each pinned
to its own physical core (they share nothing but the mapped program), then one
`staticlm bench PROGRAM --json -t T`. Every copy measures its own core's FMA peak while the
others measure theirs, so the copies' combined fraction (their multiply-adds per second over the
sum of their peaks) is what independent one-thread prefills reach with every core busy (their
timed prefills overlap mostly, not exactly): a split of one prefill over the cores meets a goal
above it only by doing better than independent copies. The report
gives, per round and as medians, that fraction, the T-thread prefill's own fraction, and the
copies' tokens/s over the T-thread prefill's. See docs/performance.md.

  bench/independent_prefills.py build/bench/smollm-135m-f32-cpu.slm --rounds 7
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def physical_cores():
    """One CPU of each physical core this process may run on, in CPU order."""
    chosen, seen = [], set()
    for cpu in sorted(os.sched_getaffinity(0)):
        topology = pathlib.Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            core = ((topology / "physical_package_id").read_text().strip(), (topology / "core_id").read_text().strip())
        except OSError:
            core = ("", str(cpu))  # no topology exposed: take every CPU as its own core
        if core not in seen:
            seen.add(core)
            chosen.append(cpu)
    return chosen


def bench_command(args, threads):
    return [args.staticlm, "bench", args.program, "--json", "-t", str(threads), "-r", str(args.repetitions),
            "-p", str(args.prompt_tokens), "-n", "1"]


def figures(command, returncode, out, err):
    """The run's prefill figures, or an exit naming the command."""
    if returncode != 0:
        sys.exit(f"independent_prefills: {' '.join(command)} failed ({returncode}): {err.strip()}")
    doc = json.loads(out)
    return {
        "tokens_per_s": doc["prefill"]["tokens_per_s"],
        "fraction": doc["prefill"]["fma_peak_fraction"],
        "multiply_adds": doc["prefill"]["multiply_adds_per_token"],
        "peak": doc["fma_peak_gflops"],
    }


def one_round(args, cores):
    command = bench_command(args, 1)
    copies = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda cpu=cpu: os.sched_setaffinity(0, {cpu}))
        for cpu in cores
    ]
    outputs = [copy.communicate() for copy in copies]  # every copy ends before an error exits
    alone = [figures(command, copy.returncode, *output) for copy, output in zip(copies, outputs)]
    command = bench_command(args, len(cores))
    split = subprocess.run(command, capture_output=True, text=True)
    split = figures(command, split.returncode, split.stdout, split.stderr)
    flops = sum(2.0 * c["tokens_per_s"] * c["multiply_adds"] for c in alone) / 1e9
    copies_tokens = sum(c["tokens_per_s"] for c in alone)
    return {
        "copies_fraction": flops / sum(c["peak"] for c in alone),
        "split_fraction": split["fraction"],
        "copies_over_split": copies_tokens / split["tokens_per_s"],
        "copies_tokens": copies_tokens,
        "split_tokens": split["tokens_per_s"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("program", help="a program file (.slm)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("-t", "--threads", type=int, default=0, help="cores to use (default: every physical core)")
    parser.add_argument("-p", "--prompt-tokens", type=int, default=128)
    parser.add_argument("-r", "--repetitions", type=int, default=8, help="prefills per bench run")
    parser.add_argument("--staticlm", default=str(ROOT / "build/release/bin/staticlm"))
    args = parser.parse_args()
    if args.rounds < 1 or args.repetitions < 1 or args.threads < 0:
        sys.exit("independent_prefills: --rounds and -r must be >= 1, -t >= 0")
    if not os.access(args.staticlm, os.X_OK):
        sys.exit(f"independent_prefills: --staticlm {args.staticlm}: no such executable (build the release preset "
                 "first, or name one)")
    if not os.path.isfile(args.program):
        sys.exit(f"independent_prefills: {args.program}: no such program file")
    cores = physical_cores()
    if args.threads > len(cores):
        sys.exit(f"independent_prefills: -t {args.threads}, but this process may run on {len(cores)} physical cores")
    if args.threads > 0:
        cores = cores[:args.threads]
    if len(cores) < 2:
        sys.exit("independent_prefills: needs at least two physical cores")

    print(f"{args.program}: {len(cores)} one-thread copies (CPUs {', '.join(map(str, cores))}) against one "
          f"{len(cores)}-thread prefill, pp{args.prompt_tokens}, {args.rounds} rounds")
    print("| round | copies, of their FMA peaks | split, of its FMA peak | copies tok/s | split tok/s | copies / split |")
    print("|---:|---:|---:|---:|---:|---:|")
    rounds = []
    for index in range(args.rounds):
        r = one_round(args, cores)
        rounds.append(r)
        print(f"| {index + 1} | {r['copies_fraction']:.3f} | {r['split_fraction']:.3f} | {r['copies_tokens']:.1f} | "
              f"{r['split_tokens']:.1f} | {r['copies_over_split']:.2f} |", flush=True)
    median = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    print(f"| median | {median['copies_fraction']:.3f} | {median['split_fraction']:.3f} | "
          f"{median['copies_tokens']:.1f} | {median['split_tokens']:.1f} | {median['copies_over_split']:.2f} |")


if __name__ == "__main__":
    main()
