"""Run by test_sequences_distributed.py under `accel launch`: token sequences with a Python
collate_fn across processes. Each rank gets Accelerate's BatchSamplerShard batches as dicts,
padded to its own longest; pad_across_processes then gather_for_metrics counts every sample once."""
import numpy as np

import accel

N = 11


def collate(samples):
    longest = max(len(s["input_ids"]) for s in samples)
    ids = np.full((len(samples), longest), -1, np.int64)
    for row, sample in enumerate(samples):
        ids[row, :len(sample["input_ids"])] = sample["input_ids"]
    return {"input_ids": ids, "index": [int(s["input_ids"][0]) - 1 for s in samples]}


def main():
    acc = accel.Accelerator(cpu=True)
    seqs = accel.Sequences.from_lists([[i + 1] * (i % 4 + 1) for i in range(N)])
    loader = accel.DataLoader(seqs, batch_size=2, collate_fn=collate, num_workers=1)
    acc.prepare(loader)
    rank, world = acc.process_index, acc.num_processes
    assert world == 2
    # range(11), batch 2, 2 processes, even_batches: rank 0 [0,1] [4,5] [8,9]; rank 1 [2,3] [6,7] [10,0].
    expected = [[[0, 1], [4, 5], [8, 9]], [[2, 3], [6, 7], [10, 0]]][rank]
    seen = []
    for b, batch in enumerate(loader):
        assert list(batch) == ["input_ids", "index"], list(batch)
        index = batch["index"].numpy().tolist()
        assert index == expected[b], (b, index)
        width = batch["input_ids"].numpy().shape[1]
        assert width == max(i % 4 + 1 for i in index), (index, width)
        padded = acc.pad_across_processes(batch["input_ids"], dim=1, pad_index=-1)
        gathered = acc.gather_for_metrics(padded).numpy()
        seen += [int(row[0]) - 1 for row in gathered]
    assert sorted(seen) == list(range(N)), seen
    print(f"[rank {rank}] ok {world}", flush=True)


if __name__ == "__main__":
    main()
