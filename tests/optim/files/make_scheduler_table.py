"""Regenerates scheduler_lrs.json: learning rates from PyTorch's own schedulers,
the oracle for libaccel's (tests/optim/test_scheduler.cpp).

    /usr/bin/python3 tests/optim/files/make_scheduler_table.py   (Debian's python3-torch)

Warmup schedules follow the formulas of transformers' get_linear_schedule_with_warmup
and get_cosine_schedule_with_warmup, written as LambdaLR.
"""
import json
import math
import os

import torch
from torch.optim import lr_scheduler as S

STEPS = 40
BASE_LR = 0.1
METRICS = [1.0, 0.9, 0.95, 0.96, 0.97, 0.98, 0.5, 0.6, 0.7, 0.8, 0.81, 0.82, 0.83] * 4


def linear_warmup(w, t):
    return lambda s: s / max(1, w) if s < w else max(0.0, (t - s) / max(1, t - w))


def cosine_warmup(w, t, cycles):
    def f(s):
        if s < w:
            return s / max(1, w)
        p = (s - w) / max(1, t - w)
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * cycles * 2.0 * p)))
    return f


CASES = [
    ("step", {"step_size": 7, "gamma": 0.5}, lambda o: S.StepLR(o, 7, 0.5)),
    ("multistep", {"milestones": [3, 10, 25], "gamma": 0.3}, lambda o: S.MultiStepLR(o, [3, 10, 25], 0.3)),
    ("exponential", {"gamma": 0.93}, lambda o: S.ExponentialLR(o, 0.93)),
    ("cosine_annealing", {"t_max": 15, "eta_min": 0.001}, lambda o: S.CosineAnnealingLR(o, 15, 0.001)),
    ("linear", {"start_factor": 0.25, "end_factor": 1.0, "total_iters": 12},
     lambda o: S.LinearLR(o, 0.25, 1.0, 12)),
    ("constant", {"factor": 0.4, "total_iters": 6}, lambda o: S.ConstantLR(o, 0.4, 6)),
    ("polynomial", {"total_iters": 30, "power": 2.0}, lambda o: S.PolynomialLR(o, 30, 2.0)),
    ("one_cycle", {"max_lr": 1.0, "total_steps": 41, "pct_start": 0.3, "anneal_strategy": "cos",
                   "div_factor": 25.0, "final_div_factor": 1e4, "three_phase": False},
     lambda o: S.OneCycleLR(o, 1.0, total_steps=41, pct_start=0.3, anneal_strategy="cos", cycle_momentum=False)),
    ("one_cycle", {"max_lr": 0.5, "total_steps": 41, "pct_start": 0.25, "anneal_strategy": "linear",
                   "div_factor": 10.0, "final_div_factor": 100.0, "three_phase": True},
     lambda o: S.OneCycleLR(o, 0.5, total_steps=41, pct_start=0.25, anneal_strategy="linear", div_factor=10.0,
                            final_div_factor=100.0, three_phase=True, cycle_momentum=False)),
    ("linear_warmup", {"num_warmup_steps": 5, "num_training_steps": 30},
     lambda o: S.LambdaLR(o, linear_warmup(5, 30))),
    ("cosine_warmup", {"num_warmup_steps": 4, "num_training_steps": 36, "num_cycles": 0.5},
     lambda o: S.LambdaLR(o, cosine_warmup(4, 36, 0.5))),
    ("reduce_on_plateau", {"mode": "min", "factor": 0.5, "patience": 2, "threshold": 1e-4,
                           "threshold_mode": "rel", "cooldown": 1, "min_lr": 0.001, "eps": 1e-8},
     lambda o: S.ReduceLROnPlateau(o, "min", 0.5, 2, 1e-4, "rel", 1, 0.001, 1e-8)),
    ("reduce_on_plateau", {"mode": "max", "factor": 0.2, "patience": 1, "threshold": 0.01,
                           "threshold_mode": "abs", "cooldown": 0, "min_lr": 0.0, "eps": 1e-8},
     lambda o: S.ReduceLROnPlateau(o, "max", 0.2, 1, 0.01, "abs", 0, 0.0, 1e-8)),
]

rows = []
for kind, params, make in CASES:
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=BASE_LR)
    sched = make(opt)
    lrs = [opt.param_groups[0]["lr"]]
    for i in range(STEPS):
        opt.step()
        if kind == "reduce_on_plateau":
            sched.step(METRICS[i])
        else:
            sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    rows.append({"kind": kind, "params": params, "base_lr": BASE_LR, "lrs": lrs})

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "scheduler_lrs.json"), "w") as f:
    json.dump({"metrics": METRICS[:STEPS], "cases": rows}, f, indent=1)
