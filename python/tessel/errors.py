"""tessel's exceptions: one class per kind of C API status.

Every error the library reports carries its full diagnostic as the
exception's message: for errors in TC source, ``file:line:col: error: ...``,
the source line and a caret under the place. The classes also derive from
the built-in exception a Python programmer would expect (``ShapeError`` is
a ``ValueError``, ``ArgumentError`` a ``TypeError``...), so existing
``except`` clauses keep working.
"""
from __future__ import annotations

import builtins

__all__ = ["Error", "CompileError", "ShapeError", "ArgumentError", "BoundsError",
           "UnavailableError", "RuntimeError", "OutOfMemoryError", "FileError", "InternalError"]


class Error(Exception):
    """Base class of every tessel error.

    Attributes:
        status: the C API's status name, e.g. ``"TSL_ERR_SHAPE"``.
        message: the full diagnostic (also ``str(error)``).
    """

    def __init__(self, message: str, status: str = "TSL_ERR_ARG"):
        super().__init__(message)
        self.message = message
        self.status = status


class CompileError(Error):
    """The source does not parse or check (syntax, semantics, range
    inference), or the generated code failed to compile."""


class ShapeError(Error, ValueError):
    """Tensors disagree with the program's declarations or with each other."""


class ArgumentError(Error, TypeError):
    """A call that does not match the program: a missing or unknown
    argument, a wrong dtype or rank, a tensor on an unsupported device."""


class BoundsError(Error, IndexError):
    """An indirect index (a gather) was out of range at run time."""


class UnavailableError(Error):
    """A target, device, compiler or library is not available here."""


class RuntimeError(Error, builtins.RuntimeError):  # noqa: A001 (the name the API promises)
    """A launch or a device call failed."""


class OutOfMemoryError(Error, MemoryError):
    """An allocation failed (the message names the bytes)."""


class FileError(Error, OSError):
    """A file could not be read or written."""


class InternalError(Error):
    """A bug in tessel: please report it with the message."""


_BY_STATUS = {
    "TSL_ERR_SYNTAX": CompileError,
    "TSL_ERR_SEMANTIC": CompileError,
    "TSL_ERR_RANGE": CompileError,
    "TSL_ERR_COMPILE": CompileError,
    "TSL_ERR_SHAPE": ShapeError,
    "TSL_ERR_BOUNDS": BoundsError,
    "TSL_ERR_ARG": ArgumentError,
    "TSL_ERR_IO": FileError,
    "TSL_ERR_UNAVAILABLE": UnavailableError,
    "TSL_ERR_RUNTIME": RuntimeError,
    "TSL_ERR_NOMEM": OutOfMemoryError,
    "TSL_ERR_INTERNAL": InternalError,
}


def error_for(status: str, message: str) -> Error:
    """The exception for a C API status name and its message."""
    cls = _BY_STATUS.get(status, InternalError)
    return cls(message.rstrip("\n") or status, status)
