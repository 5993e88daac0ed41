"""Contestant (d): Python PyTorch, a plain loop for 1 process and
DistributedDataParallel over Gloo for 2 (started by `accel launch`, which sets
RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT; torchrun of Debian's torch 1.13 fails
on Python 3.11). With --no-sync the 2 processes train without DDP. With
--device cuda it is the plain-PyTorch peer of the GPU comparison (bench/gpu.sh),
bf16 through autocast as Accelerate does it.
    OMP_NUM_THREADS=2 /usr/bin/python3 bench/torch_bench.py --workload tiny --steps 2000 --threads 2
"""
import argparse
import contextlib
import json
import os
import resource
import sys
import time

import torch
import torch.nn as nn

WORKLOADS = {"tiny": 32, "mlp": 64, "cnn": 32, "sync": 8}


def cuda_sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def build(name):
    if name == "tiny":
        return nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)), (784,)
    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                             nn.Linear(1024, 10)), (784,)
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 512, 3), nn.MaxPool2d(2, 2), nn.Conv2d(512, 256, 5), nn.MaxPool2d(2, 2),
                             nn.Dropout2d(0.1), nn.AdaptiveMaxPool2d((1, 1)), nn.Flatten(), nn.Linear(256, 128),
                             nn.ReLU(), nn.Linear(128, 10)), (1, 28, 28)
    layers = []
    for _ in range(4):
        layers += [nn.Linear(4096, 4096), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(4096, 10)), (4096,)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workload", default="tiny", choices=sorted(WORKLOADS))
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--no-sync", action="store_true")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--mixed-precision", default="no", choices=["no", "bf16"])
    a = p.parse_args()
    device = torch.device(a.device)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model, shape = build(a.workload)
    model = model.to(device)
    contestant = "torch_py"
    if world > 1 and not a.no_sync:
        model = nn.parallel.DistributedDataParallel(model)
        contestant = "torch_py_ddp"
    elif a.no_sync:
        contestant = "torch_py_nosync"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    loss_fn = nn.CrossEntropyLoss()
    batch = WORKLOADS[a.workload]
    g = torch.Generator().manual_seed(1234 + rank)
    xs = [torch.randn((batch,) + shape, generator=g).to(device) for _ in range(4)]
    ys = [torch.randint(0, 10, (batch,), generator=g).to(device) for _ in range(4)]
    bf16 = a.mixed_precision == "bf16"

    def step(i):
        opt.zero_grad()
        with torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext():
            out = model(xs[i % 4])
        loss = loss_fn(out.float(), ys[i % 4])
        loss.backward()
        opt.step()

    for i in range(a.warmup):
        step(i)
    if world > 1:
        torch.distributed.barrier()
    cuda_sync(device)
    start = time.perf_counter()
    for i in range(a.steps):
        step(i)
    cuda_sync(device)
    seconds = time.perf_counter() - start
    sps = a.steps / seconds
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("BENCH_RESULT " + json.dumps({
        "contestant": contestant, "workload": a.workload, "rank": rank, "nproc": world,
        "threads": torch.get_num_threads(), "steps": a.steps, "seconds": round(seconds, 4),
        "steps_per_s": round(sps, 3), "samples_per_s": round(sps * batch * world, 1),
        "peak_rss_mb": round(rss, 1), "device": a.device, "precision": a.mixed_precision}, separators=(",", ":")), flush=True)
    sys.stdout.flush()
    # A Gloo DDP process can hang in interpreter teardown (reducer vs GIL).
    os._exit(0)


if __name__ == "__main__":
    main()
