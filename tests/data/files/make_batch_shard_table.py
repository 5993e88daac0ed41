"""Regenerates the expected batches per process from Hugging Face Accelerate's own
BatchSamplerShard and IterableDatasetShard (the reference behaviour):
accelerate_batch_shards.json (map-style datasets) and
accelerate_iterable_shards.json (iterable datasets).

    python3 -m venv --system-site-packages v && v/bin/pip install accelerate==0.34.2
    v/bin/python tests/data/files/make_batch_shard_table.py   (needs torch)
"""
import json
import os

from torch.utils.data import BatchSampler, DataLoader, IterableDataset, SequentialSampler
from accelerate.data_loader import BatchSamplerShard, IterableDatasetShard

here = os.path.dirname(os.path.abspath(__file__))


def write(name, rows):
    with open(os.path.join(here, name), "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(r, separators=(",", ":")) for r in rows) + "\n]\n")


rows = []
for n in [0, 1, 5, 12, 16, 17, 22, 24, 25]:
    for bs in [1, 3, 4, 6]:
        for P in [1, 2, 3]:
            for drop_last in [False, True]:
                for even in [True, False]:
                    for split in [False, True]:
                        if split and bs % P != 0:
                            continue
                        bsamp = BatchSampler(SequentialSampler(range(n)), bs, drop_last)
                        out = []
                        for i in range(P):
                            if P == 1:
                                out.append([list(b) for b in bsamp])
                            else:
                                shard = BatchSamplerShard(bsamp, P, i, split_batches=split, even_batches=even)
                                out.append([list(b) for b in shard])
                        rows.append(dict(n=n, batch_size=bs, num_processes=P, drop_last=drop_last,
                                         even_batches=even, split_batches=split, batches=out))
write("accelerate_batch_shards.json", rows)


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))


rows = []
for n in [0, 1, 5, 12, 16, 17, 22, 25]:
    for bs in [1, 3, 4, 6]:
        for P in [1, 2, 3]:
            for drop_last in [False, True]:
                for split in [False, True]:
                    if split and bs % P != 0:
                        continue
                    out = []
                    for i in range(P):
                        if P == 1:  # prepare() does not shard a single process's iterable loader
                            out.append([b.tolist() for b in DataLoader(Stream(n), batch_size=bs, drop_last=drop_last)])
                            continue
                        shard = IterableDatasetShard(Stream(n), batch_size=bs, drop_last=drop_last,
                                                     num_processes=P, process_index=i, split_batches=split)
                        per_process = bs // P if split else bs
                        loader = DataLoader(shard, batch_size=per_process, drop_last=drop_last)
                        out.append([b.tolist() for b in loader])
                    rows.append(dict(n=n, batch_size=bs, num_processes=P, drop_last=drop_last,
                                     split_batches=split, batches=out))
write("accelerate_iterable_shards.json", rows)
