# SPDX-License-Identifier: Apache-2.0
"""The exceptions the C++ core's Status values become (raised by the _staticlm module)."""
import re

__all__ = ["Error", "OptionError"]


class Error(RuntimeError):
    """A failure reported by the library: the message is the C++ message, `code` its status code
    ("InvalidArgument", "NotFound", ...)."""

    def __init__(self, message, code="Unknown"):
        super().__init__(message)
        self.code = code


class OptionError(Error, ValueError):
    """A backend option (or backend name) refused: unknown (`suggestion` holds the closest known
    name, when there is one), of the wrong type, out of range, of another backend type, in
    conflict with another option, or needing a newer SDK."""

    def __init__(self, message, code="InvalidArgument"):
        super().__init__(message, code)
        match = re.search(r"did you mean '([^']+)'", message)
        self.suggestion = match.group(1) if match else None
