#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Restoring a long prompt's session file against prefilling the prompt, in one process, rounds
interleaved (prefill, restore, prefill, ...): the ratio of their medians is what a saved system
prompt or document (`run --prompt-cache`, the server's slot files, TextLLMRunner.restore_session)
saves. Run by hand, never by CI; needs the Python module of the build tree.

By default it writes a random-weight SmolLM-135M-shape checkpoint (scripts/shaped_checkpoint.py),
exports it with a 2048-token cache and builds a prompt of --tokens tokens (the bundled model's
cache stops at 1024). Each restore reads the file from the page cache (it was just written), maps
it, verifies its checksum and copies it into the session's caches; after the last one, a greedy
token generated from the restored cache must be the one the prefill's logits pick.

  bench/session_restore.py [--program P.slm] [--tokens 2000] [--rounds 5] [--build build/release]
"""
import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
SENTENCE = "In the beginning God created the heaven and the earth, verse {}. "


def cpu_name():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def make_program(build, directory):
    checkpoint = directory / "smollm-135m"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "shaped_checkpoint.py"), "smollm-135m", str(checkpoint)],
                   check=True, capture_output=True)
    program = directory / "smollm-135m-2048.slm"
    subprocess.run([str(build / "bin" / "staticlm"), "export", str(checkpoint), "-o", str(program), "--dtype", "bf16",
                    "--max-cache-len", "2048"], check=True, capture_output=True)
    return program


def prompt_of(tokenizer, tokens):
    """Text whose encoding is `tokens` tokens long, or just under."""
    text = ""
    verse = 0
    while True:
        longer = text + SENTENCE.format(verse)
        if len(tokenizer.encode(longer)) > tokens:
            break
        text, verse = longer, verse + 1
    words = SENTENCE.format(verse).split(" ")
    for word in words:
        if len(tokenizer.encode(text + word + " ")) > tokens:
            break
        text += word + " "
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--program", help="a program to use instead of the SmolLM-135M-shape export")
    parser.add_argument("--tokens", type=int, default=2000, help="prompt length")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="0: one per physical core")
    parser.add_argument("--build", default=str(ROOT / "build" / "release"))
    args = parser.parse_args()
    build = pathlib.Path(args.build)
    sys.path.insert(0, str(build / "python"))
    import staticlm  # noqa: E402 - from the build tree named above

    with tempfile.TemporaryDirectory(prefix="session-restore-") as scratch:
        scratch = pathlib.Path(scratch)
        program = pathlib.Path(args.program) if args.program else make_program(build, scratch)
        runner = staticlm.TextLLMRunner(program, threads=args.threads)
        prompt = prompt_of(runner.tokenizer, min(args.tokens, runner.max_cache_len - 1))
        session = scratch / "prompt.session"
        runner.prefill(prompt)  # warm-up: first touches of the weights and caches
        tokens = runner.position
        runner.save_session(session)
        prefill_seconds, restore_seconds = [], []
        for _ in range(args.rounds):
            start = time.perf_counter()
            logits = runner.prefill(prompt)
            prefill_seconds.append(time.perf_counter() - start)
            runner.reset()
            start = time.perf_counter()
            restored = runner.restore_session(session)
            restore_seconds.append(time.perf_counter() - start)
            assert restored == tokens
        # The restored cache is the prefill's: the greedy token after it is the logits' argmax over
        # the tokenizer's vocabulary (generation samples no id past it; the shaped checkpoint's
        # vocabulary is larger than its tokenizer's). The last prompt token is fed again, alone,
        # so float rounding could in principle differ.
        result = runner.generate(prompt, staticlm.GenerationConfig(max_new_tokens=1, temperature=0,
                                                                   reuse_cached_prefix=True))
        assert result.stats.cached_prompt_tokens == tokens - 1, result.stats
        same_token = result.tokens[0] == int(logits[:runner.tokenizer.vocab_size].argmax())
        prefill, restore = statistics.median(prefill_seconds), statistics.median(restore_seconds)
        size = os.path.getsize(session)
        shape = program.name if args.program else "SmolLM-135M shape, random bf16 weights, cache 2048"
        print(f"host: {cpu_name()}, {os.cpu_count()} CPUs; program: {shape}")
        print(f"prompt: {tokens} tokens; session file: {size / 2**20:.1f} MiB; {args.rounds} rounds, medians")
        print("| step | median | every round |")
        print("| --- | --- | --- |")
        print(f"| prefill | {prefill * 1e3:.1f} ms | {', '.join(f'{s * 1e3:.1f}' for s in prefill_seconds)} |")
        print(f"| restore | {restore * 1e3:.1f} ms | {', '.join(f'{s * 1e3:.1f}' for s in restore_seconds)} |")
        print(f"restore / prefill: {restore / prefill:.4f} (goal < 0.1); restore reads {size / restore / 2**30:.2f} GiB/s")
        print(f"greedy token after the restore equals the prefill's argmax: {'yes' if same_token else 'NO'}")


if __name__ == "__main__":
    main()
