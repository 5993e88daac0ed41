"""One contestant of bench/bigmodel_bench.sh: offloaded greedy generation of a GPT-style model
several times larger than its CPU budget, loaded empty and dispatched over cpu and disk.

  bigmodel_bench.py --make-checkpoint DIR [--layers N --width W]   writes DIR/model.safetensors (libaccel)
  bigmodel_bench.py --contestant accel|accelerate --work DIR --budget BYTES [--tokens K]

accel: libaccel's Python binding (accel.init_empty_weights, accel.load_checkpoint_and_dispatch).
accelerate: Python Accelerate 0.22 on the same network written with torch.nn (the JSON spec's
PyTorch twin: same parameter names and layers), accelerate.init_empty_weights and
accelerate.load_checkpoint_and_dispatch. Both use device_map="auto" with max_memory={"cpu": budget}
and no_split_module_classes=["TransformerEncoderLayer"], and generate without a KV cache.
Prints one BENCH_RESULT line: load seconds, tokens/s, peak RSS (VmHWM) and RSS after the
imports, the device map and the tokens.
"""
import argparse
import json
import os
import sys
import time

VOCAB = 256


def spec(layers, width):
    block = {"type": "TransformerEncoderLayer", "d_model": width, "nhead": 4, "dim_feedforward": 4 * width,
             "dropout": 0.0, "activation": "gelu", "batch_first": True, "norm_first": True}
    return json.dumps({"inputs": ["input_ids"], "nodes": [
        {"name": "wte", "type": "Embedding", "num_embeddings": VOCAB, "embedding_dim": width},
        {"name": "h", "type": "Sequential", "layers": [block] * layers},
        {"name": "ln_f", "type": "LayerNorm", "normalized_shape": width},
        {"name": "logits", "type": "Linear", "in_features": width, "out_features": VOCAB, "bias": False}],
        "outputs": ["logits"]})


def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def torch_twin(layers, width):
    """The JSON spec written with torch.nn, parameter names included. Attention is written out
    (as transformers' models write it) rather than with nn.MultiheadAttention, which reads
    out_proj's weight without calling out_proj, so Accelerate's offload hooks never load it."""
    import math

    import torch
    import torch.nn.functional as F
    from torch import nn

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.in_proj_weight = nn.Parameter(torch.empty(3 * width, width))
            self.in_proj_bias = nn.Parameter(torch.empty(3 * width))
            self.out_proj = nn.Linear(width, width)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1)
            split = lambda y: y.view(b, t, 4, width // 4).transpose(1, 2)
            q, k, v = split(q), split(k), split(v)
            att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(width // 4), dim=-1)
            return self.out_proj((att @ v).transpose(1, 2).reshape(b, t, width))

    class TransformerEncoderLayer(nn.Module):  # norm_first, gelu, no dropout
        def __init__(self):
            super().__init__()
            self.self_attn = SelfAttention()
            self.linear1 = nn.Linear(width, 4 * width)
            self.linear2 = nn.Linear(4 * width, width)
            self.norm1 = nn.LayerNorm(width)
            self.norm2 = nn.LayerNorm(width)

        def forward(self, x):
            x = x + self.self_attn(self.norm1(x))
            return x + self.linear2(F.gelu(self.linear1(self.norm2(x))))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, width)
            self.h = nn.Sequential(*[TransformerEncoderLayer() for _ in range(layers)])
            self.ln_f = nn.LayerNorm(width)
            self.logits = nn.Linear(width, VOCAB, bias=False)

        def forward(self, input_ids):
            return self.logits(self.ln_f(self.h(self.wte(input_ids))))

    return Gpt()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--make-checkpoint")
    p.add_argument("--contestant", choices=["accel", "accelerate"])
    p.add_argument("--work")
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--budget", type=int, default=0)
    p.add_argument("--tokens", type=int, default=16)
    p.add_argument("--prompt", type=int, default=32)
    a = p.parse_args()

    if a.make_checkpoint:
        import accel
        acc = accel.Accelerator(cpu=True)
        acc.save_model(accel.Model.from_json(spec(a.layers, a.width)), a.make_checkpoint)
        return

    prompt = [(7 * i + 3) % VOCAB for i in range(a.prompt)]
    checkpoint = os.path.join(a.work, "checkpoint", "model.safetensors")
    offload = os.path.join(a.work, "offload_" + a.contestant)
    max_memory = {"cpu": a.budget}
    no_split = ["TransformerEncoderLayer"]
    if a.contestant == "accel":
        import numpy as np
        import accel
        baseline = status_kb("VmRSS")
        start = time.perf_counter()
        with accel.init_empty_weights():
            model = accel.Model.from_json(spec(a.layers, a.width))
        device_map = accel.infer_auto_device_map(model, max_memory=max_memory, no_split_module_classes=no_split)
        accel.load_checkpoint_and_dispatch(model, checkpoint, device_map=device_map, offload_folder=offload)
        model.eval()
        load_s = time.perf_counter() - start

        def next_token(ids):
            logits = model(accel.tensor(np.array([ids], dtype=np.int64))).numpy()
            return int(logits[0, -1].argmax())
    else:
        import torch
        from accelerate import infer_auto_device_map, init_empty_weights, load_checkpoint_and_dispatch
        torch.set_grad_enabled(False)
        baseline = status_kb("VmRSS")
        start = time.perf_counter()
        with init_empty_weights():
            model = torch_twin(a.layers, a.width)
        device_map = infer_auto_device_map(model, max_memory=max_memory, no_split_module_classes=no_split)
        model = load_checkpoint_and_dispatch(model, checkpoint, device_map=device_map, offload_folder=offload,
                                             no_split_module_classes=no_split)
        model.eval()
        load_s = time.perf_counter() - start

        def next_token(ids):
            return int(model(torch.tensor([ids]))[0, -1].argmax())

    ids = list(prompt)
    next_token(ids)  # warm-up: first-call costs of both frameworks
    start = time.perf_counter()
    for _ in range(a.tokens):
        ids.append(next_token(ids))
    seconds = time.perf_counter() - start
    print("BENCH_RESULT " + json.dumps({
        "contestant": a.contestant, "load_s": round(load_s, 3), "tokens_per_s": round(a.tokens / seconds, 3),
        "peak_rss_mb": round(status_kb("VmHWM") / 1024, 1), "baseline_rss_mb": round(baseline / 1024, 1),
        "device_map": {k: str(v) for k, v in device_map.items()}, "tokens": ids[len(prompt):]},
        separators=(",", ":")), flush=True)


if __name__ == "__main__":
    sys.exit(main())
