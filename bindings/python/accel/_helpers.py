"""What every module of the package uses to wrap SWIG's classes: close() and ``with`` on the
native objects, keyword options onto SWIG's option structs, and the text a callback returns for
an exception (an empty string: success)."""
from __future__ import annotations

import enum
from typing import Any, Dict


def _closeable(cls, close_function) -> None:
    cls.close = lambda self: close_function(self)
    cls.__enter__ = lambda self: self
    cls.__exit__ = lambda self, *exc: close_function(self)


def _set_fields(options: Any, values: Dict[str, Any], what: str) -> None:
    for key, value in values.items():
        if key == "betas":
            options.beta1, options.beta2 = value
            continue
        if key.startswith("_") or not hasattr(options, key):
            raise TypeError(f"{what} has no option {key!r}")
        setattr(options, key, int(value) if isinstance(value, bool) else value)


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


class _ValueEnum(enum.Enum):
    """Accelerate's BaseEnum: str(member) is its value, list() the values in order."""

    def __str__(self) -> str:
        return self.value

    @classmethod
    def list(cls) -> list:
        return [str(member) for member in cls]
