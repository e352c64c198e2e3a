# SPDX-License-Identifier: Apache-2.0
"""staticlm: Hugging Face decoder-only LLM checkpoints as static-shape program files, run on
pluggable backends. The C++ core is the _staticlm extension module; this package re-exports it.
See docs/python.md.
"""
from ._errors import Error, OptionError
from ._runner import GenerationConfig, Result, Stats, TextLLMRunner, register_runner, runner_for, runners
from ._staticlm import (Partitioner, Program, Tokenizer, backend_options, backends, export, load_program,
                        program_metadata)

__all__ = ["Error", "GenerationConfig", "OptionError", "Partitioner", "Program", "Result", "Stats",
           "TextLLMRunner", "Tokenizer", "backend_options", "backends", "export", "load_program",
           "program_metadata", "register_runner", "runner_for", "runners"]
__version__ = "0.1.0"
