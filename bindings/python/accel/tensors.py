"""dtypes and accel.Tensor: the numpy conversions, tensor() and the methods added to SWIG's Tensor."""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from . import core
from ._helpers import _closeable
from .core import Batch

__all__ = ["Tensor", "tensor"]


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


_closeable(Tensor, core.close_tensor)
_closeable(Batch, core.close_batch)
