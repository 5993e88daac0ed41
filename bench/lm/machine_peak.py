"""The machine's side of the LM bench's MFU: the CPU (model, and the ISA that
decides which kernels the libraries pick) and its measured matrix-product
peak, a square float32 and bfloat16 `torch.mm` on the bench's threads.

    machine_peak.py [--threads 2] [--size 4096] [--seconds 3]

Prints one JSON line: {"cpu", "isa", "torch", "threads", "fp32_gflops", "bf16_gflops"}.
lm_bench.sh runs it under every Python it has (Debian's torch 1.13 with
OpenBLAS/oneDNN 2.6, PyPI's torch 2.x with MKL/oneDNN 3.x) and takes the
best of each as the peak: the fastest product this machine was seen to run.
A product of n x n by n x n is 2 n^3 floating-point operations."""
import argparse
import json
import time

import torch

# /proc/cpuinfo flags, most capable last: the highest present names the ISA.
ISA_FLAGS = [("avx2", "AVX2"), ("avx512f", "AVX-512"), ("avx512_bf16", "AVX-512-BF16"), ("amx_bf16", "AMX-BF16")]


def cpu():
    model, flags = "unknown", set()
    with open("/proc/cpuinfo") as info:
        for line in info:
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model == "unknown":
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    isa = [name for flag, name in ISA_FLAGS if flag in flags]
    return model, " ".join(isa) if isa else "SSE only"


def gflops(dtype, size, seconds):
    a = torch.randn(size, size).to(dtype)
    b = torch.randn(size, size).to(dtype)
    out = torch.empty(size, size, dtype=dtype)
    torch.mm(a, b, out=out)  # the first call picks and JIT-compiles the kernel
    best, deadline = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        start = time.perf_counter()
        torch.mm(a, b, out=out)
        best = max(best, 2.0 * size ** 3 / (time.perf_counter() - start) / 1e9)
    return round(best, 1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--seconds", type=float, default=3.0)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    model, isa = cpu()
    print(json.dumps({"cpu": model, "isa": isa, "torch": torch.__version__, "threads": a.threads,
                      "fp32_gflops": gflops(torch.float32, a.size, a.seconds),
                      "bf16_gflops": gflops(torch.bfloat16, a.size, a.seconds)}), flush=True)


if __name__ == "__main__":
    main()
