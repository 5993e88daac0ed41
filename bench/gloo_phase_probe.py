#!/usr/bin/env python3
"""Plain PyTorch + Gloo, no libaccel: what a 2-rank exchange of the `tiny`
model's gradient bytes costs on its own, and after a step's compute. The
breakdown (bench/breakdown.py) shows libaccel's synced step well above
no-comm + raw allreduce; this probe shows PyTorch pays the same surcharge, so it
lies in Gloo's threads on 2 cores, not in the library.

  build/bin/accel launch --nproc_per_node 2 --master_port 0 /usr/bin/python3 bench/gloo_phase_probe.py
"""
import time

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    torch.set_num_threads(1)
    rank = dist.get_rank()
    peer = 1 - rank
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    x, y = torch.randn(32, 784), torch.randint(0, 10, (32,))
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    received = torch.empty_like(flat)

    def compute():
        model.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()

    def exchange():
        works = [dist.isend(flat, peer), dist.irecv(received, peer)]
        for w in works:
            w.wait()
        flat.add_(received)

    def spin(seconds):
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            pass

    cases = [
        ("compute (no communication)", compute),
        ("Gloo allreduce", lambda: dist.all_reduce(flat)),
        ("send/recv exchange", exchange),
        ("compute, then Gloo allreduce", lambda: (compute(), dist.all_reduce(flat))),
        ("compute, then exchange", lambda: (compute(), exchange())),
        ("0.3 ms spin, then exchange", lambda: (spin(0.0003), exchange())),
    ]
    for name, f in cases:
        for _ in range(20):
            f()
        dist.barrier()
        steps = 400
        start = time.perf_counter()
        for _ in range(steps):
            f()
        ms = (time.perf_counter() - start) / steps * 1e3
        if rank == 0:
            print(f"{name:32s} {ms:7.3f} ms", flush=True)


if __name__ == "__main__":
    main()
