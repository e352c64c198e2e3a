#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Trains the bundled model: a small Llama-architecture model on the King James Bible as Debian
ships it (package bible-kjv, public domain), with a SentencePiece BPE tokenizer trained by
Debian's spm_train, written in Hugging Face layout under models/<name>/ with TRAINING.md saying
how it was made. Run by hand (tens of minutes on 2 cores); CI never trains: the weights are
committed.

  sudo apt-get install bible-kjv sentencepiece python3-torch python3-numpy
  /usr/bin/python3 scripts/train_bundled_model.py --minutes 40
  /usr/bin/python3 scripts/train_bundled_model.py --draft --minutes 12   (after the above)

Data: every verse of `bible Gen1:1-Rev22:21`, one per line, chapter headings and verse numbers
removed. The books in HELD_OUT (one Old Testament narrative, one prophet, one epistle) are left
out of training and written to models/<name>/heldout.txt, the text `staticlm eval` and the tests
score. The model: RMSNorm, rotary positions, grouped-query attention, a SwiGLU MLP, tied
embeddings, as transformers' LlamaForCausalLM computes them (a check at the end runs the exported
bf16 weights through scripts/fixturegen's independent float64 reference and compares).

--draft trains models/<name>-draft instead: a much smaller model for speculative decoding on the
same text and held-out books, with the bundled model's tokenizer files copied byte for byte (a
draft must share the target's token ids, which speculative decoding checks by the tokenizer's
sha256), and measures how often its greedy next token is the bundled model's (the acceptance rate
greedy speculation sees).
"""
import argparse
import hashlib
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from fixturegen import checkpoint, reference_model  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAME = "kjv-llama-6m"
HELD_OUT = ["Ruth", "Jonah", "Philippians"]
VERSES = "Gen1:1-Rev22:21"

CONFIG = {
    "vocab_size": 4096,
    "hidden_size": 256,
    "intermediate_size": 768,
    "num_hidden_layers": 6,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "max_position_embeddings": 1024,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
}
SEQ_LEN = 512
DRAFT_NAME = NAME + "-draft"
DRAFT_CONFIG = dict(CONFIG, hidden_size=128, intermediate_size=384, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2)
TOKENIZER_FILES = ["tokenizer.model", "tokenizer.json", "tokenizer_config.json"]


def run(command, **kwargs):
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        sys.exit(f"train: {' '.join(command)} failed ({done.returncode}):\n{done.stderr.strip()[-2000:]}")
    return done.stdout


# --- data -------------------------------------------------------------------------------------

def verses():
    """(book, text) per verse, in canonical order, from the bible tool's output."""
    text = run(["bible", "-l100000", VERSES])
    book = None
    out = []
    for line in text.splitlines():
        heading = re.fullmatch(r"(.+?) (\d+)", line.strip())
        verse = re.match(r"\s*(\d+) (.*)", line)
        if heading and not line.startswith(" "):
            book = heading.group(1)
        elif verse and book is not None:
            out.append((book, " ".join(verse.group(2).split())))
        elif line.strip() and out:
            out[-1] = (out[-1][0], out[-1][1] + " " + " ".join(line.split()))
    return out


def prepare_text(work, heldout_path):
    all_verses = verses()
    if len(all_verses) != 31102:
        sys.exit(f"train: expected the 31102 verses of the KJV, parsed {len(all_verses)}")
    books = list(dict.fromkeys(book for book, _ in all_verses))
    for book in HELD_OUT:
        if book not in books:
            sys.exit(f"train: held-out book '{book}' not among {books}")
    text_of = {book: " ".join(text for b, text in all_verses if b == book) for book in books}
    train_books = [book for book in books if book not in HELD_OUT]
    # The tokenizer trains on verses (spm_train skips lines over 16 KiB); the model on each book
    # as one running text, the way `staticlm eval` reads a file.
    (work / "train_verses.txt").write_text(
        "\n".join(text for book, text in all_verses if book not in HELD_OUT) + "\n")
    (work / "train_books.txt").write_text("\n".join(text_of[book] for book in train_books) + "\n")
    # One line, no newline: `staticlm eval` scores the file's bytes as they are.
    heldout_path.write_text(" ".join(text_of[book] for book in HELD_OUT))
    return len(train_books), len(HELD_OUT)


# --- tokenizer --------------------------------------------------------------------------------

def train_tokenizer(work, model_dir, vocab_size):
    # identity normalization and kept whitespace, as Llama 2's tokenizer: the tokenizer.json
    # below reproduces the .model's ids only without NFKC and space collapsing.
    run(["spm_train", f"--input={work / 'train_verses.txt'}", f"--model_prefix={work / 'tokenizer'}",
         f"--vocab_size={vocab_size}", "--model_type=bpe", "--byte_fallback=true", "--character_coverage=1.0",
         "--split_digits=true", "--normalization_rule_name=identity", "--remove_extra_whitespaces=false",
         "--unk_id=0", "--bos_id=1", "--eos_id=2", "--pad_id=-1", "--num_threads=2", "--seed_sentencepiece_size=200000",
         "--max_sentence_length=16384"])
    (model_dir / "tokenizer.model").write_bytes((work / "tokenizer.model").read_bytes())
    vocab = []
    for line in run(["spm_export_vocab", f"--model={work / 'tokenizer.model'}"]).splitlines():
        piece, score = line.split("\t")
        vocab.append((piece, float(score)))
    (model_dir / "tokenizer.json").write_text(json.dumps(tokenizer_json(vocab), ensure_ascii=False, indent=1) + "\n")
    (model_dir / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
        "add_bos_token": True, "add_eos_token": False, "clean_up_tokenization_spaces": False,
        "model_max_length": SEQ_LEN * 2, "legacy": False}, indent=1) + "\n")


def reuse_tokenizer(work, model_dir, target_dir):
    """Copies the target's tokenizer files byte for byte (the draft's ids must be the target's);
    returns their sha256s."""
    sums = {}
    for name in TOKENIZER_FILES:
        blob = (target_dir / name).read_bytes()
        (model_dir / name).write_bytes(blob)
        sums[name] = hashlib.sha256(blob).hexdigest()
    (work / "tokenizer.model").write_bytes((target_dir / "tokenizer.model").read_bytes())
    return sums


def tokenizer_json(vocab):
    """The Llama-2-style tokenizer.json of a SentencePiece BPE model (pieces and scores), built as
    transformers' LlamaConverter builds it: BPE with byte fallback, merges recovered from the
    vocabulary in score order."""
    ids = {piece: index for index, (piece, _) in enumerate(vocab)}
    merges = []
    for merged, score in vocab:
        local = []
        for cut in range(1, len(merged)):
            left, right = merged[:cut], merged[cut:]
            if left in ids and right in ids:
                local.append((left, right, score))
        merges.extend(sorted(local, key=lambda m: (ids[m[0]], ids[m[1]])))
    merges.sort(key=lambda m: m[2], reverse=True)
    special = [{"id": ids[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for t in ("<unk>", "<s>", "</s>")]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": special,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [ids["<s>"]], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": ids, "merges": [[left, right] for left, right, _ in merges]},
    }


def encode_lines(work, path):
    """Token ids of every line of `path` with the trained .model, each line a document: BOS, then
    its text (no EOS: generation runs on, as in a book)."""
    out = run(["spm_encode", f"--model={work / 'tokenizer.model'}", "--output_format=id", f"--input={path}"])
    ids = []
    for line in out.splitlines():
        ids.append(1)
        ids.extend(int(t) for t in line.split())
    return np.array(ids, dtype=np.int64)


# --- model ------------------------------------------------------------------------------------

class Llama(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        h, kv = c["hidden_size"], c["num_key_value_heads"]
        self.head_dim = h // c["num_attention_heads"]
        self.embed = torch.nn.Embedding(c["vocab_size"], h)
        self.layers = torch.nn.ModuleList()
        for _ in range(c["num_hidden_layers"]):
            layer = torch.nn.Module()
            layer.input_norm = torch.nn.Parameter(torch.ones(h))
            layer.q = torch.nn.Linear(h, h, bias=False)
            layer.k = torch.nn.Linear(h, kv * self.head_dim, bias=False)
            layer.v = torch.nn.Linear(h, kv * self.head_dim, bias=False)
            layer.o = torch.nn.Linear(h, h, bias=False)
            layer.post_norm = torch.nn.Parameter(torch.ones(h))
            layer.gate = torch.nn.Linear(h, c["intermediate_size"], bias=False)
            layer.up = torch.nn.Linear(h, c["intermediate_size"], bias=False)
            layer.down = torch.nn.Linear(c["intermediate_size"], h, bias=False)
            self.layers.append(layer)
        self.norm = torch.nn.Parameter(torch.ones(h))
        inverse = 1.0 / (c["rope_theta"] ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim))
        angles = torch.outer(torch.arange(c["max_position_embeddings"], dtype=torch.float32), inverse)
        self.register_buffer("cos", torch.cat([angles, angles], dim=-1).cos(), persistent=False)
        self.register_buffer("sin", torch.cat([angles, angles], dim=-1).sin(), persistent=False)
        positions = c["max_position_embeddings"]
        self.register_buffer("causal", torch.ones(positions, positions, dtype=torch.bool).triu(1), persistent=False)
        std = 0.02
        for p in self.parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, std=std)
        for layer in self.layers:  # residual projections scaled down with depth (GPT-2)
            torch.nn.init.normal_(layer.o.weight, std=std / math.sqrt(2 * c["num_hidden_layers"]))
            torch.nn.init.normal_(layer.down.weight, std=std / math.sqrt(2 * c["num_hidden_layers"]))

    def rms(self, x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.c["rms_norm_eps"]) * w

    def rope(self, x, t):
        cos, sin = self.cos[:t][None, None], self.sin[:t][None, None]
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rotated * sin

    def forward(self, ids):
        b, t = ids.shape
        heads, kv = self.c["num_attention_heads"], self.c["num_key_value_heads"]
        x = self.embed(ids)
        for layer in self.layers:
            h = self.rms(x, layer.input_norm)
            q = layer.q(h).view(b, t, heads, self.head_dim).transpose(1, 2)
            k = layer.k(h).view(b, t, kv, self.head_dim).transpose(1, 2)
            v = layer.v(h).view(b, t, kv, self.head_dim).transpose(1, 2)
            q, k = self.rope(q, t), self.rope(k, t)
            k = k.repeat_interleave(heads // kv, dim=1)
            v = v.repeat_interleave(heads // kv, dim=1)
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim)
            a = torch.softmax(scores.masked_fill(self.causal[:t, :t], float("-inf")), dim=-1) @ v
            x = x + layer.o(a.transpose(1, 2).reshape(b, t, -1))
            h = self.rms(x, layer.post_norm)
            x = x + layer.down(F.silu(layer.gate(h)) * layer.up(h))
        return self.rms(x, self.norm) @ self.embed.weight.T

    def hf_parameters(self):
        """Hugging Face names -> parameters (tied: no lm_head.weight)."""
        out = {"model.embed_tokens.weight": self.embed.weight, "model.norm.weight": self.norm}
        for i, layer in enumerate(self.layers):
            p = f"model.layers.{i}."
            out.update({p + "input_layernorm.weight": layer.input_norm,
                        p + "self_attn.q_proj.weight": layer.q.weight, p + "self_attn.k_proj.weight": layer.k.weight,
                        p + "self_attn.v_proj.weight": layer.v.weight, p + "self_attn.o_proj.weight": layer.o.weight,
                        p + "post_attention_layernorm.weight": layer.post_norm,
                        p + "mlp.gate_proj.weight": layer.gate.weight, p + "mlp.up_proj.weight": layer.up.weight,
                        p + "mlp.down_proj.weight": layer.down.weight})
        return out

    def hf_tensors(self):
        return {name: value.detach().float().numpy() for name, value in self.hf_parameters().items()}

    def load_bf16(self, path):
        """Loads a bf16 model.safetensors this script wrote."""
        bits = checkpoint.read_safetensors(path)
        with torch.no_grad():
            for name, parameter in self.hf_parameters().items():
                parameter.copy_(torch.from_numpy(checkpoint.bf16_bits_to_float64(bits[name])).float())
        return self


def sliding_perplexity(model, ids, ctx=SEQ_LEN, stride=SEQ_LEN // 2):
    """Perplexity as `staticlm eval` computes it: windows of `ctx` tokens from positions 0, stride,
    2 * stride, ... (each from position 0 of a fresh context), each scoring the tokens no earlier
    window scored (the first window: all but its first token). Returns (perplexity, scored)."""
    total, scored, done = 0.0, 0, 1  # tokens [0, done) are scored (token 0 never is)
    with torch.no_grad():
        for begin in range(0, len(ids) - 1, stride):
            window = torch.from_numpy(ids[begin:begin + ctx])[None]
            logits = model(window)[0]
            # Row j predicts token begin + j + 1; score the targets at positions >= done.
            first = max(done, begin + 1) - begin - 1
            targets = window[0, first + 1:]
            total += F.cross_entropy(logits[first:len(targets) + first].double(), targets, reduction="sum").item()
            scored += len(targets)
            done = begin + window.shape[1]
            if done >= len(ids):
                break
    return math.exp(total / scored), scored


def mean_loss(model, ids, batch=8):
    """Mean next-token loss over `ids` cut into SEQ_LEN windows (the last partial one dropped)."""
    windows = (len(ids) - 1) // SEQ_LEN
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, windows, batch):
            rows = [ids[w * SEQ_LEN:w * SEQ_LEN + SEQ_LEN + 1] for w in range(start, min(windows, start + batch))]
            x = torch.from_numpy(np.stack(rows))
            logits = model(x[:, :-1])
            total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1),
                                     reduction="sum").item()
            count += x[:, 1:].numel()
    return total / count


def greedy_agreement(draft, target, ids, prompts=16, prompt_len=32, new=25):
    """How often the draft's argmax next token is the target's: (rate, positions) teacher-forced at
    every position of `ids` (non-overlapping SEQ_LEN windows), and (rate, positions) over the
    target's own greedy continuations (`new` tokens) of `prompts` evenly spaced `prompt_len`-token
    prompts from `ids`, the tokens greedy speculative decoding would have the draft propose."""
    with torch.no_grad():
        same = total = 0
        for begin in range(0, len(ids), SEQ_LEN):
            x = torch.from_numpy(ids[begin:begin + SEQ_LEN])[None]
            same += (draft(x).argmax(-1) == target(x).argmax(-1)).sum().item()
            total += x.shape[1]
        forced = (same / total, total)
        same = total = 0
        for start in np.linspace(0, len(ids) - prompt_len, prompts).astype(int):
            x = torch.from_numpy(ids[start:start + prompt_len])[None]
            for _ in range(new):
                x = torch.cat([x, target(x)[:, -1:].argmax(-1)], dim=1)
            proposed = draft(x[:, :-1])[0, prompt_len - 1:].argmax(-1)
            same += (proposed == x[0, prompt_len:]).sum().item()
            total += new
    return forced, (same / total, total)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=40.0, help="training time budget")
    parser.add_argument("--batch", type=int, default=16, help="sequences of 512 tokens per step")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=100, help="warm-up steps")
    parser.add_argument("--draft", action="store_true",
                        help=f"train {DRAFT_NAME}, a draft for {NAME} (which must exist): its tokenizer, ~1/6 the size")
    parser.add_argument("--out", help="model directory (default: models/<name>)")
    parser.add_argument("--speed-test", action="store_true", help="time a few steps and exit")
    args = parser.parse_args()
    args.name, args.config = (DRAFT_NAME, DRAFT_CONFIG) if args.draft else (NAME, CONFIG)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    model_dir = pathlib.Path(args.out or ROOT / "models" / args.name)
    target_dir = ROOT / "models" / NAME
    work = ROOT / "build" / ("train_bundled_model" + ("_draft" if args.draft else ""))
    model_dir.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)

    model = Llama(args.config)
    params = sum(p.numel() for p in model.parameters())
    if args.speed_test:
        x = torch.randint(0, args.config["vocab_size"], (args.batch, SEQ_LEN + 1))
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
        start = time.time()
        for _ in range(3):
            logits = model(x[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        per_step = (time.time() - start) / 3
        print(f"{params / 1e6:.2f} M parameters; {per_step:.2f} s per step of {args.batch} x {SEQ_LEN} tokens "
              f"= {args.batch * SEQ_LEN / per_step:.0f} tokens/s")
        return

    # The draft scores the target's heldout.txt (the same books, so the same bytes: checked).
    heldout_path = (work if args.draft else model_dir) / "heldout.txt"
    train_books, heldout_books = prepare_text(work, heldout_path)
    if args.draft:
        if heldout_path.read_bytes() != (target_dir / "heldout.txt").read_bytes():
            sys.exit(f"train: the held-out text differs from {target_dir / 'heldout.txt'}")
        args.tokenizer_sha256 = reuse_tokenizer(work, model_dir, target_dir)
    else:
        train_tokenizer(work, model_dir, CONFIG["vocab_size"])
    train_ids = encode_lines(work, work / "train_books.txt")
    heldout_ids = encode_lines(work, heldout_path)
    print(f"{train_books} training books ({len(train_ids)} tokens), {heldout_books} held out "
          f"({len(heldout_ids)} tokens); {params / 1e6:.2f} M parameters", flush=True)

    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    rng = np.random.default_rng(args.seed)
    budget = args.minutes * 60
    start = time.time()
    step = 0
    losses = []
    while True:
        elapsed = time.time() - start
        if elapsed >= budget:
            break
        # Cosine decay over the time budget (steps are near-uniform in cost).
        progress = elapsed / budget
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))
        for group in opt.param_groups:
            group["lr"] = lr
        starts = rng.integers(0, len(train_ids) - SEQ_LEN - 1, size=args.batch)
        x = torch.from_numpy(np.stack([train_ids[s:s + SEQ_LEN + 1] for s in starts]))
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        step += 1
        if step % 50 == 0:
            print(f"step {step}, {elapsed / 60:.1f} min, lr {lr:.2e}, loss {np.mean(losses[-50:]):.3f}", flush=True)
    model.eval()
    train_loss = mean_loss(model, train_ids[: len(heldout_ids) * 4])
    heldout_loss = mean_loss(model, heldout_ids)
    print(f"done: {step} steps; train loss {train_loss:.4f}, held-out loss {heldout_loss:.4f} "
          f"(perplexity {math.exp(heldout_loss):.2f})", flush=True)
    write_model(model, model_dir, args, step, train_loss, heldout_loss, len(train_ids), heldout_ids, params)
    if args.draft:
        target = Llama(CONFIG).load_bf16(target_dir / "model.safetensors").eval()
        target_params = sum(p.numel() for p in target.parameters())
        forced, greedy = greedy_agreement(model, target, heldout_ids)
        print(f"{params} vs {target_params} parameters; greedy agreement with {NAME}: {forced[0]:.3f} teacher-forced "
              f"({forced[1]} held-out positions), {greedy[0]:.3f} on its greedy continuations ({greedy[1]})", flush=True)
        write_training_notes(model_dir, args, step, train_loss, heldout_loss, len(train_ids), len(heldout_ids), params,
                             args.reference_error, args.eval_perplexity, (target_params, forced, greedy))


def write_model(model, model_dir, args, steps, train_loss, heldout_loss, train_tokens, heldout_ids, params):
    tensors = model.hf_tensors()
    bf16 = {name: checkpoint.float32_to_bf16_bits(value) for name, value in tensors.items()}
    checkpoint.write_safetensors(model_dir / "model.safetensors", bf16)
    c = args.config
    config = dict(c, architectures=["LlamaForCausalLM"], model_type="llama", tie_word_embeddings=True,
                  bos_token_id=1, eos_token_id=2, hidden_act="silu", torch_dtype="bfloat16",
                  head_dim=c["hidden_size"] // c["num_attention_heads"], attention_bias=False, mlp_bias=False)
    (model_dir / "config.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
    (model_dir / "generation_config.json").write_text(json.dumps({
        "bos_token_id": 1, "eos_token_id": 2, "do_sample": True, "temperature": 0.7, "top_k": 40, "top_p": 0.9,
        "repetition_penalty": 1.1, "max_new_tokens": 128}, indent=1) + "\n")
    # The exported bf16 weights through the independent float64 reference: the training module
    # must compute what transformers' Llama computes on them.
    weights = {name: torch.from_numpy(checkpoint.bf16_bits_to_float64(bits)) for name, bits in bf16.items()}
    spec = reference_model.ModelSpec.from_config(config)
    probe = [1] + list(range(100, 160))
    expected = reference_model.forward(weights, spec, probe)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.copy_(torch.from_numpy(checkpoint.bf16_bits_to_float64(
                checkpoint.float32_to_bf16_bits(parameter.detach().numpy()))).float())
        got = model(torch.tensor([probe]))[0].double()
    error = float((got - expected).abs().max() / expected.abs().max())
    if error > 1e-4:
        sys.exit(f"train: the training module and the reference disagree on the exported weights ({error:.2e})")
    print(f"reference check: relative difference {error:.1e} on {len(probe)} tokens", flush=True)
    # The model now holds the bf16 weights: the perplexity staticlm eval must reproduce.
    perplexity, scored = sliding_perplexity(model, heldout_ids)
    print(f"held-out perplexity (bf16 weights, windows of {SEQ_LEN}, stride {SEQ_LEN // 2}): {perplexity:.4f} "
          f"over {scored} tokens", flush=True)
    (model_dir / "heldout_perplexity.json").write_text(json.dumps({
        "text": heldout_name(args), "ctx": SEQ_LEN, "stride": SEQ_LEN // 2, "scored_tokens": scored,
        "perplexity": perplexity}, indent=1) + "\n")
    args.reference_error, args.eval_perplexity = error, perplexity
    write_training_notes(model_dir, args, steps, train_loss, heldout_loss, train_tokens, len(heldout_ids), params,
                         error, perplexity)
    print("wrote", model_dir, flush=True)


def heldout_name(args):
    """The held-out text, relative to the model directory (a draft scores its target's)."""
    return f"../{NAME}/heldout.txt" if args.draft else "heldout.txt"


def write_training_notes(model_dir, args, steps, train_loss, heldout_loss, train_tokens, heldout_tokens, params,
                         reference_error, eval_perplexity, draft=None):
    """TRAINING.md; `draft`: (target parameters, teacher-forced and greedy agreement) for a draft."""
    c, heldout = args.config, heldout_name(args)
    command = " ".join(["/usr/bin/python3", "scripts/train_bundled_model.py"] + sys.argv[1:])
    if args.draft:
        intro = [f"A draft model for speculative decoding with [{NAME}](../{NAME}/TRAINING.md): the same",
                 "Llama architecture, tokenizer and training text at a fraction of the size, by",
                 "`scripts/train_bundled_model.py --draft` (which needs `models/" + NAME + "` in place).",
                 "Reproducible from the command below (floating-point summation order and thread timing make it",
                 "not bit-exact)."]
        tokenizer = [f"Not trained: {', '.join(f'`{name}`' for name in TOKENIZER_FILES)} are",
                     f"{NAME}'s, copied byte for byte (speculative decoding needs the draft's token ids to be",
                     "the target's). sha256:", ""]
        tokenizer += [f"- `{name}`: `{digest}`" for name, digest in args.tokenizer_sha256.items()]
    else:
        intro = ["A small Llama-architecture model trained on the King James Bible as Debian's `bible-kjv`",
                 "package ships it (public domain), by `scripts/train_bundled_model.py`. Reproducible from the",
                 "command below (floating-point summation order and thread timing make it not bit-exact)."]
        tokenizer = [
            f"SentencePiece BPE by `spm_train`: vocabulary {c['vocab_size']}, byte fallback, digits split,",
            "identity normalization, whitespace kept (as Llama 2's). `tokenizer.model` is its output;",
            "`tokenizer.json` is the same tokenizer in Hugging Face's Llama-2 form (BPE with byte fallback,",
            "merges recovered from the vocabulary in score order, as transformers' LlamaConverter does)."]
    lines = [
        f"# {args.name}: how it was made",
        "",
        *intro,
        "",
        "## Command",
        "",
        "```sh",
        "sudo apt-get install bible-kjv sentencepiece python3-torch python3-numpy libopenblas0-pthread",
        command,
        "```",
        "",
        "(`libopenblas0-pthread` matters: without it Debian's PyTorch multiplies with the reference BLAS,",
        "about 25x slower on the machine measured.)",
        "",
        "## Data",
        "",
        f"- `bible -l100000 {VERSES}`: 31,102 verses; chapter headings and verse numbers removed.",
        f"- Held out (never trained on): {', '.join(HELD_OUT)}: {heldout_tokens} tokens, in `{heldout}`",
        "  (their verses joined by spaces, one line, no newline"
        + (";\n  the script checks that it is byte for byte the text it holds out)." if args.draft else ")."),
        f"- Training text: the other books, {train_tokens} tokens; each book `<s>` and its verses joined",
        "  by spaces" + (" (the tokenizer trains on the same verses one per line)." if not args.draft else "."),
        "",
        "## Tokenizer",
        "",
        *tokenizer,
        "",
        "## Model",
        "",
        f"LlamaForCausalLM: {params / 1e6:.2f} M parameters ({params:,}"
        + (f"; {params / draft[0]:.1%} of {NAME}'s {draft[0]:,}" if draft else "") + f"); hidden {c['hidden_size']}, "
        f"{c['num_hidden_layers']} layers, {c['num_attention_heads']} heads / "
        f"{c['num_key_value_heads']} kv heads (head dim {c['hidden_size'] // c['num_attention_heads']}), "
        f"MLP {c['intermediate_size']}, rope theta {c['rope_theta']:g}, tied embeddings, "
        f"context {c['max_position_embeddings']} (trained on windows of {SEQ_LEN}). Stored as bf16.",
        "",
        "## Training",
        "",
        f"- seed {args.seed}; AdamW (betas 0.9 / 0.95, weight decay 0.1), peak learning rate {args.lr:g},",
        f"  {args.warmup} warm-up steps, cosine decay to a tenth over a {args.minutes:g}-minute budget; gradient norm",
        f"  clipped at 1; batches of {args.batch} random {SEQ_LEN}-token windows; {args.threads} threads, float32.",
        f"- {steps} steps ({steps * args.batch * SEQ_LEN / train_tokens:.2f} passes over the training tokens).",
        "",
        "## Result",
        "",
        f"- train loss {train_loss:.4f} (over the first 4x the held-out length of the training tokens)",
        f"- held-out loss {heldout_loss:.4f} nats / token: perplexity {math.exp(heldout_loss):.3f}",
        f"  (non-overlapping {SEQ_LEN}-token windows of `{heldout}` as the script encodes it, every token",
        "  scored; the float32 module, before bf16 rounding)",
        f"- `{heldout}` through the exported bf16 weights, as `staticlm eval` scores it (windows of",
        f"  {SEQ_LEN} tokens, stride {SEQ_LEN // 2}, each scoring the tokens no earlier window did): perplexity",
        f"  {eval_perplexity:.4f} (also in `heldout_perplexity.json`"
        + (")." if args.draft else ", which the tests compare with)."),
        "- the exported bf16 weights through scripts/fixturegen's float64 reference agree with the",
        f"  training module within {reference_error:.1e} (relative, on 61 tokens).",
        "",
    ]
    if draft:
        _, (forced, forced_n), (greedy, greedy_n) = draft
        lines += [
            f"## Agreement with {NAME}",
            "",
            f"How often this model's argmax next token is {NAME}'s (both bf16 weights), which is the",
            "chance that greedy speculative decoding accepts a drafted token:",
            "",
            f"- teacher-forced on `{heldout}` (every position, non-overlapping {SEQ_LEN}-token windows):",
            f"  {forced:.1%} of {forced_n} positions",
            f"- on {NAME}'s own greedy continuations (25 tokens after each of 16 evenly spaced 32-token",
            f"  held-out prompts): {greedy:.1%} of {greedy_n} positions. Were each token accepted independently",
            f"  with that rate, 4 drafted tokens would yield {sum(greedy ** i for i in range(5)):.2f} tokens per "
            f"{NAME} pass.",
            "",
        ]
    (model_dir / "TRAINING.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
