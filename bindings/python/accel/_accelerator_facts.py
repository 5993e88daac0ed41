"""What an Accelerator tells about itself, as Accelerate's attributes: this process's place in
the run, the accumulation window, the configuration in use (dataloader, precision, sharding,
mesh) and the grouped views (state, gradient_state). A mixin of Accelerator; the enums and
option maps the two share live here too."""
from __future__ import annotations

import enum
import numbers
from typing import Any, List, Optional

from . import core
from ._state import AcceleratorState, GradientState
from .kwargs_handlers import DataLoaderConfiguration, ProjectConfiguration
from .parallelism import ParallelismConfig

_PRECISIONS = {"no": core.PRECISION_NO, "bf16": core.PRECISION_BF16, "fp16": core.PRECISION_FP16,
               "fp8": core.PRECISION_FP8}
_COMM_HOOKS = {"no": core.COMM_HOOK_NONE, "fp16": core.COMM_HOOK_FP16, "bf16": core.COMM_HOOK_BF16}
_SHARDING = {"NO_SHARD": core.SHARDING_NO_SHARD, "SHARD_OPTIMIZER": core.SHARDING_SHARD_OPTIMIZER,
             "SHARD_GRAD_OP": core.SHARDING_SHARD_GRAD_OP, "FULL_SHARD": core.SHARDING_FULL_SHARD,
             "HYBRID_SHARD": core.SHARDING_HYBRID_SHARD}


class DistributedType(str, enum.Enum):
    """Accelerate's DistributedType names (a str, so == "MULTI_CPU" works too)."""

    NO = "NO"
    MULTI_CPU = "MULTI_CPU"
    MULTI_GPU = "MULTI_GPU"


_DISTRIBUTED_TYPES = {core.DISTRIBUTED_NO: DistributedType.NO, core.DISTRIBUTED_MULTI_CPU: DistributedType.MULTI_CPU,
                      core.DISTRIBUTED_MULTI_GPU: DistributedType.MULTI_GPU}


def _backend_of(distributed_type: DistributedType, device: str) -> Optional[str]:
    """Accelerate's state.backend: None without a process group, else the device's backend."""
    if distributed_type == DistributedType.NO:
        return None
    return "nccl" if device.startswith("cuda") else "gloo"


class AcceleratorFacts:
    """Accelerate's Accelerator attributes, read-only but for Accelerate's own setters
    (sync_gradients, gradient_accumulation_steps, even_batches). Properties, not methods: a
    method here would make `if acc.is_main_process:` true on every rank."""

    # -- what this process is ----------------------------------------------
    @property
    def device(self) -> str:
        return core.Accelerator.device(self)

    @property
    def num_processes(self) -> int:
        return core.Accelerator.num_processes(self)

    @property
    def process_index(self) -> int:
        return core.Accelerator.process_index(self)

    @property
    def local_process_index(self) -> int:
        return core.Accelerator.local_process_index(self)

    @property
    def is_main_process(self) -> bool:
        return core.Accelerator.is_main_process(self)

    @property
    def is_local_main_process(self) -> bool:
        return core.Accelerator.is_local_main_process(self)

    @property
    def is_last_process(self) -> bool:
        return self.process_index == self.num_processes - 1

    @property
    def distributed_type(self) -> DistributedType:
        return _DISTRIBUTED_TYPES[core.Accelerator.distributed_type(self)]

    @property
    def sync_gradients(self) -> bool:
        return core.Accelerator.sync_gradients(self)

    @sync_gradients.setter
    def sync_gradients(self, value: bool) -> None:
        """Whether this micro-step ends a window for the optimizer step and clipping (Accelerate's setter)."""
        core.Accelerator.set_sync_gradients(self, bool(value))

    @property
    def step(self) -> int:
        """Accelerate's accelerator.step: the micro-steps accumulate() has counted (a window ends at
        each multiple of gradient_accumulation_steps); 0 at the start and again at a prepared
        loader's last batch under sync_with_dataloader. save_state keeps it, load_state restores it."""
        return core.Accelerator.accumulation_step(self)

    @property
    def gradient_accumulation_steps(self) -> int:
        return core.Accelerator.gradient_accumulation_steps(self)

    @gradient_accumulation_steps.setter
    def gradient_accumulation_steps(self, steps: int) -> None:
        """Windows of `steps` micro-steps from the next accumulate() on."""
        if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):
            raise TypeError(f"gradient_accumulation_steps must be an int, got {type(steps).__name__}")
        core.Accelerator.set_gradient_accumulation_steps(self, int(steps))

    @property
    def project_dir(self) -> str:
        return self._project_dir

    @property
    def logging_dir(self) -> str:
        return self._logging_dir

    @property
    def save_iteration(self) -> int:
        """The number of the next automatic checkpoint (set it with project_configuration.iteration)."""
        return core.Accelerator.save_iteration(self)

    @property
    def project_configuration(self) -> ProjectConfiguration:
        """The ProjectConfiguration given (or made from the keywords); its iteration follows save_state."""
        return self._project_configuration

    # -- the DataLoaderConfiguration in use (Accelerate's properties) -------
    @property
    def dataloader_config(self) -> DataLoaderConfiguration:
        """A DataLoaderConfiguration with the values in use (a copy: set even_batches on the accelerator)."""
        return DataLoaderConfiguration(split_batches=self.split_batches, dispatch_batches=self.dispatch_batches,
                                       even_batches=self.even_batches, use_seedable_sampler=self.use_seedable_sampler,
                                       data_seed=self.data_seed, non_blocking=self.non_blocking,
                                       use_stateful_dataloader=self.use_stateful_dataloader)

    @property
    def split_batches(self) -> bool:
        return core.Accelerator.split_batches(self)

    @property
    def dispatch_batches(self) -> Optional[bool]:
        value = core.Accelerator.dispatch_batches(self)
        return None if value < 0 else bool(value)

    @property
    def even_batches(self) -> bool:
        return core.Accelerator.even_batches(self)

    @even_batches.setter
    def even_batches(self, value: bool) -> None:
        """Applies to dataloaders prepared from now on, as in Accelerate."""
        core.Accelerator.set_even_batches(self, bool(value))

    @property
    def use_seedable_sampler(self) -> bool:
        return core.Accelerator.use_seedable_sampler(self)

    @property
    def data_seed(self) -> Optional[int]:
        value = core.Accelerator.data_seed(self)
        return None if value < 0 else value

    @property
    def non_blocking(self) -> bool:
        return core.Accelerator.non_blocking(self)

    @property
    def use_stateful_dataloader(self) -> bool:
        return core.Accelerator.use_stateful_dataloader(self)

    @property
    def multi_device(self) -> bool:
        """Accelerate's multi_device: several processes, each on its own accelerator device (GPU)."""
        return self.use_distributed and self.distributed_type == DistributedType.MULTI_GPU

    @property
    def mixed_precision(self) -> str:
        value = core.Accelerator.mixed_precision(self)
        return {v: k for k, v in _PRECISIONS.items()}[value]

    @property
    def sharding_strategy(self) -> str:
        """The resolved sharding strategy: "NO_SHARD", "SHARD_OPTIMIZER", "SHARD_GRAD_OP", "FULL_SHARD" or "HYBRID_SHARD"."""
        value = core.Accelerator.sharding_strategy(self)
        return {v: k for k, v in _SHARDING.items()}[value]

    @property
    def native_amp(self) -> bool:
        """Accelerate's native_amp: whether mixed precision (fp16 or bf16) runs through autocast."""
        return self.mixed_precision in ("fp16", "bf16")

    @property
    def step_scheduler_with_optimizer(self) -> bool:
        """Whether prepared schedulers step only after a real optimizer step (num_processes steps
        without split_batches), as given to the constructor (default True)."""
        return self._step_scheduler_with_optimizer

    @property
    def rng_types(self) -> List[str]:
        """The generators synchronised at each prepared loader's epoch start, as given (default
        ["generator"], as in Accelerate)."""
        return list(self._rng_types)

    @property
    def log_with(self) -> List[Any]:
        """The trackers asked for: the built-in names in log_with's order ("all" expanded), then
        the tracker objects given."""
        return list(self._log_with_order) + list(self._custom_log_with)

    @property
    def backend(self) -> Optional[str]:
        """The process group's backend: "gloo" (CPU) or "nccl" (CUDA); None on one process."""
        return _backend_of(self.distributed_type, self.device)

    @property
    def cpu_offload(self) -> bool:
        """Whether sharded models keep master weights, gradients and optimizer state on the CPU."""
        return core.Accelerator.cpu_offload(self)

    @property
    def parallelism_config(self) -> ParallelismConfig:
        """The mesh in use; without a ParallelismConfig, dp_replicate_size is the number of processes."""
        replicate, shard, tp, cp = core.Accelerator.parallelism_sizes(self)
        return ParallelismConfig(dp_replicate_size=replicate, dp_shard_size=shard, tp_size=tp, cp_size=cp)

    # This process's coordinates in that mesh, row-major over dp_replicate x dp_shard x cp x tp
    # (tp innermost): Accelerate's names. Without a ParallelismConfig data_parallel_rank is the
    # process index (Accelerate raises there; our parallelism_config is never None).
    @property
    def data_parallel_rank(self) -> int:
        """This process's rank along dp_replicate (0 when that dimension is 1)."""
        return core.Accelerator.parallelism_ranks(self)[0]

    @property
    def data_parallel_shard_rank(self) -> int:
        """This process's rank along dp_shard (0 when that dimension is 1)."""
        return core.Accelerator.parallelism_ranks(self)[1]

    @property
    def tensor_parallel_rank(self) -> int:
        """This process's rank within its tensor-parallel group (process_index % tp_size)."""
        return core.Accelerator.parallelism_ranks(self)[2]

    @property
    def context_parallel_rank(self) -> int:
        """This process's rank along cp: which block of the sequence it computes (Accelerate 1.15
        raises NotImplementedError; libaccel's context parallelism is built)."""
        return core.Accelerator.parallelism_ranks(self)[3]

    @property
    def pipeline_parallel_rank(self) -> int:
        raise NotImplementedError("Pipeline parallelism is not supported by libaccel.")

    @property
    def should_save_model(self) -> bool:
        """True on every process, as Accelerate 1.15 says under a ParallelismConfig: save_model
        is collective (every process takes part; the main process writes)."""
        core.Accelerator.num_processes(self)  # a closed accelerator raises ValueError
        return True

    @property
    def device_placement(self) -> bool:
        """Whether prepared loaders' batches arrive on the device (fixed at creation)."""
        return self._device_placement

    @property
    def use_distributed(self) -> bool:
        return self.num_processes > 1

    @property
    def state(self) -> AcceleratorState:
        """Accelerate's accelerator.state (AcceleratorState): the same facts, as one object."""
        core.Accelerator.num_processes(self)  # a closed accelerator raises ValueError now, not later
        return AcceleratorState(self)

    @property
    def gradient_state(self) -> GradientState:
        core.Accelerator.num_processes(self)
        return GradientState(self)

    @property
    def optimizer_step_was_skipped(self) -> bool:
        """Whether the last step of any prepared optimizer was skipped (fp16 loss scaler: inf/NaN gradients)."""
        return any(core.Optimizer.step_was_skipped(o) for o in self._optimizers)
