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

import base64
import contextlib
import enum
import functools
import json
import numbers
import os
import pickle
import random
import sys
from collections.abc import Mapping
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import core
from .core import (AccelError, AcceleratorOptions, Batch, DataLoaderOptions, OptimizerOptions,
                   SchedulerOptions, abi_version, has_feature, version)
from ._state import AcceleratorState, GradientState, _shard_size_bytes
from . import big_modeling
from .big_modeling import (check_device_map, compute_module_sizes, get_max_memory, infer_auto_device_map,
                           init_empty_weights, load_checkpoint_and_dispatch, load_checkpoint_in_model,
                           verify_device_map)

__all__ = [
    "AccelError", "Accelerator", "AcceleratorState", "GradientState", "DistributedType", "Model", "Optimizer",
    "Scheduler", "Dataset", "DataLoader", "Tensor", "Tracker", "ProgressBar", "tensor", "get_logger", "version",
    "abi_version", "has_feature", "__version__", "Sequences", "DataCollatorWithPadding", "ModelOutput",
    "FullyShardedDataParallelPlugin", "init_empty_weights", "compute_module_sizes", "infer_auto_device_map", "check_device_map",
    "verify_device_map", "load_checkpoint_and_dispatch", "load_checkpoint_in_model", "get_max_memory",
]

__version__ = version()

# ---------------------------------------------------------------- dtypes ----

_NUMPY_TO_DTYPE = {
    np.dtype(np.float32): core.FLOAT32, np.dtype(np.float64): core.FLOAT64,
    np.dtype(np.int32): core.INT32, np.dtype(np.int64): core.INT64,
    np.dtype(np.uint8): core.UINT8, np.dtype(np.int8): core.INT8,
    np.dtype(np.int16): core.INT16, np.dtype(np.bool_): core.BOOL,
    np.dtype(np.float16): core.FLOAT16,
}
_DTYPE_TO_NUMPY = {v: k for k, v in _NUMPY_TO_DTYPE.items()}


def _to_array(value: Any) -> np.ndarray:
    """An ndarray of value; Python floats become float32 and ints int64, as in torch.tensor."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, Tensor):
        return value.numpy()
    array = np.asarray(value)
    if array.dtype == np.float64 and not isinstance(value, np.generic):
        array = array.astype(np.float32)
    return array


# ---------------------------------------------------------------- Tensor ----

Tensor = core.Tensor


def tensor(data: Any, dtype: Any = None) -> Tensor:
    """A CPU tensor copied from an array-like (numpy array, list, scalar)."""
    array = _to_array(data) if dtype is None else np.asarray(data, dtype=dtype)
    if array.dtype not in _NUMPY_TO_DTYPE:
        raise TypeError(f"unsupported dtype {array.dtype}")
    array = np.ascontiguousarray(array)
    return Tensor.from_buffer(array, _NUMPY_TO_DTYPE[array.dtype], list(array.shape))


def _tensor_numpy(self: Tensor) -> np.ndarray:
    """A numpy copy of the tensor (from any device)."""
    dtype = self.dtype()
    if dtype not in _DTYPE_TO_NUMPY:
        raise TypeError(f"no numpy dtype for accel dtype {dtype}")
    out = np.empty(tuple(self.shape()), dtype=_DTYPE_TO_NUMPY[dtype])
    self.copy_to(out)
    return out


_LOSSES = {"cross_entropy": core.LOSS_CROSS_ENTROPY, "mse": core.LOSS_MSE, "nll": core.LOSS_NLL,
           "bce_with_logits": core.LOSS_BCE_WITH_LOGITS, "causal_lm": core.LOSS_CAUSAL_LM}
_core_loss = Tensor.loss


def _tensor_loss(self: Tensor, kind: Any, target: Tensor, ignore_index: int = -100,
                 label_smoothing: float = 0.0) -> Tensor:
    """The mean loss of these predictions against target: "cross_entropy", "mse", "nll", "bce_with_logits",
    or "causal_lm" (Hugging Face's shifted LM loss: logits [N, L, V], labels [N, L]). ignore_index and
    label_smoothing are torch.nn.CrossEntropyLoss's."""
    if isinstance(kind, str):
        if kind not in _LOSSES:
            raise ValueError(f"unknown loss {kind!r}; expected one of {sorted(_LOSSES)}")
        kind = _LOSSES[kind]
    if ignore_index == -100 and label_smoothing == 0.0:
        return _core_loss(self, kind, target)
    return self.loss_ext(kind, target, ignore_index, label_smoothing)


def _as_tensor(value: Any) -> Tensor:
    return value if isinstance(value, Tensor) else tensor(value)


_core_topk = Tensor.topk
_core_mean = Tensor.mean
_core_reshape = Tensor.reshape


def _tensor_topk(self: Tensor, k: int, dim: int = -1) -> Tuple[Tensor, Tensor]:
    """The k largest entries along dim, largest first: (values, indices), as torch.topk."""
    both = _core_topk(self, k, dim)
    return both.get("values"), both.get("indices")


Tensor.topk = _tensor_topk
Tensor.mean = lambda self, dim=None: _core_mean(self) if dim is None else self.mean_dim(dim)
Tensor.mean.__doc__ = "Mean of all elements, or along dim; integers and bools average as float32."
Tensor.reshape = lambda self, *shape: _core_reshape(
    self, list(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else list(shape))
for _name, _op in (("eq", core.COMPARE_EQ), ("ne", core.COMPARE_NE), ("lt", core.COMPARE_LT),
                   ("le", core.COMPARE_LE), ("gt", core.COMPARE_GT), ("ge", core.COMPARE_GE)):
    # a.lt(b) with b a Tensor, an array or a number (broadcast), as torch.lt.
    setattr(Tensor, _name, (lambda op: lambda self, other: self.compare(_as_tensor(other), op))(_op))


Tensor.numpy = _tensor_numpy
Tensor.__array__ = lambda self, dtype=None: _tensor_numpy(self) if dtype is None else _tensor_numpy(self).astype(dtype)
Tensor.tolist = lambda self: _tensor_numpy(self).tolist()
Tensor.from_numpy = staticmethod(tensor)
Tensor.loss = _tensor_loss
Tensor.__repr__ = lambda self: f"accel.Tensor(shape={tuple(self.shape())}, dtype={_DTYPE_TO_NUMPY.get(self.dtype())})"
Tensor.__len__ = lambda self: self.shape()[0]
Tensor.__float__ = lambda self: float(self.item())


# ------------------------------------------------------- closing helpers ----

def _closeable(cls, close_function) -> None:
    cls.close = lambda self: close_function(self)
    cls.__enter__ = lambda self: self
    cls.__exit__ = lambda self, *exc: close_function(self)


_closeable(Tensor, core.close_tensor)
_closeable(Batch, core.close_batch)


# ----------------------------------------------------------------- Model ----

Model = core.Model
_closeable(Model, core.close_model)
Model.eval = lambda self: self.train(False)


class ModelOutput(Mapping):
    """A model's named outputs, like transformers' ModelOutput: out.loss, out["logits"],
    out[0] (by position), names in the model's order; None outputs are left out."""

    def __init__(self, items: Iterable[Tuple[str, Tensor]]) -> None:
        object.__setattr__(self, "_items", dict(items))

    def __getitem__(self, key: Any) -> Tensor:
        if isinstance(key, int):
            return list(self._items.values())[key]
        if key not in self._items:
            raise KeyError(f"no output {key!r}; the model returned {list(self._items)}")
        return self._items[key]

    def __getattr__(self, name: str) -> Tensor:
        items = object.__getattribute__(self, "_items")
        if name not in items:
            raise AttributeError(f"no output {name!r}; the model returned {list(items)}")
        return items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def to_tuple(self) -> Tuple[Tensor, ...]:
        return tuple(self._items.values())

    def __repr__(self) -> str:
        return f"ModelOutput({', '.join(self._items)})"


def _tensor_map(tensors: Dict[str, Any]) -> core.TensorMap:
    out = core.TensorMap()
    for name, value in tensors.items():
        out.set(name, value if isinstance(value, Tensor) else tensor(value))
    return out


def _map_items(tensors: core.TensorMap) -> List[Tuple[str, Tensor]]:
    names = [tensors.name_at(i) for i in range(tensors.count())]
    return [(name, tensors.get(name)) for name in names]


_core_forward_named = Model.forward_named
_core_named_parameters = Model.named_parameters
_core_named_buffers = Model.named_buffers


def _model_call(self: Model, *args: Any, **inputs: Any) -> Any:
    """model(x) -> Tensor (one tensor in and out), or model(input_ids=..., attention_mask=...,
    labels=...) -> ModelOutput, inputs bound by name to a TorchScript forward's arguments."""
    if inputs and args:
        raise TypeError("call a model with one tensor or with named tensors, not both")
    if inputs:
        return self.forward_named(inputs)
    if len(args) != 1:
        raise TypeError(f"a model takes one tensor or named tensors, got {len(args)} positional arguments")
    return self.forward(args[0])


Model.__call__ = _model_call
Model.forward_named = lambda self, inputs: ModelOutput(_map_items(_core_forward_named(self, _tensor_map(inputs))))
Model.forward_named.__doc__ = "Named inputs (a dict of tensors or arrays) to a ModelOutput."
# Each tensor once (tied weights under their first name); the tensors are the
# parameters themselves, as torch's named_parameters() yields them.
Model.named_parameters = lambda self: iter(_map_items(_core_named_parameters(self)))
Model.named_buffers = lambda self: iter(_map_items(_core_named_buffers(self)))
_core_load_state_dict = Model.load_state_dict


def _load_state_dict(self: Model, state_dict: Mapping[str, Any], strict: bool = True) -> None:
    """torch's model.load_state_dict: copies each array or Tensor into the parameter or buffer of
    that name (the names get_state_dict returns). strict: missing or unexpected names raise; all is
    checked before anything is copied. Unlike torch it returns None (strict=False skips silently)."""
    _core_load_state_dict(self, _tensor_map(dict(state_dict)), strict)


Model.load_state_dict = _load_state_dict
_core_from_json = Model.from_json
# Inside `with accel.init_empty_weights():` a JSON model is built on the meta device.
Model.from_json = staticmethod(
    lambda spec: Model.from_json_empty(spec) if big_modeling._building_empty() else _core_from_json(spec))
Model.module_sizes = lambda self, dtype=None: big_modeling.compute_module_sizes(self, dtype)
_core_from_torchscript = Model.from_torchscript
Model.from_torchscript = staticmethod(
    lambda path, output_names=None: _core_from_torchscript(path) if output_names is None
    else Model.from_torchscript_outputs(path, list(output_names)))


# ------------------------------------------------------------- Optimizer ----

_OPTIMIZERS = {"sgd": core.OPTIM_SGD, "adam": core.OPTIM_ADAM, "adamw": core.OPTIM_ADAMW,
               "rmsprop": core.OPTIM_RMSPROP, "adagrad": core.OPTIM_ADAGRAD}


def _set_fields(options: Any, values: Dict[str, Any], what: str) -> None:
    for key, value in values.items():
        if key == "betas":
            options.beta1, options.beta2 = value
            continue
        if key.startswith("_") or not hasattr(options, key):
            raise TypeError(f"{what} has no option {key!r}")
        setattr(options, key, int(value) if isinstance(value, bool) else value)


class Optimizer(core.Optimizer):
    """An optimizer over a model's parameters: Optimizer(model, "adamw", lr=1e-3, weight_decay=0.01).

    Options use PyTorch's names (lr, weight_decay, momentum, betas, eps, ...)."""

    def __init__(self, model: Model, kind: str = "adamw", **options: Any) -> None:
        if kind not in _OPTIMIZERS:
            raise ValueError(f"unknown optimizer {kind!r}; expected one of {sorted(_OPTIMIZERS)}")
        opts = OptimizerOptions(_OPTIMIZERS[kind])
        _set_fields(opts, options, f"optimizer {kind!r}")
        super().__init__(model, opts)
        self._model = model

    @property
    def lr(self) -> float:
        return self.get_lr()

    @lr.setter
    def lr(self, value: float) -> None:
        self.set_lr(value)

    @property
    def step_was_skipped(self) -> bool:
        """Whether the last step() was skipped by the fp16 loss scaler (inf or NaN gradients)."""
        return core.Optimizer.step_was_skipped(self)


_closeable(Optimizer, core.close_optimizer)

_SCHEDULERS = {
    "step": core.SCHED_STEP, "multi_step": core.SCHED_MULTI_STEP, "exponential": core.SCHED_EXPONENTIAL,
    "cosine_annealing": core.SCHED_COSINE_ANNEALING, "linear": core.SCHED_LINEAR, "constant": core.SCHED_CONSTANT,
    "polynomial": core.SCHED_POLYNOMIAL, "one_cycle": core.SCHED_ONE_CYCLE,
    "linear_warmup": core.SCHED_LINEAR_WARMUP, "cosine_warmup": core.SCHED_COSINE_WARMUP,
    "reduce_on_plateau": core.SCHED_REDUCE_ON_PLATEAU,
}


class Scheduler(core.Scheduler):
    """A learning-rate schedule: Scheduler(opt, "linear_warmup", num_warmup_steps=10, num_training_steps=100).

    Options use PyTorch's names; mode="max" and threshold_mode="abs" for reduce_on_plateau."""

    def __init__(self, optimizer: Optimizer, kind: str, **options: Any) -> None:
        if kind not in _SCHEDULERS:
            raise ValueError(f"unknown scheduler {kind!r}; expected one of {sorted(_SCHEDULERS)}")
        opts = SchedulerOptions(_SCHEDULERS[kind])
        milestones = list(options.pop("milestones", []))
        if "mode" in options:
            opts.mode_max = {"min": 0, "max": 1}[options.pop("mode")]
        if "threshold_mode" in options:
            opts.threshold_abs = {"rel": 0, "abs": 1}[options.pop("threshold_mode")]
        if "anneal_strategy" in options:
            opts.anneal_linear = {"cos": 0, "linear": 1}[options.pop("anneal_strategy")]
        _set_fields(opts, options, f"scheduler {kind!r}")
        super().__init__(optimizer, opts, milestones)
        self._optimizer = optimizer

    def step(self, metric: Optional[float] = None) -> None:
        if metric is None:
            super().step()
        else:
            self.step_metric(metric)


_closeable(Scheduler, core.close_scheduler)

# ---------------------------------------------------------------- Data ----

Dataset = core.Dataset
_closeable(Dataset, core.close_dataset)


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _as_fields(sample: Any) -> Tuple[Any, ...]:
    return tuple(sample) if isinstance(sample, (tuple, list)) else (sample,)


# Each field's dtype and shape, as the first sample fixed them.
_Layout = Tuple[Tuple[np.dtype, Tuple[int, ...]], ...]


def _field_specs(sample: Any) -> Tuple[core.FieldSpecVector, _Layout]:
    specs = core.FieldSpecVector()
    layout = []
    for i, value in enumerate(_as_fields(sample)):
        array = _to_array(value)
        if array.dtype not in _NUMPY_TO_DTYPE:
            raise TypeError(f"field {i} of the first sample has unsupported dtype {array.dtype}")
        spec = core.FieldSpec()
        spec.dtype = _NUMPY_TO_DTYPE[array.dtype]
        spec.shape = core.Int64Vector([int(d) for d in array.shape])
        specs.append(spec)
        layout.append((array.dtype, tuple(int(d) for d in array.shape)))
    return specs, tuple(layout)


def _write_sample(sample: Any, layout: _Layout, out: core.SampleWriter) -> None:
    fields = _as_fields(sample)
    if len(fields) != len(layout):
        raise ValueError(f"sample has {len(fields)} fields, the first one had {len(layout)}")
    for i, (value, (dtype, expected)) in enumerate(zip(fields, layout)):
        array = np.ascontiguousarray(_to_array(value), dtype=dtype)
        # Checked here, where the shapes are known: the writer below sees only bytes. Axes of
        # length 1 do not change the layout (a label 3 and [3] are the same bytes in the same
        # order), so only the other axes must match; (3, 2) against (2, 3) would reorder data.
        if tuple(d for d in array.shape if d != 1) != tuple(d for d in expected if d != 1):
            raise ValueError(f"field {i} has shape {tuple(array.shape)}, the first sample's has shape {expected}: "
                             f"every sample must have the same shapes (pad or crop ragged samples, or batch "
                             f"them yourself with a collate_fn)")
        out.write(i, array)


class _MapSource(core.DatasetSource):
    """Reads samples from a Python object with __len__ and __getitem__ (called from loader threads)."""

    def __init__(self, data: Any, layout: _Layout) -> None:
        super().__init__()
        self.data, self.layout = data, layout

    def get_sample(self, index: int, out: core.SampleWriter) -> str:
        try:
            _write_sample(self.data[index], self.layout, out)
            return ""
        except BaseException as error:  # reported as the loader call's AccelError
            return _error_text(error)


class _StreamSource(core.StreamSource):
    """Reads samples from a Python iterable; set_epoch(epoch) is called on it when it has one."""

    def __init__(self, data: Iterable[Any], layout: _Layout, first: Any, iterator: Iterator[Any]) -> None:
        super().__init__()
        self.data, self.layout = data, layout
        self.pending, self.iterator = [first], iterator

    def reset(self, epoch: int) -> str:
        try:
            if hasattr(self.data, "set_epoch"):
                self.data.set_epoch(epoch)
            self.pending, self.iterator = [], iter(self.data)
            return ""
        except BaseException as error:
            return _error_text(error)

    def next_sample(self, out: core.SampleWriter) -> str:
        try:
            if self.pending:
                sample = self.pending.pop()
            else:
                sample = next(self.iterator, _END)
            if sample is _END:
                out.end_of_stream()
            else:
                _write_sample(sample, self.layout, out)
            return ""
        except BaseException as error:
            return _error_text(error)


_END = object()


def _from_python(data: Any) -> Dataset:
    """A Dataset over a Python object: map-style (__len__ and __getitem__) or iterable.

    Samples are tuples of array-likes (numpy arrays, lists, numbers); the first
    sample fixes each field's dtype and shape."""
    if hasattr(data, "__len__") and hasattr(data, "__getitem__"):
        if len(data) == 0:
            raise ValueError("the dataset is empty")
        specs, layout = _field_specs(data[0])
        source = _MapSource(data, layout)
        dataset = Dataset.from_source(source.__disown__(), len(data), specs)
    elif hasattr(data, "__iter__"):
        iterator = iter(data)
        first = next(iterator, _END)
        if first is _END:
            raise ValueError("the iterable dataset is empty")
        specs, layout = _field_specs(first)
        source = _StreamSource(data, layout, first, iterator)
        dataset = Dataset.from_stream(source.__disown__(), specs)
    else:
        raise TypeError(f"{type(data).__name__} is neither map-style (__len__, __getitem__) nor iterable")
    return dataset


Dataset.from_python = staticmethod(_from_python)


# ------------------------------------------------------- Token sequences ----

Sequences = core.Sequences
_closeable(Sequences, core.close_sequences)


def _sequences_from_lists(data: Iterable[Sequence[int]], vocab_size: int = 0) -> "Sequences":
    """Sequences from Python lists (or 1-D arrays) of integer ids."""
    ids: list = []
    offsets = [0]
    for i, sample in enumerate(data):
        array = np.asarray(sample)
        if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
            raise TypeError(f"sequence {i}: expected a 1-D list of integer ids, got dtype {array.dtype} "
                            f"and shape {array.shape}")
        ids.extend(int(v) for v in array)
        offsets.append(len(ids))
    return Sequences.from_arrays(ids, offsets, [], vocab_size)


Sequences.from_lists = staticmethod(_sequences_from_lists)


def _sequence_sample(self: Any, index: int) -> Dict[str, np.ndarray]:
    """Sequence index as {"input_ids": ndarray[, "labels": ndarray]}, as a collate_fn receives it."""
    sample = {"input_ids": self.ids(index).numpy()}
    labels = self.labels(index)
    if labels is not None:
        sample["labels"] = labels.numpy()
    return sample


Sequences.__len__ = lambda self: self.size()
Sequences.__getitem__ = _sequence_sample


class DataCollatorWithPadding:
    """libaccel's native padding collator (Hugging Face's DataCollatorWithPadding, and
    DataCollatorForLanguageModeling(mlm=False) with causal_lm_labels=True): pass it as
    DataLoader(sequences, collate_fn=DataCollatorWithPadding(pad_id=...)). Batches are
    padded to their longest sequence (rounded up to pad_to_multiple_of); max_length cuts
    longer sequences when truncate, else refuses them."""

    def __init__(self, pad_id: int = 0, pad_to_multiple_of: Optional[int] = None,
                 max_length: Optional[int] = None, truncate: bool = False, causal_lm_labels: bool = True) -> None:
        self.options = core.PaddingOptions()
        self.options.pad_id = int(pad_id)
        self.options.pad_to_multiple_of = int(pad_to_multiple_of or 0)
        self.options.max_length = int(max_length or 0)
        self.options.truncate = int(bool(truncate))
        self.options.causal_lm_labels = int(bool(causal_lm_labels))


def _field_array(name: str, value: Any) -> np.ndarray:
    if isinstance(value, (list, tuple)) and value:
        shapes = [np.shape(v) for v in value]
        for row, shape in enumerate(shapes):
            if shape != shapes[0]:
                raise ValueError(f"collate_fn returned ragged rows for field {name!r}: expected every row of "
                                 f"shape {shapes[0]} (row 0's), got {shape} at row {row}")
    array = np.ascontiguousarray(_to_array(value))
    if array.dtype not in _NUMPY_TO_DTYPE:
        raise TypeError(f"collate_fn returned field {name!r} of unsupported dtype {array.dtype}")
    return array


def _samples_of(ids: Any, offsets: Any, labels: Any, label_kind: int) -> list:
    flat = np.fromiter(ids, dtype=np.int64, count=len(ids))
    bounds = list(offsets)
    flat_labels = np.fromiter(labels, dtype=np.int64, count=len(labels)) if label_kind else None
    samples = []
    for s in range(len(bounds) - 1):
        sample = {"input_ids": flat[bounds[s]:bounds[s + 1]]}
        if label_kind == 1:
            sample["labels"] = flat_labels[s]
        elif label_kind == 2:
            sample["labels"] = flat_labels[bounds[s]:bounds[s + 1]]
        samples.append(sample)
    return samples


class _CollateAdapter(core.Collator):
    """Runs a Python collate_fn (list of sample dicts -> dict of arrays) for the loader's threads."""

    def __init__(self, function: Any, names: Sequence[str], items: Any = None) -> None:
        super().__init__()
        self.function, self.names, self.items = function, list(names), items

    def collate(self, ids: Any, offsets: Any, labels: Any, label_kind: int, out: Any) -> str:
        try:
            samples = _samples_of(ids, offsets, labels, label_kind)
            batch = self.function(self.items(samples) if self.items else samples)
            if not isinstance(batch, dict) or list(batch) != self.names:
                got = list(batch) if isinstance(batch, dict) else type(batch).__name__
                raise ValueError(f"collate_fn returned {got}, expected a dict with the keys {self.names} "
                                 "(those of its first batch)")
            for i, name in enumerate(self.names):
                array = _field_array(name, batch[name])
                out.write(i, _NUMPY_TO_DTYPE[array.dtype], [int(d) for d in array.shape], array)
            return ""
        except BaseException as error:  # reported as the loader call's AccelError
            return _error_text(error)


def _first_batch_names(first: Any) -> list:
    if not isinstance(first, dict) or not first:
        raise TypeError(f"collate_fn must return a non-empty dict of arrays, got {type(first).__name__}")
    return [str(k) for k in first]


def _python_collate_dataset(data: Any, collate_fn: Any, batch_size: int) -> Dataset:
    """Any map-style Python dataset with a collate_fn: the loader batches indices (a sequence
    [i] per sample, so sharding, workers and resume work as for any dataset) and the collate_fn
    gets data[i] of each, as PyTorch's DataLoader gives it."""
    if not (hasattr(data, "__len__") and hasattr(data, "__getitem__")):
        raise TypeError(f"collate_fn needs a map-style dataset (__len__, __getitem__) or accel.Sequences, "
                        f"got {type(data).__name__}")
    n = len(data)
    if n == 0:
        raise ValueError("the dataset is empty")
    index = Sequences.from_arrays(list(range(n)), list(range(n + 1)), [], 0)
    names = _first_batch_names(collate_fn([data[i] for i in range(min(max(batch_size, 1), n))]))
    adapter = _CollateAdapter(collate_fn, names, lambda samples: [data[int(s["input_ids"][0])] for s in samples])
    try:
        return Dataset.from_sequences_collate(index, adapter.names, adapter.__disown__())
    finally:
        index.close()  # the dataset keeps its own reference


def _sequence_dataset(data: "Sequences", collate_fn: Any, batch_size: int) -> Dataset:
    if collate_fn is None or isinstance(collate_fn, DataCollatorWithPadding):
        options = collate_fn.options if collate_fn is not None else None
        return Dataset.from_sequences(data, options)
    # The first batch's keys name the fields (as the first sample fixes a dataset's dtypes).
    names = _first_batch_names(collate_fn([data[i] for i in range(min(max(batch_size, 1), len(data)))]))
    adapter = _CollateAdapter(collate_fn, names)
    return Dataset.from_sequences_collate(data, adapter.names, adapter.__disown__())


class DataLoader(core.DataLoader):
    """Batches of a Dataset or of any Python dataset object; iterate for one epoch of tuples of Tensors.

    DataLoader(data, batch_size=64, shuffle=True, seed=0, drop_last=False, num_workers=2, prefetch_factor=2)

    seed=0 (the default) means no generator of its own: each epoch's shuffle
    draws its seed from the global generator seeded by set_seed, as PyTorch's
    RandomSampler does.

    DataLoader(data, batch_sampler=sampler) reads a user's batch sampler, as
    PyTorch's DataLoader(batch_sampler=...): any iterable of lists of indices
    (e.g. length-bucketed batches of varying sizes), read once here and
    yielded in that order every epoch. As Accelerate does, prepare reads its
    batch_size and drop_last attributes when it has them (no batch_size:
    sizes vary, which needs even_batches=False with several processes).

    Variable-length data: DataLoader(accel.Sequences, batch_size=8) pads each batch to its
    longest sequence (collate_fn=accel.DataCollatorWithPadding(...) to set the padding), and
    group_by_length=True groups similar lengths (transformers' LengthGroupedSampler, with seed).
    collate_fn=fn, over Sequences (samples {"input_ids": ndarray[, "labels": ...]}) or any
    map-style Python dataset (samples data[i]), gets a batch's list of samples and returns a dict
    of arrays or tensors; its first batch, collated here once, fixes the field names. Batches
    with field names are dicts name -> Tensor."""

    def __init__(self, data: Any, batch_sampler: Optional[Iterable[Sequence[int]]] = None,
                 collate_fn: Any = None, group_by_length: bool = False, **options: Any) -> None:
        if isinstance(data, Sequences):
            dataset = _sequence_dataset(data, collate_fn, int(options.get("batch_size", 1)))
        elif collate_fn is not None:
            if group_by_length:
                raise TypeError("group_by_length needs token sequences (accel.Sequences)")
            dataset = _python_collate_dataset(data, collate_fn, int(options.get("batch_size", 1)))
        else:
            dataset = data if isinstance(data, Dataset) else _from_python(data)
        opts = DataLoaderOptions()
        if group_by_length:
            if batch_sampler is not None or options.get("shuffle"):
                raise ValueError("group_by_length is mutually exclusive with batch_sampler and shuffle")
            _set_fields(opts, options, "DataLoader")
            super().__init__(dataset, opts, True)
        elif batch_sampler is None:
            _set_fields(opts, options, "DataLoader")
            super().__init__(dataset, opts)
        else:
            clashing = sorted(set(options) & {"batch_size", "shuffle", "drop_last"})
            if clashing:
                raise ValueError(f"batch_sampler is mutually exclusive with {', '.join(clashing)}")
            _set_fields(opts, options, "DataLoader")
            batches = [[int(i) for i in batch] for batch in batch_sampler]
            opts.batch_size = int(getattr(batch_sampler, "batch_size", None) or 0)
            opts.drop_last = int(bool(getattr(batch_sampler, "drop_last", False)))
            indices = [i for batch in batches for i in batch]
            super().__init__(dataset, indices, [len(batch) for batch in batches], opts)
        self.dataset = dataset

    def __iter__(self) -> Iterator[Any]:
        """Batches as tuples of Tensors, or as dicts name -> Tensor when the fields have names
        (sequence datasets: input_ids, attention_mask, labels; a collate_fn's keys)."""
        names = self.field_names()
        while True:
            batch = self.next_batch()
            if batch is None:
                return
            with batch:
                tensors = tuple(batch.take(i) for i in range(batch.size()))
            yield dict(zip(names, tensors)) if names else tensors

    def __len__(self) -> int:
        """Accelerate's len(): after skip_first_batches(k), k fewer. TypeError for an
        iterable dataset, which has no length (as PyTorch's DataLoader)."""
        try:
            return self.num_batches()
        except AccelError as error:
            if error.code == core.ERR_STATE:
                raise TypeError(f"object of type {type(self).__name__!r} has no len(): {error}") from None
            raise

    def skip_first_batches(self, num_batches: int) -> "DataLoader":
        loader = core.DataLoader.skip_first_batches(self, num_batches)
        loader.dataset = self.dataset
        return loader


_closeable(DataLoader, core.close_dataloader)
_closeable(core.DataLoader, core.close_dataloader)
core.DataLoader.__iter__ = DataLoader.__iter__
core.DataLoader.__len__ = DataLoader.__len__


# --------------------------------------------------------------- Tracker ----

class Tracker:
    """Base class of custom trackers (Accelerate's GeneralTracker): set name, override what you need."""

    name = "custom"

    def store_init_configuration(self, config: Dict[str, Any]) -> None:
        pass

    def log(self, values: Dict[str, float], step: Optional[int] = None) -> None:
        pass

    def finish(self) -> None:
        pass


class _TrackerAdapter(core.Tracker):
    def __init__(self, tracker: Any) -> None:
        super().__init__()
        self.tracker = tracker

    def init(self, run_name: str, config_json: str) -> str:
        try:
            if hasattr(self.tracker, "store_init_configuration"):
                self.tracker.store_init_configuration(json.loads(config_json))
            return ""
        except BaseException as error:
            return _error_text(error)

    def log(self, names: Sequence[str], values: Sequence[float], step: int) -> str:
        try:
            self.tracker.log(dict(zip(names, values)), None if step < 0 else step)
            return ""
        except BaseException as error:
            return _error_text(error)

    def finish(self) -> str:
        try:
            if hasattr(self.tracker, "finish"):
                self.tracker.finish()
            return ""
        except BaseException as error:
            return _error_text(error)


def _bytearray_of(*args: Any) -> bytearray:
    """bytearray as pickle rebuilds it: from bytes (or text and its encoding),
    never bytearray(n), which allocates n bytes that the file never held."""
    if not args or not isinstance(args[0], (bytes, str)):
        raise pickle.UnpicklingError("bytearray is rebuilt from bytes only, not from "
                                     f"{type(args[0]).__name__ if args else 'nothing'}")
    return bytearray(*args)


# Classes a state dict may hold that rebuild as plain data: loading a pickle
# that names any other global would run code chosen by whoever wrote the file.
# None allocates by an argument: bytearray is taken through _bytearray_of.
_PLAIN_DATA_GLOBALS = {
    ("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "complex"),
}

# How deep a loaded state may nest: deeper states loaded, and then every
# save_state failed (pickle.dumps recurses). 256, as libaccel's readers.
_MAX_PLAIN_DATA_DEPTH = 256


class _PlainDataUnpickler(pickle.Unpickler):
    """An unpickler that rebuilds containers, numbers, strings and bytes only."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in {("builtins", "bytearray"), ("__builtin__", "bytearray")}:
            return _bytearray_of
        if (module, name) in _PLAIN_DATA_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"{module}.{name} is not plain data: a checkpoint object's state is loaded without running code "
            "unless it was registered with allow_pickle=True (trusted checkpoints only)")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("the state holds tensors or other persistent objects, which are not plain data")


def _children(item: Any) -> Any:
    if isinstance(item, dict):
        return list(item.keys()) + list(item.values())
    if isinstance(item, (list, tuple, set, frozenset)):
        return list(item)
    return None


def _check_depth(value: Any) -> None:
    """Refuses a value whose containers nest deeper than _MAX_PLAIN_DATA_DEPTH: the longest chain,
    shared containers counted once and a container inside itself (a cycle) not followed again;
    walked without recursion, since the value may nest a million deep."""
    heights: Dict[int, int] = {}  # id of a finished container -> its height (ids are stable: value holds them)
    on_path = set()
    stack = [(value, False)]
    while stack:
        item, finished = stack.pop()
        children = _children(item)
        if children is None:
            continue
        if finished:
            on_path.discard(id(item))
            height = 1 + max((heights.get(id(child), 0) for child in children), default=0)
            if height > _MAX_PLAIN_DATA_DEPTH:
                raise pickle.UnpicklingError(
                    f"the state nests containers more than {_MAX_PLAIN_DATA_DEPTH} levels deep")
            heights[id(item)] = height
        elif id(item) not in heights and id(item) not in on_path:
            on_path.add(id(item))
            stack.append((item, True))
            stack.extend((child, False) for child in children)


def _torch_save_pickle(data: bytes) -> bytes:
    """data.pkl of a torch.save archive (Python Accelerate's custom_checkpoint_{i}.pkl), read
    without trusting the sizes the archive declares: stored records only, none larger than the file."""
    import io
    import zipfile
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            if info.filename.endswith("/data.pkl") or info.filename == "data.pkl":
                if info.compress_type != zipfile.ZIP_STORED or info.file_size > len(data):
                    raise pickle.UnpicklingError("data.pkl is compressed or larger than its archive")
                return archive.read(info)
    raise pickle.UnpicklingError("a zip archive without data.pkl")


def _plain_data_loads(data: bytes) -> Any:
    import io
    if data[:4] == b"PK\x03\x04":  # Accelerate's torch.save(obj.state_dict())
        data = _torch_save_pickle(data)
    value = _PlainDataUnpickler(io.BytesIO(data)).load()
    _check_depth(value)
    return value


class _CheckpointAdapter(core.CheckpointObject):
    """Saves obj.state_dict() as a pickle and restores it with obj.load_state_dict().

    By default the state must be plain data (dicts, lists, tuples, sets, numbers,
    strings, bytes, OrderedDict) and is loaded without running code; with
    allow_pickle any picklable state is saved, and loading it runs whatever the
    file names, so only checkpoints from trusted sources may be loaded."""

    def __init__(self, obj: Any, allow_pickle: bool) -> None:
        super().__init__()
        self.obj = obj
        self.allow_pickle = allow_pickle

    def _loads(self, data: bytes) -> Any:
        return pickle.loads(data) if self.allow_pickle else _plain_data_loads(data)

    def save_state(self, out: core.StateWriter) -> str:
        try:
            data = pickle.dumps(self.obj.state_dict())
            if not self.allow_pickle:
                try:
                    _plain_data_loads(data)  # refuse at save time what load would refuse
                except pickle.UnpicklingError as error:
                    raise TypeError(f"{type(self.obj).__name__}.state_dict(): {error}") from None
            out.write(data)
            return ""
        except BaseException as error:
            return _error_text(error)

    def load_state(self, data: bytes) -> str:
        try:
            self.obj.load_state_dict(self._loads(data))
            return ""
        except BaseException as error:
            return _error_text(error)


class _HookAdapter(core.StateHook):
    def __init__(self, function: Any) -> None:
        super().__init__()
        self.function = function

    def run(self, directory: str) -> str:
        try:
            self.function(directory)
            return ""
        except BaseException as error:
            return _error_text(error)


class RemovableHandle:
    """Returned by register_*_pre_hook: remove() unregisters the hook."""

    def __init__(self, accelerator: "Accelerator", hook_id: int) -> None:
        self._accelerator, self.id = accelerator, hook_id

    def remove(self) -> None:
        self._accelerator.remove_hook(self.id)


# ----------------------------------------------------------- Accelerator ----

_PRECISIONS = {"no": core.PRECISION_NO, "bf16": core.PRECISION_BF16, "fp16": core.PRECISION_FP16,
               "fp8": core.PRECISION_FP8}
_COMM_HOOKS = {"no": core.COMM_HOOK_NONE, "fp16": core.COMM_HOOK_FP16, "bf16": core.COMM_HOOK_BF16}
_SHARDING = {"NO_SHARD": core.SHARDING_NO_SHARD, "SHARD_OPTIMIZER": core.SHARDING_SHARD_OPTIMIZER,
             "SHARD_GRAD_OP": core.SHARDING_SHARD_GRAD_OP, "FULL_SHARD": core.SHARDING_FULL_SHARD,
             "HYBRID_SHARD": core.SHARDING_HYBRID_SHARD}
_REDUCTIONS = {"sum": core.REDUCE_SUM, "mean": core.REDUCE_MEAN, "none": core.REDUCE_NONE}


# Nested structures for the collectives: the C ABI takes a flat list of
# tensors, so tuples, lists and dicts are flattened here and rebuilt around
# the results (Accelerate's recursively_apply).
def _flatten(data: Any, leaves: list, what: str) -> Any:
    if isinstance(data, Tensor):
        leaves.append(data)
        return None
    if isinstance(data, (list, tuple)):
        return (type(data), [_flatten(item, leaves, what) for item in data])
    if isinstance(data, dict):
        return (type(data), [(key, _flatten(value, leaves, what)) for key, value in data.items()])
    raise TypeError(f"{what}: unsupported type {type(data).__name__}; only accel.Tensor and nested "
                    "lists, tuples and dicts of them can be passed")


def _unflatten(spec: Any, results: Iterator[Any]) -> Any:
    if spec is None:
        return next(results)
    kind, items = spec
    if issubclass(kind, dict):
        return kind((key, _unflatten(value, results)) for key, value in items)
    values = [_unflatten(item, results) for item in items]
    if hasattr(kind, "_fields"):  # a namedtuple
        return kind(*values)
    return kind(values)


def _tensor_list(tensors: Sequence[Tensor]) -> Any:
    tl = core.TensorList()
    for t in tensors:
        tl.add(t)
    return tl


def _batch_tensors(batch: Any) -> list:
    try:
        return [batch.take(i) for i in range(batch.size())]
    finally:
        batch.close()


def _apply_nested(data: Any, what: str, call: Any) -> Any:
    leaves: list = []
    spec = _flatten(data, leaves, what)
    return _unflatten(spec, iter(_batch_tensors(call(_tensor_list(leaves)))))


class DistributedType(str, enum.Enum):
    """Accelerate's DistributedType names (a str, so == "MULTI_CPU" works too)."""

    NO = "NO"
    MULTI_CPU = "MULTI_CPU"
    MULTI_GPU = "MULTI_GPU"


_DISTRIBUTED_TYPES = {core.DISTRIBUTED_NO: DistributedType.NO, core.DISTRIBUTED_MULTI_CPU: DistributedType.MULTI_CPU,
                      core.DISTRIBUTED_MULTI_GPU: DistributedType.MULTI_GPU}


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
    forward_prefetch (the next unit's all-gather in flight while one runs) and cpu_offload (True,
    or an object with offload_params such as torch's CPUOffload: master weights, gradients and
    optimizer state of the shards on the CPU). Pass it as Accelerator(fsdp_plugin=...)."""

    def __init__(self, sharding_strategy: str = "FULL_SHARD", min_num_params: int = 0,
                 activation_checkpointing: bool = False,
                 transformer_cls_names_to_wrap: Optional[List[str]] = None,
                 backward_prefetch: Optional[str] = "BACKWARD_PRE", forward_prefetch: bool = False,
                 cpu_offload: Any = False) -> None:
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


class ProjectConfiguration:
    """accelerator.project_configuration: the project layout; ``iteration`` (the number of the next
    automatic checkpoint) can be set, as in Accelerate."""

    def __init__(self, accelerator: "Accelerator") -> None:
        self._accelerator = accelerator

    @property
    def project_dir(self) -> str:
        return self._accelerator.project_dir

    @property
    def logging_dir(self) -> str:
        return self._accelerator.logging_dir

    @property
    def iteration(self) -> int:
        return core.Accelerator.save_iteration(self._accelerator)

    @iteration.setter
    def iteration(self, value: int) -> None:
        core.Accelerator.set_save_iteration(self._accelerator, value)


__all__ += ["GradientAccumulationPlugin", "ProjectConfiguration"]


class Accelerator(core.Accelerator):
    """Accelerate's Accelerator. Keyword options use Accelerate's names:
    cpu, mixed_precision ("no", "fp16", "bf16"), gradient_accumulation_steps, split_batches,
    even_batches, dispatch_batches (None: iterable datasets are dispatched), use_seedable_sampler,
    data_seed, device_placement, project_dir, logging_dir,
    automatic_checkpoint_naming, total_limit, log_with ("jsonl", "csv", "tensorboard", "mlflow",
    "all", or a list), timeout_ms, comm_hook ("fp16", "bf16"), find_unused_parameters,
    broadcast_buffers (default True: process 0's buffers at every training forward),
    sharding_strategy ("NO_SHARD", "SHARD_OPTIMIZER" (ZeRO-1), "SHARD_GRAD_OP" (ZeRO-2), "FULL_SHARD",
    "HYBRID_SHARD" (FULL_SHARD within each node, replicated across nodes);
    None: from `accel launch`'s environment),
    fsdp_plugin (a FullyShardedDataParallelPlugin), fsdp_min_num_params, fsdp_activation_checkpointing,
    fsdp_transformer_layer_cls_to_wrap (class names or submodule paths, a list or comma-separated),
    fsdp_backward_prefetch, fsdp_forward_prefetch, cpu_offload (bools; cpu_offload keeps the
    shards' master weights, gradients and optimizer state on the CPU), ...

    Collective where the C API says so: with several processes every process must call it."""

    def __init__(self, **options: Any) -> None:
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
        if isinstance(options.get("fsdp_transformer_layer_cls_to_wrap"), (list, tuple)):
            options["fsdp_transformer_layer_cls_to_wrap"] = ",".join(options["fsdp_transformer_layer_cls_to_wrap"])
        if isinstance(options.get("fsdp_activation_checkpointing"), bool):
            options["fsdp_activation_checkpointing"] = int(options["fsdp_activation_checkpointing"])
        if isinstance(options.get("log_with"), (list, tuple)):
            options["log_with"] = ",".join(options["log_with"])
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
        self._project_dir = opts.project_dir or "."
        self._logging_dir = opts.logging_dir or os.path.join(self._project_dir, "logs")
        self._optimizers: List[Any] = []
        self._trackers: Dict[str, Any] = {}

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
            self._optimizers.append(obj)
        elif isinstance(obj, core.DataLoader):
            self.prepare_dataloader(obj)
        else:
            self.prepare_scheduler(obj)

    def print(self, *values: Any, sep: str = " ") -> None:
        """print() on the main process only."""
        core.Accelerator._print(self, sep.join(str(v) for v in values))

    # -- what this process is: properties, as in Accelerate ---------------
    # (Methods here would make `if acc.is_main_process:` true on every rank.)
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

    @property
    def gradient_accumulation_steps(self) -> int:
        return core.Accelerator.gradient_accumulation_steps(self)

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
        return ProjectConfiguration(self)

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
    def cpu_offload(self) -> bool:
        """Whether sharded models keep master weights, gradients and optimizer state on the CPU."""
        return core.Accelerator.cpu_offload(self)

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

    # -- seeding -----------------------------------------------------------
    def set_seed(self, seed: int, device_specific: bool = False, deterministic: bool = False) -> None:
        """Accelerate's set_seed: seeds LibTorch (CPU and CUDA), Python's random, numpy's
        global generator and, when the program has imported it, torch. device_specific adds
        the process index (ranks differ, reproducibly); deterministic makes LibTorch use
        deterministic algorithms from now on. Not collective."""
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        effective = int(seed) + (self.process_index if device_specific else 0)
        # numpy's limit, checked before anything is seeded (Accelerate fails there, half-seeded).
        if not 0 <= effective < 2**32:
            raise ValueError(f"seed {seed} (plus process index {effective - int(seed)}) is outside numpy's range "
                             f"0 to 2**32 - 1")
        core.Accelerator.set_seed_ext(self, int(seed), bool(device_specific), bool(deterministic))
        random.seed(effective)
        np.random.seed(effective)
        # Only a torch the program imported itself: importing one here could load a second LibTorch.
        torch = sys.modules.get("torch")
        if torch is not None and hasattr(torch, "manual_seed"):
            torch.manual_seed(effective)
            if deterministic:
                torch.use_deterministic_algorithms(True)

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
    def no_sync(self, model: Model):
        self.no_sync_begin(model)
        try:
            yield
        finally:
            self.no_sync_end(model)

    @contextlib.contextmanager
    def autocast(self, enabled: bool = True):
        self.autocast_begin(enabled)
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

    def send_to_device(self, data: Any) -> Any:
        """Accelerate's send_to_device for hand-built batches: a Tensor (or array) to a Tensor on
        this accelerator's device; a mapping to a dict of those, same names and order."""
        if isinstance(data, Mapping):
            return dict(_map_items(core.Accelerator.send_map_to_device(self, _tensor_map(dict(data)))))
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
    def profile(self, output_trace_dir: str):
        """Records every LibTorch operator in the block; writes output_trace_dir/trace_<rank>.json."""
        run = core.Profile.begin(self, output_trace_dir)
        try:
            yield
        finally:
            run.end()

    # -- process decorators (Accelerate's on_main_process, ...) -------------
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

    # -- gradients, models (Accelerate's names) ------------------------------
    @staticmethod
    def _model_of(parameters: Any, what: str) -> Model:
        # Accelerate takes model.parameters(); here the prepared Model itself stands for them.
        if not isinstance(parameters, Model):
            raise TypeError(f"{what} takes the Model whose gradients to clip, got {type(parameters).__name__}")
        return parameters

    def held_bytes(self, model: Model, optimizer: Optional[core.Optimizer] = None) -> Dict[str, int]:
        """Bytes this process holds for the prepared model's parameters and gradients and the
        optimizer's state, counted from the tensors' storages (what sharding saves):
        {"parameters": ..., "gradients": ..., "optimizer_state": ...}. Not collective."""
        parameters, gradients, state = super().held_bytes(model, optimizer)
        return {"parameters": parameters, "gradients": gradients, "optimizer_state": state}

    def clip_grad_norm_(self, parameters: Model, max_norm: float, norm_type: float = 2) -> Tensor:
        """Clips the model's gradients to total norm max_norm; returns the norm before clipping
        (a scalar Tensor, as torch does). Call it where gradients are synced (sync_gradients)."""
        norm = core.Accelerator.clip_grad_norm(self, self._model_of(parameters, "clip_grad_norm_"), max_norm,
                                               norm_type)
        return tensor(np.float32(norm))

    def clip_grad_value_(self, parameters: Model, clip_value: float) -> None:
        """Clamps every gradient of the model to [-clip_value, clip_value]."""
        core.Accelerator.clip_grad_value(self, self._model_of(parameters, "clip_grad_value_"), clip_value)

    def unwrap_model(self, model: Model, keep_fp32_wrapper: bool = True) -> Model:
        """The model as the user built it: prepare() wraps nothing here, so this is model itself."""
        if not isinstance(model, Model):
            raise TypeError(f"unwrap_model takes a Model, got {type(model).__name__}")
        return model

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
        return core.DataLoader.skip_first_batches(dataloader, num_batches)

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
        parts = self.gather_object(input_data)
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

    def gather_object(self, obj: Any) -> list:
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

    @contextlib.contextmanager
    def split_between_processes(self, inputs: Any, apply_padding: bool = False):
        """Yields this process's share of inputs: a Tensor (rows), a list or tuple, or a dict
        of them with equal lengths. The first len % num_processes processes get one more;
        surplus processes get an empty share; apply_padding repeats the last item so that
        every process gets as many. Not collective."""
        yield self._split(inputs, apply_padding)

    def _split(self, inputs: Any, apply_padding: bool) -> Any:
        if isinstance(inputs, dict):
            lengths = {key: len(value) for key, value in inputs.items()}
            if len(set(lengths.values())) > 1:
                raise ValueError(f"split_between_processes: all values of the dict must have the same length, "
                                 f"got {lengths}")
            return type(inputs)((key, self._split(value, apply_padding)) for key, value in inputs.items())
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
        """hook(directory) runs before save_state writes."""
        return RemovableHandle(self, core.Accelerator.register_save_state_pre_hook(self, _HookAdapter(hook).__disown__()))

    def register_load_state_pre_hook(self, hook: Any) -> RemovableHandle:
        """hook(directory) runs before load_state reads."""
        return RemovableHandle(self, core.Accelerator.register_load_state_pre_hook(self, _HookAdapter(hook).__disown__()))

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

    def get_tracker(self, name: str, unwrap: bool = False) -> Any:
        """Accelerate's get_tracker: the custom tracker added under name (unwrap: its .tracker
        attribute when it has one). Built-in trackers and unknown names give a Tracker that
        does nothing, as Accelerate gives for a name it lacks."""
        tracker = self._trackers.get(name)
        if tracker is None:
            return Tracker()
        return getattr(tracker, "tracker", tracker) if unwrap else tracker

    def init_trackers(self, project_name: str, config: Optional[Dict[str, Any]] = None) -> None:
        core.Accelerator.init_trackers(self, project_name, json.dumps(config) if config else "")

    def log(self, values: Dict[str, float], step: Optional[int] = None) -> None:
        names = list(values)
        core.Accelerator.log(self, names, [float(values[n]) for n in names], -1 if step is None else step)

    def log_text(self, tag: str, text: str, step: Optional[int] = None) -> None:
        core.Accelerator.log_text(self, tag, text, -1 if step is None else step)


_closeable(Accelerator, core.close_accelerator)


# ------------------------------------------------------ logging, progress ----

ProgressBar = core.ProgressBar
_closeable(ProgressBar, core.close_progress)


class _Logger:
    """Accelerate's get_logger: messages go to stderr, by default from the main process only."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _log(self, level: int, message: str, main_process_only: bool) -> None:
        core.log_message(self.name, level, str(message), main_process_only)

    def debug(self, message: str, main_process_only: bool = True) -> None:
        self._log(core.LOG_DEBUG, message, main_process_only)

    def info(self, message: str, main_process_only: bool = True) -> None:
        self._log(core.LOG_INFO, message, main_process_only)

    def warning(self, message: str, main_process_only: bool = True) -> None:
        self._log(core.LOG_WARNING, message, main_process_only)

    def error(self, message: str, main_process_only: bool = True) -> None:
        self._log(core.LOG_ERROR, message, main_process_only)


def get_logger(name: str) -> _Logger:
    return _Logger(name)
