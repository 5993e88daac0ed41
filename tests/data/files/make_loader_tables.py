"""Regenerates accelerate_loader_shards.json from Hugging Face Accelerate 0.22's
own BatchSamplerShard (the reference): for 1-4 processes, per process, the
length len() reports and the batches it yields, for PyTorch BatchSamplers
(dataset lengths that divide and not, drop_last, even_batches,
split_batches) and for user batch samplers with varying batch sizes (with and
without a batch_size attribute), and IterableDatasetShard's batches for 2-4
processes (dispatch_batches off). Also the first epochs' shuffle orders of a
RandomSampler after torch.manual_seed (set_seed), and of Accelerate 1.x's
SeedableRandomSampler rule (torch.randperm from data_seed + epoch).

    .venv/bin/python tests/data/files/make_loader_tables.py   (accelerate 0.22 and torch)
"""
import json
import os

import torch
from torch.utils.data import BatchSampler, DataLoader, IterableDataset, RandomSampler, SequentialSampler
from accelerate.data_loader import BatchSamplerShard, IterableDatasetShard

here = os.path.dirname(os.path.abspath(__file__))


class UserBatchSampler:
    """A user's batch sampler: fixed batches, optionally with batch_size/drop_last attributes."""

    def __init__(self, batches, batch_size=None, drop_last=False):
        self.batches = batches
        if batch_size is not None:
            self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        return iter([list(b) for b in self.batches])

    def __len__(self):
        return len(self.batches)


def shards(sampler, P, even, split):
    if P == 1:
        return [len(sampler)], [[list(b) for b in sampler]]
    lengths, batches = [], []
    for i in range(P):
        shard = BatchSamplerShard(sampler, P, i, split_batches=split, even_batches=even)
        lengths.append(len(shard))
        batches.append([list(b) for b in shard])
    return lengths, batches


rows = []
for n in [0, 1, 5, 10, 12, 16, 17, 22, 24, 25]:
    for bs in [1, 3, 4, 6]:
        for P in [1, 2, 3, 4]:
            for drop_last in [False, True]:
                for even in [True, False]:
                    for split in [False, True]:
                        if split and bs % P != 0:
                            continue
                        lengths, batches = shards(BatchSampler(SequentialSampler(range(n)), bs, drop_last), P, even, split)
                        rows.append(dict(kind="batch_sampler", n=n, batch_size=bs, num_processes=P, drop_last=drop_last,
                                         even_batches=even, split_batches=split, lengths=lengths, batches=batches))

varying = [
    [[0, 1, 2], [3, 4], [5, 6, 7, 8], [9, 10, 11], [12, 13]],  # Accelerate's test_batch_sampler_with_varying_batch_size
    [[0, 1, 2, 3], [4, 5], [6, 7, 8, 9], [10, 11, 12, 13], [14], [15, 16, 17, 18], [19, 20]],
    [[5, 3], [1, 0, 2, 4], [7, 6, 8, 9], [10, 11]],
]
for sampler_batches in varying:
    for batch_size in [None, 4]:
        for drop_last in [False, True]:
            for P in [1, 2, 3, 4]:
                for even in [True, False]:
                    for split in [False, True]:
                        if (batch_size is None and P > 1 and (even or split)) or (split and (batch_size or 1) % P):
                            continue  # Accelerate refuses these
                        sampler = UserBatchSampler(sampler_batches, batch_size, drop_last)
                        lengths, batches = shards(sampler, P, even, split)
                        rows.append(dict(kind="user_batches", sampler=sampler_batches, batch_size=batch_size or 0,
                                         num_processes=P, drop_last=drop_last, even_batches=even,
                                         split_batches=split, lengths=lengths, batches=batches))

class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))


# Iterable datasets without dispatch_batches: IterableDatasetShard's padding, up to 4 processes.
for n in [0, 1, 5, 10, 17, 22, 25]:
    for bs in [1, 3, 4]:
        for P in [2, 3, 4]:
            for drop_last in [False, True]:
                for split in [False, True]:
                    if split and bs % P != 0:
                        continue
                    out = []
                    for i in range(P):
                        shard = IterableDatasetShard(Stream(n), batch_size=bs, drop_last=drop_last,
                                                     num_processes=P, process_index=i, split_batches=split)
                        loader = DataLoader(shard, batch_size=bs // P if split else bs, drop_last=drop_last)
                        out.append([b.tolist() for b in loader])
                    rows.append(dict(kind="iterable_shard", n=n, batch_size=bs, num_processes=P, drop_last=drop_last,
                                     split_batches=split, batches=out))

orders = []
for seed in [0, 42, 1234]:
    for n in [7, 16]:
        torch.manual_seed(seed)
        sampler = RandomSampler(range(n))
        orders.append(dict(kind="random_sampler", set_seed=seed, n=n, epochs=[list(sampler) for _ in range(3)]))
        orders.append(dict(kind="seedable_sampler", data_seed=seed, n=n,
                           epochs=[torch.randperm(n, generator=torch.Generator().manual_seed(seed + e)).tolist()
                                   for e in range(3)]))

with open(os.path.join(here, "accelerate_loader_shards.json"), "w") as f:
    f.write("[\n" + ",\n".join(json.dumps(r, separators=(",", ":")) for r in rows + orders) + "\n]\n")
