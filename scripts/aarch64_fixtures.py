#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The fixture models on AArch64, under emulation: programs exported by this machine's CLI, run
by the aarch64 build's staticlm-run under qemu-aarch64.

For every fixture family (tests/fixtures), two f32 programs with prefill chunks of 8 tokens, one
per KV update form (in-place, returned); each one's logits of the reference prompt, fed through
prefill chunks and through decode steps, must be within 1e-4 relative (|a - e| / max(1, |e|)) of
the PyTorch reference, and its greedy text from a prompt must equal what the native build's
staticlm-run prints for the same program. Stdlib and NumPy only; scripts/test-aarch64 runs it.

  scripts/aarch64_fixtures.py --cli build/release/bin/staticlm --native-run build/release/bin/staticlm-run \\
      --run build/aarch64/bin/staticlm-run --cpu max
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
FAMILIES = ["llama", "llama3", "qwen2", "mistral", "qwen3"]
KV_UPDATES = ["in-place", "returned"]
TOLERANCE = 1e-4
PROMPT = "In the beginning"
NEW_TOKENS = 16


def run(command):
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} failed ({done.returncode}):\n{done.stderr.strip()}")
    return done.stdout


def worst_relative_error(got, want):
    error = np.abs(got.astype(np.float64) - want) / np.maximum(1.0, np.abs(want))
    return float(np.nanmax(np.where(np.isnan(error), np.inf, error)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", required=True, help="this machine's staticlm (exports the programs)")
    parser.add_argument("--native-run", required=True, help="this machine's staticlm-run (the greedy text to match)")
    parser.add_argument("--run", required=True, help="the aarch64 staticlm-run")
    parser.add_argument("--cpu", default="max", help="qemu's -cpu (max, cortex-a76, cortex-a53, ...)")
    parser.add_argument("--out", default=ROOT / "build/aarch64/fixtures", type=pathlib.Path)
    args = parser.parse_args()
    sysroot = os.environ.get("STATICLM_ARM64_SYSROOT", "/opt/staticlm/arm64-sysroot")
    emulated = ["qemu-aarch64-static", "-L", sysroot, "-cpu", args.cpu, args.run]
    args.out.mkdir(parents=True, exist_ok=True)

    passed, failed = 0, 0

    def check(name, ok, detail):
        nonlocal passed, failed
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)
        passed, failed = passed + ok, failed + (not ok)

    for family in FAMILIES:
        fixture = ROOT / "tests/fixtures" / family
        reference = json.loads((fixture / "reference.json").read_text())
        want = np.fromfile(fixture / reference["logits_file"], dtype="<f4").astype(np.float64)
        tokens = ",".join(str(t) for t in reference["prompt_tokens"])
        for kv_update in KV_UPDATES:
            program = args.out / f"{family}-{kv_update}.slm"
            try:
                run([args.cli, "export", fixture, "-o", program, "--dtype", "f32", "--prefill-len", "8",
                     "--kv-update", kv_update])
                for mode in ["prefill", "decode"]:
                    logits = args.out / f"{family}-{kv_update}-{mode}.logits"
                    run(emulated + ["logits", program, "--tokens", tokens, "--mode", mode, "--out", logits])
                    got = np.fromfile(logits, dtype="<f4")
                    if got.size != want.size:
                        check(f"{family} {kv_update} {mode} logits", False, f"{got.size} values, want {want.size}")
                        continue
                    error = worst_relative_error(got, want)
                    check(f"{family} {kv_update} {mode} logits", error <= TOLERANCE,
                          f"worst relative error {error:.2e} (at most {TOLERANCE:g})")
                greedy = ["run", program, "-p", PROMPT, "-n", str(NEW_TOKENS), "--temp", "0"]
                native_text = run([args.native_run] + greedy)
                emulated_text = run(emulated + greedy)
                check(f"{family} {kv_update} greedy text", emulated_text == native_text and native_text != "",
                      f"{emulated_text!r}" + ("" if emulated_text == native_text else f", native {native_text!r}"))
            except RuntimeError as error:
                check(f"{family} {kv_update}", False, str(error))
    print(f"aarch64 fixtures (qemu -cpu {args.cpu}): {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
