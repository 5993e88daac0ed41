"""Accelerate's big-model tools (accelerate.big_modeling and accelerate.utils):
build a model without memory, compute where its modules go, load a checkpoint
straight into that placement with CPU and disk offload.

    with accel.init_empty_weights():
        model = accel.Model.from_json(spec)          # meta tensors: no memory
    device_map = accel.infer_auto_device_map(model, max_memory={"cpu": "200MB"},
                                             no_split_module_classes=["TransformerEncoderLayer"])
    accel.load_checkpoint_and_dispatch(model, "ckpt", device_map=device_map, offload_folder="offload")

Device maps are plain dicts of module name to "cpu", "disk" or "cuda:N"; sizes are
dicts of module name to bytes. Only JSON-spec models are supported (TorchScript
raises AccelError UNSUPPORTED). See docs/big-models.md.
"""
from __future__ import annotations

import contextlib
import json
import os
import threading
from typing import Any, Dict, Iterator, Mapping, Optional, Sequence, Union

from . import core

_empty = threading.local()


@contextlib.contextmanager
def init_empty_weights(include_buffers: bool = True) -> Iterator[None]:
    """Within the block, Model.from_json builds models whose parameters and buffers live on the
    meta device (shapes only, no memory), as Accelerate's init_empty_weights does for torch
    modules. include_buffers=False is not supported: buffers are always empty too."""
    if not include_buffers:
        raise ValueError("init_empty_weights(include_buffers=False) is not supported: libaccel's empty "
                         "models keep buffers on the meta device too")
    previous = getattr(_empty, "active", False)
    _empty.active = True
    try:
        yield
    finally:
        _empty.active = previous


@contextlib.contextmanager
def init_on_device(device: Any, include_buffers: Optional[bool] = None) -> Iterator[None]:
    """Accelerate's init_on_device for the devices libaccel builds on: "meta" is
    init_empty_weights() (parameters and buffers on the meta device), "cpu" builds as usual.
    Models reach a GPU through prepare() or load_checkpoint_and_dispatch, so another device
    raises ValueError naming it. include_buffers=False with "meta" raises as
    init_empty_weights does."""
    name = str(getattr(device, "type", device)) if not isinstance(device, str) else device
    if name == "meta":
        with init_empty_weights(include_buffers=True if include_buffers is None else include_buffers):
            yield
    elif name == "cpu":
        yield
    else:
        raise ValueError(f"init_on_device({device!r}): libaccel builds models on 'meta' or 'cpu'; a model reaches "
                         "a GPU through accelerator.prepare() or load_checkpoint_and_dispatch(device_map=...)")


def _building_empty() -> bool:
    return getattr(_empty, "active", False)


def _dtype_name(dtype: Any) -> str:
    """None, "float16", "torch.float16", numpy dtypes or core.DType names to the C name ("" = none)."""
    if dtype is None:
        return ""
    name = getattr(dtype, "name", None) if not isinstance(dtype, str) else dtype
    if name is None:
        name = str(dtype)
    name = str(name).replace("torch.", "")
    return {"half": "float16", "float": "float32", "double": "float64", "bf16": "bfloat16", "fp16": "float16",
            "fp32": "float32"}.get(name, name)


def compute_module_sizes(model: core.Model, dtype: Any = None) -> Dict[str, int]:
    """Bytes of every module's parameters and buffers ("" is the whole model), floating tensors
    as if cast to dtype (never larger than their own dtype; integer ones keep theirs)."""
    return json.loads(model.module_sizes_json(_dtype_name(dtype)))


def _size_value(value: Union[int, str]) -> Union[int, str]:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"max_memory values are byte counts or sizes such as '50MB', got {value!r}")
    return value


def get_max_memory() -> Dict[Union[int, str], int]:
    """Accelerate's get_max_memory(): the bytes each device can take now, GPUs by index (their
    free memory) then "cpu" (the RAM the system has available)."""
    budgets = json.loads(core.available_memory_json())
    return {(int(k[5:]) if k.startswith("cuda:") else k): v for k, v in budgets.items()}


def _max_memory_json(max_memory: Optional[Mapping[Union[int, str], Union[int, str]]]) -> str:
    return "" if max_memory is None else json.dumps(
        {str(k) if not isinstance(k, int) else f"cuda:{k}": _size_value(v) for k, v in max_memory.items()})


def get_balanced_memory(model: core.Model, max_memory: Optional[Mapping[Union[int, str], Union[int, str]]] = None,
                        no_split_module_classes: Optional[Sequence[str]] = None, dtype: Any = None,
                        low_zero: bool = False) -> Dict[Union[int, str], int]:
    """Accelerate's get_balanced_memory: max_memory with every GPU's budget but the last lowered
    to an even share of the model plus a margin, so that infer_auto_device_map spreads the model
    over the GPUs; low_zero leaves GPU 0 only what the others cannot hold. Without a GPU the
    budgets come back unchanged. None: get_max_memory() (a lone GPU then keeps 10% free).
    GPUs are int keys, as Accelerate returns them."""
    budgets = json.loads(model.balanced_memory_json(_max_memory_json(max_memory), list(no_split_module_classes or []),
                                                    _dtype_name(dtype), bool(low_zero)))
    return {(int(k[5:]) if k.startswith("cuda:") else k): v for k, v in budgets.items()}


def infer_auto_device_map(model: core.Model, max_memory: Optional[Mapping[str, Union[int, str]]] = None,
                          no_split_module_classes: Optional[Sequence[str]] = None,
                          dtype: Any = None) -> Dict[str, str]:
    """Accelerate 0.22's infer_auto_device_map: modules placed largest-first over the GPUs in
    order, then "cpu", then "disk", never splitting a module whose class is in
    no_split_module_classes. max_memory: {"cpu": "200MB", 0: "1GiB", ...} (ints are GPU
    indices); None: get_max_memory() (every GPU's free memory, then the RAM available)."""
    return json.loads(model.infer_auto_device_map_json(_max_memory_json(max_memory), list(no_split_module_classes or []),
                                                       _dtype_name(dtype)))


def _map_json(device_map: Mapping[str, Union[str, int]]) -> str:
    if not isinstance(device_map, Mapping):
        raise TypeError(f"device_map must be a dict of module name to device, got {type(device_map).__name__}")
    return json.dumps({str(k): (f"cuda:{v}" if isinstance(v, int) and not isinstance(v, bool) else v)
                       for k, v in device_map.items()})


def check_device_map(model: core.Model, device_map: Mapping[str, Union[str, int]]) -> None:
    """Raises AccelError naming the first key that names no module, lies inside another key,
    names an unknown device, or the first tensor the map leaves out (Accelerate's
    check_device_map, stricter about devices)."""
    model.verify_device_map_json(_map_json(device_map))


verify_device_map = check_device_map


def load_checkpoint_and_dispatch(model: core.Model, checkpoint: Union[str, os.PathLike],
                                 device_map: Union[None, str, Mapping[str, Union[str, int]]] = None,
                                 max_memory: Optional[Mapping[str, Union[int, str]]] = None,
                                 no_split_module_classes: Optional[Sequence[str]] = None,
                                 offload_folder: Optional[Union[str, os.PathLike]] = None,
                                 dtype: Any = None) -> core.Model:
    """Loads checkpoint (a .safetensors file, a sharded index or a directory) into model,
    memory-mapped and tensor by tensor, each module where device_map puts it: "cpu" in RAM,
    "cuda:N" on that GPU, "disk" read from offload_folder (or the checkpoint) just before its
    node runs and released after. device_map="auto", "balanced" or "balanced_low_0" computes the
    map with infer_auto_device_map over get_balanced_memory(max_memory, no_split_module_classes)
    first, "sequential" over max_memory as given (filling the GPUs in order), as Accelerate does;
    None puts everything on the CPU. Everything is checked before anything is loaded. Returns model."""
    if isinstance(device_map, str):
        strategies = ("auto", "balanced", "balanced_low_0", "sequential")
        if device_map not in strategies:
            raise ValueError(f"device_map must be a dict or one of {', '.join(map(repr, strategies))}, "
                             f"got {device_map!r}")
        if max_memory is None and not no_split_module_classes:
            # The library's own: every GPU's free memory, then the RAM available.
            text = json.dumps(device_map)
        else:
            if device_map != "sequential":
                max_memory = get_balanced_memory(model, max_memory, no_split_module_classes, dtype,
                                                 low_zero=device_map == "balanced_low_0")
            text = _map_json(infer_auto_device_map(model, max_memory, no_split_module_classes, dtype))
    else:
        text = "" if device_map is None else _map_json(device_map)
    model.load_checkpoint_and_dispatch_json(os.fspath(checkpoint), text,
                                            "" if offload_folder is None else os.fspath(offload_folder),
                                            _dtype_name(dtype))
    return model


def dispatch_model(model: core.Model, device_map: Mapping[str, Union[str, int]], main_device: Any = None, state_dict: Any = None,
                   offload_dir: Optional[Union[str, os.PathLike]] = None, offload_index: Any = None,
                   offload_buffers: bool = False, skip_keys: Any = None, preload_module_classes: Any = None,
                   force_hooks: bool = False) -> core.Model:
    """Accelerate's dispatch_model: the loaded model's tensors go where device_map (a dict of
    module name to "cpu", "disk", "cuda:N" or a GPU index) puts them, and each node of the JSON
    graph runs where its weights are, its inputs moved there and the outputs back to the inputs'
    device. "disk" needs offload_dir: the weights are written to offload_dir/model.safetensors and
    read back around each disk node's forward, on the map's first GPU (else the CPU). Nodes are
    brought in whole, so skip_keys, preload_module_classes and force_hooks change nothing; buffers
    follow the map, whatever offload_buffers says. main_device other than the map's first GPU,
    state_dict and offload_index are not supported (ValueError). Returns model."""
    if state_dict is not None or offload_index is not None:
        raise ValueError("dispatch_model: state_dict and offload_index are not supported; the weights are the "
                         "model's own (offload_dir receives them)")
    text = _map_json(device_map)
    first_gpu = next((d for d in json.loads(text).values() if str(d).startswith("cuda:")), "cpu")
    main = f"cuda:{main_device}" if isinstance(main_device, int) and not isinstance(main_device, bool) else main_device
    if main is not None and str(main) != first_gpu:
        raise ValueError(f"dispatch_model: main_device={main_device!r}; disk nodes run on the map's first GPU "
                         f"({first_gpu})")
    model.dispatch_model_json(text, "" if offload_dir is None else os.fspath(offload_dir))
    return model


def disk_offload(model: core.Model, offload_dir: Union[str, os.PathLike], execution_device: Any = None,
                 offload_buffers: bool = False) -> core.Model:
    """Accelerate's disk_offload: writes the model's weights to offload_dir (model.safetensors and
    offload_index.json) and moves every parameter and buffer to the meta device; each node reads
    its weights back just before it runs and releases them after. The model must be a JSON graph,
    or a TorchScript model (a transformers export) that has not run a forward yet, whose submodules
    holding tensors bring them in around each call.
    Each node is brought in and runs on execution_device ("cpu", "cuda:N", an int; None: the CPU;
    a GPU needs a JSON graph), its outputs returned to the inputs' device. Buffers are offloaded
    too, whatever offload_buffers says. Returns model."""
    device = "" if execution_device is None else str(execution_device)
    model.disk_offload(os.fspath(offload_dir), device)
    return model


def cpu_offload(model: core.Model, execution_device: Any = None, offload_buffers: bool = False,
                state_dict: Any = None, preload_module_classes: Any = None) -> core.Model:
    """Accelerate's cpu_offload: the model's parameters (and buffers with offload_buffers) move to
    host memory, pinned when execution_device is a GPU; each node's are copied to execution_device
    ("cpu", "cuda:N", an int or a torch-like device; None: the device of the first parameter) just
    before it runs and dropped there after, and outputs come back to the inputs' device. Buffers
    not offloaded move to execution_device. For inference; the model must be a JSON graph, whose
    top-level nodes are brought in whole (so every class is preloaded, whatever
    preload_module_classes says). state_dict (weights other than the model's own) is not supported:
    load them first (load_checkpoint_in_model). Returns model."""
    if state_dict is not None:
        raise ValueError("cpu_offload: state_dict is not supported; load the weights into the model first "
                         "(load_checkpoint_in_model), then offload it")
    device = "" if execution_device is None else str(execution_device)
    model.cpu_offload(device, bool(offload_buffers))
    return model


def load_checkpoint_in_model(model: core.Model, checkpoint: Union[str, os.PathLike], dtype: Any = None) -> None:
    """Fills every parameter and buffer (empty or not) from checkpoint on the CPU; on error the
    model is unchanged."""
    model.materialize(os.fspath(checkpoint), _dtype_name(dtype))
