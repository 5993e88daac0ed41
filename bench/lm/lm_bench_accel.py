"""libaccel's Python-binding contestant of bench/lm_bench.sh: the loop a user
ports from Accelerate, over the TorchScript GPT-2 that lm_model.py exports
(AdamW lr 1e-4, weight decay 0.01; random ids, 8 x 128 tokens per process per step).

    lm_bench_accel.py MODEL_PT --steps N --warmup N --threads N [--mixed-precision no|bf16]

Needs the binding on PYTHONPATH (build/python). Threads come from
OMP_NUM_THREADS, as for lm_bench_c. Prints one BENCH_RESULT line per process."""
import argparse
import json
import os
import resource
import sys
import time

import numpy as np

import accel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lm_shapes import BATCH, LENGTH, VOCAB  # noqa: E402 (torch-free: no torch in this process)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)  # OMP_NUM_THREADS sets them
    p.add_argument("--mixed-precision", default="no", choices=["no", "bf16"])
    a = p.parse_args()
    acc = accel.Accelerator(cpu=True, mixed_precision=a.mixed_precision)
    model = accel.Model.from_torchscript(a.model)
    optimizer = accel.Optimizer(model, "adamw", lr=1e-4, weight_decay=0.01)
    acc.prepare(model, optimizer)
    rng = np.random.default_rng(1000 * acc.process_index)
    batches = []
    for _ in range(4):  # built before timing, as every contestant builds its batches
        ids = rng.integers(0, VOCAB, (BATCH, LENGTH), dtype=np.int64)
        batches.append({"input_ids": ids, "attention_mask": np.ones_like(ids), "labels": ids.copy()})

    def step(i):
        loss = model(**batches[i % 4])["loss"]
        acc.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        return loss

    for i in range(a.warmup):
        step(i)
    start = time.perf_counter()
    for i in range(a.steps):
        loss = step(i)
    seconds = time.perf_counter() - start
    print("BENCH_RESULT " + json.dumps({
        "contestant": "accel_py", "device": "cpu", "precision": a.mixed_precision, "rank": acc.process_index,
        "nproc": acc.num_processes, "threads": a.threads, "steps": a.steps, "seconds": round(seconds, 3),
        "tokens_per_s": round(a.steps * BATCH * LENGTH * acc.num_processes / seconds, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "loss": round(float(loss.item()), 4)}, separators=(",", ":")), flush=True)
    acc.end_training()


if __name__ == "__main__":
    main()
