# SPDX-License-Identifier: Apache-2.0
"""A tiny byte-level BPE tokenizer in Hugging Face tokenizers' tokenizer.json format.

Vocabulary: the 256 byte tokens in GPT-2's bytes_to_unicode order (id k is the k-th character of
that table, so id != byte value), then merges learned by a plain BPE training loop over CORPUS,
then the special tokens as added_tokens at the top ids.
"""

import collections
import re

SPECIAL_TOKENS = ["<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>"]

# GPT-2's pre-tokenizer pattern (ByteLevel with use_regex true). Python's re has no \p{L} / \p{N};
# [^\W\d_] and \d stand in for them, which is exact for text without Nl/No characters ('²', 'Ⅻ').
PRETOKENIZE = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")

CORPUS = """\
The quick brown fox jumps over the lazy dog. The dog did not mind; it was asleep in the sun.
A static-shape program runs the same way every time: the shapes are fixed when it is exported,
so the runtime can plan its memory once and then only move numbers through the graph.
In the beginning there was a tokenizer, and the tokenizer split the text into tokens, and the
tokens were turned into vectors, and the vectors went through the layers of the model.
We tested the model on the test set, and then we tested it again, because the first test
was not the test we wanted. There is nothing more practical than a good theory.

def attention(query, key, value, mask=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ value

for (int i = 0; i < n; ++i) {
    sum += values[i] * weights[i];
}
return sum;

int main(int argc, char** argv) {
    std::vector<int> tokens = tokenize(argv[1]);
    printf("%d tokens\\n", static_cast<int>(tokens.size()));
    return 0;
}
"""

TOKENIZER_CASES = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "the theory of the tokenizer",
    "int main() { return 0; }",
    "  two leading spaces,\ttab and\n\nnewlines  ",
    "don't stop, it's fine",
    "snake_case_name = 12345",
    "caf\u00e9 na\u00efve \u2713 \u65e5\u672c",
    "<|im_start|>user\nHi there!<|im_end|>",
    "<|begin_of_text|>The end.<|end_of_text|>",
]


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode character table, in its canonical order."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1))
    printable += list(range(ord("\u00ae"), ord("\u00ff") + 1))
    byte_values = printable[:]
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            byte_values.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(byte_values, [chr(c) for c in chars]))


BYTE_TO_CHAR = bytes_to_unicode()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}


def pretokenize(text):
    """Splits text as ByteLevel(use_regex=True) does, then maps each piece's bytes to characters."""
    return ["".join(BYTE_TO_CHAR[b] for b in piece.encode("utf-8")) for piece in PRETOKENIZE.findall(text)]


def train(corpus, vocab_size):
    """Merges pairs until the vocabulary has vocab_size entries.

    The most frequent pair wins; ties go to the lexicographically smallest (left, right) pair.
    Returns (vocab: token -> id in id order, merges: [(left, right)] in rank order).
    """
    vocab = {c: i for i, c in enumerate(BYTE_TO_CHAR.values())}
    words = collections.Counter(tuple(word) for word in pretokenize(corpus))
    merges = []
    while len(vocab) < vocab_size:
        pairs = collections.Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += count
        if not pairs:
            raise ValueError(f"corpus too small: no pairs left at vocab size {len(vocab)}")
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        merges.append(best)
        vocab.setdefault(best[0] + best[1], len(vocab))
        words = collections.Counter({_merge_pair(word, best): count for word, count in words.items()})
    return vocab, merges


def _merge_pair(word, pair):
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def encode_word(word, ranks):
    """Repeatedly merges the lowest-rank adjacent pair (all its occurrences, left to right)."""
    symbols = tuple(word)
    while len(symbols) > 1:
        candidates = [pair for pair in zip(symbols, symbols[1:]) if pair in ranks]
        if not candidates:
            break
        symbols = _merge_pair(symbols, min(candidates, key=ranks.__getitem__))
    return symbols


def encode(text, vocab, merges, special_ids):
    """Special tokens are split out first (matched anywhere), then each piece is BPE-encoded."""
    ranks = {pair: rank for rank, pair in enumerate(merges)}
    pattern = "(" + "|".join(re.escape(token) for token in special_ids) + ")"
    ids = []
    for piece in re.split(pattern, text):
        if piece in special_ids:
            ids.append(special_ids[piece])
        elif piece:
            for word in pretokenize(piece):
                ids.extend(vocab[symbol] for symbol in encode_word(word, ranks))
    return ids


def decode(ids, vocab, special_ids):
    id_to_token = {i: t for t, i in vocab.items()}
    id_to_token.update({i: t for t, i in special_ids.items()})
    pieces = []
    for i in ids:
        token = id_to_token[i]
        pieces.append(token.encode("utf-8") if token in special_ids else bytes(CHAR_TO_BYTE[c] for c in token))
    return b"".join(pieces).decode("utf-8")


def special_token_ids(vocab):
    """The special tokens take the ids right after the model vocabulary (vocab: dict or its size)."""
    first = vocab if isinstance(vocab, int) else len(vocab)
    return {token: first + k for k, token in enumerate(SPECIAL_TOKENS)}


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
        for token, token_id in special_token_ids(vocab).items()
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [f"{left} {right}" for left, right in merges],
        },
    }


def tokenizer_config(model_vocab_size, bos_token, eos_token, pad_token, tokenizer_class, max_length):
    """tokenizer_config.json as transformers writes it for a fast tokenizer."""
    decoder = {
        str(token_id): {
            "content": token,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for token, token_id in special_token_ids(model_vocab_size).items()
    }
    return {
        "add_bos_token": bos_token is not None,
        "add_eos_token": False,
        "added_tokens_decoder": decoder,
        "bos_token": bos_token,
        "clean_up_tokenization_spaces": False,
        "eos_token": eos_token,
        "model_max_length": max_length,
        "pad_token": pad_token,
        "tokenizer_class": tokenizer_class,
    }
