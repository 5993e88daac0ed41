"""The Python Accelerate contestant of bench/run.sh (CPU, 1 and 2 processes under
`accel launch`) and of the GPU comparison (bench/gpu.sh): the same workloads,
data and AdamW as every other contestant, written the way the Accelerate docs
write a training loop. Needs `accelerate` (0.22 in the test venv).
    python3 bench/accelerate_bench.py --workload mlp --steps 3000 --mixed-precision bf16
"""
import argparse
import json
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F
from accelerate import Accelerator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_bench import WORKLOADS, build, cuda_sync  # noqa: E402  (one definition of the models)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", default="mlp", choices=sorted(WORKLOADS))
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--mixed-precision", default="no", choices=["no", "bf16"])
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: OMP_NUM_THREADS / default)")
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    accelerator = Accelerator(mixed_precision=a.mixed_precision)
    torch.manual_seed(0)
    model, shape = build(a.workload)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    model, opt = accelerator.prepare(model, opt)
    batch = WORKLOADS[a.workload]
    g = torch.Generator().manual_seed(1234 + accelerator.process_index)
    xs = [torch.randn((batch,) + shape, generator=g).to(accelerator.device) for _ in range(4)]
    ys = [torch.randint(0, 10, (batch,), generator=g).to(accelerator.device) for _ in range(4)]

    def step(i):
        opt.zero_grad()
        loss = F.cross_entropy(model(xs[i % 4]), ys[i % 4])
        accelerator.backward(loss)
        opt.step()

    for i in range(a.warmup):
        step(i)
    cuda_sync(accelerator.device)
    start = time.perf_counter()
    for i in range(a.steps):
        step(i)
    cuda_sync(accelerator.device)
    seconds = time.perf_counter() - start
    sps = a.steps / seconds
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("BENCH_RESULT " + json.dumps({
        "contestant": "accelerate_py", "workload": a.workload, "rank": accelerator.process_index,
        "nproc": accelerator.num_processes, "threads": torch.get_num_threads(), "steps": a.steps,
        "seconds": round(seconds, 4), "steps_per_s": round(sps, 3),
        "samples_per_s": round(sps * batch * accelerator.num_processes, 1), "peak_rss_mb": round(rss, 1),
        "device": accelerator.device.type, "precision": a.mixed_precision,
        "distributed_type": str(accelerator.distributed_type).split(".")[-1]}, separators=(",", ":")), flush=True)


if __name__ == "__main__":
    main()
