"""Python objects in checkpoints: register_for_checkpointing's adapter with its plain-data
unpickler, save/load pre-hooks and their RemovableHandle."""
from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any, Dict

from . import core
from ._helpers import _error_text

if TYPE_CHECKING:
    from .accelerator import Accelerator

__all__ = ["RemovableHandle"]


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
