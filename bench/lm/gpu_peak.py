"""The GPU side of the LM bench's MFU: the card's name and its measured
matrix-product peak, a square float32 and bfloat16 `torch.mm` on GPU 0.

    gpu_peak.py [--size 8192] [--seconds 2]

Prints one JSON line: {"gpu", "torch", "fp32_tflops", "bf16_tflops"}. float32
is measured as every contestant runs it, with TF32 off (PyTorch's and
LibTorch's default for matrix products); an n x n by n x n product is 2 n^3
floating-point operations, timed by CUDA events around a batch of products."""
import argparse
import json
import time

import torch


def tflops(dtype, size, seconds):
    a = torch.randn(size, size, device="cuda").to(dtype)
    b = torch.randn(size, size, device="cuda").to(dtype)
    out = torch.empty(size, size, dtype=dtype, device="cuda")
    torch.mm(a, b, out=out)  # picks the kernel
    torch.cuda.synchronize()
    best, deadline, batch = 0.0, time.perf_counter() + seconds, 10
    while time.perf_counter() < deadline:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(batch):
            torch.mm(a, b, out=out)
        end.record()
        end.synchronize()
        best = max(best, batch * 2.0 * size ** 3 / (start.elapsed_time(end) / 1e3) / 1e12)
    return round(best, 1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--seconds", type=float, default=2.0)
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    print(json.dumps({"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                      "fp32_tflops": tflops(torch.float32, a.size, a.seconds),
                      "bf16_tflops": tflops(torch.bfloat16, a.size, a.seconds)}), flush=True)


if __name__ == "__main__":
    main()
