# SPDX-License-Identifier: Apache-2.0
"""Type stubs of the staticlm package (the names the _staticlm extension module defines)."""
import os
from typing import Any, Callable, Iterator, Literal, Mapping, Optional, Sequence, Union

import numpy as np

__version__: str

OptionValue = Union[bool, int, float, str, Sequence[str]]

class Error(RuntimeError):
    """A failure the library reports; `code` is its status code name."""
    code: str
    def __init__(self, message: str, code: str = ...) -> None: ...

class OptionError(Error, ValueError):
    """A refused backend option; `suggestion` is the closest known name, if any."""
    suggestion: Optional[str]

def backends() -> list[dict[str, str]]:
    """The delegate backends this build has: [{'name', 'summary'}]."""

def backend_options(backend: str) -> list[dict[str, Any]]:
    """Every option of a backend's schema: name, type, default, required, allowed, min, max,
    route, applies_to, min_sdk_version, constraints, doc."""

class Partitioner:
    """A backend's options, routed and checked by its schema."""
    @staticmethod
    def from_options(backend: str, options: Mapping[str, OptionValue] = ...) -> "Partitioner":
        """Routes every option; OptionError (with the C++ message) for anything refused."""
    @property
    def backend(self) -> str: ...
    @property
    def settings(self) -> dict[str, OptionValue]:
        """Every option in effect, given or defaulted."""
    @property
    def compile_specs(self) -> dict[str, dict[str, OptionValue]]:
        """The settings each compile-spec builder receives, by route."""
    @property
    def partitioner_options(self) -> dict[str, OptionValue]:
        """skip_node_id_set, skip_node_op_set, skip_mutable_buffer."""
    @property
    def given(self) -> list[str]:
        """The names of the options given."""

def export(hf_dir: str, out_path: str, *, dtype: Literal["f32", "f16", "bf16"] = "f32", prefill_len: int = 64,
           max_cache_len: int = 0, cache_dtype: Literal["f32", "f16", "q8_0"] = "f32",
           kv_update: Literal["in-place", "returned"] = "in-place", logits: Literal["all", "last"] = "all",
           embeddings: Optional[Literal["mean", "last"]] = None,
           partitioner: Union[Partitioner, Literal["none"], None] = None, no_fallback: bool = False,
           no_tokenizer: bool = False, progress: Optional[Callable[[int, int], None]] = None) -> dict[str, Any]:
    """A checkpoint directory to an hf_static v1 program, as `staticlm export` makes it."""

class Program:
    """A program file loaded with this build's kernels and backends."""
    @property
    def metadata(self) -> dict[str, Any]: ...
    @property
    def path(self) -> str: ...
    def method_names(self) -> list[str]: ...
    def method_meta(self, name: str) -> dict[str, Any]:
        """{'name', 'inputs': [{'name', 'dtype', 'shape', 'nbytes', 'mutable'}], 'outputs': [...]}"""
    def run_method(self, name: str, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Runs a method; mutable inputs are updated in place."""

def load_program(path: str, *, threads: int = 0) -> Program:
    """Opens a program file (mapped, verified, delegates initialised)."""

def program_metadata(path: str) -> dict[str, Any]:
    """A program file's metadata, read without loading the program."""

class Tokenizer:
    """A tokenizer: Hugging Face tokenizer.json or SentencePiece .model."""
    @staticmethod
    def from_file(path: str) -> "Tokenizer": ...
    @staticmethod
    def from_program(path: str) -> "Tokenizer": ...
    def encode(self, text: str, *, add_special_tokens: bool = True, parse_special: bool = True) -> list[int]: ...
    def decode(self, ids: Sequence[int], *, skip_special: bool = True) -> str: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def bos_id(self) -> Optional[int]: ...
    @property
    def eos_ids(self) -> list[int]: ...
    def token_to_id(self, token: str) -> Optional[int]: ...
    def id_to_token(self, id: int) -> str: ...
    def is_special(self, id: int) -> bool: ...

class GenerationConfig:
    """How to generate (keyword-only): None takes the program's generation_config, as transformers'
    generate() does; seed None is a fresh random seed; max_new_tokens None, what the context holds."""
    max_new_tokens: Optional[int]
    temperature: Optional[float]
    top_k: Optional[int]
    top_p: Optional[float]
    min_p: Optional[float]
    repetition_penalty: Optional[float]
    seed: Optional[int]
    logit_bias: Optional[Mapping[int, float]]
    stop: tuple[str, ...]
    grammar: Optional[str]
    json_schema: Optional[Union[dict, bool, str]]
    reuse_cached_prefix: bool
    def __init__(self, *, max_new_tokens: Optional[int] = 128, temperature: Optional[float] = None,
                 top_k: Optional[int] = None, top_p: Optional[float] = None, min_p: Optional[float] = None,
                 repetition_penalty: Optional[float] = None, seed: Optional[int] = None,
                 logit_bias: Optional[Mapping[int, float]] = None,
                 stop: tuple[str, ...] = (), grammar: Optional[str] = None,
                 json_schema: Optional[Union[dict, bool, str]] = None,
                 reuse_cached_prefix: bool = False) -> None: ...

class Stats:
    """What `staticlm run` prints after a generation."""
    prompt_tokens: int
    generated_tokens: int
    load_seconds: float
    prefill_seconds: float
    time_to_first_token_seconds: float
    decode_seconds: float
    decode_steps: int
    peak_rss_bytes: int
    io_allocator: str
    io: dict[str, Any]
    sampling: dict[str, Any]
    speculation: dict[str, int]
    cached_prompt_tokens: int
    @property
    def prefill_tokens_per_second(self) -> float: ...
    @property
    def decode_tokens_per_second(self) -> float: ...
    def to_dict(self) -> dict[str, Any]: ...

class Result:
    text: str
    tokens: list[int]
    finish_reason: Literal["eos", "stop_string", "max_new_tokens", "context_full", "cancelled", "grammar_complete"]
    stats: Stats
    grammar_complete: Optional[bool]

class TextLLMRunner:
    """Text generation over an hf_static v1 program (one engine, one session)."""
    contract: tuple[str, int]
    tokenizer: Tokenizer
    def __init__(self, path: str, *, io_allocator: Optional[str] = None, strict_io: bool = False,
                 threads: int = 0, draft: Optional[str] = None, lookup: int = 0, draft_max: int = 8,
                 draft_p_min: float = 0.0) -> None: ...
    def generate(self, prompt: str, config: Optional[GenerationConfig] = None,
                 token_callback: Optional[Callable[[str], None]] = None) -> Result: ...
    def stream(self, prompt: str, config: Optional[GenerationConfig] = None) -> Iterator[str]: ...
    def prefill(self, prompt: str) -> np.ndarray: ...
    def embed(self, input: Union[str, Sequence[int], Sequence[str]], *, pooling: Optional[str] = None,
              normalize: bool = False) -> Union[np.ndarray, list[np.ndarray]]: ...
    @property
    def hidden_size(self) -> int: ...
    @property
    def embedding_pooling(self) -> Optional[str]: ...
    def save_session(self, path: Union[str, os.PathLike[str]]) -> None: ...
    def restore_session(self, path: Union[str, os.PathLike[str]]) -> int: ...
    @property
    def cached_tokens(self) -> list[int]: ...
    def reset(self) -> None: ...
    def stop(self) -> None: ...
    @property
    def position(self) -> int: ...
    @property
    def max_cache_len(self) -> int: ...
    @property
    def io_allocator(self) -> str: ...
    def io_stats(self) -> dict[str, Any]: ...

def register_runner(contract: str, version: int, runner: type) -> None: ...
def runners() -> dict[tuple[str, int], type]: ...
def runner_for(program: Union[str, Program], **options: Any) -> Any:
    """The registered runner of the program's contract, opened on it."""
