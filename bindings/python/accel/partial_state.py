"""Accelerate's PartialState: this process's place in the launch and the world's process
group, without an Accelerator. Every PartialState and Accelerator of a process shares the
group, so a script may build one for its data work before (or beside) its Accelerator."""
from __future__ import annotations

import contextlib
import numbers
from datetime import timedelta
from typing import Any, Optional

import numpy as np

from . import core
from ._helpers import _closeable, _env_flag
from ._process import ProcessDecorators
from ._state import _is_open, _seed_generators
from ._accelerator_facts import _DISTRIBUTED_TYPES, DistributedType, _backend_of
from .tensors import Tensor, tensor


class PartialState(ProcessDecorators, core.PartialState):
    """PartialState(cpu=False, timeout=timedelta(minutes=30), backend=None), as Accelerate's:
    process_index, local_process_index, num_processes, device, default_device, distributed_type,
    backend, is_main_process, is_local_main_process, is_last_process, use_distributed, debug,
    fork_launched, initialized, wait_for_everyone(), main_process_first(),
    local_main_process_first(), split_between_processes(), on_main_process and the other
    decorators, print(), set_device(), destroy_process_group(). backend may name the device's
    own ("gloo" on the CPU, "nccl" on CUDA) or be None."""

    def __init__(self, cpu: bool = False, timeout: Optional[Any] = None, backend: Optional[str] = None,
                 **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(f"PartialState got unsupported arguments {sorted(kwargs)} "
                            "(libaccel takes cpu, timeout and backend)")
        if timeout is None:
            timeout_ms = 30 * 60 * 1000
        elif isinstance(timeout, timedelta):
            timeout_ms = int(timeout.total_seconds() * 1000)
        elif isinstance(timeout, numbers.Real) and not isinstance(timeout, bool):
            timeout_ms = int(timeout * 1000)  # seconds, as torch.distributed takes a number
        else:
            raise TypeError(f"PartialState timeout must be a timedelta or seconds, got {type(timeout).__name__}")
        super().__init__(bool(cpu), timeout_ms)
        if backend is not None and backend != ("nccl" if self.device.startswith("cuda") else "gloo"):
            device = self.device
            self.close()
            raise ValueError(f"PartialState backend {backend!r} does not drive {device} "
                             "(gloo is the CPU's, nccl CUDA's)")

    # -- what this process is: properties, as in Accelerate ---------------
    @property
    def device(self) -> str:
        return core.PartialState.device(self)

    @property
    def num_processes(self) -> int:
        return core.PartialState.num_processes(self)

    @property
    def process_index(self) -> int:
        return core.PartialState.process_index(self)

    @property
    def local_process_index(self) -> int:
        return core.PartialState.local_process_index(self)

    @property
    def is_main_process(self) -> bool:
        return self.process_index == 0

    @property
    def is_local_main_process(self) -> bool:
        return self.local_process_index == 0

    @property
    def is_last_process(self) -> bool:
        return self.process_index == self.num_processes - 1

    @property
    def use_distributed(self) -> bool:
        return self.num_processes > 1

    @property
    def distributed_type(self) -> DistributedType:
        return _DISTRIBUTED_TYPES[core.PartialState.distributed_type(self)]

    @property
    def backend(self) -> Optional[str]:
        """The process group's backend: "gloo" (CPU) or "nccl" (CUDA); None on one process."""
        return _backend_of(self.distributed_type, self.device)

    @property
    def default_device(self) -> str:
        """Accelerate's default_device: "cuda" where LibTorch sees a CUDA device, else "cpu"
        (what device would be without cpu=True, before the process's index picks a GPU)."""
        return "cuda" if core.cuda_device_count() > 0 else "cpu"

    @property
    def debug(self) -> bool:
        """ACCELERATE_DEBUG_MODE (accel launch --debug): collectives check their shapes first."""
        return _env_flag("ACCELERATE_DEBUG_MODE")

    @property
    def fork_launched(self) -> bool:
        """FORK_LAUNCHED, as Accelerate reads it; destroy_process_group() then does nothing."""
        return _env_flag("FORK_LAUNCHED")

    @property
    def initialized(self) -> bool:
        """True until close() or destroy_process_group()."""
        return _is_open(core.PartialState.num_processes, self)

    def set_device(self) -> None:
        """Accelerate's set_device: the device is chosen when the state is created (the process's
        GPU by local index, made current), so there is nothing left to set."""
        core.PartialState.num_processes(self)  # a closed state raises ValueError

    def destroy_process_group(self, group: Any = None) -> None:
        """Accelerate's destroy_process_group, for the end of a script: this state lets go of the
        process group (and is closed). The group itself ends when no PartialState or Accelerator
        of the process holds it any more. group: None (libaccel has only the world's group).
        Does nothing when fork_launched, as in Accelerate."""
        if group is not None:
            raise ValueError("destroy_process_group(group=...): libaccel has only the world's process group; "
                             "call it with group=None")
        if self.fork_launched:
            return
        self.close()

    def __repr__(self) -> str:
        if not self.initialized:
            return "PartialState (closed)"
        backend = f"  Backend: {self.backend}" if self.backend else ""
        return (f"Distributed environment: {self.distributed_type.value}{backend}\nNum processes: {self.num_processes}\n"
                f"Process index: {self.process_index}\nLocal process index: {self.local_process_index}\n"
                f"Device: {self.device}\n")

    # -- ordering --------------------------------------------------------
    @contextlib.contextmanager
    def main_process_first(self):
        """The main process runs the block first, then the others. Collective."""
        if not self.is_main_process:
            self.wait_for_everyone()
        try:
            yield
        finally:
            if self.is_main_process:
                self.wait_for_everyone()

    @contextlib.contextmanager
    def local_main_process_first(self):
        """Each machine's local main process runs the block first. Collective."""
        if not self.is_local_main_process:
            self.wait_for_everyone()
        try:
            yield
        finally:
            if self.is_local_main_process:
                self.wait_for_everyone()

    # A numpy array is split like a list; a Tensor that needs padding comes back on the CPU.
    def _split_one(self, inputs: Any, apply_padding: bool) -> Any:
        if isinstance(inputs, (Tensor, np.ndarray, list, tuple)):
            n = inputs.shape()[0] if isinstance(inputs, Tensor) else len(inputs)
            start, end, padded = core.PartialState.split_range(self, n, apply_padding)
            if isinstance(inputs, Tensor):
                if padded == end - start:
                    return inputs.narrow(0, start, end - start)
                rows = inputs.numpy()
                return tensor(np.concatenate([rows[start:end]] + [rows[-1:]] * (padded - (end - start))))
            if isinstance(inputs, np.ndarray):
                return np.concatenate([inputs[start:end]] + [inputs[-1:]] * (padded - (end - start)))
            share = list(inputs[start:end]) + [inputs[-1]] * (padded - (end - start))
            return share if isinstance(inputs, list) else type(inputs)(share)
        raise TypeError(f"split_between_processes: cannot split {type(inputs).__name__}; "
                        "pass a Tensor, numpy array, list, tuple or dict of them")


_closeable(PartialState, core.close_partial_state)


def set_seed(seed: int, device_specific: bool = False, deterministic: bool = False) -> None:
    """Accelerate's accelerate.utils.set_seed, without an Accelerator: seeds LibTorch (CPU and
    CUDA), Python's random, numpy's global generator and, when the program has imported it, torch.
    device_specific adds this process's index (through PartialState, as Accelerate's does:
    joining the process group, collective the first time); deterministic makes LibTorch use
    deterministic algorithms from now on. TypeError or ValueError name a bad seed before anything
    is seeded."""
    _seed_generators(seed, PartialState().process_index if device_specific else 0, deterministic)
