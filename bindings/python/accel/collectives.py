"""Nested structures for gather, reduce, broadcast and the other collectives."""
from __future__ import annotations

from typing import Any, Iterator, Sequence

from . import core
from .tensors import Tensor


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
