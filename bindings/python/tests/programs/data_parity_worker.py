"""Run by test_data_parity.py under `accel launch` (2-4 processes): prepared loaders
report the len() and yield the batches Accelerate 0.22 gives each process (the
table tests/data/files/accelerate_loader_shards.json, for the mode in argv[1]), for
PyTorch-style batches and user batch samplers; iterable datasets are dispatched by
default, their last short batch split without padding, and without dispatch get
IterableDatasetShard's batches."""
import json
import os
import sys

import numpy as np

import accel

MODES = {"default": (False, True), "uneven": (False, False), "split_uneven": (True, False),
         "streams_not_dispatched": (False, True)}


class Identity:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.array([i], np.float32), i


class Stream:
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return ((np.array([i], np.float32), i) for i in range(self.n))


class Sampler:
    def __init__(self, batches, batch_size, drop_last):
        self.batches, self.drop_last = batches, drop_last
        if batch_size:
            self.batch_size = batch_size

    def __iter__(self):
        return iter(self.batches)


def main():
    mode = sys.argv[1]
    split, even = MODES[mode]
    streams = mode == "streams_not_dispatched"
    acc = accel.Accelerator(cpu=True, split_batches=split, even_batches=even, dispatch_batches=False if streams else None)
    rank, world = acc.process_index, acc.num_processes
    with open(os.path.join(os.environ["ACCEL_REPO"], "tests/data/files/accelerate_loader_shards.json")) as f:
        table = json.load(f)
    checked = 0
    for row in table:
        if streams and row["kind"] == "iterable_shard" and row["num_processes"] == world and not row["split_batches"]:
            if row["n"] == 0:
                continue
            loader = acc.prepare(accel.DataLoader(Stream(row["n"]), batch_size=row["batch_size"],
                                                  drop_last=row["drop_last"]))
            batches = [y.numpy().tolist() for _, y in loader]
            assert batches == row["batches"][rank], (row, batches)
            checked += 1
            continue
        if streams or row["kind"] not in ("batch_sampler", "user_batches") or row["num_processes"] != world:
            continue
        if (row["split_batches"], row["even_batches"]) != (split, even) or row.get("n") == 0:
            continue
        if row["kind"] == "batch_sampler":
            loader = accel.DataLoader(Identity(row["n"]), batch_size=row["batch_size"], drop_last=row["drop_last"])
        else:
            sampler = Sampler(row["sampler"], row["batch_size"], row["drop_last"])
            loader = accel.DataLoader(Identity(32), batch_sampler=sampler)
        loader = acc.prepare(loader)
        batches = [y.numpy().tolist() for _, y in loader]
        assert len(loader) == row["lengths"][rank], (row, len(loader))
        assert batches == row["batches"][rank], (row, batches)
        checked += 1
    assert checked > 20, checked

    if mode == "default":  # dispatch_batches unset: the iterable dataset is dispatched
        loader = acc.prepare(accel.DataLoader(Stream(10), batch_size=4))
        batches, gathered, remainders = [], [], []
        for _, y in loader:
            batches.append(y.numpy().tolist())
            remainders.append(acc.remainder())
            gathered.extend(acc.gather_for_metrics(y).numpy().tolist())
        rows = 10 % (4 * world) or 4 * world  # the last global batch's real rows
        assert remainders[-1] == rows and all(r == -1 for r in remainders[:-1]), remainders
        assert gathered == list(range(10)), gathered
        if world == 2:  # the example
            assert batches == ([[0, 1, 2, 3], [8]] if rank == 0 else [[4, 5, 6, 7], [9]]), batches
        assert len(batches[-1]) == rows // world + (1 if rows % world else 0), batches

        # A batch sampler drawing new batches each epoch (here: rotated by the epoch it is
        # told), iterated again on every process; gathered, each epoch is its batches in order.
        class Rotating:
            batch_size, epoch = 2, 0

            def set_epoch(self, epoch):
                self.epoch = epoch

            def __iter__(self):
                order = [(i + 5 * self.epoch) % 24 for i in range(24)]
                return iter([order[k:k + 2] for k in range(0, 24, 2)])  # 12 batches: any world of 2-4

        sampler = Rotating()
        loader = acc.prepare(accel.DataLoader(Identity(24), batch_sampler=sampler))
        for epoch in range(3):
            gathered = [v for _, y in loader for v in acc.gather_for_metrics(y).numpy().tolist()]
            assert gathered == [(i + 5 * epoch) % 24 for i in range(24)], (epoch, gathered)
    print(f"[rank {rank}] ok {world} {mode} {checked}", flush=True)


if __name__ == "__main__":
    main()
