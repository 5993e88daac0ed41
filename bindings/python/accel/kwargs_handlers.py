"""Accelerate's configuration objects, as Accelerator(kwargs_handlers=[...], dataloader_config=...,
project_config=...) takes them: DistributedDataParallelKwargs, InitProcessGroupKwargs,
GradScalerKwargs, AutocastKwargs, ProfileKwargs, DataLoaderConfiguration and ProjectConfiguration.

Each handler is a dataclass with Accelerate's fields and defaults; to_kwargs() gives the fields
that differ from the defaults, and only those reach the accelerator, as in Accelerate."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Callable, Dict, List, Optional

from . import core
from ._helpers import _ValueEnum

__all__ = ["KwargsHandler", "DDPCommunicationHookType", "DistributedDataParallelKwargs", "InitProcessGroupKwargs",
           "GradScalerKwargs", "AutocastKwargs", "ProfileKwargs", "DataLoaderConfiguration", "ProjectConfiguration"]


class KwargsHandler:
    """Accelerate's mixin: to_dict() is every field, to_kwargs() the ones that differ from the class's defaults."""

    def to_dict(self) -> Dict[str, Any]:
        return copy.deepcopy(self.__dict__)

    def to_kwargs(self) -> Dict[str, Any]:
        defaults = self.__class__().to_dict()
        return {k: v for k, v in self.to_dict().items() if defaults[k] != v}


class DDPCommunicationHookType(str, _ValueEnum):
    """Accelerate's DDP communication hooks; libaccel runs NO, FP16 and BF16 (gradient compression)."""

    NO = "no"
    FP16 = "fp16"
    BF16 = "bf16"
    POWER_SGD = "power_sgd"
    BATCHED_POWER_SGD = "batched_power_sgd"


@dataclass
class DistributedDataParallelKwargs(KwargsHandler):
    """How prepare(model) syncs gradients (torch's DistributedDataParallel arguments): bucket_cap_mb,
    find_unused_parameters, broadcast_buffers, gradient_as_bucket_view, static_graph; comm_hook
    "fp16"/"bf16" compresses the buckets. dim and check_reduction are accepted and change nothing
    (one device per process; torch ignores check_reduction). PowerSGD hooks, comm_wrapper and
    comm_state_option raise ValueError: libaccel has no PowerSGD."""

    dim: int = 0
    broadcast_buffers: bool = True
    bucket_cap_mb: int = 25
    find_unused_parameters: bool = False
    check_reduction: bool = False
    gradient_as_bucket_view: bool = False
    static_graph: bool = False
    comm_hook: DDPCommunicationHookType = DDPCommunicationHookType.NO
    comm_wrapper: DDPCommunicationHookType = DDPCommunicationHookType.NO
    comm_state_option: dict = field(default_factory=dict)

    def to_dict(self, ignore_keys=("comm_hook", "comm_wrapper", "comm_state_option")) -> Dict[str, Any]:
        return {k: v for k, v in super().to_dict().items() if k not in ignore_keys}


@dataclass
class GradScalerKwargs(KwargsHandler):
    """fp16 dynamic loss scaling (torch's GradScaler arguments); enabled=False trains fp16 unscaled."""

    init_scale: float = 65536.0
    growth_factor: float = 2.0
    backoff_factor: float = 0.5
    growth_interval: int = 2000
    enabled: bool = True


@dataclass
class InitProcessGroupKwargs(KwargsHandler):
    """The process group (torch.distributed.init_process_group's arguments): backend "gloo" (CPU) or
    "nccl" (CUDA); init_method "env://" or "tcp://HOST:PORT"; timeout a timedelta (None: 30 minutes,
    10 with nccl, as in Accelerate). Only the fields that differ from the defaults apply: a backend
    left at "nccl" means the device's own."""

    backend: Optional[str] = "nccl"
    init_method: Optional[str] = None
    timeout: Optional[timedelta] = None

    def __post_init__(self) -> None:
        if self.timeout is None:
            self.timeout = timedelta(seconds=1800 if self.backend != "nccl" else 600)


@dataclass
class AutocastKwargs(KwargsHandler):
    """Autocast under mixed precision: enabled=False runs prepared models' forward (and
    accelerator.autocast() blocks) in float32; cache_enabled switches LibTorch's cast cache."""

    enabled: bool = True
    cache_enabled: Optional[bool] = None


@dataclass
class ProfileKwargs(KwargsHandler):
    """accelerator.profile()'s settings. libaccel records LibTorch's operators on this thread and
    writes a Chrome trace per process to output_trace_dir (trace_<rank>.json); activities may be
    None, ["cpu"] or include "cuda". record_shapes adds each operator's "Input Dims",
    profile_memory the CPU allocations ("[memory]" events), with_flops the counted "flops";
    for operators a TorchScript model runs, with_stack the model source lines that called them
    ("Call stack", innermost first: "net.py(5): forward;net.py(10): forward;") and with_modules
    the submodules they ran in ("Module Hierarchy": "TOP(Net)::forward.block(Block)::forward."),
    as torch.profiler writes them.
    schedule_option takes torch.profiler.schedule's keys (wait, warmup, active, repeat,
    skip_first; warm-up steps are not recorded: LibTorch's legacy profiler needs none), counted
    by prof.step(); on_trace_ready(prof) runs when a cycle's trace is written (prof.trace_path,
    prof.export_chrome_trace(path))."""

    activities: Optional[List[str]] = None
    schedule_option: Optional[Dict[str, int]] = None
    on_trace_ready: Optional[Callable] = None
    record_shapes: bool = False
    profile_memory: bool = False
    with_stack: bool = False
    with_flops: bool = False
    with_modules: bool = False
    output_trace_dir: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return dict(self.__dict__)  # on_trace_ready may be a closure: no deepcopy

    def check(self) -> None:
        """Raises ValueError naming the first setting accelerator.profile() cannot honour."""
        keys = {"wait", "warmup", "active", "repeat", "skip_first"}
        if self.schedule_option is not None:
            unknown = sorted(set(self.schedule_option) - keys)
            if unknown:
                raise ValueError(f"ProfileKwargs.schedule_option: unknown keys {unknown} (torch.profiler.schedule "
                                 f"takes {sorted(keys)})")
            missing = sorted({"wait", "warmup", "active"} - set(self.schedule_option))
            if missing:
                raise ValueError(f"ProfileKwargs.schedule_option needs {missing}, as torch.profiler.schedule does")
        if self.on_trace_ready is not None and not callable(self.on_trace_ready):
            raise ValueError("ProfileKwargs.on_trace_ready must be callable")
        for activity in self.activities or []:
            if str(getattr(activity, "name", activity)).lower() not in ("cpu", "cuda"):
                raise ValueError(f"ProfileKwargs.activities: {activity!r} is not 'cpu' or 'cuda'")


@dataclass
class DataLoaderConfiguration:
    """How prepare(dataloader) shards: split_batches, dispatch_batches (None: iterable datasets are
    dispatched), even_batches, use_seedable_sampler, data_seed; non_blocking and
    use_stateful_dataloader are reported as given (batches already reach a GPU without blocking,
    and save_state always records loader positions)."""

    split_batches: bool = False
    dispatch_batches: Optional[bool] = None
    even_batches: bool = True
    use_seedable_sampler: bool = False
    data_seed: Optional[int] = None
    non_blocking: bool = False
    use_stateful_dataloader: bool = False


class ProjectConfiguration:
    """Where checkpoints and logs go: project_dir, logging_dir (None: project_dir/logs, see
    docs/accelerate-differences.md), automatic_checkpoint_naming, total_limit (None: keep all),
    iteration (the number of the next automatic checkpoint) and save_on_each_node. Pass it as
    Accelerator(project_config=...); accelerator.project_configuration is the same object, whose
    iteration follows save_state."""

    def __init__(self, project_dir: Optional[str] = None, logging_dir: Optional[str] = None,
                 automatic_checkpoint_naming: bool = False, total_limit: Optional[int] = None,
                 iteration: int = 0, save_on_each_node: bool = False) -> None:
        self.project_dir = project_dir
        self.logging_dir = logging_dir
        self.automatic_checkpoint_naming = automatic_checkpoint_naming
        self.total_limit = total_limit
        self._iteration = iteration
        self.save_on_each_node = save_on_each_node
        self._accelerator: Any = None  # set by the Accelerator it configures

    def set_directories(self, project_dir: Optional[str] = None) -> None:
        """Accelerate's set_directories: sets project_dir (logging_dir stays as given)."""
        self.project_dir = project_dir

    @property
    def iteration(self) -> int:
        if self._accelerator is not None:
            return core.Accelerator.save_iteration(self._accelerator)
        return self._iteration

    @iteration.setter
    def iteration(self, value: int) -> None:
        if self._accelerator is not None:
            core.Accelerator.set_save_iteration(self._accelerator, value)
        else:
            self._iteration = value

    def __repr__(self) -> str:
        return (f"ProjectConfiguration(project_dir={self.project_dir!r}, logging_dir={self.logging_dir!r}, "
                f"automatic_checkpoint_naming={self.automatic_checkpoint_naming!r}, "
                f"total_limit={self.total_limit!r}, iteration={self.iteration!r}, "
                f"save_on_each_node={self.save_on_each_node!r})")


# Accelerator's keyword for each handler type, as Accelerate names its attributes.
_HANDLER_ATTRIBUTES = {DistributedDataParallelKwargs: "ddp_handler", GradScalerKwargs: "scaler_handler",
                       InitProcessGroupKwargs: "init_handler", AutocastKwargs: "autocast_handler",
                       ProfileKwargs: "profile_handler"}
_DDP_FIELDS = {"broadcast_buffers": "broadcast_buffers", "bucket_cap_mb": "bucket_cap_mb",
               "find_unused_parameters": "find_unused_parameters",
               "gradient_as_bucket_view": "gradient_as_bucket_view", "static_graph": "static_graph"}
_SCALER_FIELDS = {"init_scale": "scaler_init_scale", "growth_factor": "scaler_growth_factor",
                  "backoff_factor": "scaler_backoff_factor", "growth_interval": "scaler_growth_interval",
                  "enabled": "scaler_enabled"}


def sort_handlers(handlers: Optional[List[Any]]) -> Dict[str, Any]:
    """{attribute: handler} for Accelerator(kwargs_handlers=...), checked as Accelerate checks them."""
    found: Dict[str, Any] = {}
    for handler in handlers or []:
        if not isinstance(handler, KwargsHandler) or type(handler) not in _HANDLER_ATTRIBUTES:
            raise TypeError(f"Unsupported kwargs handler passed: {handler!r}, must be one of "
                            f"{', '.join(t.__name__ for t in _HANDLER_ATTRIBUTES)}")
        attribute = _HANDLER_ATTRIBUTES[type(handler)]
        if attribute in found:
            raise ValueError(f"You can only pass one {handler.__class__} in `kwargs_handlers`.")
        found[attribute] = handler
    return found


def _hook_name(value: Any) -> str:
    return str(getattr(value, "value", value))


def handler_options(found: Dict[str, Any]) -> Dict[str, Any]:
    """The Accelerator keyword options the handlers set: only what differs from their defaults."""
    options: Dict[str, Any] = {}
    ddp = found.get("ddp_handler")
    if ddp is not None:
        for key, value in ddp.to_kwargs().items():
            if key in _DDP_FIELDS:
                options[_DDP_FIELDS[key]] = value
        hook = _hook_name(ddp.comm_hook)
        if hook in ("power_sgd", "batched_power_sgd"):
            raise ValueError(f"DistributedDataParallelKwargs.comm_hook {hook!r} is not supported by libaccel "
                             "(no PowerSGD): use 'no', 'fp16' or 'bf16'")
        if hook not in ("no", "fp16", "bf16"):
            raise ValueError(f"DistributedDataParallelKwargs.comm_hook {hook!r} is not one of no, fp16, bf16")
        if hook != "no":
            options["comm_hook"] = hook
        if _hook_name(ddp.comm_wrapper) != "no" or ddp.comm_state_option:
            raise ValueError("DistributedDataParallelKwargs.comm_wrapper and comm_state_option wrap a PowerSGD "
                             "hook, which libaccel does not run")
    scaler = found.get("scaler_handler")
    if scaler is not None:
        for key, value in scaler.to_kwargs().items():
            options[_SCALER_FIELDS[key]] = value
    init = found.get("init_handler")
    if init is not None:
        changed = init.to_kwargs()
        if "backend" in changed:
            options["backend"] = changed["backend"] or ""
        if changed.get("init_method") is not None:
            options["init_method"] = changed["init_method"]
        if "timeout" in changed or "backend" in changed:
            timeout = init.timeout
            if not isinstance(timeout, timedelta):
                raise TypeError(f"InitProcessGroupKwargs.timeout must be a datetime.timedelta, got "
                                f"{type(timeout).__name__}")
            milliseconds = int(timeout.total_seconds() * 1000)
            if milliseconds <= 0:
                raise ValueError(f"InitProcessGroupKwargs.timeout must be positive, got {timeout}")
            options["timeout_ms"] = milliseconds
    autocast = found.get("autocast_handler")
    if autocast is not None:
        options["autocast_enabled"] = bool(autocast.enabled)
        if autocast.cache_enabled is not None:
            options["autocast_cache_enabled"] = 1 if autocast.cache_enabled else 0
    profile = found.get("profile_handler")
    if profile is not None:
        profile.check()
    return options


def dataloader_options(config: DataLoaderConfiguration) -> Dict[str, Any]:
    """The Accelerator keyword options of a DataLoaderConfiguration."""
    if not isinstance(config, DataLoaderConfiguration):
        raise TypeError(f"dataloader_config must be a DataLoaderConfiguration, got {type(config).__name__}")
    return {"split_batches": config.split_batches, "dispatch_batches": config.dispatch_batches,
            "even_batches": config.even_batches, "use_seedable_sampler": config.use_seedable_sampler,
            "data_seed": config.data_seed, "non_blocking": config.non_blocking,
            "use_stateful_dataloader": config.use_stateful_dataloader}


def project_options(config: ProjectConfiguration) -> Dict[str, Any]:
    """The Accelerator keyword options of a ProjectConfiguration."""
    if not isinstance(config, ProjectConfiguration):
        raise TypeError(f"project_config must be a ProjectConfiguration, got {type(config).__name__}")
    options: Dict[str, Any] = {"automatic_checkpoint_naming": config.automatic_checkpoint_naming,
                               "total_limit": config.total_limit or 0, "save_on_each_node": config.save_on_each_node}
    if config.project_dir is not None:
        options["project_dir"] = str(config.project_dir)
    if config.logging_dir is not None:
        options["logging_dir"] = str(config.logging_dir)
    return options
