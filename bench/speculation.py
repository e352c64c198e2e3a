#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Speculative decoding against plain decoding, each case one `staticlm bench --lookup / --draft`
run (plain and speculative runs alternated in one process, greedy, the tokens compared every run):
the ratio of decode tokens/s is what speculation gains on that text. Run by hand, never by CI.

Cases (docs/performance.md#speculative-decoding), greedy unless said:
  - the bundled model continuing a quoted passage (Genesis 1:1-5, then its opening again), by
    prompt lookup and by its draft program (models/kjv-llama-6m-draft);
  - the bundled model on held-out text sampled at temperature 1: nothing to look up, so the cost
    of guesses that are not kept;
  - random-weight SmolLM-135M and Llama-3.2-1B shapes (scripts/shaped_checkpoint.py, bf16) on a
    prompt asking to repeat a passage, greedy, and on held-out text sampled at temperature 1: with
    random weights only prompt lookup means anything, and what it finds greedy is the model's own
    loops.

  bench/speculation.py [--build build/release] [--work DIR] [-n 128] [-r 3] [--skip-1b]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Genesis 1:1-5 (King James Version, public domain), then its opening again: the bundled model
# continuing a quoted passage.
GENESIS = ("In the beginning God created the heaven and the earth. And the earth was without form, and void; and "
           "darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. And God "
           "said, Let there be light: and there was light. And God saw the light, that it was good: and God divided "
           "the light from the darkness. And God called the light Day, and the darkness he called Night. And the "
           "evening and the morning were the first day.\n\nIn the beginning God created the heaven and")
PASSAGE = ("Repeat the passage below exactly.\n\nPassage: The committee met on Tuesday to review the budget, the "
           "hiring plan and the schedule for the new building. After a long discussion they agreed to postpone "
           "the decision until the next meeting.\n\nRepeated: The committee met on Tuesday to review the budget,")


def cpu_name():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def export(cli, source, out, *flags):
    if not out.exists():
        subprocess.run([cli, "export", str(source), "-o", str(out), *flags], check=True, capture_output=True)
    return out


def bench(cli, program, prompt_file, args, speculation, tokens, temperature):
    done = subprocess.run([cli, "bench", str(program), *speculation, "-f", str(prompt_file), "-n", str(tokens),
                           "-r", str(args.r), "-t", str(args.threads), "--temp", str(temperature), "--json"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench failed: {done.stderr}")
    return json.loads(done.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=str(ROOT / "build" / "release"))
    parser.add_argument("--work", default=None, help="folder for checkpoints and programs (default: a temp dir)")
    parser.add_argument("-n", type=int, default=128, help="tokens decoded per run")
    parser.add_argument("-r", type=int, default=3, help="pairs of runs per case")
    parser.add_argument("--shape-n", type=int, default=64, help="tokens decoded per run on the shaped models")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip-1b", action="store_true", help="leave out the Llama-3.2-1B shape")
    args = parser.parse_args()
    cli = str(pathlib.Path(args.build) / "bin" / "staticlm")
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="speculation-"))
    work.mkdir(parents=True, exist_ok=True)
    texts = {"genesis": GENESIS, "passage": PASSAGE,
             "heldout": (ROOT / "models" / "kjv-llama-6m" / "heldout.txt").read_text()[:600]}
    files = {}
    for name, text in texts.items():
        files[name] = work / f"{name}.txt"
        files[name].write_text(text)

    models = ROOT / "models"
    kjv = export(cli, models / "kjv-llama-6m", work / "kjv.slm")
    draft = export(cli, models / "kjv-llama-6m-draft", work / "kjv-draft.slm")
    cases = [("kjv-llama-6m f32", kjv, "genesis", ["--lookup", "3"], args.n, 0),
             ("kjv-llama-6m f32", kjv, "genesis", ["--draft", str(draft)], args.n, 0),
             ("kjv-llama-6m f32", kjv, "heldout", ["--lookup", "3"], args.n, 1)]
    shapes = ["smollm-135m"] + ([] if args.skip_1b else ["llama-3.2-1b"])
    for shape in shapes:
        checkpoint = work / shape
        if not checkpoint.exists():
            subprocess.run([sys.executable, str(ROOT / "scripts" / "shaped_checkpoint.py"), shape, str(checkpoint)],
                           check=True, capture_output=True)
        program = export(cli, checkpoint, work / f"{shape}-bf16.slm", "--dtype", "bf16", "--max-cache-len", "1024")
        cases += [(f"{shape} bf16 (random weights)", program, "passage", ["--lookup", "3"], args.shape_n, 0),
                  (f"{shape} bf16 (random weights)", program, "heldout", ["--lookup", "3"], args.shape_n, 1)]

    print(f"{cpu_name()}, {args.threads} threads, {args.r} alternated pairs per case\n")
    print("| model | prompt | decoding | proposer | plain t/s | speculative t/s | speed-up | kept / guessed | "
          "same tokens |")
    print("|---|---|---|---|--:|--:|--:|--:|---|")
    for label, program, prompt, speculation, tokens, temperature in cases:
        result = bench(cli, program, files[prompt], args, speculation, tokens, temperature)
        proposer = "lookup 3" if result["proposer"] == "prompt lookup" else "draft"
        decoding = f"{tokens} tokens, " + ("greedy" if temperature == 0 else f"temperature {temperature}")
        same = "yes" if result["runs_with_other_tokens"] == 0 else f"no ({result['runs_with_other_tokens']} runs)"
        print(f"| {label} | {prompt} | {decoding} | {proposer} | {result['plain_tokens_per_s']:.1f} | "
              f"{result['speculative_tokens_per_s']:.1f} | {result['speed_up']:.2f} ± {result['speed_up_sd']:.2f} | "
              f"{result['accepted']} / {result['drafted']} ({100 * result['acceptance_rate']:.0f}%) | {same} |",
              flush=True)


if __name__ == "__main__":
    main()
