"""Accelerate's grouped views of an Accelerator (accelerator.state, accelerator.gradient_state),
its size strings for save_model's max_shard_size, and the seeding both set_seeds share."""
from __future__ import annotations

import numbers
import random
import sys
from typing import Any, ContextManager, Dict, List, Union

import numpy as np

from . import core
from ._helpers import _env_flag
from .data import _open_loaders


def _seed_generators(seed: int, process_index: int, deterministic: bool) -> None:
    """Accelerate's set_seed with the process index to add (0 unless device_specific): LibTorch's
    generators, Python's random, numpy's global generator and, when the program has imported it,
    torch. The seed is checked before anything is seeded (Accelerate fails in numpy, half-seeded)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    effective = int(seed) + process_index
    if not 0 <= effective < 2**32:  # numpy's limit
        raise ValueError(f"seed {seed} (plus process index {process_index}) is outside numpy's range "
                         f"0 to 2**32 - 1")
    core.set_seed(effective, bool(deterministic))
    random.seed(effective)
    np.random.seed(effective)
    # Only a torch the program imported itself: importing one here could load a second LibTorch.
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "manual_seed"):
        torch.manual_seed(effective)
        if deterministic:
            torch.use_deterministic_algorithms(True)


# Accelerate's size strings (convert_file_size_to_int): a number, possibly
# fractional ("2.5GB"), then KiB/MiB/GiB (powers of 2) or KB/MB/GB (powers of
# 10); a lower-case final "b" ("5Gb") means bits.
_SIZE_UNITS = (("GIB", 2**30), ("MIB", 2**20), ("KIB", 2**10), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3))


def _shard_size_bytes(size: Union[int, str]) -> int:
    """max_shard_size as bytes: an int, or a string such as "10GB", "500MB", "1GiB"."""
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        number = int(size)
    elif isinstance(size, str):
        unit = next(((u, f) for u, f in _SIZE_UNITS if size.upper().endswith(u)), None)
        try:
            if unit is None:
                raise ValueError
            number = int(float(size[:-len(unit[0])]) * unit[1])
        except (ValueError, OverflowError):
            raise ValueError(f"max_shard_size {size!r} is not a number followed by a unit, e.g. '5GB'") from None
        if unit[0] in ("GB", "MB", "KB") and size.endswith("b"):
            number //= 8
    else:
        raise TypeError(f"max_shard_size must be an int or a str such as '10GB', got {type(size).__name__}")
    if number <= 0:
        raise ValueError(f"max_shard_size {size!r} must be positive")
    return number


class AcceleratorState:
    """Accelerate's AcceleratorState, as accelerator.state: the process's place in the run.

    A view of its Accelerator: every attribute reads the live value."""

    def __init__(self, accelerator: "Accelerator") -> None:
        self._accelerator = accelerator

    device = property(lambda self: self._accelerator.device)
    distributed_type = property(lambda self: self._accelerator.distributed_type)
    num_processes = property(lambda self: self._accelerator.num_processes)
    process_index = property(lambda self: self._accelerator.process_index)
    local_process_index = property(lambda self: self._accelerator.local_process_index)
    is_main_process = property(lambda self: self._accelerator.is_main_process)
    is_local_main_process = property(lambda self: self._accelerator.is_local_main_process)
    is_last_process = property(lambda self: self._accelerator.is_last_process)
    mixed_precision = property(lambda self: self._accelerator.mixed_precision)
    use_distributed = property(lambda self: self._accelerator.use_distributed)
    backend = property(lambda self: self._accelerator.backend)
    parallelism_config = property(lambda self: self._accelerator.parallelism_config)
    debug = property(lambda self: core.Accelerator.debug_mode(self._accelerator))
    fork_launched = property(lambda self: _env_flag("FORK_LAUNCHED"))
    initialized = property(lambda self: _is_open(core.Accelerator.num_processes, self._accelerator))

    # The process-level calls Accelerate's state offers too; the accelerator's own.
    def wait_for_everyone(self) -> None:
        self._accelerator.wait_for_everyone()

    def print(self, *args: Any, **kwargs: Any) -> None:
        self._accelerator.print(*args, **kwargs)

    def main_process_first(self) -> ContextManager[None]:
        return self._accelerator.main_process_first()

    def local_main_process_first(self) -> ContextManager[None]:
        return self._accelerator.local_main_process_first()

    def split_between_processes(self, inputs: Any, apply_padding: bool = False) -> ContextManager[Any]:
        return self._accelerator.split_between_processes(inputs, apply_padding)

    def __repr__(self) -> str:
        return (f"Distributed environment: {self.distributed_type.value}\nNum processes: {self.num_processes}\n"
                f"Process index: {self.process_index}\nLocal process index: {self.local_process_index}\n"
                f"Device: {self.device}\n\nMixed precision type: {self.mixed_precision}\n")


class GradientState:
    """Accelerate's GradientState, as accelerator.gradient_state: accumulation and end of epoch."""

    def __init__(self, accelerator: "Accelerator") -> None:
        self._accelerator = accelerator

    sync_gradients = property(lambda self: self._accelerator.sync_gradients)
    num_steps = property(lambda self: self._accelerator.gradient_accumulation_steps)
    end_of_dataloader = property(lambda self: core.Accelerator.end_of_dataloader(self._accelerator))
    remainder = property(lambda self: core.Accelerator.remainder(self._accelerator))
    adjust_scheduler = property(lambda self: self._accelerator._accumulation_options["adjust_scheduler"])
    sync_with_dataloader = property(lambda self: self._accelerator._accumulation_options["sync_with_dataloader"])
    initialized = property(lambda self: _is_open(core.Accelerator.num_processes, self._accelerator))

    @property
    def dataloader_references(self) -> List[Any]:
        """Accelerate's: None, then the loaders prepared by this accelerator that are in an epoch
        (from the batch that opens it to the end of its iteration, or set_epoch), in the order
        their epochs opened."""
        return [None] + _open_loaders(self._accelerator._loader_refs)

    @property
    def active_dataloader(self) -> Any:
        """The loader being iterated (the last of dataloader_references), or None."""
        return self.dataloader_references[-1]

    @property
    def in_dataloader(self) -> bool:
        """Whether a prepared loader is being iterated (Accelerate's in_dataloader)."""
        return self.active_dataloader is not None

    @property
    def plugin_kwargs(self) -> Dict[str, Any]:
        """GradientAccumulationPlugin's settings as Accelerate keeps them: num_steps, and the others
        where they differ from their defaults."""
        options = self._accelerator._accumulation_options
        kwargs: Dict[str, Any] = {"num_steps": self.num_steps}
        for key, default in (("adjust_scheduler", False), ("sync_with_dataloader", True), ("sync_each_batch", False)):
            if options[key] != default:
                kwargs[key] = options[key]
        return kwargs

    def __repr__(self) -> str:
        return (f"Sync Gradients: {self.sync_gradients}\nAt end of current dataloader: {self.end_of_dataloader}\n"
                f"Extra samples added: {self.remainder}\nGradient accumulation plugin: {self.plugin_kwargs}\n")


def _is_open(query: Any, handle: Any) -> bool:
    """Whether a SWIG object is still open: query(handle) raises ValueError once it is closed."""
    try:
        query(handle)
    except ValueError:  # SWIG's "<class> is closed"
        return False
    return True
