"""Data: Dataset over Python objects, token Sequences, DataCollatorWithPadding and DataLoader,
with the adapters that let the loader's threads read Python datasets and run collate_fns."""
from __future__ import annotations

import collections.abc
import weakref
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from . import core
from ._helpers import _closeable, _error_text, _set_fields
from .core import AccelError, DataLoaderOptions
from .tensors import _NUMPY_TO_DTYPE, _to_array

__all__ = ["Dataset", "DataLoader", "Sequences", "DataCollatorWithPadding"]


Dataset = core.Dataset
_closeable(Dataset, core.close_dataset)


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
    (e.g. length-bucketed batches of varying sizes), iterated again at the start
    of each new epoch, so a sampler that draws new batches per epoch is followed
    (before that, as Accelerate does, set_epoch(epoch) is called on its sampler,
    or on it, when they have one; a resumed epoch is asked for again). Every
    process must get the same batches. As Accelerate does, prepare reads its
    batch_size and drop_last attributes when it has them (no batch_size:
    sizes vary, which needs even_batches=False with several processes).

    Variable-length data: DataLoader(accel.Sequences, batch_size=8) pads each batch to its
    longest sequence (collate_fn=accel.DataCollatorWithPadding(...) to set the padding), and
    group_by_length=True groups similar lengths (transformers' LengthGroupedSampler, with seed;
    regrouped each epoch from its generator's next permutation, as transformers does).
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
            indices, lengths = _batch_arrays(batch_sampler)
            opts.batch_size = int(getattr(batch_sampler, "batch_size", None) or 0)
            opts.drop_last = int(bool(getattr(batch_sampler, "drop_last", False)))
            super().__init__(dataset, indices, lengths, opts)
            # An iterator is read once (PyTorch's DataLoader could not iterate it twice either).
            # Asked by type, not by calling iter(): a sampler may draw numbers when iterated.
            if not isinstance(batch_sampler, collections.abc.Iterator):
                self._batch_sampler, self._batches_epoch = batch_sampler, 0
        self.dataset = dataset

    def __iter__(self) -> Iterator[Any]:
        """Batches as tuples of Tensors, or as dicts name -> Tensor when the fields have names
        (sequence datasets: input_ids, attention_mask, labels; a collate_fn's keys)."""
        _refresh_batches(self)
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
        loader = _skip_first_batches(self, num_batches)
        loader.dataset = self.dataset
        if getattr(self, "_batch_sampler", None) is not None:
            loader._batch_sampler, loader._batches_epoch = self._batch_sampler, self._batches_epoch
        return loader


def _skip_first_batches(loader: Any, num_batches: int) -> Any:
    """The core's skip_first_batches; the new loader is prepared as its source is, so it joins
    the same accelerator's registry (_track_prepared)."""
    skipped = core.DataLoader.skip_first_batches(loader, num_batches)
    registry = getattr(loader, "_prepared_registry", None)
    if registry is not None:
        _track_prepared(skipped, registry)
    return skipped


def _track_prepared(loader: Any, registry: List[Any]) -> None:
    """Remembers a prepared loader in its accelerator's registry (weak references: the registry
    keeps no loader alive), for gradient_state's dataloader_references."""
    registry.append(weakref.ref(loader))
    loader._prepared_registry = registry


def _open_loaders(registry: List[Any]) -> List[Any]:
    """The registry's loaders in an epoch, in the order their epochs opened (the core's
    open_index); dead references are dropped."""
    registry[:] = [ref for ref in registry if ref() is not None]
    found = []
    for ref in registry:
        loader = ref()
        try:
            index = core.DataLoader.open_index(loader)
        except ValueError:  # closed: its epoch ended with it
            continue
        if index >= 0:
            found.append((index, loader))
    return [loader for _, loader in sorted(found, key=lambda pair: pair[0])]


def _batch_arrays(batch_sampler: Iterable[Sequence[int]]) -> Tuple[list, list]:
    """One pass of a batch sampler as the C layout: the indices in order, and each batch's length."""
    batches = [[int(i) for i in batch] for batch in batch_sampler]
    return [i for batch in batches for i in batch], [len(batch) for batch in batches]


def _refresh_batches(loader: Any) -> None:
    """Before an epoch other than the one its batches were read for, iterate the loader's
    batch sampler again (after set_epoch on its sampler, or on it, as Accelerate's
    DataLoaderShard.set_epoch does) and hand the batches to the loader."""
    sampler = getattr(loader, "_batch_sampler", None)
    if sampler is None:
        return
    epoch = loader.epoch()
    if epoch == loader._batches_epoch:
        return
    for owner in (getattr(sampler, "sampler", None), sampler):
        if hasattr(owner, "set_epoch"):
            owner.set_epoch(epoch)
            break
    loader.set_batches(*_batch_arrays(sampler))
    loader._batches_epoch = epoch


_closeable(DataLoader, core.close_dataloader)
_closeable(core.DataLoader, core.close_dataloader)
core.DataLoader.__iter__ = DataLoader.__iter__
core.DataLoader.__len__ = DataLoader.__len__
