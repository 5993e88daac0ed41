"""accel.utils: the names Accelerate's scripts import from accelerate.utils, so that porting one is
a change of imports (``from accelerate.utils import X`` → ``from accel.utils import X``)."""
from __future__ import annotations

from .big_modeling import (check_device_map, compute_module_sizes, get_balanced_memory, get_max_memory,
                           infer_auto_device_map, load_checkpoint_in_model)
from .accelerator import DistributedType, FullyShardedDataParallelPlugin, GradientAccumulationPlugin
from .kwargs_handlers import (AutocastKwargs, DataLoaderConfiguration, DDPCommunicationHookType,
                              DistributedDataParallelKwargs, GradScalerKwargs, InitProcessGroupKwargs, KwargsHandler,
                              ProfileKwargs, ProjectConfiguration)
from .launchers import debug_launcher, notebook_launcher
from .memory import find_executable_batch_size, should_reduce_batch_size
from .parallelism import ParallelismConfig, TorchContextParallelConfig
from .partial_state import set_seed
from .tracking import LoggerType

__all__ = ["AutocastKwargs", "DataLoaderConfiguration", "DDPCommunicationHookType", "DistributedDataParallelKwargs",
           "DistributedType", "FullyShardedDataParallelPlugin", "GradientAccumulationPlugin", "GradScalerKwargs",
           "InitProcessGroupKwargs", "KwargsHandler", "LoggerType", "ParallelismConfig", "ProfileKwargs", "ProjectConfiguration",
           "TorchContextParallelConfig", "find_executable_batch_size", "should_reduce_batch_size", "notebook_launcher", "debug_launcher",
           "check_device_map", "compute_module_sizes", "get_balanced_memory", "get_max_memory", "infer_auto_device_map",
           "load_checkpoint_in_model", "set_seed"]
