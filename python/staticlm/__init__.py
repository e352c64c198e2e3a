"""staticlm: Hugging Face decoder-only LLM checkpoints as static-shape program files, run on
pluggable backends. The C++ core is the _staticlm extension module; this package re-exports it.
See docs/python.md.
"""
from ._errors import Error, OptionError
from ._staticlm import Partitioner, Program, backend_options, backends, export, load_program

__all__ = ["Error", "OptionError", "Partitioner", "Program", "backend_options", "backends", "export",
           "load_program"]
__version__ = "0.1.0"
