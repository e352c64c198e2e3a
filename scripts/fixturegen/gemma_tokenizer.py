# SPDX-License-Identifier: Apache-2.0
"""A tiny SentencePiece-style BPE tokenizer in the layout of Gemma's tokenizer.json.

As Gemma's: the normalizer turns spaces into "▁" (no dummy prefix), there is no pre-tokenizer (the
whole text is one BPE word), characters outside the vocabulary fall back to their UTF-8 bytes as
<0xNN> tokens, the decoder maps "▁" back to a space, joins byte tokens and fuses, and the
post-processor puts <bos> first. Vocabulary: the special tokens (<pad> 0, <eos> 1, <bos> 2, <unk> 3,
<start_of_turn>, <end_of_turn>), the 256 byte tokens, "▁" and every character of CORPUS, then merges
learned from CORPUS with words split before each "▁" (as SentencePiece trains), most frequent pair
first, ties to the smallest pair.
"""

import collections

from .tokenizer import CORPUS

SPECIAL_TOKENS = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]
PAD, EOS, BOS, UNK, START_OF_TURN, END_OF_TURN = range(len(SPECIAL_TOKENS))
SPACE = "\u2581"

CASES = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "  two leading spaces,\ttab and\n\nnewlines  ",
    "caf\u00e9 na\u00efve \u2713 \u65e5\u672c",
    "<start_of_turn>user\nHi there!<end_of_turn>",
]


def byte_token(b):
    return f"<0x{b:02X}>"


def normalize(text):
    return text.replace(" ", SPACE)


def train(vocab_size):
    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
    for b in range(256):
        vocab[byte_token(b)] = len(vocab)
    text = normalize(CORPUS)
    for c in sorted(set(text) | {SPACE}):
        vocab.setdefault(c, len(vocab))
    words = collections.Counter()
    for i, piece in enumerate(text.split(SPACE)):
        word = (SPACE if i else "") + piece
        if word:
            words[tuple(word)] += 1
    merges = []
    while len(vocab) < vocab_size:
        pairs = collections.Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += count
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        merges.append(best)
        vocab.setdefault(best[0] + best[1], len(vocab))
        words = collections.Counter({merge_pair(word, best): count for word, count in words.items()})
    return vocab, merges


def merge_pair(word, pair):
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def encode(text, vocab, merges):
    """Special tokens split out first; each other piece normalized, its characters (bytes for a
    character not in the vocabulary) merged lowest rank first. No <bos> added."""
    ranks = {pair: rank for rank, pair in enumerate(merges)}
    ids = []
    rest = text
    while rest:
        found = [(rest.find(t), t) for t in SPECIAL_TOKENS if rest.find(t) >= 0]
        cut, special = min(found) if found else (len(rest), None)
        ids.extend(encode_piece(rest[:cut], vocab, ranks))
        if special is None:
            break
        ids.append(vocab[special])
        rest = rest[cut + len(special) :]
    return ids


def encode_piece(piece, vocab, ranks):
    symbols = []
    for c in normalize(piece):
        if c in vocab:
            symbols.append(c)
        else:
            symbols.extend(byte_token(b) for b in c.encode("utf-8"))
    symbols = tuple(symbols)
    while len(symbols) > 1:
        candidates = [pair for pair in zip(symbols, symbols[1:]) if pair in ranks]
        if not candidates:
            break
        symbols = merge_pair(symbols, min(candidates, key=ranks.__getitem__))
    return [vocab[s] for s in symbols]


def decode(ids, vocab):
    id_to_token = {i: t for t, i in vocab.items()}
    out = bytearray()
    for i in ids:
        token = id_to_token[i]
        if token.startswith("<0x") and len(token) == 6:
            out.append(int(token[3:5], 16))
        else:
            out.extend(token.replace(SPACE, " ").encode("utf-8"))
    return out.decode("utf-8")


def tokenizer_json(vocab, merges):
    added = [
        {
            "id": token_id,
            "content": token,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for token_id, token in enumerate(SPECIAL_TOKENS)
    ]
    bos = {"SpecialToken": {"id": "<bos>", "type_id": 0}}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": SPACE},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}}, bos, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<bos>": {"id": "<bos>", "ids": [BOS], "tokens": ["<bos>"]}},
        },
        "decoder": {
            "type": "Sequence",
            "decoders": [
                {"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
            ],
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": "<unk>",
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [[left, right] for left, right in merges],
        },
    }


def tokenizer_config(max_length):
    """tokenizer_config.json as transformers writes it for GemmaTokenizerFast."""
    decoder = {
        str(token_id): {
            "content": token,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for token_id, token in enumerate(SPECIAL_TOKENS)
    }
    return {
        "add_bos_token": True,
        "add_eos_token": False,
        "added_tokens_decoder": decoder,
        "bos_token": "<bos>",
        "clean_up_tokenization_spaces": False,
        "eos_token": "<eos>",
        "model_max_length": max_length,
        "pad_token": "<pad>",
        "padding_side": "left",
        "spaces_between_special_tokens": False,
        "tokenizer_class": "GemmaTokenizer",
        "unk_token": "<unk>",
    }
