"""Run by test_profile.py under `accel launch`: every rank profiles one training
step into the directory given as the first argument (trace_<rank>.json)."""
import sys

import numpy as np

import accel

SPEC = '[{"type": "Linear", "in_features": 4, "out_features": 8}, {"type": "ReLU"}, {"type": "Linear", "in_features": 8, "out_features": 2}]'


def main():
    acc = accel.Accelerator(cpu=True)
    model = accel.Model.from_json(SPEC)
    opt = accel.Optimizer(model, "sgd", lr=0.1)
    acc.prepare(model, opt)
    x = accel.tensor(np.ones((3, 4), np.float32))
    y = accel.tensor(np.zeros((3, 2), np.float32))
    with acc.profile(sys.argv[1]):
        acc.backward(model(x).loss("mse", y))
        opt.step()
    print(f"[rank {acc.process_index}] profiled", flush=True)


if __name__ == "__main__":
    main()
