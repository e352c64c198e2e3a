#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Measures staticlm export's peak resident memory on a ~1 GB checkpoint.

Writes a random Llama-style BF16 checkpoint of about 1 GB (scripts/shaped_checkpoint.py) into a scratch
directory, exports it with `staticlm export`, and reports the export's peak RSS (from
/usr/bin/time) next to the checkpoint size and the largest tensor. The result is recorded in
docs/export.md. Usage: scripts/measure_export_memory.py [--staticlm build/release/bin/staticlm]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

from shaped_checkpoint import write_checkpoint


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--staticlm", default="build/release/bin/staticlm")
    parser.add_argument("--dtype", default="f32", choices=["f32", "f16", "bf16"])
    args = parser.parse_args()
    extra = ["--dtype", args.dtype]
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR", "/tmp")) as scratch:
        total, largest = write_checkpoint("export-1gb", scratch)
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
