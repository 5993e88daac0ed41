"""The Python contestants of bench/lm_bench.sh, training lm_model.py's GPT-2
with AdamW on random ids (8 x 128 tokens per process per step):
    lm_bench.py accelerate|torch --steps N --warmup N --threads N
`torch` is a plain loop (DDP over Gloo when WORLD_SIZE > 1), `accelerate` is
Python Accelerate 0.22's prepare/backward loop. Prints one BENCH_RESULT line
per process: tokens/s over all processes and the peak RSS (VmHWM).
--gpu 1 trains on the GPU (bench/lm_gpu.sh): batches moved there before
timing, the clock read after torch.cuda.synchronize(); --mixed-precision
bf16 is Accelerator(mixed_precision="bf16") or, for `torch`, torch.autocast;
--attn picks transformers' attention implementation (default: its own);
--label names the contestant in the result (lm_bench.sh tells the two
Accelerates apart with it)."""
import argparse
import json
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lm_model import BATCH, LENGTH, batch, bool_buffers, build  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("contestant", choices=["accelerate", "torch"])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--gpu", type=int, default=0)
    p.add_argument("--mixed-precision", default="no", choices=["no", "bf16", "fp16"])
    p.add_argument("--attn", default=None)
    p.add_argument("--label", default=None)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    model = build(a.attn).train()
    device = torch.device("cuda" if a.gpu else "cpu")
    sync = torch.cuda.synchronize if a.gpu else (lambda: None)
    model._ddp_params_and_buffers_to_ignore = bool_buffers(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    if a.contestant == "accelerate":
        from accelerate import Accelerator
        accelerator = Accelerator(cpu=not a.gpu, mixed_precision=a.mixed_precision)
        model, opt = accelerator.prepare(model, opt)
        rank, world, backward = accelerator.process_index, accelerator.num_processes, accelerator.backward
    else:
        world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
        if world > 1:
            import torch.distributed as dist
            dist.init_process_group("gloo", rank=rank, world_size=world)
            model = torch.nn.parallel.DistributedDataParallel(model)
        backward = torch.Tensor.backward
        model.to(device)
    batches = [[t.to(device) for t in batch(rank, i)] for i in range(4)]
    autocast_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(a.mixed_precision)
    own_autocast = a.contestant == "torch" and autocast_dtype is not None

    def step(i):
        ids, mask, labels = batches[i % 4]
        if own_autocast:
            with torch.autocast(device.type, dtype=autocast_dtype):
                loss = model(input_ids=ids, attention_mask=mask, labels=labels)["loss"]
        else:
            loss = model(input_ids=ids, attention_mask=mask, labels=labels)["loss"]
        backward(loss)
        opt.step()
        opt.zero_grad()
        return loss

    for i in range(a.warmup):
        step(i)
    sync()
    start = time.perf_counter()
    for i in range(a.steps):
        loss = step(i)
    sync()
    seconds = time.perf_counter() - start
    print("BENCH_RESULT " + json.dumps({
        "contestant": a.label or a.contestant + ("_ddp" if a.contestant == "torch" and world > 1 else "") +
        ("_" + a.attn if a.attn else ""), "torch": torch.__version__.split("+")[0], "device": device.type,
        "precision": a.mixed_precision, "rank": rank,
        "nproc": world, "threads": torch.get_num_threads(), "steps": a.steps, "seconds": round(seconds, 3),
        "tokens_per_s": round(a.steps * BATCH * LENGTH * world / seconds, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "loss": round(float(loss), 4)}, separators=(",", ":")), flush=True)


if __name__ == "__main__":
    main()
