"""Python datasets through the callback dataset: map-style, iterable, worker threads, errors."""
import numpy as np
import pytest

import accel


class Squares:
    """x = [i, i*i] (float32), y = i % 3 (int64)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return np.array([i, i * i], np.float32), i % 3


def collect(loader):
    xs, ys = [], []
    for x, y in loader:
        xs.append(x.numpy())
        ys.append(y.numpy())
    return np.concatenate(xs), np.concatenate(ys)


def test_map_dataset_yields_every_sample_in_order():
    loader = accel.DataLoader(Squares(10), batch_size=4)
    assert len(loader) == 3
    x, y = collect(loader)
    np.testing.assert_array_equal(x[:, 0], np.arange(10))
    np.testing.assert_array_equal(x[:, 1], np.arange(10) ** 2)
    np.testing.assert_array_equal(y, np.arange(10) % 3)
    assert y.dtype == np.int64


@pytest.mark.parametrize("workers", [1, 3])
def test_worker_threads_call_python_and_keep_the_order(workers):
    plain = collect(accel.DataLoader(Squares(50), batch_size=4, shuffle=True, seed=7))
    threaded = collect(accel.DataLoader(Squares(50), batch_size=4, shuffle=True, seed=7, num_workers=workers))
    np.testing.assert_array_equal(plain[0], threaded[0])
    np.testing.assert_array_equal(plain[1], threaded[1])
    assert sorted(plain[0][:, 0].tolist()) == list(range(50))


def test_exception_in_getitem_becomes_an_accel_error_naming_it():
    class Broken(Squares):
        def __getitem__(self, i):
            if i == 5:
                raise KeyError("sample five is missing")
            return super().__getitem__(i)

    for workers in (0, 2):
        loader = accel.DataLoader(Broken(8), batch_size=2, num_workers=workers)
        with pytest.raises(accel.AccelError, match="sample five is missing"):
            collect(loader)


def test_sample_of_the_wrong_shape_is_an_error():
    class Ragged(Squares):
        def __getitem__(self, i):
            return np.zeros(2 if i < 3 else 3, np.float32), 0

    with pytest.raises(accel.AccelError, match=r"field 0 has shape \(3,\), the first sample's has shape \(2,\)"):
        collect(accel.DataLoader(Ragged(6), batch_size=2))

    class Transposed(Squares):  # as many bytes, another shape: refused too, not reinterpreted
        def __getitem__(self, i):
            return np.zeros((2, 3) if i < 3 else (3, 2), np.float32), 0

    with pytest.raises(accel.AccelError, match=r"field 0 has shape \(3, 2\), the first sample's has shape \(2, 3\)"):
        collect(accel.DataLoader(Transposed(6), batch_size=2))

    def stream():
        for n in (4, 4, 5):
            yield np.zeros(n, np.int64)

    with pytest.raises(accel.AccelError, match=r"field 0 has shape \(5,\), the first sample's has shape \(4,\)"):
        list(accel.DataLoader(stream(), batch_size=1))  # batches of one field each


def test_iterable_dataset_with_set_epoch():
    class Stream:
        def __init__(self):
            self.epoch = 0

        def set_epoch(self, epoch):
            self.epoch = epoch

        def __iter__(self):
            for i in range(7):
                yield np.array([i + 100 * self.epoch], np.float32), i

    loader = accel.DataLoader(Stream(), batch_size=3)
    assert loader.dataset.is_iterable()
    x, y = collect(loader)
    np.testing.assert_array_equal(x[:, 0], np.arange(7))
    loader.set_epoch(2)
    x, _ = collect(loader)
    np.testing.assert_array_equal(x[:, 0], np.arange(7) + 200)


def test_dataset_from_tensors_and_skip_first_batches():
    xs = accel.tensor(np.arange(20, dtype=np.float32).reshape(10, 2))
    ys = accel.tensor(np.arange(10))
    loader = accel.DataLoader(accel.Dataset.from_tensors(xs, ys), batch_size=3)
    rest = loader.skip_first_batches(2)
    _, y = collect(rest)
    np.testing.assert_array_equal(y, [6, 7, 8, 9])


def test_empty_and_unsupported_datasets_are_rejected():
    with pytest.raises(ValueError, match="empty"):
        accel.DataLoader([])
    with pytest.raises(TypeError, match="neither map-style"):
        accel.DataLoader(42)
    with pytest.raises(TypeError, match="no option 'batchsize'"):
        accel.DataLoader(Squares(4), batchsize=2)


def test_prepared_loader_and_gather_for_metrics_single_process():
    acc = accel.Accelerator(cpu=True)
    loader = acc.prepare(accel.DataLoader(Squares(10), batch_size=4))
    seen, ends = [], []
    for x, y in loader:
        ends.append(acc.end_of_dataloader())
        seen.append(acc.gather_for_metrics(y).numpy())
    assert ends == [False, False, True]
    assert not acc.end_of_dataloader()  # outside the loop, as in Accelerate
    assert np.concatenate(seen).tolist() == [i % 3 for i in range(10)]


def test_gradient_state_follows_the_loader_being_iterated():
    """Accelerate's test_dataloader_break: loaders of 80 and 96 samples in batches of 16, the
    second iterated whole inside the first's second batch."""
    acc = accel.Accelerator(cpu=True)
    first, second = acc.prepare(accel.DataLoader(Squares(80), batch_size=16),
                                accel.DataLoader(Squares(96), batch_size=16))
    state = acc.gradient_state
    assert state.active_dataloader is None and not state.in_dataloader
    assert state.dataloader_references == [None]
    for iteration, _ in enumerate(first):
        assert state.active_dataloader is first
        assert state.end_of_dataloader == (iteration == len(first) - 1)
        if iteration == 1:
            for batch_num, _ in enumerate(second):
                assert state.active_dataloader is second
                assert state.dataloader_references == [None, first, second]
                assert state.end_of_dataloader == (batch_num == len(second) - 1)
            assert state.dataloader_references == [None, first]
    assert state.active_dataloader is None and not state.in_dataloader


def test_gradient_state_after_a_break_and_for_skipped_loaders():
    acc = accel.Accelerator(cpu=True)
    loader = acc.prepare(accel.DataLoader(Squares(10), batch_size=4))
    for _ in loader:
        break
    assert acc.gradient_state.active_dataloader is loader  # as Accelerate's suspended iterator
    loader.set_epoch(1)
    assert not acc.gradient_state.in_dataloader
    skipped = acc.skip_first_batches(loader, 1)
    batches = iter(skipped)
    next(batches)
    assert acc.gradient_state.active_dataloader is skipped
    del batches
    skipped.close()
    assert acc.gradient_state.dataloader_references == [None]
    unprepared = accel.DataLoader(Squares(10), batch_size=4)
    next(iter(unprepared))
    assert not acc.gradient_state.in_dataloader


def test_safetensors_directory_written_by_python(tmp_path):
    from safetensors.numpy import save_file

    for shard, first in (("train-00001.safetensors", 4), ("train-00000.safetensors", 0)):
        save_file({"pixels": np.full((4, 2, 2), first, np.float32) + np.arange(4, dtype=np.float32)[:, None, None],
                   "label": np.arange(first, first + 4, dtype=np.int64)}, str(tmp_path / shard))
    dataset = accel.Dataset.from_safetensors(str(tmp_path), ["pixels", "label"])
    assert dataset.size() == 8
    x, y = collect(accel.DataLoader(dataset, batch_size=3, shuffle=False, num_workers=0))
    np.testing.assert_array_equal(y, np.arange(8))
    np.testing.assert_array_equal(x[:, 1, 1], np.arange(8))
    with pytest.raises(accel.AccelError, match="has no tensor 'labels'"):
        accel.Dataset.from_safetensors(str(tmp_path), ["pixels", "labels"])
