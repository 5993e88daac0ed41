"""What every module of the package uses to wrap SWIG's classes: close() and ``with`` on the
native objects, keyword options onto SWIG's option structs, the text a callback returns for
an exception (an empty string: success), and Accelerate's boolean environment flags."""
from __future__ import annotations

import enum
import os
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


# Accelerate's str_to_bool spellings, as libaccel's core reads its flags (state/environment.cpp).
_TRUE_WORDS = ("y", "yes", "t", "true", "on", "1")
_FALSE_WORDS = ("n", "no", "f", "false", "off", "0")


def _env_flag(name: str, default: bool = False) -> bool:
    """Accelerate's parse_flag_from_env: a boolean environment variable; ValueError names a value
    that is neither true nor false."""
    value = os.environ.get(name)
    if value is None:
        return default
    if value.lower() in _TRUE_WORDS:
        return True
    if value.lower() in _FALSE_WORDS:
        return False
    raise ValueError(f"environment variable {name}={value!r} is not true or false")
