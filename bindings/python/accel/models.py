"""accel.Model (SWIG's Model with Python calling conventions) and ModelOutput."""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from . import big_modeling, core
from ._helpers import _closeable
from .tensors import Tensor, tensor

__all__ = ["Model", "ModelOutput"]


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


class ModelParameters:
    """model.parameters(): iterates the model's parameter tensors, as torch's does. Accelerate
    scripts pass it to clip_grad_norm_ and clip_grad_value_, where it stands for its model (the
    gradients live in the core, per model), so ``accelerator.clip_grad_norm_(model.parameters(),
    1.0)`` ports unchanged."""

    def __init__(self, model: Model) -> None:
        self.model = model

    def __iter__(self) -> Iterator[Tensor]:
        return (tensor for _, tensor in self.model.named_parameters())


Model.parameters = lambda self: ModelParameters(self)
Model.named_buffers = lambda self: iter(_map_items(_core_named_buffers(self)))


class IncompatibleKeys(NamedTuple):
    """What load_state_dict returns, as torch's does: the model's names the state dict lacked
    (model order) and the state dict's names the model lacks (sorted); both empty after a strict
    load. Unpacks as (missing_keys, unexpected_keys)."""
    missing_keys: List[str]
    unexpected_keys: List[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"  # torch's words
        return f"IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"


def _load_state_dict(self: Model, state_dict: Mapping[str, Any], strict: bool = True) -> IncompatibleKeys:
    """torch's model.load_state_dict: copies each array or Tensor into the parameter or buffer of
    that name (the names get_state_dict returns). strict: missing or unexpected names raise; all is
    checked before anything is copied. Returns the IncompatibleKeys a strict=False load skipped.
    Collective under FULL_SHARD (every process calls it)."""
    report = json.loads(Model.load_state_dict_report_json(self, _tensor_map(dict(state_dict)), strict))
    return IncompatibleKeys(report["missing_keys"], report["unexpected_keys"])


Model.load_state_dict = _load_state_dict
_core_from_json = Model.from_json
# Inside `with accel.init_empty_weights():` a JSON model is built on the meta device.
Model.from_json = staticmethod(
    lambda spec: Model.from_json_empty(spec) if big_modeling._building_empty() else _core_from_json(spec))
Model.module_sizes = lambda self, dtype=None: big_modeling.compute_module_sizes(self, dtype)


def _hf_device_map(self: Model) -> Dict[str, str]:
    placed = json.loads(self.hf_device_map_json())
    if not placed:  # as on a torch module: the attribute exists only once a map placed the model
        raise AttributeError("'Model' object has no attribute 'hf_device_map': dispatch_model or "
                             "load_checkpoint_and_dispatch with a device_map has not placed it")
    return placed


Model.hf_device_map = property(_hf_device_map, doc=(
    "transformers' hf_device_map: the device map dispatch_model or load_checkpoint_and_dispatch placed "
    "the model with (an \"auto\" map as computed), module name to device; AttributeError before."))
_core_from_torchscript = Model.from_torchscript
_core_from_torchscript_empty = Model.from_torchscript_empty


def _from_torchscript(path: Any, output_names: Optional[Sequence[str]] = None) -> Model:
    """A TorchScript file (torch.jit.save). Inside `with accel.init_empty_weights():` its parameters
    stay on the meta device, never read from the file (code, constants and buffers are loaded);
    load_checkpoint_and_dispatch or load_checkpoint_in_model then fills them."""
    path = os.fspath(path)
    if big_modeling._building_empty():
        return _core_from_torchscript_empty(path, [] if output_names is None else list(output_names))
    return _core_from_torchscript(path) if output_names is None else Model.from_torchscript_outputs(
        path, list(output_names))


Model.from_torchscript = staticmethod(_from_torchscript)
Model.from_torchscript_empty = staticmethod(
    lambda path, output_names=None: _core_from_torchscript_empty(os.fspath(path), list(output_names or [])))
