"""Accelerate's process decorators (on_main_process, on_process, ...), print and
split_between_processes, shared by Accelerator and PartialState: both give process_index,
local_process_index, is_main_process, is_local_main_process, is_last_process and
use_distributed, and split one container with _split_one."""
from __future__ import annotations

import contextlib
import functools
import numbers
from typing import Any, Callable, Optional


class ProcessDecorators:
    # The check happens at each call, as in Accelerate: the function runs where
    # the condition holds and returns None elsewhere; on one process it always runs.
    def _only_where(self, function: Callable[..., Any], condition: Callable[[], bool]) -> Callable[..., Any]:
        if not callable(function):
            raise TypeError(f"expected a function to decorate, got {type(function).__name__}")

        @functools.wraps(function)
        def run_here(*args: Any, **kwargs: Any) -> Any:
            if condition() or not self.use_distributed:
                return function(*args, **kwargs)
            return None
        return run_here

    def on_main_process(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator: function runs on the main process only."""
        return self._only_where(function, lambda: self.is_main_process)

    def on_local_main_process(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator: function runs on each machine's local main process only."""
        return self._only_where(function, lambda: self.is_local_main_process)

    def on_last_process(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator: function runs on the last process only."""
        return self._only_where(function, lambda: self.is_last_process)

    def on_process(self, function: Optional[Callable[..., Any]] = None, process_index: Optional[int] = None) -> Any:
        """Decorator: function runs on process process_index only; @acc.on_process(process_index=1)."""
        if isinstance(process_index, bool) or not isinstance(process_index, numbers.Integral) or process_index < 0:
            raise TypeError(f"on_process needs process_index, a process index >= 0, got {process_index!r}")
        if function is None:
            return functools.partial(self.on_process, process_index=process_index)
        return self._only_where(function, lambda: self.process_index == process_index)

    def on_local_process(self, function: Optional[Callable[..., Any]] = None,
                         local_process_index: Optional[int] = None) -> Any:
        """Decorator: function runs on local process local_process_index of each machine only."""
        if (isinstance(local_process_index, bool) or not isinstance(local_process_index, numbers.Integral)
                or local_process_index < 0):
            raise TypeError(f"on_local_process needs local_process_index >= 0, got {local_process_index!r}")
        if function is None:
            return functools.partial(self.on_local_process, local_process_index=local_process_index)
        return self._only_where(function, lambda: self.local_process_index == local_process_index)

    def print(self, *args: Any, **kwargs: Any) -> None:
        """Accelerate's print: Python's print() once per machine, on its local main process,
        with print's own keywords (sep, end, file, flush)."""
        if self.is_local_main_process:
            print(*args, **kwargs)

    @contextlib.contextmanager
    def split_between_processes(self, inputs: Any, apply_padding: bool = False):
        """Yields this process's share of inputs: a Tensor (rows), a list or tuple, or a dict
        of them with equal lengths. The first len % num_processes processes get one more;
        surplus processes get an empty share; apply_padding repeats the last item so that
        every process gets as many. Not collective."""
        yield self._split(inputs, bool(apply_padding))

    def _split(self, inputs: Any, apply_padding: bool) -> Any:
        if isinstance(inputs, dict):
            lengths = {key: len(value) for key, value in inputs.items()}
            if len(set(lengths.values())) > 1:
                raise ValueError(f"split_between_processes: all values of the dict must have the same length, "
                                 f"got {lengths}")
            return type(inputs)((key, self._split(value, apply_padding)) for key, value in inputs.items())
        return self._split_one(inputs, apply_padding)
