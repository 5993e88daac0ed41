"""Contestant (e): libaccel from Python, the loop of accel_bench.cpp through the
Python binding. Run by bench/run.sh with PYTHONPATH=<build>/python:
    OMP_NUM_THREADS=2 python3 bench/bindings/accel_bench.py --workload tiny --steps 600"""
import argparse
import json
import os
import resource
import time

import numpy as np

import accel

SAMPLE_SHAPE = {"tiny": (32, 784), "mlp": (64, 784), "cnn": (32, 1, 28, 28), "sync": (8, 4096)}
BATCHES = 4  # distinct in-memory batches, cycled


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", default="tiny", choices=sorted(SAMPLE_SHAPE))
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="recorded; set through OMP_NUM_THREADS")
    parser.add_argument("--trace-dir", help="then profile --trace-steps more steps into it (bench/crossing.py)")
    parser.add_argument("--trace-steps", type=int, default=50)
    args = parser.parse_args()
    shape = SAMPLE_SHAPE[args.workload]
    with open(os.path.join(os.path.dirname(__file__), "..", "workloads", f"{args.workload}.json")) as f:
        spec = f.read()

    acc = accel.Accelerator()
    model = accel.Model.from_json(spec)
    optimizer = accel.Optimizer(model, "adamw", lr=1e-3, weight_decay=0.01)
    acc.prepare(model, optimizer)
    rank, world = acc.process_index, acc.num_processes
    rng = np.random.default_rng(1234 + rank)
    xs = [accel.tensor(rng.standard_normal(shape, dtype=np.float32)) for _ in range(BATCHES)]
    ys = [accel.tensor(rng.integers(0, 10, shape[0], dtype=np.int64)) for _ in range(BATCHES)]

    def train_step(step: int) -> None:
        b = (step + args.warmup) % BATCHES
        optimizer.zero_grad()
        loss = model(xs[b]).loss("cross_entropy", ys[b])
        acc.backward(loss)
        optimizer.step()

    start = 0.0
    for step in range(-args.warmup, args.steps):
        if step == 0:
            acc.wait_for_everyone()
            start = time.perf_counter()
        train_step(step)
    seconds = time.perf_counter() - start
    if args.trace_dir:  # after the timed steps: the profiler slows what it records
        with acc.profile(args.trace_dir):
            for step in range(args.trace_steps):
                train_step(step)
    rate = args.steps / seconds
    print("BENCH_RESULT " + json.dumps({
        "contestant": "accel_py", "workload": args.workload, "rank": rank, "nproc": world,
        "threads": int(os.environ.get("OMP_NUM_THREADS", "0")), "steps": args.steps, "seconds": round(seconds, 4),
        "steps_per_s": round(rate, 3), "samples_per_s": round(rate * shape[0] * world, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)}), flush=True)


if __name__ == "__main__":
    main()
