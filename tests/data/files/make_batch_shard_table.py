"""Regenerates accelerate_batch_shards.json: the expected batches per process from
Hugging Face Accelerate's own BatchSamplerShard (the reference behaviour).

    python3 -m venv --system-site-packages v && v/bin/pip install accelerate==0.34.2
    v/bin/python tests/data/files/make_batch_shard_table.py   (needs torch)
"""
import json
import os

from torch.utils.data import BatchSampler, SequentialSampler
from accelerate.data_loader import BatchSamplerShard
cases = []
for n in [0, 1, 5, 12, 16, 17, 22, 24, 25]:
    for bs in [1, 3, 4]:
        for P in [1, 2, 3]:
            for drop_last in [False, True]:
                for even in [True, False]:
                    bsamp = BatchSampler(SequentialSampler(range(n)), bs, drop_last)
                    out = []
                    for i in range(P):
                        if P == 1:
                            out.append([list(b) for b in bsamp])
                        else:
                            out.append([list(b) for b in BatchSamplerShard(bsamp, P, i, split_batches=False, even_batches=even)])
                    cases.append((n, bs, P, drop_last, even, out))
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "accelerate_batch_shards.json"), "w") as f:
    rows = [dict(n=n, batch_size=bs, num_processes=P, drop_last=dl, even_batches=ev, batches=b)
            for n, bs, P, dl, ev, b in cases]
    f.write("[\n" + ",\n".join(json.dumps(r, separators=(",", ":")) for r in rows) + "\n]\n")
