"""Peak memory of loading a TorchScript model whole, empty (init_empty_weights), and empty then
dispatched to disk, against torch.jit.load: issue 42's empty init of TorchScript models.

    .venv/bin/python bench/bigmodel/torchscript_empty_init.py [--layers 6] [--width 4096] [--rounds 2]

Traces a stack of Linear(width, width) layers with the Python torch of this venv (6 x 4096: 403 MB
fp32), saves it with its weights as model.safetensors, then in a fresh process per measurement
records how much peak RSS (VmHWM, reset after the imports) grows while each contestant loads it: torch.jit.load,
libaccel's Model.from_torchscript, the same inside accel.init_empty_weights(), and that empty model
dispatched with {"": "disk"} and run once. Prints medians over the rounds and the ratio to
torch.jit.load. Needs build/python (PYTHONPATH) and torch in the venv."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

MEASURE = r"""
import sys
kind, path, ckpt = sys.argv[1:4]
import numpy as np
import torch, accel

def peak_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

# The imports' own peak is not the load's: reset the high-water mark (clear_refs 5), so VmHWM
# counts from here.
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = peak_kib()
if kind == "torch.jit.load":
    m = torch.jit.load(path)
elif kind == "from_torchscript":
    m = accel.Model.from_torchscript(path)
else:
    with accel.init_empty_weights():
        m = accel.Model.from_torchscript(path)
    if kind == "empty+disk":
        accel.load_checkpoint_and_dispatch(m, ckpt, device_map={"": "disk"})
        m(accel.tensor(np.ones((1, int(sys.argv[4])), dtype=np.float32)))
print((peak_kib() - base) / 1024)
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    import torch

    with tempfile.TemporaryDirectory() as work:
        torch.manual_seed(0)
        model = torch.nn.Sequential(*[torch.nn.Linear(args.width, args.width) for _ in range(args.layers)])
        path = os.path.join(work, "model.pt")
        torch.jit.trace(model, torch.ones(1, args.width)).save(path)
        import accel  # the checkpoint as save_model writes it

        accel.Accelerator(cpu=True).save_model(accel.Model.from_torchscript(path), os.path.join(work, "ckpt"))
        megabytes = sum(p.numel() for p in model.parameters()) * 4 / 1e6
        del model
        kinds = ["torch.jit.load", "from_torchscript", "empty", "empty+disk"]
        grown = {kind: [] for kind in kinds}
        for _ in range(args.rounds):
            for kind in kinds:
                out = subprocess.run([sys.executable, "-c", MEASURE, kind, path, os.path.join(work, "ckpt"),
                                      str(args.width)], check=True, capture_output=True, text=True).stdout
                grown[kind].append(float(out.split()[-1]))
        cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
                   "unknown CPU")
        print(f"{args.layers} x Linear({args.width}): {megabytes:.0f} MB of fp32 weights; {cpu}; "
              f"torch {torch.__version__}; {args.rounds} rounds")
        reference = statistics.median(grown["torch.jit.load"])
        print(f"{'contestant':<18} {'peak RSS growth MiB (median, min-max)':<40} vs torch.jit.load")
        for kind in kinds:
            median = statistics.median(grown[kind])
            print(f"{kind:<18} {median:8.0f} ({min(grown[kind]):.0f}-{max(grown[kind]):.0f}){'':<22} "
                  f"{median / reference:.2f}x")
        print(json.dumps({kind: statistics.median(v) for kind, v in grown.items()}))


if __name__ == "__main__":
    main()
