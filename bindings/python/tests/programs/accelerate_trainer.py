"""Python Accelerate's side of the checkpoint round trip (issue 20): trains the
PyTorch twin of tests' JSON-spec model for `steps` micro-steps, save_state, then
`steps` more, and writes the final weights to OUT_DIR/final.npz — what libaccel
must reach when it resumes the saved directory. With "resume" it instead
load_state's OUT_DIR/checkpoint (written by libaccel after `steps` micro-steps)
and trains the second half only. Unshuffled data, so both sides see the same
order; under torch.distributed.run process r takes every num_processes-th batch
from r, as Accelerate's prepared DataLoader does. The data are a formula that
the C side (tests/checkpoint/accelerate_roundtrip.c) computes exactly.

usage: accelerate_trainer.py OPTIMIZER STEPS OUT_DIR [none|warmup|onecycle [ACCUM [resume]]]"""
import sys

import numpy as np
import torch
from accelerate import Accelerator


TOTAL_STEPS = 1000  # the schedules' length, beyond what a test runs


def data(steps, batch=4, rank=0, processes=1):
    """Sample k, feature j: small rationals, the same float32 values in C."""
    k = np.arange(2 * steps * batch * processes, dtype=np.int64)[:, None]
    x = (((k * 7 + np.arange(4) * 13) % 29) / 14.0 - 1.0).astype(np.float32)
    y = (((k * 5 + np.arange(2) * 11) % 23) / 11.0 - 1.0).astype(np.float32)
    batches = [(x[i:i + batch], y[i:i + batch]) for i in range(0, len(x), batch)]
    return batches[rank::processes]


def warmup_lambda(step, warmup=10):
    """transformers' get_linear_schedule_with_warmup, libaccel's linear_warmup."""
    if step < warmup:
        return step / max(1, warmup)
    return max(0.0, (TOTAL_STEPS - step) / max(1, TOTAL_STEPS - warmup))


def make_scheduler(kind, optimizer):
    if kind == "warmup":
        return torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_lambda)
    if kind == "onecycle":  # libaccel's OneCycle leaves momentum alone
        return torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=2 * optimizer.defaults["lr"],
                                                   total_steps=TOTAL_STEPS, cycle_momentum=False)
    assert kind == "none", kind
    return None


def make_optimizer(kind, parameters):
    if kind == "sgd":
        return torch.optim.SGD(parameters, lr=0.05, momentum=0.9)
    return torch.optim.AdamW(parameters, lr=0.01, weight_decay=0.01)


def main():
    kind, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    schedule = sys.argv[4] if len(sys.argv) > 4 else "none"
    accumulation = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    resume = len(sys.argv) > 6 and sys.argv[6] == "resume"
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    accelerator = Accelerator(cpu=True, gradient_accumulation_steps=accumulation)
    optimizer = make_optimizer(kind, model.parameters())
    scheduler = make_scheduler(schedule, optimizer)
    if scheduler is None:
        model, optimizer = accelerator.prepare(model, optimizer)
    else:
        model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    if resume:
        accelerator.load_state(f"{out}/checkpoint")
    for i, (x, y) in enumerate(data(steps, rank=accelerator.process_index, processes=accelerator.num_processes)):
        if i < steps and resume:
            continue
        if i == steps and not resume:
            accelerator.save_state(f"{out}/checkpoint")
        with accelerator.accumulate(model):
            loss = torch.nn.functional.mse_loss(model(torch.from_numpy(x)), torch.from_numpy(y))
            accelerator.backward(loss)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            optimizer.zero_grad()
    state = accelerator.get_state_dict(model)
    if accelerator.is_main_process:
        np.savez(f"{out}/final.npz", **{k: v.detach().numpy() for k, v in state.items()})
        from safetensors.torch import save_file  # for the Go test, which reads safetensors
        save_file({k: v.detach().contiguous() for k, v in state.items()}, f"{out}/final.safetensors")


if __name__ == "__main__":
    main()
