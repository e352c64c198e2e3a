#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Modeled throughput of the AArch64 linear micro-kernels: a model, not a measurement.

Compiles the arm/ kernel files with the cross compiler (the aarch64 preset's g++ and flags, to
assembly), finds the inner loop of each micro-kernel below (the innermost loop of its function
with the most multiply instructions), and runs it through llvm-mca's scheduling model of each
CPU. It reports per loop iteration the modeled cycles (llvm-mca's total cycles over its
iterations, so the accumulators' loop-carried latency counts), the multiply-adds, and the
multiply-adds per cycle against the CPU model's peak for that instruction (a loop of 24
independent ones through the same model). No ARM host exists here: these numbers say how a
schedule fits a core's pipes, not how fast a model runs (memory, caches and the front end beyond
llvm-mca's view are not in them). Stdlib only; needs g++-aarch64-linux-gnu and llvm-19
(llvm-mca-19). Run by hand, never by CI; its tables go to bench/results/ (dated), and
docs/performance.md sums them up.

  bench/neon_mca.py
  bench/neon_mca.py --cpus neoverse-v1 --iterations 500
"""
import argparse
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
ARM = ROOT / "src/staticlm/backends/cpu/kernels/arm"
SYSROOT = pathlib.Path("/opt/staticlm/arm64-sysroot")
CXX = "aarch64-linux-gnu-g++"
MCA = "llvm-mca-19"
# The CPU models, and the extensions each has (a kernel needing another is not modeled there):
# Apple M1 has dotprod but not i8mm (M2 has both). llvm-mca 19 schedules every Apple core by its
# Cyclone (Apple A7) model, three vector pipes where M1's big cores have four: its column is
# that model's, not M1's.
CPUS = {
    "neoverse-n1": {"dotprod"},
    "neoverse-v1": {"dotprod", "i8mm"},
    "cortex-a55": {"dotprod"},
    "apple-m1": {"dotprod"},
}

# Multiply-adds per instruction: 4 f32 lanes; sdot's 4 x 4 byte products; smmla's 2 x 2 x 8;
# smull / smull2's 8 products (the plain NEON path spends addp and sadalp beside them).
MACS = {"fmla": 4, "sdot": 16, "smmla": 32, "smull": 8, "smull2": 8}
# Each instruction's forms the kernels use; its peak is the fastest form's (the Cyclone model
# issues fmla by element on more pipes than fmla by vector).
PEAK_LOOPS = {
    "fmla": ("fmla v{acc}.4s, v30.4s, v31.4s", "fmla v{acc}.4s, v30.4s, v31.s[1]"),
    "sdot": ("sdot v{acc}.4s, v30.16b, v31.16b", "sdot v{acc}.4s, v30.16b, v31.4b[1]"),
    "smmla": ("smmla v{acc}.4s, v30.16b, v31.16b",),
    "smull": ("smull v{acc}.8h, v30.8b, v31.8b", "smull2 v{acc}.8h, v30.16b, v31.16b"),
}


class Kernel:
    def __init__(self, label, source, function, op, needs=None, contains=None, lacks=None, count=None):
        self.label = label
        self.source = source
        self.function = re.compile(function)  # matched against the demangled name
        self.op = op  # the multiply instruction it is counted by
        self.needs = needs  # an extension of CPUS, or None
        self.contains = contains  # a mnemonic the chosen loop must have (int4's nibble split)
        self.lacks = lacks
        self.count = count  # how many multiply instructions the loop has, where the function has several loops


KERNELS = [
    Kernel("f32 GEMM, 5 x 16 (prefill)", "linear_neon.cpp", r"panel_rows<.*Neon, 5, 1, .*F32>", "fmla"),
    Kernel("f16 GEMM streamed, 5 x 16 (a few rows)", "linear_neon.cpp", r"panel_rows<.*Neon, 5, 1, .*F16>", "fmla"),
    Kernel("f32 GEMV, 2 panels (decode)", "linear_neon.cpp", r"gemv_panels<.*Neon, .*F32, 2, 2>", "fmla"),
    # g++ inlines the f16 GEMV into its caller, beside the f16 GEMMs: the loop of 16 multiply-adds.
    Kernel("f16 GEMV, 2 panels (decode)", "linear_neon.cpp", r"columns<.*Neon, .*F16, 2>", "fmla", count=16),
    Kernel("bf16 GEMV, 2 panels (decode)", "linear_neon.cpp", r"gemv_panels<.*Neon, .*Bf16, 2, 2>", "fmla"),
    Kernel("int8 / int4 GEMM, sdot, 2 x 32 (a chunk's span in the buffer)", "linear_q_dotprod.cpp",
           r"gemm_rows<.*NeonDot, 2, true, false>", "sdot", needs="dotprod"),
    Kernel("int8 GEMM, sdot, 2 x 32 (a few rows, as stored)", "linear_q_dotprod.cpp",
           r"gemm_rows<.*NeonDot, 2, false, false>", "sdot", needs="dotprod"),
    Kernel("int4 GEMM, sdot, 2 x 32 (a few rows, nibbles split)", "linear_q_dotprod.cpp", r"gemm_panel<.*NeonDot>",
           "sdot", needs="dotprod", contains="ushr", count=32),
    Kernel("int8 GEMV, sdot, 2 panels", "linear_q_dotprod.cpp", r"gemv_panels<.*NeonDot, 2>", "sdot",
           needs="dotprod", lacks="ushr"),
    Kernel("int4 GEMV, sdot, 2 panels", "linear_q_dotprod.cpp", r"gemv_panels<.*NeonDot, 2>", "sdot",
           needs="dotprod", contains="ushr"),
    Kernel("int8 / int4 GEMM, smmla, 4 x 16 (a chunk's span interleaved)", "linear_q_i8mm.cpp", r"mmla_quad\(",
           "smmla", needs="i8mm"),
    Kernel("int8 / int4 GEMM, smmla, 2 x 32 (a pair of rows left over)", "linear_q_i8mm.cpp", r"mmla_pair\(",
           "smmla", needs="i8mm"),
    Kernel("int8 GEMM, plain NEON, 1 x 32", "linear_q_neon.cpp", r"gemm_rows<.*NeonInt, 1, false, false>", "smull"),
    Kernel("int4 GEMM, plain NEON, 1 x 32 (unpacked span)", "linear_q_neon.cpp", r"gemm_panel<.*NeonInt>", "smull",
           lacks="ushr", count=16),
]


def run(command, **kwargs):
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} failed ({done.returncode}):\n{done.stderr.strip()}")
    return done.stdout


def assembly(source):
    flags = ["-std=c++20", "-O2", "-DNDEBUG", f"-I{ROOT / 'src'}", f"-I{ROOT / 'build/aarch64/src'}"]
    if SYSROOT.exists():
        flags.append(f"--sysroot={SYSROOT}")
    return run([CXX, *flags, "-S", "-o", "-", ARM / source])


def functions(asm):
    """{demangled name: [lines]} of the functions in g++'s assembly."""
    names = re.findall(r"^\t\.type\t([^,]+), %function", asm, re.M)
    demangled = run(["c++filt"], input="\n".join(names)).splitlines() if names else []
    bodies = {}
    for name, readable in zip(names, demangled):
        match = re.search(rf"^{re.escape(name)}:\n(.*?)^\t\.size\t{re.escape(name)},", asm, re.M | re.S)
        if match:
            bodies[readable] = match.group(1).splitlines()
    return bodies


def instructions(lines):
    return [line.split("//")[0].strip() for line in lines
            if line.startswith("\t") and not line.startswith("\t.") and line.split("//")[0].strip()]


def mnemonic(instruction):
    return instruction.split()[0]


def inner_loops(lines):
    """The innermost loops: from a label to a branch back to it, with no such loop inside."""
    labels = {}
    loops = []
    for i, line in enumerate(lines):
        label = re.match(r"^(\.L\w+):", line)
        if label:
            labels[label.group(1)] = i
            continue
        branch = re.match(r"^\t(b[a-z.]*|cbn?z|tbn?z)\t.*?(\.L\w+)\s*$", line)
        if branch and branch.group(2) in labels:
            loops.append((labels[branch.group(2)], i))
    return [(a, b) for a, b in loops if not any(a <= c and d <= b and (c, d) != (a, b) for c, d in loops)]


def chosen_loop(kernel, bodies):
    matches = [name for name in bodies if kernel.function.search(name)]
    if not matches:
        raise RuntimeError(f"{kernel.label}: no function matches {kernel.function.pattern}")
    best = None
    for name in matches:
        lines = bodies[name]
        for a, b in inner_loops(lines):
            body = instructions(lines[a:b + 1])
            ops = [mnemonic(i) for i in body]
            count = sum(ops.count(op) for op in MACS if MACS[op] and op.startswith(kernel.op))
            if (count == 0 or (kernel.count and count != kernel.count) or (kernel.contains and kernel.contains not in ops)
                    or (kernel.lacks and kernel.lacks in ops)):
                continue
            if best is None or (count, -len(body)) > (best[0], -len(best[1])):
                best = (count, body)
    if best is None:
        raise RuntimeError(f"{kernel.label}: no inner loop with {kernel.op}")
    return best[1]


def mca(body, cpu, iterations, workdir):
    path = workdir / "loop.s"
    path.write_text("\n".join(body) + "\n")
    out = run([MCA, "-mtriple=aarch64-linux-gnu", f"-mcpu={cpu}", "-mattr=+dotprod,+i8mm,+fullfp16",
               f"-iterations={iterations}", path])
    cycles = int(re.search(r"^Total Cycles:\s+(\d+)", out, re.M).group(1))
    return cycles / iterations


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpus", default=",".join(CPUS), help="llvm-mca CPU models (default: %(default)s)")
    parser.add_argument("--iterations", type=int, default=300)
    args = parser.parse_args()
    for tool in (CXX, MCA, "c++filt"):
        if shutil.which(tool) is None:
            sys.exit(f"neon_mca: {tool} not found (g++-aarch64-linux-gnu, llvm-19)")
    cpus = args.cpus.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = pathlib.Path(tmp)
        peaks = {}
        for cpu in cpus:
            for op, forms in PEAK_LOOPS.items():
                peaks[cpu, op] = max(24 * MACS[op] / mca([form.format(acc=acc) for acc in range(24)], cpu,
                                                          args.iterations, workdir) for form in forms)
        print("Peak multiply-adds per cycle of one core (llvm-mca models; 24 independent instructions, the fastest"
              " form):\n")
        print("| instruction | " + " | ".join(cpus) + " |")
        print("|---|" + "---:|" * len(cpus))
        for op in PEAK_LOOPS:
            print(f"| {op} | " + " | ".join(f"{peaks[cpu, op]:.1f}" for cpu in cpus) + " |")
        print("\nInner loops, modeled: cycles per iteration, multiply-adds per cycle, fraction of the model's peak:\n")
        print("| micro-kernel | instructions | MACs | " + " | ".join(cpus) + " |")
        print("|---|---:|---:|" + "---|" * len(cpus))
        asm = {}
        for kernel in KERNELS:
            if kernel.source not in asm:
                asm[kernel.source] = functions(assembly(kernel.source))
            body = chosen_loop(kernel, asm[kernel.source])
            ops = [mnemonic(i) for i in body]
            macs = sum(MACS.get(op, 0) for op in ops if op.startswith(kernel.op))
            cells = []
            for cpu in cpus:
                if kernel.needs and kernel.needs not in CPUS.get(cpu, set()):
                    cells.append("n/a")
                    continue
                cycles = mca(body, cpu, args.iterations, workdir)
                rate = macs / cycles
                cells.append(f"{cycles:.1f} cyc, {rate:.1f}/cyc, {rate / peaks[cpu, kernel.op]:.2f}")
            print(f"| {kernel.label} | {len(body)} | {macs} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
