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

With --ggml PATH (a llama.cpp tree, read where it lies and never copied here) it also compiles
ggml's corresponding AArch64 kernels with the same cross compiler (ggml's release -O3, each with
the -march its kernel needs), runs their block loops through the same models, and sets them
beside ours per weight format. ggml's loops step one block of 32 weights and do its scales in the
loop; ours step a word row and scale once per group after it, so the side-by-side table compares
ours per group of 32 (the inner loop's trips for a group laid out flat, then the scale step on the
way back into it) with ggml's block loop: modeled cycles per multiply-add of both. A kernel whose
inner loop is itself one whole group, its scales included (the sdot GEMM over a span), is that loop.
The per-group table of ours is printed with or without --ggml.

  bench/neon_mca.py
  bench/neon_mca.py --cpus neoverse-v1 --iterations 500
  bench/neon_mca.py --ggml /tmp/nlc/lc
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

# Multiply-adds per instruction: 4 f32 lanes; sdot's (usdot's) 4 x 4 byte products; smmla's 2 x 2 x 8;
# smull / smull2's 8 products (the plain NEON path spends addp and sadalp beside them).
MACS = {"fmla": 4, "sdot": 16, "usdot": 16, "smmla": 32, "smull": 8, "smull2": 8}


def macs_of(instruction):
    """The multiply-adds of one instruction: MACS, but fmla on eight f16 lanes (ggml's tinyBLAS) does 8."""
    op = mnemonic(instruction)
    if op == "fmla" and ".8h" in instruction:
        return 8
    return MACS.get(op, 0)


# Each instruction's forms the kernels use; its peak is the fastest form's (the Cyclone model
# issues fmla by element on more pipes than fmla by vector).
PEAK_LOOPS = {
    "fmla": ("fmla v{acc}.4s, v30.4s, v31.4s", "fmla v{acc}.4s, v30.4s, v31.s[1]"),
    "sdot": ("sdot v{acc}.4s, v30.16b, v31.16b", "sdot v{acc}.4s, v30.16b, v31.4b[1]"),
    "smmla": ("smmla v{acc}.4s, v30.16b, v31.16b",),
    "smull": ("smull v{acc}.8h, v30.8b, v31.8b", "smull2 v{acc}.8h, v30.16b, v31.16b"),
}


class Kernel:
    def __init__(self, label, source, function, op, needs=None, contains=None, lacks=None, count=None, group=None,
                 whole=False):
        self.label = label
        self.source = source
        self.function = re.compile(function)  # matched against the demangled name
        self.op = op  # the multiply instruction it is counted by
        self.needs = needs  # an extension of CPUS, or None
        self.contains = contains  # a mnemonic the chosen loop must have (int4's nibble split)
        self.lacks = lacks
        self.count = count  # how many multiply instructions the loop has, where the function has several loops
        self.group = group  # the inner loop's trips per group of 32 weights (its k step), for the per-group view
        self.whole = whole  # the inner loop is one whole group of 32, its scales included: the group view is the loop


KERNELS = [
    Kernel("f32 GEMM, 5 x 16 (prefill)", "linear_neon.cpp", r"panel_rows<.*Neon, 5, 1, .*F32>", "fmla"),
    Kernel("f16 GEMM streamed, 5 x 16 (a few rows)", "linear_neon.cpp", r"panel_rows<.*Neon, 5, 1, .*F16>", "fmla"),
    Kernel("f32 GEMV, 2 panels (decode)", "linear_neon.cpp", r"gemv_panels<.*Neon, .*F32, 2, 2>", "fmla"),
    # g++ inlines the f16 GEMV into its caller, beside the f16 GEMMs: the loop of 16 multiply-adds.
    Kernel("f16 GEMV, 2 panels (decode)", "linear_neon.cpp", r"columns<.*Neon, .*F16, 2>", "fmla", count=16),
    Kernel("bf16 GEMV, 2 panels (decode)", "linear_neon.cpp", r"gemv_panels<.*Neon, .*Bf16, 2, 2>", "fmla"),
    Kernel("int8 / int4 GEMM, sdot, 2 x 32 (a chunk's span in the buffer)", "linear_q_dotprod.cpp",
           r"dot_rows<2, 32, true>", "sdot", needs="dotprod", group=1, whole=True),
    Kernel("int8 GEMM, sdot, 2 x 32 (a few rows, as stored)", "linear_q_dotprod.cpp",
           r"gemm_rows<.*NeonDot, 2, false, false>", "sdot", needs="dotprod", group=8),
    Kernel("int4 GEMM, sdot, 2 x 32 (a few rows, nibbles split)", "linear_q_dotprod.cpp", r"gemm_panel<.*NeonDot>",
           "sdot", needs="dotprod", contains="ushr", count=32, group=4),
    Kernel("int8 GEMV, sdot, 2 panels", "linear_q_dotprod.cpp", r"gemv_panels<false, false, 2, 32, true>", "sdot",
           needs="dotprod", group=1, whole=True),
    Kernel("int8 GEMV, usdot, 2 panels (i8mm)", "linear_q_i8mm.cpp", r"gemv_panels<true, false, 2, 32, true>",
           "usdot", needs="i8mm", group=1, whole=True),
    Kernel("int4 GEMV, sdot, 2 panels", "linear_q_dotprod.cpp", r"gemv_panels<false, true, 2, 32, true>", "sdot",
           needs="dotprod", group=1, whole=True),
    Kernel("int8 / int4 GEMM, smmla, 2 x 32 (a chunk's span interleaved)", "linear_q_i8mm.cpp", r"mmla_pair<32, true>",
           "smmla", needs="i8mm", group=1, whole=True),
    Kernel("int8 GEMM, plain NEON, 1 x 32", "linear_q_neon.cpp", r"gemm_rows<.*NeonInt, 1, false, false>", "smull"),
    Kernel("int4 GEMM, plain NEON, 1 x 32 (unpacked span)", "linear_q_neon.cpp", r"gemm_panel<.*NeonInt>", "smull",
           lacks="ushr", count=16),
]


class Peer(Kernel):
    """One of ggml's kernels, set beside `ours` (a label of KERNELS) for weight format `format`:
    `macs` is what one iteration of its loop does, counted from its source, and checked against the
    loop's instructions."""

    def __init__(self, format, label, source, function, op, march, macs, ours, needs=None, count=None, clang=False):
        super().__init__(label, source, function, op, needs=needs, count=count)
        self.clang = clang  # compiled by clang instead (g++ keeps tinyBLAS's accumulators on the stack)
        self.format = format
        self.march = march
        self.macs = macs
        self.ours = ours


GGML_CPU = "ggml/src/ggml-cpu"
REPACK = f"{GGML_CPU}/arch/arm/repack.cpp"
QUANTS = f"{GGML_CPU}/arch/arm/quants.c"
SGEMM = f"{GGML_CPU}/llamafile/sgemm.cpp"
# ggml's -march for each (its CPU variants: armv8.2-a with dotprod and fp16, armv8.6-a with i8mm).
DOTPROD = "armv8.2-a+dotprod+fp16"
I8MM = "armv8.6-a+dotprod+i8mm+fp16"
# g++ keeps gemm_bloc a function of its own; clang inlines it into gemm.
TINY_F32 = r"tinyBLAS<4, __Float32x4_t.*::gemm(_bloc<4, 6>|<4, 6, 4>)"
TINY_F16 = r"tinyBLAS<8, __Float16x8_t.*::gemm(_bloc<4, 6>|<4, 6, 4>)"
SPAN = "int8 / int4 GEMM, sdot, 2 x 32 (a chunk's span in the buffer)"
MMLA = "int8 / int4 GEMM, smmla, 2 x 32 (a chunk's span interleaved)"
# The MACs per iteration, from the source: q4_0 4x4's block loop (hand-written assembly) is 16 rows
# x 4 columns x one block of 32 (128 sdot); 4x8's the same by 64 smmla; q8_0's intrinsics 4 rows x
# 4 columns x 32 (32 sdot, 16 smmla); a GEMV's one row x 4 columns x 32 (8 sdot); vec_dot's two
# blocks of one row by one column (4 sdot); tinyBLAS's 4 x 6 registers of fmla (24).
GGML = [
    Peer("int4 (q4_0)", "ggml_gemm_q4_0_4x4_q8_0, sdot, 16 x 4 (prefill)", REPACK, r"^ggml_gemm_q4_0_4x4_q8_0$",
         "sdot", DOTPROD, 2048, SPAN, needs="dotprod"),
    Peer("int4 (q4_0)", "ggml_gemm_q4_0_4x8_q8_0, smmla, 16 x 4 (prefill)", REPACK, r"^ggml_gemm_q4_0_4x8_q8_0$",
         "smmla", I8MM, 2048, MMLA, needs="i8mm"),
    Peer("int4 (q4_0)", "ggml_gemv_q4_0_4x4_q8_0, sdot, 1 x 4 (decode)", REPACK, r"^ggml_gemv_q4_0_4x4_q8_0$",
         "sdot", DOTPROD, 128, "int4 GEMV, sdot, 2 panels", needs="dotprod"),
    Peer("int4 (q4_0)", "ggml_gemv_q4_0_4x8_q8_0, sdot, 1 x 4 (decode, i8mm builds)", REPACK,
         r"^ggml_gemv_q4_0_4x8_q8_0$", "sdot", I8MM, 128, "int4 GEMV, sdot, 2 panels", needs="dotprod"),
    Peer("int4 (q4_0)", "ggml_vec_dot_q4_0_q8_0, sdot, 1 x 1 (not repacked)", QUANTS, r"^ggml_vec_dot_q4_0_q8_0$",
         "sdot", DOTPROD, 64, "int4 GEMV, sdot, 2 panels", needs="dotprod"),
    Peer("int8 (q8_0)", "ggml_gemm_q8_0_4x4_q8_0, sdot, 4 x 4 (prefill)", REPACK, r"^ggml_gemm_q8_0_4x4_q8_0$",
         "sdot", DOTPROD, 512, SPAN, needs="dotprod"),
    Peer("int8 (q8_0)", "ggml_gemm_q8_0_4x8_q8_0, smmla, 4 x 4 (prefill)", REPACK, r"^ggml_gemm_q8_0_4x8_q8_0$",
         "smmla", I8MM, 512, MMLA, needs="i8mm"),
    Peer("int8 (q8_0)", "ggml_gemv_q8_0_4x4_q8_0, sdot, 1 x 4 (decode)", REPACK, r"^ggml_gemv_q8_0_4x4_q8_0$",
         "sdot", DOTPROD, 128, "int8 GEMV, sdot, 2 panels", needs="dotprod"),
    # An i8mm CPU (V1) decodes int8 by usdot, the stored panels with no eor.
    Peer("int8 (q8_0)", "ggml_gemv_q8_0_4x4_q8_0, sdot, 1 x 4 (decode)", REPACK, r"^ggml_gemv_q8_0_4x4_q8_0$",
         "sdot", DOTPROD, 128, "int8 GEMV, usdot, 2 panels (i8mm)", needs="dotprod"),
    Peer("int8 (q8_0)", "ggml_vec_dot_q8_0_q8_0, sdot, 1 x 1 (not repacked)", QUANTS, r"^ggml_vec_dot_q8_0_q8_0$",
         "sdot", DOTPROD, 64, "int8 GEMV, sdot, 2 panels", needs="dotprod"),
    Peer("f32", "tinyBLAS f32, 4 x 6 registers (prefill)", SGEMM, TINY_F32, "fmla", DOTPROD, 96,
         "f32 GEMM, 5 x 16 (prefill)"),
    Peer("f32", "tinyBLAS f32, 4 x 6 registers (prefill; clang)", SGEMM, TINY_F32, "fmla", DOTPROD, 96,
         "f32 GEMM, 5 x 16 (prefill)", clang=True),
    # With fp16 vector arithmetic (armv8.2-a+fp16) tinyBLAS multiplies and sums f16 in f16 lanes, 8 a
    # fmla; ours widens f16 to f32 and sums in f32, 4 a fmla.
    # Ours runs more than 16 rows of f16 through the f32 loop, over each block widened once.
    Peer("f16", "tinyBLAS f16 (f16 sums), 4 x 6 registers (prefill)", SGEMM, TINY_F16, "fmla", DOTPROD, 192,
         "f32 GEMM, 5 x 16 (prefill)"),
    Peer("f16", "tinyBLAS f16 (f16 sums), 4 x 6 registers (prefill; clang)", SGEMM, TINY_F16, "fmla", DOTPROD, 192,
         "f32 GEMM, 5 x 16 (prefill)", clang=True),
    Peer("f16", "tinyBLAS f16 (f16 sums), 4 x 6 registers (prefill; clang)", SGEMM, TINY_F16, "fmla", DOTPROD, 192,
         "f16 GEMM streamed, 5 x 16 (a few rows)", clang=True),
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


def ggml_assembly(tree, source, march, clang=False):
    """ggml's file compiled for aarch64 as its release build does (-O3), inline assembly made plain."""
    c = source.endswith(".c")
    compiler = ["aarch64-linux-gnu-gcc"] if c else [CXX]
    if clang:
        compiler = ["clang", "--target=aarch64-linux-gnu"]
    flags = ["-std=c11" if c else "-std=c++17", "-O3", "-DNDEBUG", f"-march={march}", f"-I{tree / 'ggml/include'}",
             f"-I{tree / 'ggml/src'}", f"-I{tree / GGML_CPU}"]
    if SYSROOT.exists():
        flags.append(f"--sysroot={SYSROOT}")
    return plain_inline_asm(run([*compiler, *flags, "-x", "c" if c else "c++", "-S", "-o", "-", tree / source]))


def plain_inline_asm(asm):
    """The lines between #APP and #NO_APP as g++ writes its own: a tab before each instruction,
    numeric labels (1:, 3b, 4f) named .Lasm<n>, and `.inst 0x... // sdot ...` (ggml spells the
    instructions its assembler may lack so) as the instruction its comment names."""
    out = []
    inside = False
    count = 0
    for block in re.split(r"^(#APP|#NO_APP)$", asm, flags=re.M):
        if block == "#APP":
            inside = True
            continue
        if block == "#NO_APP":
            inside = False
            continue
        if not inside:
            out.append(block)
            continue
        lines = [line.strip() for line in block.splitlines()]
        lines = [line for line in lines if line and not line.startswith("//")]
        defined = []  # (line index, label digit, unique name)
        plain = []
        for line in lines:
            label = re.match(r"^(\d+):\s*(.*)$", line)
            if label:
                count += 1
                defined.append((len(plain), label.group(1), f".Lasm{count}"))
                plain.append(f".Lasm{count}:")
                line = label.group(2)
                if not line:
                    continue
            inst = re.match(r"^\.inst\s+0x[0-9a-f]+\s*//\s*(.*)$", line)
            if inst:
                line = inst.group(1)
            plain.append("\t" + "\t".join(line.split(None, 1)))
        for i, line in enumerate(plain):
            ref = re.search(r"\b(\d+)([bf])$", line)
            if not ref or not re.match(r"^\t(b[a-z.]*|cbn?z|tbn?z)\t", line):
                continue
            if ref.group(2) == "b":
                names = [name for at, digit, name in defined if digit == ref.group(1) and at <= i]
                name = names[-1] if names else None
            else:
                names = [name for at, digit, name in defined if digit == ref.group(1) and at > i]
                name = names[0] if names else None
            if name:
                plain[i] = line[:ref.start()] + name
        out.append("\n" + "\n".join(plain) + "\n")
    return "".join(out)


def functions(asm):
    """{demangled name: [lines]} of the functions in g++'s assembly."""
    names = re.findall(r"^\t\.type\t([^,]+), ?[%@]function", asm, re.M)
    demangled = run(["c++filt"], input="\n".join(names)).splitlines() if names else []
    bodies = {}
    for name, readable in zip(names, demangled):
        match = re.search(rf"^{re.escape(name)}:[^\n]*\n(.*?)^\t\.size\t{re.escape(name)},", asm, re.M | re.S)
        if match:
            bodies[readable] = match.group(1).splitlines()
    return bodies


def instructions(lines):
    return [line.split("//")[0].strip() for line in lines
            if line.startswith("\t") and not line.startswith("\t.") and line.split("//")[0].strip()]


def mnemonic(instruction):
    return instruction.split()[0]


def loops(lines):
    """Every loop: from a label to a branch back to it."""
    labels = {}
    found = []
    for i, line in enumerate(lines):
        label = re.match(r"^(\.L\w+):", line)
        if label:
            labels[label.group(1)] = i
            continue
        branch = re.match(r"^\t(b[a-z.]*|cbn?z|tbn?z)\t.*?(\.L\w+)\s*$", line)
        if branch and branch.group(2) in labels:
            found.append((labels[branch.group(2)], i))
    return found


def inner_loops(lines):
    """The innermost loops: no other loop inside."""
    found = loops(lines)
    return [(a, b) for a, b in found if not any(a <= c and d <= b and (c, d) != (a, b) for c, d in found)]


def chosen_span(kernel, bodies):
    """(lines, first, last) of the chosen inner loop in its function's lines."""
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
            if best is None or (count, -len(body)) > (best[0], -best[1]):
                best = (count, len(body), lines, a, b)
    if best is None:
        raise RuntimeError(f"{kernel.label}: no inner loop with {kernel.op}")
    return best[2:]


def chosen_loop(kernel, bodies):
    lines, a, b = chosen_span(kernel, bodies)
    return instructions(lines[a:b + 1])


def group_body(kernel, bodies):
    """One group of 32 weights laid out flat: the inner loop's body `kernel.group` times over (its
    branch back dropped), then the shortest path of instructions from where it exits back to its
    label (the group's scales, the next group's zeroed sums; g++ places these blocks where it likes,
    so the path is followed through the branches, not read off the lines between)."""
    lines, a, b = chosen_span(kernel, bodies)
    if kernel.whole:
        return instructions(lines[a:b + 1])
    labels = {m.group(1): i for i, line in enumerate(lines) for m in [re.match(r"^(\.L\w+):", line)] if m}

    def successors(i):
        line = lines[i].split("//")[0]
        if not line.startswith("\t") or line.startswith("\t."):
            return [i + 1]
        op = mnemonic(line.strip())
        if op in ("ret", "br"):
            return []
        target = re.match(r"^\t(b[a-z.]*|cbn?z|tbn?z)\t.*?(\.L\w+)\s*$", line)
        if target and op not in ("bl", "blr") and target.group(2) in labels:
            return [labels[target.group(2)]] if op == "b" else [i + 1, labels[target.group(2)]]
        return [i + 1]

    def weight(i):
        return 1 if instructions([lines[i]]) else 0

    # The loop's lines, with any second way back to its label (a prefetching path of its header).
    last = max(d for c, d in loops(lines) if c == a)
    starts = {t for i in range(a, last + 1) for t in successors(i) if not a <= t <= last}
    # 0-1 breadth-first search over the lines outside the loop, to where it enters the loop (its
    # label, or its header's, for a loop g++ enters in the middle).
    best = {s: (weight(s), None) for s in starts}
    queue = list(starts)
    entry = None
    while queue:
        queue.sort(key=lambda s: best[s][0])
        i = queue.pop(0)
        if a <= i <= last:
            entry = i
            break
        for t in successors(i):
            if t >= len(lines):
                continue
            cost = best[i][0] + (0 if a <= t <= last else weight(t))
            if t not in best or cost < best[t][0]:
                best[t] = (cost, i)
                queue.append(t)
    if entry is None:
        raise RuntimeError(f"{kernel.label}: no path from the inner loop's exit back to it")
    path = []
    i = best[entry][1]
    while i is not None:
        path.append(i)
        i = best[i][1]
    return instructions(lines[a:b]) * kernel.group + instructions([lines[i] for i in reversed(path)])


def mca(body, cpu, iterations, workdir):
    path = workdir / "loop.s"
    path.write_text("\n".join(body) + "\n")
    out = run([MCA, "-mtriple=aarch64-linux-gnu", f"-mcpu={cpu}", "-mattr=+dotprod,+i8mm,+fullfp16",
               f"-iterations={iterations}", path])
    cycles = int(re.search(r"^Total Cycles:\s+(\d+)", out, re.M).group(1))
    return cycles / iterations


def peak_key(kernel, body):
    """The PEAK_LOOPS entry a loop is held against: fmla on f16 lanes has its own."""
    if kernel.op == "fmla" and any(mnemonic(i) == "fmla" and ".8h" in i for i in body):
        return "fmla.8h"
    if kernel.op == "usdot":  # the pipes and rate of sdot, in every model here
        return "sdot"
    return kernel.op


def modeled(kernel, body, cpus, peaks, iterations, workdir):
    """{cpu: (cycles per iteration, MACs per cycle, fraction of peak)}, None where the CPU lacks the
    kernel's extension."""
    macs = sum(macs_of(i) for i in body if mnemonic(i).startswith(kernel.op))
    rates = {}
    for cpu in cpus:
        if kernel.needs and kernel.needs not in CPUS.get(cpu, set()):
            rates[cpu] = None
            continue
        cycles = mca(body, cpu, iterations, workdir)
        rates[cpu] = (cycles, macs / cycles, macs / cycles / peaks[cpu, peak_key(kernel, body)])
    return macs, rates


def cell(rate):
    return "n/a" if rate is None else f"{rate[0]:.1f} cyc, {rate[1]:.1f}/cyc, {rate[2]:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpus", default=",".join(CPUS), help="llvm-mca CPU models (default: %(default)s)")
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--ggml", type=pathlib.Path, metavar="PATH",
                        help="a llama.cpp tree: also model ggml's corresponding kernels, side by side")
    args = parser.parse_args()
    tools = [CXX, MCA, "c++filt"] + (["aarch64-linux-gnu-gcc", "clang"] if args.ggml else [])
    for tool in tools:
        if shutil.which(tool) is None:
            sys.exit(f"neon_mca: {tool} not found (g++-aarch64-linux-gnu, gcc-aarch64-linux-gnu, llvm-19, clang)")
    if args.ggml:
        args.ggml = args.ggml.resolve()
        missing = [source for source in sorted({peer.source for peer in GGML}) if not (args.ggml / source).is_file()]
        if missing:
            sys.exit(f"neon_mca: {args.ggml} is not a llama.cpp tree with ggml's AArch64 kernels: no "
                     + ", ".join(missing))
    cpus = args.cpus.split(",")
    peak_loops = dict(PEAK_LOOPS)
    if args.ggml:
        peak_loops["fmla.8h"] = ("fmla v{acc}.8h, v30.8h, v31.8h",)  # tinyBLAS multiplies by vector
    with tempfile.TemporaryDirectory() as tmp:
        workdir = pathlib.Path(tmp)
        peaks = {}
        for cpu in cpus:
            for op, forms in peak_loops.items():
                peaks[cpu, op] = max(24 * macs_of(form.format(acc=0)) / mca([form.format(acc=acc) for acc in range(24)],
                                                                             cpu, args.iterations, workdir)
                                     for form in forms)
        print("Peak multiply-adds per cycle of one core (llvm-mca models; 24 independent instructions, the fastest"
              " form):\n")
        print("| instruction | " + " | ".join(cpus) + " |")
        print("|---|" + "---:|" * len(cpus))
        for op in peak_loops:
            print(f"| {op} | " + " | ".join(f"{peaks[cpu, op]:.1f}" for cpu in cpus) + " |")
        print("\nInner loops, modeled: cycles per iteration, multiply-adds per cycle, fraction of the model's peak:\n")
        print("| micro-kernel | instructions | MACs | " + " | ".join(cpus) + " |")
        print("|---|---:|---:|" + "---|" * len(cpus))
        asm = {}
        ours = {}
        for kernel in KERNELS:
            if kernel.source not in asm:
                asm[kernel.source] = functions(assembly(kernel.source))
            body = chosen_loop(kernel, asm[kernel.source])
            macs, rates = modeled(kernel, body, cpus, peaks, args.iterations, workdir)
            ours[kernel.label] = (macs, rates)
            print(f"| {kernel.label} | {len(body)} | {macs} | " + " | ".join(cell(rates[cpu]) for cpu in cpus) + " |")
        print("\nOurs per group of 32 weights (the inner loop's trips laid out flat, then the way back into it;"
              " scales included):\n")
        print("| micro-kernel | instructions | MACs | " + " | ".join(cpus) + " |")
        print("|---|---:|---:|" + "---|" * len(cpus))
        for kernel in KERNELS:
            if not kernel.group:
                continue
            body = group_body(kernel, asm[kernel.source])
            macs, rates = modeled(kernel, body, cpus, peaks, args.iterations, workdir)
            ours[kernel.label] = (macs, rates)
            print(f"| {kernel.label} | {len(body)} | {macs} | " + " | ".join(cell(rates[cpu]) for cpu in cpus) + " |")
        if not args.ggml:
            return 0
        print("\nggml's loops (one block of 32 weights an iteration, scales included), modeled the same way:\n")
        print("| format | ggml kernel | -march | instructions | MACs | " + " | ".join(cpus) + " |")
        print("|---|---|---|---:|---:|" + "---|" * len(cpus))
        theirs = {}
        for peer in GGML:
            key = (peer.source, peer.march, peer.clang)
            if key not in asm:
                asm[key] = functions(ggml_assembly(args.ggml, peer.source, peer.march, peer.clang))
            try:
                body = chosen_loop(peer, asm[key])
            except RuntimeError as error:
                raise RuntimeError(f"{args.ggml / peer.source}: {error} (another llama.cpp version?)") from None
            macs, rates = modeled(peer, body, cpus, peaks, args.iterations, workdir)
            if macs != peer.macs:
                raise RuntimeError(f"{peer.label}: its loop does {macs} multiply-adds, its source {peer.macs}")
            if peer.label in theirs:  # set beside a second loop of ours
                continue
            theirs[peer.label] = (macs, rates)
            print(f"| {peer.format} | {peer.label} | {peer.march} | {len(body)} | {macs} | "
                  + " | ".join(cell(rates[cpu]) for cpu in cpus) + " |")
        print("\nSide by side: multiply-adds per cycle, ours / ggml's (ours per group where it has groups);"
              " `slower` where ours takes more modeled cycles per multiply-add:\n")
        print("| format | ours | ggml | " + " | ".join(cpus) + " |")
        print("|---|---|---|" + "---|" * len(cpus))
        for peer in GGML:
            cells = []
            for cpu in cpus:
                mine, other = ours[peer.ours][1][cpu], theirs[peer.label][1][cpu]
                if mine is None or other is None:
                    cells.append("n/a")
                    continue
                # Within 2% is llvm-mca's rounding at the loop's ends, not a difference.
                verdict = " **slower**" if other[1] > mine[1] * 1.02 else " same" if other[1] > mine[1] * 0.98 else ""
                cells.append(f"{mine[1]:.1f} / {other[1]:.1f}{verdict}")
            print(f"| {peer.format} | {peer.ours} | {peer.label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as error:  # a compile that failed, a kernel or loop not found: said plainly
        sys.exit(f"neon_mca: {error}")
