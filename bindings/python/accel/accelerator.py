"""accel.Accelerator, DistributedType and the plugins and configuration objects it takes or gives."""
from __future__ import annotations

import base64
import contextlib
import gzip
import inspect
import json
import numbers
import os
import pickle
import shutil
from collections.abc import Iterable, Mapping
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from . import core
from ._helpers import _closeable, _set_fields
from ._process import ProcessDecorators
from ._accelerator_facts import _COMM_HOOKS, _PRECISIONS, _SHARDING, AcceleratorFacts, DistributedType
from ._state import _seed_generators, _shard_size_bytes
from .checkpointing import RemovableHandle, _CheckpointAdapter, _HookAdapter
from .collectives import _apply_nested, _batch_tensors, _flatten, _tensor_list
from .core import AccelError, AcceleratorOptions
from .parallelism import ParallelismConfig
from .data import DataLoader, _skip_first_batches, _track_prepared
from .kwargs_handlers import (AutocastKwargs, ProfileKwargs, ProjectConfiguration,
                              dataloader_options, handler_options, project_options, sort_handlers)
from .models import Model, ModelParameters, _map_items, _tensor_map
from .tensors import Tensor, _as_tensor, tensor
from .tracking import (BuiltinTracker, Tracker, _builtin_tracker_names, _split_log_with, _split_values,
                       _TrackerAdapter)

__all__ = ["Accelerator", "DistributedType", "GradientAccumulationPlugin", "FullyShardedDataParallelPlugin"]


_REDUCTIONS = {"sum": core.REDUCE_SUM, "mean": core.REDUCE_MEAN, "none": core.REDUCE_NONE}


def _positional_count(function: Any) -> int:
    """How many positional arguments function takes (a large number for *args)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return 1
    if any(p.kind == p.VAR_POSITIONAL for p in parameters):
        return 99
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


class GradientAccumulationPlugin:
    """Accelerate's GradientAccumulationPlugin, passed as Accelerator(gradient_accumulation_plugin=...).

    num_steps: micro-steps per optimizer step (ACCELERATE_GRADIENT_ACCUMULATION_STEPS, set by
    ``accel launch --gradient_accumulation_steps``, still wins); sync_with_dataloader: the loader's
    last batch ends a window; sync_each_batch: gradients are averaged on every micro-step (less
    memory, more communication); adjust_scheduler: micro-step scheduler calls count towards
    OneCycle's total_steps (False by default: Accelerate 0.22 drops its True default unread)."""

    def __init__(self, num_steps: int = 1, adjust_scheduler: bool = False, sync_with_dataloader: bool = True,
                 sync_each_batch: bool = False) -> None:
        self.num_steps, self.adjust_scheduler = num_steps, adjust_scheduler
        self.sync_with_dataloader, self.sync_each_batch = sync_with_dataloader, sync_each_batch


class FullyShardedDataParallelPlugin:
    """Accelerate's FullyShardedDataParallelPlugin, the settings libaccel runs: sharding_strategy
    ("FULL_SHARD" by default, as FSDP's; also "SHARD_GRAD_OP", "NO_SHARD", "SHARD_OPTIMIZER"),
    min_num_params (0: one wrap unit per layer; n > 0: layers grouped until they hold n parameters,
    size_based_auto_wrap_policy), activation_checkpointing (FULL_SHARD units run again in
    backward), transformer_cls_names_to_wrap (transformer_auto_wrap_policy: the TorchScript
    submodules of these classes, or at these paths, become units of their own; in a JSON spec the
    layers of these types, e.g. "TransformerEncoderLayer", or names), backward_prefetch
    ("BACKWARD_PRE" by default as in FSDP, "BACKWARD_POST", "NO_PREFETCH" or None),
    forward_prefetch (the next unit's all-gather in flight while one runs), cpu_offload (True,
    or an object with offload_params such as torch's CPUOffload: master weights, gradients and
    optimizer state of the shards on the CPU) and state_dict_type ("SHARDED_STATE_DICT":
    save_state writes PyTorch distributed checkpoints, pytorch_model_fsdp_0/ and optimizer_0/;
    "FULL_STATE_DICT" libaccel's own per-process files; None: FSDP_STATE_DICT_TYPE, else
    FULL_STATE_DICT; torch's StateDictType members are taken by name). Pass it as
    Accelerator(fsdp_plugin=...)."""

    def __init__(self, sharding_strategy: str = "FULL_SHARD", min_num_params: int = 0,
                 activation_checkpointing: bool = False,
                 transformer_cls_names_to_wrap: Optional[List[str]] = None,
                 backward_prefetch: Optional[str] = "BACKWARD_PRE", forward_prefetch: bool = False,
                 cpu_offload: Any = False, state_dict_type: Any = None) -> None:
        if backward_prefetch not in (None, "BACKWARD_PRE", "BACKWARD_POST", "NO_PREFETCH"):
            raise ValueError(f"backward_prefetch {backward_prefetch!r} is not one of BACKWARD_PRE, BACKWARD_POST, "
                             "NO_PREFETCH or None")
        if isinstance(min_num_params, bool) or not isinstance(min_num_params, int) or min_num_params < 0:
            raise ValueError(f"min_num_params must be an int >= 0, got {min_num_params!r}")
        if isinstance(transformer_cls_names_to_wrap, str):
            transformer_cls_names_to_wrap = transformer_cls_names_to_wrap.split(",")
        self.sharding_strategy = sharding_strategy
        self.min_num_params = min_num_params
        self.activation_checkpointing = activation_checkpointing
        self.transformer_cls_names_to_wrap = transformer_cls_names_to_wrap
        self.backward_prefetch = backward_prefetch
        self.forward_prefetch = forward_prefetch
        # Accelerate passes torch's CPUOffload(offload_params=...); a bool says the same.
        self.cpu_offload = bool(getattr(cpu_offload, "offload_params", cpu_offload))
        self.state_dict_type = getattr(state_dict_type, "name", state_dict_type)
        if self.state_dict_type not in (None, "FULL_STATE_DICT", "SHARDED_STATE_DICT"):
            raise ValueError(f"state_dict_type {state_dict_type!r} is not FULL_STATE_DICT, SHARDED_STATE_DICT "
                             "or None")


def _refuse_unplaced(call: str, device_placement: Optional[bool], why: str) -> None:
    if device_placement is not None and not device_placement:
        raise ValueError(f"{call}(device_placement=False): {why}")


class Accelerator(AcceleratorFacts, ProcessDecorators, core.Accelerator):
    """Accelerate's Accelerator. Keyword options use Accelerate's names:
    cpu, mixed_precision ("no", "fp16", "bf16"), gradient_accumulation_steps, split_batches,
    even_batches, dispatch_batches (None: iterable datasets are dispatched), use_seedable_sampler,
    data_seed, device_placement, project_dir, logging_dir,
    automatic_checkpoint_naming, total_limit, log_with ("jsonl", "csv", "tensorboard", "mlflow",
    "wandb", "dvclive", "trackio", "aim", "comet_ml", "all", or a list), timeout_ms, comm_hook ("fp16", "bf16"), find_unused_parameters,
    broadcast_buffers (default True: process 0's buffers at every training forward),
    sharding_strategy ("NO_SHARD", "SHARD_OPTIMIZER" (ZeRO-1), "SHARD_GRAD_OP" (ZeRO-2), "FULL_SHARD",
    "HYBRID_SHARD" (FULL_SHARD within each node, replicated across nodes);
    None: from `accel launch`'s environment),
    fsdp_plugin (a FullyShardedDataParallelPlugin), fsdp_min_num_params, fsdp_activation_checkpointing,
    fsdp_transformer_layer_cls_to_wrap (class names or submodule paths, a list or comma-separated),
    fsdp_backward_prefetch, fsdp_forward_prefetch, cpu_offload (bools; cpu_offload keeps the
    shards' master weights, gradients and optimizer state on the CPU), parallelism_config (a
    ParallelismConfig: tensor parallelism with data parallelism; None: from `accel launch`'s
    environment), kwargs_handlers (DistributedDataParallelKwargs, InitProcessGroupKwargs,
    GradScalerKwargs, AutocastKwargs, ProfileKwargs: one of each; only fields that differ from their
    defaults apply), dataloader_config (a DataLoaderConfiguration), project_config (a
    ProjectConfiguration), rng_types (["torch", "cuda", "generator"]: generators taken from process 0
    at each epoch's start; None: ["generator"]), step_scheduler_with_optimizer (default True: a
    prepared scheduler steps only after a real optimizer step; False: once per call), ...

    Collective where the C API says so: with several processes every process must call it."""

    def __init__(self, **options: Any) -> None:
        handlers = sort_handlers(options.pop("kwargs_handlers", None))
        for key, value in handler_options(handlers).items():
            if key in options:
                raise ValueError(f"{key} is given both as a keyword and by a kwargs handler; pass it once")
            options[key] = value
        project_config = options.pop("project_config", None)
        for source, convert in ((options.pop("dataloader_config", None), dataloader_options),
                                (project_config, project_options)):
            if source is None:
                continue
            for key, value in convert(source).items():
                if key in options:
                    raise ValueError(f"{key} is given both as a keyword and in {type(source).__name__}; pass it once")
                options[key] = value
        rng_types = options.get("rng_types")
        if rng_types is not None:  # names or RNGType members; one string is one name
            rng_types = [str(getattr(t, "value", t)) for t in ([rng_types] if isinstance(rng_types, str) else rng_types)]
            options["rng_types"] = ",".join(rng_types)
        for key in ("rng_types", "backend", "init_method"):
            if key in options and options[key] is None:
                del options[key]
        opts = AcceleratorOptions()
        if "mixed_precision" in options:
            value = options.pop("mixed_precision")
            if value not in _PRECISIONS:
                raise ValueError(f"mixed_precision {value!r} is not one of {sorted(_PRECISIONS)}")
            opts.mixed_precision = _PRECISIONS[value]
        if "comm_hook" in options:
            value = options.pop("comm_hook")
            if value not in _COMM_HOOKS:
                raise ValueError(f"comm_hook {value!r} is not one of {sorted(_COMM_HOOKS)}")
            opts.comm_hook = _COMM_HOOKS[value]
        if options.get("sharding_strategy") is not None:
            value = options.pop("sharding_strategy")
            if value not in _SHARDING:
                raise ValueError(f"sharding_strategy {value!r} is not one of {sorted(_SHARDING)}")
            opts.sharding_strategy = _SHARDING[value]
        options.pop("sharding_strategy", None)
        parallelism = options.pop("parallelism_config", None)
        if parallelism is not None:
            if not isinstance(parallelism, ParallelismConfig):
                raise TypeError(f"parallelism_config must be a ParallelismConfig, got {type(parallelism).__name__}")
            opts.parallelism_dp_replicate_size = parallelism.dp_replicate_size
            opts.parallelism_dp_shard_size = parallelism.dp_shard_size
            opts.parallelism_tp_size = parallelism.tp_size
            opts.parallelism_cp_size = parallelism.cp_size
        fsdp = options.pop("fsdp_plugin", None)
        if fsdp is not None:
            if not isinstance(fsdp, FullyShardedDataParallelPlugin):
                raise TypeError(f"fsdp_plugin must be a FullyShardedDataParallelPlugin, got {type(fsdp).__name__}")
            if fsdp.sharding_strategy not in _SHARDING:
                raise ValueError(f"fsdp_plugin.sharding_strategy {fsdp.sharding_strategy!r} is not one of "
                                 f"{sorted(_SHARDING)}")
            opts.sharding_strategy = _SHARDING[fsdp.sharding_strategy]
            opts.fsdp_min_num_params = fsdp.min_num_params
            opts.fsdp_activation_checkpointing = int(bool(fsdp.activation_checkpointing))
            opts.fsdp_backward_prefetch = int(fsdp.backward_prefetch not in (None, "NO_PREFETCH"))
            opts.fsdp_forward_prefetch = int(bool(fsdp.forward_prefetch))
            opts.cpu_offload = int(fsdp.cpu_offload)
            if fsdp.transformer_cls_names_to_wrap is not None:
                options.setdefault("fsdp_transformer_layer_cls_to_wrap", fsdp.transformer_cls_names_to_wrap)
            if fsdp.state_dict_type is not None:
                options.setdefault("fsdp_state_dict_type", fsdp.state_dict_type)
        if isinstance(options.get("fsdp_transformer_layer_cls_to_wrap"), (list, tuple)):
            options["fsdp_transformer_layer_cls_to_wrap"] = ",".join(options["fsdp_transformer_layer_cls_to_wrap"])
        if isinstance(options.get("fsdp_activation_checkpointing"), bool):
            options["fsdp_activation_checkpointing"] = int(options["fsdp_activation_checkpointing"])
        custom_trackers: List[Any] = []
        builtin_names: List[str] = []
        if options.get("log_with") is not None:
            builtin_names, custom_trackers = _split_log_with(options["log_with"])
            options["log_with"] = ",".join(builtin_names)
        # None (Accelerate's default) is -1 in the C options: dispatch_batches
        # then follows the dataset (iterable: dispatched); data_seed is unset.
        for key in ("dispatch_batches", "data_seed"):
            if key in options and options[key] is None:
                options[key] = -1
        plugin = options.pop("gradient_accumulation_plugin", None)
        if plugin is not None:
            if options.get("gradient_accumulation_steps", 1) != 1:
                raise ValueError("You can only pass one of `gradient_accumulation_steps` and "
                                 "`gradient_accumulation_plugin`")
            options.update(gradient_accumulation_steps=plugin.num_steps, adjust_scheduler=plugin.adjust_scheduler,
                           sync_with_dataloader=plugin.sync_with_dataloader, sync_each_batch=plugin.sync_each_batch)
        _set_fields(opts, options, "Accelerator")
        super().__init__(opts)
        self._device_placement = bool(opts.device_placement)
        self._rng_types = ["generator"] if rng_types is None else rng_types
        self._step_scheduler_with_optimizer = bool(opts.step_scheduler_with_optimizer)
        self._accumulation_options = {key: bool(getattr(opts, key))
                                      for key in ("adjust_scheduler", "sync_with_dataloader", "sync_each_batch")}
        self._custom_log_with = list(custom_trackers)
        self._project_dir = opts.project_dir or "."
        self._logging_dir = opts.logging_dir or os.path.join(self._project_dir, "logs")
        self._optimizers: List[Any] = []
        self._models: List[Model] = []  # prepared, in order: what state hooks receive
        self._loader_refs: List[Any] = []  # weak references to the prepared loaders (data._track_prepared)
        self._trackers: Dict[str, Any] = {}
        self._builtin_trackers: Dict[str, BuiltinTracker] = {}
        # log_with's built-in names in their order ("all": the core's), for the trackers property.
        self._log_with_order = _builtin_tracker_names() if "all" in builtin_names \
            else list(dict.fromkeys(builtin_names))
        # Accelerate's handler attributes (None when not given).
        self.ddp_handler = handlers.get("ddp_handler")
        self.scaler_handler = handlers.get("scaler_handler")
        self.init_handler = handlers.get("init_handler")
        self.autocast_handler = handlers.get("autocast_handler")
        self.profile_handler = handlers.get("profile_handler")
        self._project_configuration = project_config or ProjectConfiguration(
            project_dir=opts.project_dir or None, logging_dir=opts.logging_dir or None,
            automatic_checkpoint_naming=bool(opts.automatic_checkpoint_naming), total_limit=opts.total_limit or None,
            save_on_each_node=bool(opts.save_on_each_node))
        if project_config is not None and project_config.iteration:
            core.Accelerator.set_save_iteration(self, project_config.iteration)
        self._project_configuration._accelerator = self
        for tracker in custom_trackers:  # Accelerate's log_with also takes tracker instances
            self.add_tracker(tracker)

    # -- prepare ---------------------------------------------------------
    def prepare(self, *objects: Any) -> Any:
        """Prepares models, optimizers, dataloaders and schedulers (in any order; models first
        internally, as Accelerate does) and returns them."""
        order = [Model, core.Optimizer, core.DataLoader, core.Scheduler]
        for kind in order:
            for obj in objects:
                if isinstance(obj, kind):
                    self._prepare_one(obj)
        unknown = [o for o in objects if not isinstance(o, tuple(order))]
        if unknown:
            raise TypeError(f"cannot prepare {type(unknown[0]).__name__}")
        return objects[0] if len(objects) == 1 else objects

    def _prepare_one(self, obj: Any) -> None:
        if isinstance(obj, Model):
            self.prepare_model(obj)
        elif isinstance(obj, core.Optimizer):
            self.prepare_optimizer(obj)
        elif isinstance(obj, core.DataLoader):
            self.prepare_data_loader(obj)
        else:
            self.prepare_scheduler(obj)

    # One object at a time, Accelerate's names; each returns what it prepared. Placement follows
    # the accelerator: a per-call device_placement may only repeat it (models always move).
    def prepare_model(self, model: Model, device_placement: Optional[bool] = None,
                      evaluation_mode: bool = False) -> Model:
        """Accelerate's prepare_model. evaluation_mode=True prepares as for training (the model
        then evaluates the same; Accelerate skips the DDP wrapper)."""
        _refuse_unplaced("prepare_model", device_placement, "libaccel always places a prepared model on the "
                         "accelerator's device")
        core.Accelerator.prepare_model(self, model)
        self._models.append(model)
        return model

    def prepare_optimizer(self, optimizer: Any, device_placement: Optional[bool] = None) -> Any:
        """Accelerate's prepare_optimizer: its state follows its prepared model's device."""
        _refuse_unplaced("prepare_optimizer", device_placement, "an optimizer's state lives beside its prepared "
                         "model")
        core.Accelerator.prepare_optimizer(self, optimizer)
        self._optimizers.append(optimizer)
        return optimizer

    def prepare_data_loader(self, data_loader: Any, device_placement: Optional[bool] = None,
                            slice_fn_for_dispatch: Optional[Callable[..., Any]] = None) -> Any:
        """Accelerate's prepare_data_loader: shards the loader over the data-parallel processes."""
        if device_placement is not None and bool(device_placement) != self.device_placement:
            raise ValueError(f"prepare_data_loader(device_placement={device_placement!r}) differs from the "
                             f"accelerator's device_placement={self.device_placement}, which every prepared loader "
                             "follows")
        if slice_fn_for_dispatch is not None:
            raise ValueError("prepare_data_loader(slice_fn_for_dispatch=...) is not supported: dispatched batches "
                             "are sliced by rows")
        core.Accelerator.prepare_dataloader(self, data_loader)
        _track_prepared(data_loader, self._loader_refs)
        return data_loader

    def prepare_scheduler(self, scheduler: Any) -> Any:
        """Accelerate's prepare_scheduler: steps with its optimizer (skipped steps and accumulation)."""
        core.Accelerator.prepare_scheduler(self, scheduler)
        return scheduler

    def synchronize_rng_states(self, rng_types: List[str]) -> None:
        """Accelerate's synchronize_rng_states: every process takes process 0's state of the named
        generators ("torch", "cuda"; "generator" has no global state here). Collective."""
        if isinstance(rng_types, str):
            rng_types = [rng_types]
        core.Accelerator.synchronize_rng_states(self, ",".join(str(getattr(t, "value", t)) for t in rng_types))

    # -- seeding -----------------------------------------------------------
    def set_seed(self, seed: int, device_specific: bool = False, deterministic: bool = False) -> None:
        """Accelerate's set_seed: seeds LibTorch (CPU and CUDA), Python's random, numpy's
        global generator and, when the program has imported it, torch. device_specific adds
        the process index (ranks differ, reproducibly); deterministic makes LibTorch use
        deterministic algorithms from now on. Not collective."""
        index = self.process_index  # read even without device_specific: a closed accelerator refuses
        _seed_generators(seed, index if device_specific else 0, deterministic)

    # -- scopes ----------------------------------------------------------
    @contextlib.contextmanager
    def accumulate(self, model: Model):
        """Gradient accumulation: gradients sync and the optimizer steps every N-th micro-step."""
        self.accumulate_begin(model)
        try:
            yield
        finally:
            self.accumulate_end(model)

    @contextlib.contextmanager
    def maybe_context_parallel(self, buffers: Optional[List[Any]] = None,
                               buffer_seq_dims: Optional[List[int]] = None,
                               no_restore_buffers: Optional[Any] = None):
        """Accelerate's scope for context parallelism, kept so its scripts port unchanged. Here a
        prepared JSON graph model cuts the sequence itself under cp_size > 1 (docs/parallelism.md):
        it takes the whole batch, shifts the labels across the blocks' edges and returns whole
        outputs, so the buffers are left as they are and the scope only checks its arguments
        (ValueError naming a bad one)."""
        buffers = list(buffers or [])
        dims = list(buffer_seq_dims if buffer_seq_dims is not None else [1] * len(buffers))
        if len(dims) != len(buffers):
            raise ValueError(f"maybe_context_parallel: {len(buffers)} buffers but {len(dims)} buffer_seq_dims")
        for i, (buffer, dim) in enumerate(zip(buffers, dims)):
            shape = tuple(buffer.shape() if callable(getattr(buffer, "shape", None)) else np.shape(buffer))
            if isinstance(dim, bool) or not isinstance(dim, int) or not -len(shape) <= dim < len(shape):
                raise ValueError(f"maybe_context_parallel: buffer_seq_dims[{i}] = {dim!r} is not a dimension of "
                                 f"buffers[{i}], shape {shape}")
        yield

    @contextlib.contextmanager
    def no_sync(self, model: Model):
        self.no_sync_begin(model)
        try:
            yield
        finally:
            self.no_sync_end(model)

    @contextlib.contextmanager
    def autocast(self, autocast_handler: Optional[AutocastKwargs] = None, enabled: Optional[bool] = None):
        """Runs the block under the mixed precision. autocast_handler (an AutocastKwargs) or enabled
        decides whether autocast is on; neither: the AutocastKwargs given at creation, else on."""
        if isinstance(autocast_handler, bool):  # autocast(False): this binding's earlier positional `enabled`
            autocast_handler, enabled = None, autocast_handler
        if autocast_handler is not None:
            if not isinstance(autocast_handler, AutocastKwargs):
                raise TypeError(f"autocast_handler must be an AutocastKwargs, got {type(autocast_handler).__name__}")
            enabled = autocast_handler.enabled
        if enabled is None:
            self.autocast_begin_default()
        else:
            self.autocast_begin(bool(enabled))
        try:
            yield
        finally:
            self.autocast_end()

    @contextlib.contextmanager
    def no_grad(self):
        """torch.no_grad() for evaluation: no autograd graph on this thread inside the block."""
        self.no_grad_begin()
        try:
            yield
        finally:
            self.no_grad_end()

    def send_to_device(self, data: Any, non_blocking: bool = False, skip_keys: Union[str, List[str], None] = None
                       ) -> Any:
        """Accelerate's send_to_device for hand-built batches: every Tensor (or numpy array) in data,
        at any depth of lists, tuples (named ones too) and mappings, becomes a Tensor on this
        accelerator's device; containers keep their type and order, other values stay as they are.
        skip_keys: mapping keys (at any depth) whose values are left untouched. A bare value that
        is not a container (a list of numbers at the top) becomes a Tensor, as before.
        non_blocking is accepted (copies to a GPU are non-blocking from pinned memory anyway)."""
        skip = {skip_keys} if isinstance(skip_keys, str) else set(skip_keys or ())

        def move(value: Any) -> Any:
            if isinstance(value, (Tensor, np.ndarray)):
                return core.Accelerator.send_to_device(self, _as_tensor(value))
            if isinstance(value, Mapping):
                moved = {key: item if key in skip else move(item) for key, item in value.items()}
                try:
                    return type(value)(moved)
                except TypeError:  # a mapping type without a dict constructor
                    return moved
            if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
                return type(value)(*(move(item) for item in value))
            if isinstance(value, (list, tuple)):
                return type(value)(move(item) for item in value)
            return value

        if isinstance(data, (Mapping, list, tuple)) and (isinstance(data, Mapping) or any(
                isinstance(item, (Tensor, np.ndarray, Mapping, list, tuple)) for item in data)):
            return move(data)
        return core.Accelerator.send_to_device(self, _as_tensor(data))

    @contextlib.contextmanager
    def main_process_first(self):
        self.main_process_first_begin()
        try:
            yield
        finally:
            self.main_process_first_end()

    @contextlib.contextmanager
    def local_main_process_first(self):
        self.local_main_process_first_begin()
        try:
            yield
        finally:
            self.local_main_process_first_end()

    @contextlib.contextmanager
    def join_uneven_inputs(self):
        self.join_uneven_inputs_begin()
        try:
            yield
        finally:
            self.join_uneven_inputs_end()

    @contextlib.contextmanager
    def profile(self, output_trace_dir: Optional[str] = None, profile_handler: Optional[ProfileKwargs] = None):
        """Records every LibTorch operator in the block; writes output_trace_dir/trace_<rank>.json.
        The directory may come from a ProfileKwargs (given here or at creation). Yields the
        profile: call prof.step() at the end of each step under a schedule_option."""
        handler = profile_handler if profile_handler is not None else self.profile_handler
        if handler is not None:
            handler.check()
            if output_trace_dir is None:
                output_trace_dir = handler.output_trace_dir
        if output_trace_dir is None:
            raise ValueError("profile needs an output_trace_dir (an argument, or ProfileKwargs.output_trace_dir)")
        options = handler if handler is not None else ProfileKwargs()
        flags = (bool(options.record_shapes), bool(options.profile_memory), bool(options.with_flops),
                 bool(options.with_stack), bool(options.with_modules))
        if options.schedule_option is not None:
            schedule = options.schedule_option
            run = core.Profile.begin_scheduled(self, output_trace_dir, *flags, int(schedule["wait"]),
                                               int(schedule["warmup"]), int(schedule["active"]),
                                               int(schedule.get("repeat", 0)), int(schedule.get("skip_first", 0)))
        else:
            run = core.Profile.begin_with(self, output_trace_dir, *flags)
        profile = _Profile(run, os.path.join(output_trace_dir, f"trace_{self.process_index}.json"),
                           options.on_trace_ready)
        try:
            yield profile
        finally:
            run.end()
        if options.on_trace_ready is not None and options.schedule_option is None:
            options.on_trace_ready(profile)  # torch calls it once at the end without a schedule

    # -- gradients, models (Accelerate's names) ------------------------------
    @staticmethod
    def _model_of(parameters: Any, what: str) -> Model:
        # Accelerate takes model.parameters(): ours remembers its model; the Model itself works too.
        if isinstance(parameters, ModelParameters):
            return parameters.model
        if not isinstance(parameters, Model):
            raise TypeError(f"{what} takes the Model whose gradients to clip (or its parameters()), "
                            f"got {type(parameters).__name__}")
        return parameters

    def held_bytes(self, model: Model, optimizer: Optional[core.Optimizer] = None) -> Dict[str, int]:
        """Bytes this process holds for the prepared model's parameters and gradients and the
        optimizer's state, counted from the tensors' storages (what sharding saves):
        {"parameters": ..., "gradients": ..., "optimizer_state": ...}. Not collective."""
        parameters, gradients, state = super().held_bytes(model, optimizer)
        return {"parameters": parameters, "gradients": gradients, "optimizer_state": state}

    def clip_grad_norm_(self, parameters: Union[Model, ModelParameters], max_norm: float,
                        norm_type: float = 2) -> Tensor:
        """Clips the model's gradients (model.parameters(), or the model) to total norm max_norm;
        returns the norm before clipping (a scalar Tensor, as torch does). Call it where gradients
        are synced (sync_gradients)."""
        norm = core.Accelerator.clip_grad_norm(self, self._model_of(parameters, "clip_grad_norm_"), max_norm,
                                               norm_type)
        return tensor(np.float32(norm))

    def clip_grad_value_(self, parameters: Union[Model, ModelParameters], clip_value: float) -> None:
        """Clamps every gradient of the model (model.parameters(), or the model) to [-clip_value, clip_value]."""
        core.Accelerator.clip_grad_value(self, self._model_of(parameters, "clip_grad_value_"), clip_value)

    def unwrap_model(self, model: Model, keep_fp32_wrapper: bool = True) -> Model:
        """The model as the user built it: prepare() wraps nothing here, so this is model itself."""
        if not isinstance(model, Model):
            raise TypeError(f"unwrap_model takes a Model, got {type(model).__name__}")
        return model

    def verify_device_map(self, model: Model) -> bool:
        """Accelerate's verify_device_map: whether model was placed for big-model inference by a
        device map of more than one entry (dispatch_model, load_checkpoint_and_dispatch)."""
        if not isinstance(model, Model):
            raise TypeError(f"verify_device_map takes a Model, got {type(model).__name__}")
        return len(json.loads(model.hf_device_map_json())) > 1

    def get_state_dict(self, model: Model, unwrap: bool = True) -> Dict[str, np.ndarray]:
        """The model's parameters and buffers as {name: numpy array} (CPU copies), in the model's order."""
        if not isinstance(model, Model):
            raise TypeError(f"get_state_dict takes a Model, got {type(model).__name__}")
        names = list(core.Accelerator.state_dict_names(self, model))
        with core.Accelerator.state_dict_tensors(self, model) as batch:
            if batch.size() != len(names):  # the model cannot change between the calls; a bug if it did
                raise AccelError(f"state dict has {len(names)} names but {batch.size()} tensors", core.ERR_INTERNAL)
            return {name: batch.take(i).numpy() for i, name in enumerate(names)}

    def skip_first_batches(self, dataloader: Any, num_batches: int = 0) -> Any:
        """A loader over the same data that starts num_batches into this epoch (resuming mid-epoch)."""
        if not isinstance(dataloader, core.DataLoader):
            raise TypeError(f"skip_first_batches takes a DataLoader, got {type(dataloader).__name__}")
        if isinstance(dataloader, DataLoader):
            return dataloader.skip_first_batches(num_batches)
        return _skip_first_batches(dataloader, num_batches)

    # -- collectives -----------------------------------------------------
    # Each takes a Tensor or nested lists, tuples and dicts of them, and returns
    # the same structure (Accelerate's operations); collective.
    def gather(self, tensor: Any) -> Any:
        """Every process's tensors concatenated along dim 0, in rank order."""
        return _apply_nested(tensor, "gather", lambda tl: core.Accelerator.gather_list(self, tl))

    def gather_for_metrics(self, input_data: Any, use_gather_object: bool = False) -> Any:
        """gather(), minus the samples repeated to complete the last round of a prepared loader.

        Objects that are not tensors (or any input with use_gather_object=True)
        travel with gather_object: each process's list is concatenated in rank
        order, then cut the same way."""
        leaves: list = []
        try:
            _flatten(input_data, leaves, "gather_for_metrics")
            all_tensors = True
        except TypeError:
            all_tensors = False
        if all_tensors and not use_gather_object:
            return _apply_nested(input_data, "gather_for_metrics",
                                 lambda tl: core.Accelerator.gather_for_metrics_list(self, tl))
        parts = self._gather_parts(input_data)
        if all(isinstance(p, (list, tuple)) for p in parts):
            items = [item for part in parts for item in part]
        else:
            items = list(parts)
        return items[:core.Accelerator.metrics_length(self, len(items))]

    def reduce(self, tensor: Any, reduction: str = "sum", scale: float = 1.0) -> Any:
        """scale * the sum over processes ("sum", "none") or its mean ("mean")."""
        if reduction not in _REDUCTIONS:
            raise ValueError(f"reduction {reduction!r} is not one of {sorted(_REDUCTIONS)}")
        op = _REDUCTIONS[reduction]
        return _apply_nested(tensor, "reduce", lambda tl: core.Accelerator.reduce_list(self, tl, op, float(scale)))

    def broadcast(self, tensor: Any, from_process: int = 0) -> Any:
        """Process from_process's tensors on every process."""
        return _apply_nested(tensor, "broadcast", lambda tl: core.Accelerator.broadcast_list(self, tl, from_process))

    def pad_across_processes(self, tensor: Any, dim: int = 0, pad_index: float = 0, pad_first: bool = False) -> Any:
        """Pads each tensor along dim to the largest size any process has (tensors without dim unchanged)."""
        return _apply_nested(tensor, "pad_across_processes",
                             lambda tl: core.Accelerator.pad_across_processes_list(self, tl, dim, float(pad_index),
                                                                                   pad_first))

    def gather_object(self, obj: Any) -> Any:
        """Accelerate's gather_object: every process's list (or other iterable of picklable
        items) concatenated in rank order; with one process obj itself. To gather one object
        per process, pass [obj]. Collective."""
        if self.num_processes == 1:
            return obj
        parts = self._gather_parts(obj)
        for part in parts:
            if not isinstance(part, Iterable):
                raise TypeError(f"gather_object concatenates every process's list, as Accelerate does; got "
                                f"{type(part).__name__}: pass [obj] to gather one object per process")
        return [item for part in parts for item in part]

    def _gather_parts(self, obj: Any) -> list:
        """Every process's picklable obj, in rank order. Collective."""
        parts = core.Accelerator.gather_object(self, base64.b64encode(pickle.dumps(obj)).decode("ascii"))
        return [pickle.loads(base64.b64decode(p)) for p in parts]

    def broadcast_object_list(self, object_list: list, from_process: int = 0) -> list:
        """Replaces object_list's items with from_process's (picklable) ones, in place, and returns it.
        Collective; the list is unpickled on every process, so it must come from a trusted process."""
        data = base64.b64encode(pickle.dumps(list(object_list))).decode("ascii") \
            if self.process_index == from_process else ""
        received = pickle.loads(base64.b64decode(core.Accelerator.broadcast_object(self, data, from_process)))
        object_list[:] = received
        return object_list

    def _split_one(self, inputs: Any, apply_padding: bool) -> Any:
        if isinstance(inputs, Tensor):
            return _batch_tensors(core.Accelerator.split_between_processes_list(self, _tensor_list([inputs]),
                                                                                apply_padding))[0]
        if isinstance(inputs, (list, tuple)):
            start, end, padded = core.Accelerator.split_range(self, len(inputs), apply_padding)
            share = list(inputs[start:end])
            if padded > len(share):  # then inputs is not empty
                share += [inputs[-1]] * (padded - len(share))
            return share if isinstance(inputs, list) else type(inputs)(share)
        raise TypeError(f"split_between_processes: cannot split {type(inputs).__name__}; "
                        "pass a Tensor, list, tuple or dict of them")

    # -- checkpoints -----------------------------------------------------
    def save_state(self, output_dir: Optional[str] = None, safe_serialization: bool = True) -> Any:
        """Accelerate's save_state: everything prepared and registered, into output_dir (None:
        project_dir/checkpoints/checkpoint_{i} under automatic_checkpoint_naming). Collective.
        safe_serialization=False writes the models as pytorch_model.bin (torch.save's format,
        data only) instead of model.safetensors: what Accelerate 0.22's load_state reads."""
        return core.Accelerator.save_state(self, "" if output_dir is None else os.fspath(output_dir),
                                           bool(safe_serialization))

    def load_state(self, input_dir: Optional[str] = None) -> None:
        """Accelerate's load_state: restores what save_state wrote (None: the newest automatic
        checkpoint). Collective."""
        core.Accelerator.load_state(self, "" if input_dir is None else os.fspath(input_dir))

    def save_model(self, model: Model, save_directory: str, max_shard_size: Union[int, str] = "10GB",
                   safe_serialization: bool = True) -> None:
        """Accelerate's save_model: the weights as safetensors in save_directory, in shards of at
        most max_shard_size (bytes, or "10GB", "500MB", "1GiB") with an index when there are
        several. safe_serialization=False writes pytorch_model.bin (shards
        pytorch_model-0000i-of-0000N.bin, pytorch_model.bin.index.json), torch.save's format,
        data only. Collective."""
        limit = _shard_size_bytes(max_shard_size)
        core.Accelerator.save_model(self, model, os.fspath(save_directory), str(limit), bool(safe_serialization))

    def register_for_checkpointing(self, *objects: Any, allow_pickle: bool = False) -> None:
        """Objects with state_dict()/load_state_dict() saved with every save_state.

        Their state is pickled; by default it must be plain data and is loaded
        without running code. allow_pickle=True saves any picklable state, and
        loading it can run code named in the file: trusted checkpoints only."""
        for obj in objects:
            if not (hasattr(obj, "state_dict") and hasattr(obj, "load_state_dict")):
                raise TypeError(f"{type(obj).__name__} has no state_dict()/load_state_dict()")
        for obj in objects:
            core.Accelerator.register_for_checkpointing(self, _CheckpointAdapter(obj, allow_pickle).__disown__())

    def register_save_state_pre_hook(self, hook: Any) -> RemovableHandle:
        """Runs before save_state writes, on every process, as Accelerate's: hook(models, weights,
        output_dir) with the prepared models and their state dicts (get_state_dict's, numpy
        arrays; what save_state writes does not change if the hook edits them), or
        hook(output_dir) when the hook takes one argument."""
        def call(directory: str) -> None:
            if _positional_count(hook) >= 3:
                hook(list(self._models), [self.get_state_dict(m) for m in self._models], directory)
            else:
                hook(directory)
        return RemovableHandle(self, core.Accelerator.register_save_state_pre_hook(self, _HookAdapter(call).__disown__()))

    def register_load_state_pre_hook(self, hook: Any) -> RemovableHandle:
        """Runs before load_state reads, as Accelerate's: hook(models, input_dir) with the prepared
        models, or hook(input_dir) when the hook takes one argument."""
        def call(directory: str) -> None:
            if _positional_count(hook) >= 2:
                hook(list(self._models), directory)
            else:
                hook(directory)
        return RemovableHandle(self, core.Accelerator.register_load_state_pre_hook(self, _HookAdapter(call).__disown__()))

    def free_memory(self, *objects: Any) -> List[None]:
        """Accelerate's free_memory: forgets every prepared object (and returns None for each
        object passed, for `a, b = accelerator.free_memory(a, b)`)."""
        core.Accelerator.free_memory(self)
        self._models.clear()
        self._optimizers.clear()
        return [None] * len(objects)

    clear = free_memory

    def save(self, tensors: Dict[str, Any], path: str) -> None:
        """Accelerate's accelerator.save for a dict of tensors (or array-likes): a
        safetensors file, written by the main process."""
        named = core.NamedTensors()
        values = [(name, t if isinstance(t, Tensor) else tensor(t)) for name, t in tensors.items()]
        for name, value in values:
            named.add(name, value)
        core.Accelerator.save_tensors(self, named, path)

    def load_checkpoint_in_model(self, model: Model, path: str, strict: bool = False) -> Tuple[int, int]:
        """Returns (missing, unexpected) tensor counts. strict=False by default, as Accelerate's
        (which loads with strict=False); strict=True makes either an error naming them."""
        missing, unexpected = core.Accelerator.load_checkpoint_in_model(self, model, path, strict)
        return missing, unexpected

    # -- tracking --------------------------------------------------------
    def add_tracker(self, tracker: Any) -> None:
        """A custom tracker (see Tracker), started by init_trackers on the main process."""
        adapter = _TrackerAdapter(tracker)
        name = getattr(tracker, "name", type(tracker).__name__)
        core.Accelerator.add_tracker(self, adapter, name)
        adapter.__disown__()  # the accelerator owns it now
        self._trackers.setdefault(name, tracker)

    @property
    def trackers(self) -> List[Any]:
        """Accelerate's accelerator.trackers: the trackers running in this process, the built-in
        ones (BuiltinTracker) in log_with's order, then the custom ones; empty on the other
        processes and before init_trackers."""
        builtin = [self._builtin_tracker(n) for n in self._log_with_order if core.Accelerator.has_tracker(self, n)]
        return builtin + [t for n, t in self._trackers.items() if core.Accelerator.has_tracker(self, n)]

    def _builtin_tracker(self, name: str) -> BuiltinTracker:
        return self._builtin_trackers.setdefault(name, BuiltinTracker(self, name))  # the same object each time

    def get_tracker(self, name: str, unwrap: bool = False) -> Any:
        """Accelerate's get_tracker. A custom tracker is the object added (unwrap: its .tracker
        attribute when it has one); a running built-in one is a BuiltinTracker whose log()
        writes to it alone (unwrap changes nothing: there is no library object underneath).
        Where no tracker runs in this process (other processes, before init_trackers) a Tracker
        that does nothing, as Accelerate's blank tracker; with trackers running, ValueError for a
        name none of them has."""
        tracker = self._trackers.get(name)
        if tracker is not None:
            return getattr(tracker, "tracker", tracker) if unwrap else tracker
        running = [n for n in _builtin_tracker_names() if core.Accelerator.has_tracker(self, n)]
        if name in running:
            return self._builtin_tracker(name)
        if running or any(core.Accelerator.has_tracker(self, n) for n in self._trackers):
            raise ValueError(f"{name} is not an available tracker stored inside the `Accelerator`.")
        return Tracker()

    def init_trackers(self, project_name: str, config: Optional[Dict[str, Any]] = None,
                      init_kwargs: Optional[Dict[str, Dict[str, Any]]] = None) -> None:
        """Accelerate's init_trackers: init_kwargs maps a built-in tracker's name to its options,
        e.g. {"wandb": {"name": "run-1", "tags": ["baseline"]}} (docs/tracking.md); an option
        the tracker does not take raises AccelError naming it."""
        core.Accelerator.init_trackers(self, project_name, json.dumps(config) if config else "",
                                       json.dumps(init_kwargs) if init_kwargs else "")

    def log(self, values: Dict[str, Any], step: Optional[int] = None,
            log_kwargs: Optional[Dict[str, Dict[str, Any]]] = None) -> None:
        """Accelerate's log: numbers to every tracker as scalars, strings as text values (as
        Accelerate's TensorBoard tracker logs them). log_kwargs (options for a tracker's Python
        library, such as wandb's commit) are refused by name: libaccel runs no such library."""
        if log_kwargs:
            raise TypeError(f"log: log_kwargs {sorted(log_kwargs)} are options of the trackers' Python "
                            "libraries, which libaccel does not run")
        step = -1 if step is None else step
        names, numbers, texts = _split_values(values)
        core.Accelerator.log(self, names, numbers, step)
        for tag, text in texts.items():
            core.Accelerator.log_text(self, tag, text, step)

    def log_text(self, tag: str, text: str, step: Optional[int] = None) -> None:
        core.Accelerator.log_text(self, tag, text, -1 if step is None else step)


class _Profile:
    """What accelerator.profile() yields (torch.profiler.profile's part of it): step() at the
    end of each training step, step_num, and the trace file (trace_path, export_chrome_trace)."""

    def __init__(self, run: Any, trace_path: str, on_trace_ready: Optional[Callable[[Any], None]]) -> None:
        self._run, self.trace_path, self._on_trace_ready, self.step_num = run, trace_path, on_trace_ready, 0

    def step(self) -> None:
        self.step_num += 1
        if self._run.step() and self._on_trace_ready is not None:
            self._on_trace_ready(self)

    def export_chrome_trace(self, path: str) -> None:
        """Copies the last written trace (the last finished cycle under a schedule) to path,
        gzip-compressed when path ends in ".gz" (as torch's export_chrome_trace). The copy is
        written beside path and renamed into place, so a reader watching the directory
        (TensorBoard's profile plugin) never sees half a file, and a failed copy leaves none."""
        path = os.fspath(path)
        partial = path + ".partial"
        try:
            with open(self.trace_path, "rb") as source, \
                    (gzip.open(partial, "wb") if path.endswith(".gz") else open(partial, "wb")) as target:
                shutil.copyfileobj(source, target)
            os.replace(partial, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.remove(partial)
            raise


_closeable(Accelerator, core.close_accelerator)
