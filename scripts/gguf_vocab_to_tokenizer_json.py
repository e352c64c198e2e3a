#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Rebuilds a Hugging Face tokenizer.json from a SentencePiece-type GGUF vocabulary.

llama.cpp ships vocabulary-only GGUF files (models/ggml-vocab-NAME.gguf) with encodings that
Hugging Face transformers produced from the model's real tokenizer (NAME.gguf.inp / .out). For
Phi-3 that is the only public reference, so this script turns the GGUF back into the
tokenizer.json that transformers' slow-to-fast LlamaConverter makes from the same
tokenizer.model, and (with --cases) turns the .inp/.out pair into a parity fixture.

    /usr/bin/python3 scripts/gguf_vocab_to_tokenizer_json.py LLAMA_CPP/models/ggml-vocab-phi-3.gguf \
        --name phi3 --out-dir tests/fixtures/tokenizers \
        --cases LLAMA_CPP/models/ggml-vocab-phi-3.gguf.inp LLAMA_CPP/models/ggml-vocab-phi-3.gguf.out

Writes NAME.tokenizer.json.gz, NAME.tokenizer_config.json and (with --cases) NAME.expected.json.
The output is the same bytes on every run. Only `tokenizer.ggml.model == "llama"` (SentencePiece
BPE with byte pieces) is handled. See docs/tokenizers.md.

What is rebuilt, and from where:
- model: BPE with byte_fallback and fuse_unk, unk_token the GGUF's unknown token. The model
  vocabulary is the SentencePiece pieces: every id up to the last NORMAL or BYTE token. Merges
  follow transformers' rule: for each piece (in id order) every split into two pieces that are
  both in the vocabulary is a merge with that piece's score; splits of one piece are ordered by
  the ids of (left, right); then all merges are sorted by score, highest first, ties broken by the
  longer left part, then the longer right part (a stable sort, so otherwise in the order above).
  As in LlamaConverter, ids 0-2 (unk, bos, eos) score 0.0 (a GGUF from llama.cpp's converter
  gives them -1000).
- normalizer, decoder: the legacy SentencePiece layout of LlamaConverter (Prepend "▁", Replace
  " " with "▁"; decoder Replace "▁" -> " ", ByteFallback, Fuse, Strip one leading space); no
  pre-tokenizer.
- added tokens: every CONTROL, UNKNOWN or USER_DEFINED token inside the model vocabulary, and
  every CONTROL or USER_DEFINED token after it (llama.cpp's padding entries "[PADn]" are
  dropped). CONTROL and UNKNOWN are special; none is normalized. lstrip/rstrip/single_word are
  not in a GGUF: FAMILY_RSTRIP lists the tokens whose real tokenizer.json sets rstrip.
- post-processor: TemplateProcessing adding bos / eos as tokenizer.ggml.add_bos_token /
  add_eos_token say.
"""
import argparse
import gzip
import io
import json
import os
import struct
import subprocess
import sys

# GGUF value types.
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?",
          U64: "<Q", I64: "<q", F64: "<d"}

# llama.cpp token types (gguf TokenType).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

# Added tokens whose real tokenizer.json has rstrip: true (the GGUF does not record it).
# Phi-3-mini-4k-instruct: every added token but <unk>, <s> and <|endoftext|>.
FAMILY_RSTRIP = {
    "phi3": {"</s>", "<|assistant|>", "<|placeholder1|>", "<|placeholder2|>", "<|placeholder3|>",
             "<|placeholder4|>", "<|system|>", "<|end|>", "<|placeholder5|>", "<|placeholder6|>",
             "<|user|>"},
}

SEPARATOR = "\n__ggml_vocab_test__\n"


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, fmt):
        value = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return value

    def string(self):
        length = self.take("<Q")
        raw = self.data[self.pos:self.pos + length]
        self.pos += length
        return raw.decode("utf-8")

    def value(self, kind):
        if kind == STRING:
            return self.string()
        if kind == ARRAY:
            item_kind = self.take("<I")
            count = self.take("<Q")
            return [self.value(item_kind) for _ in range(count)]
        if kind in SCALAR:
            return self.take(SCALAR[kind])
        raise ValueError(f"unknown GGUF value type {kind} at byte {self.pos}")


def read_gguf_metadata(path):
    """The key/value metadata of a GGUF file (versions 2 and 3); tensors are not read."""
    with open(path, "rb") as f:
        reader = Reader(f.read())
    if reader.data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    reader.pos = 4
    version = reader.take("<I")
    if version not in (2, 3):
        raise ValueError(f"{path}: GGUF version {version} is not supported (2, 3)")
    reader.take("<Q")  # tensor count
    kv_count = reader.take("<Q")
    metadata = {}
    for _ in range(kv_count):
        key = reader.string()
        metadata[key] = reader.value(reader.take("<I"))
    return metadata


def generate_merges(pieces, scores):
    """transformers' merge rule for a SentencePiece BPE vocabulary (see the module docstring)."""
    vocab = {piece: index for index, piece in enumerate(pieces)}
    merges = []
    for piece, score in zip(pieces, scores):
        splits = []
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in vocab and right in vocab:
                splits.append((left, right, score))
        splits.sort(key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges.extend(splits)
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    return [[left, right] for left, right, _ in merges]


def build(metadata, family):
    model_type = metadata.get("tokenizer.ggml.model")
    if model_type != "llama":
        raise ValueError(f"tokenizer.ggml.model is {model_type!r}; only 'llama' (SentencePiece BPE) is handled")
    tokens = metadata["tokenizer.ggml.tokens"]
    scores = [float(s) for s in metadata["tokenizer.ggml.scores"]]
    types = metadata["tokenizer.ggml.token_type"]
    piece_count = 1 + max(i for i, t in enumerate(types) if t in (NORMAL, BYTE))
    pieces = tokens[:piece_count]
    piece_scores = scores[:piece_count]
    for i in range(min(3, piece_count)):
        if types[i] in (UNKNOWN, CONTROL, USER_DEFINED):
            piece_scores[i] = 0.0
    byte_pieces = [i for i in range(piece_count) if types[i] == BYTE]
    if [tokens[i] for i in byte_pieces] != [f"<0x{b:02X}>" for b in range(256)]:
        raise ValueError("the vocabulary does not hold the 256 byte pieces <0x00>..<0xFF> in order")
    if len(set(pieces)) != len(pieces):
        raise ValueError("the vocabulary holds a piece twice")

    unk_id = metadata.get("tokenizer.ggml.unknown_token_id")
    bos_id = metadata.get("tokenizer.ggml.bos_token_id")
    eos_id = metadata.get("tokenizer.ggml.eos_token_id")
    pad_id = metadata.get("tokenizer.ggml.padding_token_id")
    add_bos = bool(metadata.get("tokenizer.ggml.add_bos_token", True))
    add_eos = bool(metadata.get("tokenizer.ggml.add_eos_token", False))
    rstrip = FAMILY_RSTRIP.get(family, set())

    added = []
    for i, kind in enumerate(types):
        inside = i < piece_count
        if kind in (CONTROL, USER_DEFINED) or (inside and kind == UNKNOWN):
            added.append({
                "id": i,
                "content": tokens[i],
                "single_word": False,
                "lstrip": False,
                "rstrip": tokens[i] in rstrip,
                "normalized": False,
                "special": kind in (CONTROL, UNKNOWN),
            })

    def special(token_id):
        return {"SpecialToken": {"id": tokens[token_id], "type_id": 0}}

    def sequence(name, type_id):
        return {"Sequence": {"id": name, "type_id": type_id}}

    single, specials = [], {}
    for wanted, token_id in ((add_bos, bos_id), (add_eos, eos_id)):
        if wanted and token_id is not None:
            specials[tokens[token_id]] = {"id": tokens[token_id], "ids": [token_id], "tokens": [tokens[token_id]]}
    if add_bos and bos_id is not None:
        single.append(special(bos_id))
    single.append(sequence("A", 0))
    if add_eos and eos_id is not None:
        single.append(special(eos_id))
    pair = list(single)
    if add_bos and bos_id is not None:
        pair.append({"SpecialToken": {"id": tokens[bos_id], "type_id": 1}})
    pair.append(sequence("B", 1))
    if add_eos and eos_id is not None:
        pair.append({"SpecialToken": {"id": tokens[eos_id], "type_id": 1}})

    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
        ]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing", "single": single, "pair": pair,
                           "special_tokens": specials},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0},
        ]},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": tokens[unk_id] if unk_id is not None else None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": {piece: i for i, piece in enumerate(pieces)},
            "merges": generate_merges(pieces, piece_scores),
        },
    }

    def name(token_id):
        return tokens[token_id] if token_id is not None else None

    config = {
        "add_bos_token": add_bos,
        "add_eos_token": add_eos,
        "bos_token": name(bos_id),
        "eos_token": name(eos_id),
        "unk_token": name(unk_id),
        "pad_token": name(pad_id),
        "clean_up_tokenization_spaces": False,
        "tokenizer_class": "LlamaTokenizer",
        "generated_by": "scripts/gguf_vocab_to_tokenizer_json.py",
    }
    return tokenizer, config


def read_cases(inp_path, out_path):
    """The .inp/.out pair as llama.cpp's tests/test-tokenizer-0.cpp reads it."""
    with open(inp_path, "rb") as f:
        raw = f.read().decode("utf-8")
    texts = []
    pos = 0
    while pos < len(raw):
        nxt = raw.find(SEPARATOR, pos)
        if nxt < 0:
            texts.append(raw[pos:])
            break
        texts.append(raw[pos:nxt])
        pos = nxt + len(SEPARATOR)
    with open(out_path, "r", encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != len(texts):
        raise ValueError(f"{inp_path} has {len(texts)} cases but {out_path} has {len(lines)} lines")
    return [{"text": text, "ids_no_special": [int(t) for t in line.split()]} for text, line in zip(texts, lines)]


def source_commit(path):
    """The commit of the git tree holding `path` (llama.cpp's), or None outside one."""
    try:
        done = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(path)), "rev-parse", "HEAD"],
                              capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip() or None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gguf", help="a vocabulary GGUF (tokenizer.ggml.model 'llama')")
    parser.add_argument("--name", required=True, help="fixture name, e.g. phi3")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--family", help="family for FAMILY_RSTRIP (default: --name)")
    parser.add_argument("--cases", nargs=2, metavar=("INP", "OUT"), help="llama.cpp's GGUF.inp and GGUF.out")
    args = parser.parse_args()

    metadata = read_gguf_metadata(args.gguf)
    tokenizer, config = build(metadata, args.family or args.name)
    os.makedirs(args.out_dir, exist_ok=True)
    json_text = json.dumps(tokenizer, ensure_ascii=False, indent=2) + "\n"
    buffer = io.BytesIO()
    # mtime 0 and no file name: the same bytes on every run.
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as gz:
        gz.write(json_text.encode("utf-8"))
    base = os.path.join(args.out_dir, args.name)
    with open(base + ".tokenizer.json.gz", "wb") as f:
        f.write(buffer.getvalue())
    with open(base + ".tokenizer_config.json", "w", encoding="utf-8") as f:
        f.write(json.dumps(config, ensure_ascii=False, indent=2) + "\n")
    source = os.path.basename(args.gguf)
    commit = source_commit(args.gguf)
    print(f"{args.name}: {len(tokenizer['model']['vocab'])} pieces, {len(tokenizer['model']['merges'])} merges, "
          f"{len(tokenizer['added_tokens'])} added tokens; tokenizer.json {len(json_text.encode())} bytes, "
          f"gzip {len(buffer.getvalue())} bytes")
    if args.cases:
        cases = read_cases(*args.cases)
        header = {
            "tokenizer": args.name,
            "generated_by": "scripts/gguf_vocab_to_tokenizer_json.py",
            "reference": f"llama.cpp{' ' + commit if commit else ''} models/{source}.inp/.out: "
                         "Hugging Face transformers, encode(text, add_special_tokens=False)",
        }
        body = ",\n".join("    " + json.dumps(c, ensure_ascii=False) for c in cases)
        with open(base + ".expected.json", "w", encoding="utf-8") as f:
            f.write("{" + json.dumps(header, ensure_ascii=False)[1:-1] + ",\n  \"cases\": [\n" + body + "\n  ]\n}\n")
        print(f"{args.name}: {len(cases)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
