"""Run by test_accelerate_names.py under `accel launch`: set_seed(device_specific=True)
gives rank r the numbers of seed + r, so ranks differ; without it they agree."""
import random

import numpy as np

import accel

LINEAR = '[{"type": "Linear", "in_features": 4, "out_features": 3}]'


def draws(acc):
    weight = acc.get_state_dict(accel.Model.from_json(LINEAR))["0.weight"]
    return float(weight[0, 0]), random.random(), float(np.random.rand())


def main():
    acc = accel.Accelerator(cpu=True)
    rank = acc.process_index
    acc.set_seed(7 + rank)
    own = draws(acc)
    acc.set_seed(7, device_specific=True)
    mine = draws(acc)
    assert mine == own, f"rank {rank}: device-specific seed 7 is not seed {7 + rank}"
    everyone = acc.gather_object([mine])
    assert all(a != b for a, b in zip(everyone[0], everyone[1])), f"ranks drew the same: {everyone}"
    acc.set_seed(7)
    everyone = acc.gather_object([draws(acc)])
    assert everyone[0] == everyone[1], f"the same seed gave {everyone}"
    print("seed ok", flush=True)


if __name__ == "__main__":
    main()
