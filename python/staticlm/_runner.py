# SPDX-License-Identifier: Apache-2.0
"""The LLM runner from Python: runners registered by I/O contract, TextLLMRunner for hf_static v1
programs, and the plain data it takes and returns (GenerationConfig, Stats, Result). The work is
the C++ engine's (_staticlm._Runner); this module shapes it for Python."""
import os
import queue
import threading
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterator, Mapping, Optional, Tuple, Union

import numpy

from ._errors import Error
from ._staticlm import Program, Tokenizer, _Runner, program_metadata

__all__ = ["GenerationConfig", "Result", "Stats", "TextLLMRunner", "register_runner", "runner_for", "runners"]


@dataclass(frozen=True, kw_only=True)
class GenerationConfig:
    """How to generate, as transformers' generate() takes it: a sampling field left None takes the
    program's generation_config (greedy unless it says do_sample, transformers' defaults for what it
    leaves out), a field given overrides it; temperature=0 is greedy. seed None: a fresh random
    seed (Result.stats.sampling says which). max_new_tokens None: as many tokens as the context
    holds (finish_reason "context_full" when it fills). The C++ sampler refuses bad values with its
    message."""
    max_new_tokens: Optional[int] = 128
    temperature: Optional[float] = None
    top_k: Optional[int] = None
    top_p: Optional[float] = None
    min_p: Optional[float] = None
    repetition_penalty: Optional[float] = None
    seed: Optional[int] = None
    # {token id: bias}, bias in [-100, 100] added to the token's logit (-100 bans it), as OpenAI's
    # logit_bias; greedy decoding sees it too.
    logit_bias: Optional[Mapping[int, float]] = None
    stop: Tuple[str, ...] = ()  # stop before the first occurrence of any of these
    # Constrained output (docs/structured_output.md), at most one of the two: a GBNF grammar's
    # text, or a JSON Schema (a dict, True, or its JSON text) the output must be valid under.
    grammar: Optional[str] = None
    json_schema: Optional[Union[dict, bool, str]] = None
    # Each generated token's log-probability and this many most likely alternatives (0-20), as the
    # program's logits give them before logit_bias, penalties, temperature and a grammar's mask
    # (OpenAI's logprobs are the model's). None: none (Result.logprobs None).
    logprobs: Optional[int] = None
    # Keep the cached tokens the prompt starts with (from the previous generate() or from
    # TextLLMRunner.restore_session()) instead of prefilling them again; the last prompt token is
    # always fed, for the logits of the first new token. False: the cache is reset first.
    reuse_cached_prefix: bool = False


@dataclass(frozen=True)
class Stats:
    """What `staticlm run` prints after a generation, as data."""
    prompt_tokens: int
    generated_tokens: int
    load_seconds: float
    prefill_seconds: float
    time_to_first_token_seconds: float
    decode_seconds: float
    decode_steps: int
    peak_rss_bytes: int
    io_allocator: str
    io: dict = field(default_factory=dict)  # allocators [{allocator, buffers, bytes}], buffers, bytes,
    #                                         fallbacks, fallback_bytes
    # What sampled: temperature, top_k, top_p, min_p, repetition_penalty, seed (None when greedy).
    sampling: dict = field(default_factory=dict)
    # Speculative decoding: tokens drafted, accepted, and the checks run (all 0 without it).
    speculation: dict = field(default_factory=dict)
    # Prompt tokens found in the cache and not prefilled (GenerationConfig.reuse_cached_prefix).
    cached_prompt_tokens: int = 0

    @property
    def prefill_tokens_per_second(self) -> float:
        """Prefilled prompt tokens (cached ones excluded) per second of prefill (0 when prefill
        took no measurable time)."""
        prefilled = self.prompt_tokens - self.cached_prompt_tokens
        return prefilled / self.prefill_seconds if self.prefill_seconds > 0 else 0.0

    @property
    def decode_tokens_per_second(self) -> float:
        """Decode steps per second (0 before any decode step)."""
        return self.decode_steps / self.decode_seconds if self.decode_seconds > 0 else 0.0

    def to_dict(self) -> dict:
        """Every field and both rates as a plain dict (json.dumps-ready)."""
        out = asdict(self)
        out["prefill_tokens_per_second"] = self.prefill_tokens_per_second
        out["decode_tokens_per_second"] = self.decode_tokens_per_second
        return out


@dataclass(frozen=True)
class Result:
    """A generation: its text (stop string excluded), token ids, why it ended ("eos",
    "stop_string", "max_new_tokens", "context_full", "cancelled", or "grammar_complete" when the
    grammar or schema matched and allowed nothing more) and its statistics. grammar_complete: with
    a grammar or schema, whether the text is a complete match (False when the tokens ran out
    first); None without one."""
    text: str
    tokens: list
    finish_reason: str
    stats: Stats
    grammar_complete: Optional[bool] = None
    # With GenerationConfig.logprobs: per generated token {"token": id, "logprob": float,
    # "top": [(id, logprob), ...] best first}.
    logprobs: Optional[list] = None


class TextLLMRunner:
    """Text generation over an hf_static v1 program: one engine and one session (its own KV
    caches and I/O buffers). io_allocator: "heap", "shm", "rpcmem" or None (the program's
    backend's preferred one, else heap); strict_io: a heap fallback raises instead of being
    counted; threads counts the caller's, 0 = one per physical core (fast cores only on big.LITTLE).
    Speculative decoding (docs/speculative_decoding.md; the tokens are those plain decoding gives):
    draft, a draft program's path (a smaller model with the same tokenizer), or lookup=N, prompt
    lookup matching up to N tokens; draft_max guesses per check at most; draft_p_min, where a
    draft stops guessing."""

    contract = ("hf_static", 1)

    def __init__(self, path, *, io_allocator: Optional[str] = None, strict_io: bool = False, threads: int = 0,
                 draft=None, lookup: int = 0, draft_max: int = 8, draft_p_min: float = 0.0):
        self._runner = _Runner(os.fspath(path), io_allocator or "", strict_io, threads)
        self.tokenizer: Tokenizer = self._runner.tokenizer()
        if draft is not None or lookup:
            self._runner.set_speculation(os.fspath(draft) if draft is not None else "", lookup, draft_max,
                                         draft_p_min)

    def generate(self, prompt: str, config: Optional[GenerationConfig] = None,
                 token_callback: Optional[Callable[[str], None]] = None) -> Result:
        """Generates from `prompt` (the cache is reset first, unless config.reuse_cached_prefix
        keeps the cached tokens the prompt starts with). token_callback receives each piece
        of text as soon as it is final (never a broken UTF-8 sequence, never part of a stop
        string); an exception it raises stops generation and propagates. The GIL is released
        while generating."""
        generated = self._runner.generate(prompt, config or GenerationConfig(), token_callback)
        return Result(text=generated["text"], tokens=generated["tokens"], finish_reason=generated["finish_reason"],
                      stats=Stats(**generated["stats"]), grammar_complete=generated["grammar_complete"],
                      logprobs=generated["logprobs"])

    def stream(self, prompt: str, config: Optional[GenerationConfig] = None) -> Iterator[str]:
        """The pieces of text generate() would pass its callback, as an iterator. Leaving the loop
        early stops the generation."""
        pieces: queue.Queue = queue.Queue()
        done = object()
        failure = []

        def produce():
            try:
                self.generate(prompt, config, pieces.put)
            except BaseException as error:  # noqa: B036 - handed to the consumer
                failure.append(error)
            finally:
                pieces.put(done)

        thread = threading.Thread(target=produce, daemon=True)
        thread.start()
        try:
            while True:
                piece = pieces.get()
                if piece is done:
                    break
                yield piece
        finally:
            self.stop()
            thread.join()
        if failure:
            raise failure[0]

    def prefill(self, prompt: str):
        """Feeds `prompt` from an empty cache; returns the last position's logits (numpy)."""
        return self._runner.prefill(prompt)

    def embed(self, input, *, pooling: Optional[str] = None, normalize: bool = False):
        """The embedding of a text, of a list of token ids, or of each text of a list (a 2-D
        array then), from the program's embeddings method (docs/embeddings.md): the final-normed
        hidden states pooled by `pooling`, "mean" or "last" (None: the program's choice, its
        embedding_pooling), or with "none" every token's hidden state, [n_tokens, hidden_size] (a
        list of such arrays for a list of texts); L2-normalised when `normalize`. A text is encoded as generate() encodes a prompt (BOS
        included). Each input is embedded from an empty cache, which then holds its tokens.
        Error "FailedPrecondition" for a program exported without --embeddings."""
        if isinstance(input, str):
            return self._runner.embed(input, [], pooling or "", normalize)
        items = list(input)
        if items and all(isinstance(item, str) for item in items):
            embedded = [self._runner.embed(item, [], pooling or "", normalize) for item in items]
            return embedded if pooling == "none" else numpy.stack(embedded)
        return self._runner.embed(None, items, pooling or "", normalize)

    @property
    def hidden_size(self) -> int:
        """The width of an embedding."""
        return self._runner.hidden_size

    @property
    def embedding_pooling(self) -> Optional[str]:
        """The pooling the program's embeddings method suggests ("mean" or "last"), or None when
        it has no embeddings method."""
        return self._runner.embedding_pooling or None

    def save_session(self, path) -> None:
        """Writes the cached tokens (what the last generate() or prefill() left: prompt and
        generated tokens but the last) and their KV caches to a session file at `path`, the format
        of `staticlm run --prompt-cache` and the server's slot files. The file is bound to this
        program. Error "Unavailable" when it cannot be written."""
        self._runner.save_session(os.fspath(path))

    def restore_session(self, path) -> int:
        """Replaces the cache with a session file's tokens and caches; returns how many tokens it
        holds now. A generate() whose config has reuse_cached_prefix=True and whose prompt starts
        with them prefills only the rest. Error "NotFound" for a missing file, "DataLoss" for a
        damaged one, "InvalidArgument" for one saved with another program (naming what differs) or
        one longer than this cache; the cache is then as it was."""
        return self._runner.restore_session(os.fspath(path))

    @property
    def cached_tokens(self) -> list:
        """The token ids held in the KV cache, in order."""
        return self._runner.cached_tokens

    def reset(self) -> None:
        """Forgets the cached tokens."""
        self._runner.reset()

    def stop(self) -> None:
        """Stops a generation in progress after the token being generated (from any thread, or
        from a callback); it returns with finish_reason "cancelled"."""
        self._runner.stop()

    @property
    def position(self) -> int:
        """Tokens now held in the KV cache (0 after reset())."""
        return self._runner.position

    @property
    def max_cache_len(self) -> int:
        """The program's KV-cache capacity in tokens: prompt plus generated tokens must fit."""
        return self._runner.max_cache_len

    @property
    def io_allocator(self) -> str:
        """The I/O-buffer allocator in use: "heap", "shm" or "rpcmem"."""
        return self._runner.io_allocator

    def io_stats(self) -> dict:
        """The session's I/O buffers: allocators, buffers, bytes, fallbacks, fallback_bytes."""
        return self._runner.io_stats()


_RUNNERS = {}


def register_runner(contract: str, version: int, runner: type) -> None:
    """Makes `runner` (a class taking the program path and keyword options) the runner of a
    contract version."""
    _RUNNERS[(contract, version)] = runner


def runners() -> dict:
    """The registered runners: {(contract, version): class}."""
    return dict(_RUNNERS)


def runner_for(program, **options):
    """The runner registered for the program's contract, opened on it (`program`: a path or a
    Program loaded from one). Error listing the supported contracts for another."""
    path = program.path if isinstance(program, Program) else os.fspath(program)
    metadata = program_metadata(path)
    key = (metadata.get("contract"), metadata.get("contract_version"))
    if key not in _RUNNERS:
        supported = ", ".join(f"{name} v{version}" for name, version in sorted(_RUNNERS))
        raise Error(f"program '{path}' declares contract {key[0]} v{key[1]}; the registered runners take: {supported}",
                    "Unimplemented")
    return _RUNNERS[key](path, **options)


register_runner(*TextLLMRunner.contract, TextLLMRunner)
