"""The names of the package: accel/__init__.py re-exports what its modules define, so a name
lost in a move between modules fails here rather than in a user's `import`."""
import importlib

import accel

MODULES = ["tensors", "models", "optimizers", "data", "tracking", "checkpointing", "collectives",
           "accelerator", "big_modeling", "parallelism", "_state", "_helpers", "kwargs_handlers", "utils", "memory", "launchers"]

# What `accel.X` reached before the package was split into modules, as public API.
PUBLIC = {
    "AccelError", "Accelerator", "AcceleratorState", "GradientState", "DistributedType", "Model", "Optimizer",
    "Scheduler", "Dataset", "DataLoader", "Tensor", "Tracker", "ProgressBar", "PartialState", "LocalSGD", "tensor", "get_logger", "version",
    "abi_version", "has_feature", "__version__", "Sequences", "DataCollatorWithPadding", "ModelOutput",
    "FullyShardedDataParallelPlugin", "init_empty_weights", "compute_module_sizes", "infer_auto_device_map",
    "check_device_map", "verify_device_map", "load_checkpoint_and_dispatch", "load_checkpoint_in_model",
    "get_max_memory", "GradientAccumulationPlugin", "ProjectConfiguration", "ParallelismConfig",
    "TorchContextParallelConfig",
    # Accelerate's configuration objects (docs/configuration-objects.md), and accel.utils for
    # scripts that import them from accelerate.utils.
    "KwargsHandler", "DistributedDataParallelKwargs", "InitProcessGroupKwargs", "GradScalerKwargs",
    "AutocastKwargs", "ProfileKwargs", "DDPCommunicationHookType", "DataLoaderConfiguration", "utils",
    "find_executable_batch_size", "should_reduce_batch_size", "notebook_launcher", "debug_launcher",
    "get_balanced_memory", "disk_offload", "cpu_offload", "dispatch_model", "init_on_device",
    # Accelerate's tracker names for log_with (accelerate.tracking, accelerate.utils).
    "GeneralTracker", "BuiltinTracker", "LoggerType",
    # accelerate.utils.set_seed, without an Accelerator.
    "set_seed",
}
# Reachable as accel.X without being in __all__: SWIG's option structs and Batch, the raw SWIG
# module, the big-modeling module, and the private helper the tests compare with Accelerate's.
ALSO_REACHABLE = {"core", "big_modeling", "_libtorch", "AcceleratorOptions", "DataLoaderOptions", "OptimizerOptions",
                  "SchedulerOptions", "Batch", "RemovableHandle", "_shard_size_bytes"}


def test_all_names_every_public_name_and_each_resolves():
    assert set(accel.__all__) == PUBLIC
    assert len(accel.__all__) == len(PUBLIC)  # no duplicates
    for name in accel.__all__:
        assert getattr(accel, name) is not None, name


def test_names_outside_all_stay_reachable():
    for name in ALSO_REACHABLE:
        assert hasattr(accel, name), name


def test_each_modules_all_is_re_exported_as_the_same_object():
    for module_name in MODULES:
        module = importlib.import_module(f"accel.{module_name}")
        for name in getattr(module, "__all__", []):
            assert name in PUBLIC | ALSO_REACHABLE, f"accel.{module_name}.{name} is not re-exported"
            assert getattr(accel, name) is getattr(module, name), f"accel.{name} is not accel.{module_name}.{name}"


def test_star_import_gives_all():
    namespace = {}
    exec("from accel import *", namespace)
    assert PUBLIC <= set(namespace)


def test_methods_added_to_swig_classes_are_there_after_import_accel():
    core = accel.core
    for cls in (core.Tensor, core.Batch, core.Model, core.Dataset, core.Sequences, core.DataLoader,
                core.ProgressBar, accel.Optimizer, accel.Scheduler, accel.Accelerator):
        assert callable(getattr(cls, "close", None)) and hasattr(cls, "__enter__"), cls.__name__
    assert core.Tensor.numpy is accel.tensors._tensor_numpy
    assert core.DataLoader.__iter__ is accel.DataLoader.__iter__
    assert core.Model.__call__ is accel.models._model_call
    assert core.Sequences.from_lists is accel.data._sequences_from_lists
