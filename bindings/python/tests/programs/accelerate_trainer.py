"""Python Accelerate's side of the checkpoint round trip (issue 20): trains the
PyTorch twin of tests' JSON-spec model for `steps` steps, save_state, then
`steps` more, and writes the final weights — what libaccel must reach when it
resumes the saved directory. Unshuffled data, so both sides see the same order;
under torch.distributed.run process r takes every num_processes-th batch from r.

usage: accelerate_trainer.py OPTIMIZER STEPS OUT_DIR"""
import sys

import numpy as np
import torch
from accelerate import Accelerator


def data(steps, batch=4, rank=0, processes=1):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2 * steps * batch * processes, 4)).astype(np.float32)
    y = rng.standard_normal((2 * steps * batch * processes, 2)).astype(np.float32)
    batches = [(x[i:i + batch], y[i:i + batch]) for i in range(0, len(x), batch)]
    return batches[rank::processes]


def make_optimizer(kind, parameters):
    if kind == "sgd":
        return torch.optim.SGD(parameters, lr=0.05, momentum=0.9)
    return torch.optim.AdamW(parameters, lr=0.01, weight_decay=0.01)


def main():
    kind, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    accelerator = Accelerator(cpu=True)
    model, optimizer = accelerator.prepare(model, make_optimizer(kind, model.parameters()))
    for i, (x, y) in enumerate(data(steps, rank=accelerator.process_index, processes=accelerator.num_processes)):
        if i == steps:
            accelerator.save_state(f"{out}/checkpoint")
        loss = torch.nn.functional.mse_loss(model(torch.from_numpy(x)), torch.from_numpy(y))
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
    state = accelerator.get_state_dict(model)
    if accelerator.is_main_process:
        np.savez(f"{out}/final.npz", **{k: v.detach().numpy() for k, v in state.items()})


if __name__ == "__main__":
    main()
