"""libaccel for Python: Hugging Face Accelerate's training model over LibTorch.

    import accel
    acc = accel.Accelerator(gradient_accumulation_steps=2)
    model = accel.Model.from_json('[{"type": "Linear", "in_features": 784, "out_features": 10}]')
    opt = accel.Optimizer(model, "adamw", lr=1e-3)
    loader = accel.DataLoader(my_dataset, batch_size=64, shuffle=True)   # any __len__/__getitem__ object
    acc.prepare(model, opt, loader)
    for x, y in loader:
        with acc.accumulate(model):
            loss = model(x).loss("cross_entropy", y)
            acc.backward(loss)
            opt.step()
            opt.zero_grad()

Every failing call raises AccelError (a RuntimeError) with libaccel's message.
Objects free their native memory when garbage-collected, or at once with
close() / a ``with`` block; a closed object raises ValueError when used.
"""
from __future__ import annotations

from . import _libtorch  # noqa: F401  (the wheel loads torch's LibTorch first)
from . import core
from .core import (AccelError, AcceleratorOptions, Batch, DataLoaderOptions, OptimizerOptions,
                   SchedulerOptions, abi_version, has_feature, version)
# _shard_size_bytes stays reachable as accel._shard_size_bytes: the tests compare it with Accelerate's.
from ._state import AcceleratorState, GradientState, _shard_size_bytes
from . import big_modeling
from .big_modeling import (check_device_map, compute_module_sizes, cpu_offload, disk_offload, dispatch_model,
                           get_balanced_memory, get_max_memory, infer_auto_device_map, init_empty_weights, init_on_device,
                           load_checkpoint_and_dispatch,
                           load_checkpoint_in_model, verify_device_map)
from .tensors import Tensor, tensor
from .models import Model, ModelOutput
from .optimizers import Optimizer, Scheduler
from .data import DataCollatorWithPadding, DataLoader, Dataset, Sequences
from .tracking import BuiltinTracker, GeneralTracker, LoggerType, ProgressBar, Tracker, get_logger
from .checkpointing import RemovableHandle
from .accelerator import Accelerator, DistributedType, FullyShardedDataParallelPlugin, GradientAccumulationPlugin
from .kwargs_handlers import (AutocastKwargs, DataLoaderConfiguration, DDPCommunicationHookType,
                              DistributedDataParallelKwargs, GradScalerKwargs, InitProcessGroupKwargs, KwargsHandler,
                              ProfileKwargs, ProjectConfiguration)
from .memory import find_executable_batch_size, should_reduce_batch_size
from .launchers import debug_launcher, notebook_launcher
from . import utils
from .parallelism import ParallelismConfig, TorchContextParallelConfig
from .partial_state import PartialState, set_seed
from .local_sgd import LocalSGD

__all__ = [
    "AccelError", "Accelerator", "AcceleratorState", "GradientState", "DistributedType", "Model", "Optimizer",
    "Scheduler", "Dataset", "DataLoader", "Tensor", "Tracker", "ProgressBar", "tensor", "get_logger", "version",
    "abi_version", "has_feature", "__version__", "Sequences", "DataCollatorWithPadding", "ModelOutput",
    "FullyShardedDataParallelPlugin", "init_empty_weights", "compute_module_sizes", "infer_auto_device_map", "check_device_map",
    "verify_device_map", "load_checkpoint_and_dispatch", "load_checkpoint_in_model", "get_max_memory",
    "get_balanced_memory", "disk_offload", "cpu_offload", "dispatch_model", "init_on_device",
    "GradientAccumulationPlugin", "ProjectConfiguration", "ParallelismConfig", "TorchContextParallelConfig", "KwargsHandler",
    "DistributedDataParallelKwargs", "InitProcessGroupKwargs", "GradScalerKwargs", "AutocastKwargs", "ProfileKwargs",
    "DDPCommunicationHookType", "DataLoaderConfiguration", "utils", "find_executable_batch_size",
    "should_reduce_batch_size", "notebook_launcher", "debug_launcher", "PartialState", "LocalSGD",
    "GeneralTracker", "BuiltinTracker", "LoggerType", "set_seed",
]

__version__ = version()
