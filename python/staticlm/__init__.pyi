"""Type stubs of the staticlm package (the names the _staticlm extension module defines)."""
from typing import Any, Callable, Literal, Mapping, Optional, Sequence, Union

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
           max_cache_len: int = 0, cache_dtype: Literal["f32", "f16"] = "f32",
           kv_update: Literal["in-place", "returned"] = "in-place", logits: Literal["all", "last"] = "all",
           partitioner: Union[Partitioner, Literal["none"], None] = None, no_fallback: bool = False,
           progress: Optional[Callable[[int, int], None]] = None) -> dict[str, Any]:
    """A checkpoint directory to an hf_static v1 program, as `staticlm export` makes it."""

class Program:
    """A program file loaded with this build's kernels and backends."""
    @property
    def metadata(self) -> dict[str, Any]: ...
    def method_names(self) -> list[str]: ...
    def method_meta(self, name: str) -> dict[str, Any]:
        """{'name', 'inputs': [{'name', 'dtype', 'shape', 'nbytes', 'mutable'}], 'outputs': [...]}"""
    def run_method(self, name: str, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Runs a method; mutable inputs are updated in place."""

def load_program(path: str, *, threads: int = 0) -> Program:
    """Opens a program file (mapped, verified, delegates initialised)."""
