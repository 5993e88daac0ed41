"""Accelerate parity of loaders (issue 17, items 1-6) through the Python binding."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import accel

WORKER = Path(__file__).parent / "programs" / "data_parity_worker.py"
sys.path.insert(0, str(WORKER.parent))
from data_parity_worker import Identity, Stream  # noqa: E402  (the datasets the launched runs use)
TABLE = Path(__file__).resolve().parents[3] / "tests" / "data" / "files" / "accelerate_loader_shards.json"


def labels(loader):
    return [y.numpy().tolist() for _, y in loader]


def test_skip_first_batches_length_is_the_rest_of_the_shard():
    loader = accel.DataLoader(Identity(10), batch_size=3)
    assert len(loader) == 4
    rest = loader.skip_first_batches(1)
    assert len(rest) == 3
    assert labels(rest) == [[3, 4, 5], [6, 7, 8], [9]]
    assert len(loader.skip_first_batches(9)) == 0  # never negative
    stream = accel.DataLoader(Stream(10), batch_size=3)
    with pytest.raises(TypeError, match="no len"):
        len(stream)
    with pytest.raises(TypeError, match="no len"):
        len(stream.skip_first_batches(1))


def test_remainder_is_known_from_the_epoch_start_in_one_process():
    acc = accel.Accelerator(cpu=True)
    loader = acc.prepare(accel.DataLoader(Identity(10), batch_size=4))
    assert acc.remainder() == -1
    remainders, gathered = [], []
    for _, y in loader:
        remainders.append(acc.remainder())
        gathered.extend(acc.gather_for_metrics(y).numpy().tolist())
    assert remainders == [2, 2, 2]
    assert gathered == list(range(10))
    assert acc.remainder() == -1  # outside the epoch
    dropping = acc.prepare(accel.DataLoader(Identity(10), batch_size=4, drop_last=True))
    assert [acc.remainder() for _ in dropping] == [-1, -1]


def test_iterable_datasets_are_dispatched_unless_told_otherwise():
    acc = accel.Accelerator(cpu=True)  # dispatch_batches=None
    loader = acc.prepare(accel.DataLoader(Stream(10), batch_size=4))
    assert [acc.remainder() for _ in loader] == [-1, -1, 2]  # the dispatcher's observed last batch
    off = accel.Accelerator(cpu=True, dispatch_batches=False)
    loader = off.prepare(accel.DataLoader(Stream(10), batch_size=4))
    assert [off.remainder() for _ in loader] == [-1, -1, -1]  # a stream's length is unknown
    with pytest.raises(accel.AccelError, match="dispatch_batches must be -1"):
        accel.Accelerator(cpu=True, dispatch_batches=-3)


def test_batch_sampler_with_varying_batch_sizes():
    batches = [[0, 1, 2], [3, 4], [5, 6, 7, 8], [9, 10, 11], [12, 13]]
    loader = accel.DataLoader(Identity(14), batch_sampler=batches)
    assert len(loader) == 5
    assert labels(loader) == batches
    assert labels(loader) == batches  # every epoch
    acc = accel.Accelerator(cpu=True)
    assert labels(acc.prepare(accel.DataLoader(Identity(14), batch_sampler=iter(batches)))) == batches
    with pytest.raises(ValueError, match="mutually exclusive with batch_size"):
        accel.DataLoader(Identity(14), batch_sampler=batches, batch_size=2)
    with pytest.raises(accel.AccelError, match="holds index 14"):
        accel.DataLoader(Identity(14), batch_sampler=[[13, 14]])
    with pytest.raises(accel.AccelError, match=r"batch_lengths\[1\] must be >= 1, got 0"):
        accel.DataLoader(Identity(14), batch_sampler=[[1], []])


class RotatingBatches:
    """A batch sampler that draws new batches each epoch (rotated by the epoch), told
    the epoch through set_epoch as Accelerate tells a sampler."""

    def __init__(self, n, size):
        self.n, self.size, self.epoch, self.told, self.iterated = n, size, 0, [], 0

    def set_epoch(self, epoch):
        self.epoch = epoch
        self.told.append(epoch)

    def batches_of(self, epoch):
        order = [(i + epoch) % self.n for i in range(self.n)]
        return [order[k:k + self.size] for k in range(0, self.n, self.size)]

    def __iter__(self):
        self.iterated += 1
        return iter(self.batches_of(self.epoch))

    def __len__(self):
        return (self.n + self.size - 1) // self.size


def test_a_batch_sampler_is_iterated_again_each_epoch_and_for_a_resumed_epoch(tmp_path):
    sampler = RotatingBatches(7, 3)
    acc = accel.Accelerator(cpu=True)
    loader = acc.prepare(accel.DataLoader(Identity(7), batch_sampler=sampler))
    assert [labels(loader) for _ in range(3)] == [sampler.batches_of(e) for e in range(3)]
    assert sampler.told == [1, 2]  # as Accelerate: only when the epoch changes
    assert sampler.iterated == 3  # once per epoch, none spent on inspecting it
    taken = []
    for _, y in loader:  # epoch 3, stopped after one batch and saved
        taken.append(y.numpy().tolist())
        acc.save_state(str(tmp_path / "ckpt"))
        break
    assert taken == sampler.batches_of(3)[:1]
    again = RotatingBatches(7, 3)
    resumed_acc = accel.Accelerator(cpu=True)
    resumed = resumed_acc.prepare(accel.DataLoader(Identity(7), batch_sampler=again))
    resumed_acc.load_state(str(tmp_path / "ckpt"))
    assert labels(resumed) == sampler.batches_of(3)[1:]
    assert again.told == [3]
    loader.set_epoch(5)  # the loader's own set_epoch: the sampler follows
    assert labels(loader) == sampler.batches_of(5)
    # A one-shot iterator is read once: its batches stay.
    fixed = accel.DataLoader(Identity(7), batch_sampler=iter([[0, 1], [2]]))
    assert [labels(fixed) for _ in range(2)] == [[[0, 1], [2]]] * 2


def orders(kind):
    with open(TABLE) as f:
        return [row for row in json.load(f) if row["kind"] == kind]


def test_without_a_seed_the_order_follows_set_seed():
    for row in orders("random_sampler"):
        acc = accel.Accelerator(cpu=True)
        loader = acc.prepare(accel.DataLoader(Identity(row["n"]), batch_size=row["n"], shuffle=True))
        acc.set_seed(row["set_seed"])
        assert [labels(loader)[0] for _ in range(3)] == row["epochs"], row


def test_seedable_sampler_uses_data_seed_plus_epoch():
    for row in orders("seedable_sampler"):
        acc = accel.Accelerator(cpu=True, use_seedable_sampler=True, data_seed=row["data_seed"])
        loader = acc.prepare(accel.DataLoader(Identity(row["n"]), batch_size=row["n"], shuffle=True, seed=5))
        assert [labels(loader)[0] for _ in range(3)] == row["epochs"], row
        acc = accel.Accelerator(cpu=True, use_seedable_sampler=True, data_seed=None)
        loader = acc.prepare(accel.DataLoader(Identity(row["n"]), batch_size=row["n"], shuffle=True))
        acc.set_seed(row["data_seed"])  # no data_seed: the global generator's initial seed
        assert [labels(loader)[0] for _ in range(3)] == row["epochs"], row


@pytest.mark.parametrize("nproc,mode", [(2, "default"), (3, "default"), (4, "default"), (2, "split_uneven"),
                                        (4, "split_uneven"), (3, "uneven"), (4, "streams_not_dispatched")])
def test_lengths_batches_and_dispatch_across_processes(nproc, mode):
    launcher = os.environ.get("ACCEL_CLI")
    if not launcher:
        pytest.skip("ACCEL_CLI (the accel command) is not set; run through CTest")
    result = subprocess.run(
        [launcher, "launch", "--nproc_per_node", str(nproc), "--master_port", "0", sys.executable, str(WORKER), mode],
        capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"[rank 0] ok {nproc} {mode}" in result.stdout
