"""Accelerate's find_executable_batch_size: run a function at the largest batch size that fits."""
from __future__ import annotations

import functools
import gc
import inspect
from typing import Any, Callable, Optional

from . import core

__all__ = ["find_executable_batch_size", "should_reduce_batch_size"]

# Accelerate's statements, plus LibTorch 1.13's CPU allocator.
_STATEMENTS = (" out of memory.", "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED.", "DefaultCPUAllocator: can't allocate memory",
               "DefaultCPUAllocator: not enough memory")


def should_reduce_batch_size(exception: BaseException) -> bool:
    """Whether `exception` is an allocation failure: libaccel's (AccelError with code ERR_RESOURCE,
    which every call returns when CUDA or host memory runs out), Python's MemoryError, or one of
    the RuntimeError messages Accelerate looks for."""
    if isinstance(exception, core.AccelError):
        return getattr(exception, "code", None) == core.ERR_RESOURCE
    if isinstance(exception, MemoryError):
        return True
    if isinstance(exception, RuntimeError) and len(exception.args) == 1:
        return any(statement in str(exception.args[0]) for statement in _STATEMENTS)
    return False


def find_executable_batch_size(function: Optional[Callable[..., Any]] = None, starting_batch_size: int = 128,
                               reduce_batch_size_fn: Optional[Callable[[], int]] = None):
    """Accelerate's decorator: calls function(batch_size, *args, **kwargs) from starting_batch_size
    on; after an out-of-memory error (should_reduce_batch_size) it tries again with
    int(batch_size * 0.9), or what reduce_batch_size_fn() returns. RuntimeError "No executable
    batch size found, reached zero." when the size reaches 0; other errors propagate at once.

        @accel.find_executable_batch_size(starting_batch_size=128)
        def train(batch_size, model, optimizer): ...

        train(model, optimizer)
    """
    if function is None:
        return functools.partial(find_executable_batch_size, starting_batch_size=starting_batch_size,
                                 reduce_batch_size_fn=reduce_batch_size_fn)
    batch_size = starting_batch_size
    if reduce_batch_size_fn is None:
        def reduce_batch_size_fn() -> int:
            nonlocal batch_size
            batch_size = int(batch_size * 0.9)
            return batch_size

    @functools.wraps(function)
    def decorator(*args: Any, **kwargs: Any) -> Any:
        nonlocal batch_size
        gc.collect()
        params = list(inspect.signature(function).parameters.keys())
        if len(params) < len(args) + 1:
            arg_str = ", ".join(f"{arg}={value}" for arg, value in zip(params[1:], args[1:]))
            raise TypeError(f"Batch size was passed into `{function.__name__}` as the first argument when called."
                            f"Remove this as the decorator already does so: `{function.__name__}({arg_str})`")
        while True:
            if batch_size == 0:
                raise RuntimeError("No executable batch size found, reached zero.")
            try:
                return function(batch_size, *args, **kwargs)
            except Exception as error:  # noqa: BLE001 - anything else is re-raised below
                if not should_reduce_batch_size(error):
                    raise
                gc.collect()
                batch_size = reduce_batch_size_fn()

    return decorator
