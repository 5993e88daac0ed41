#!/usr/bin/env python3
"""Train a small CNN on Fashion-MNIST with libaccel from Python.

The same program runs on one process or many:
    python3 train_fashion_mnist.py                                  # one process
    accel launch --nproc_per_node 2 python3 train_fashion_mnist.py  # two, over Gloo

Prints the main process's loss every 100 steps and one line per epoch, the same
numbers as examples/c/train_fashion_mnist.c for the same seed.
"""
import argparse
import json
import os
import sys

import accel

MODEL = json.dumps([
    {"type": "Conv2d", "in_channels": 1, "out_channels": 16, "kernel_size": 3, "padding": 1},
    {"type": "ReLU"},
    {"type": "MaxPool2d", "kernel_size": 2},
    {"type": "Conv2d", "in_channels": 16, "out_channels": 32, "kernel_size": 3, "padding": 1},
    {"type": "ReLU"},
    {"type": "MaxPool2d", "kernel_size": 2},
    {"type": "Flatten"},
    {"type": "Linear", "in_features": 1568, "out_features": 128},
    {"type": "ReLU"},
    {"type": "Linear", "in_features": 128, "out_features": 10},
])
MEAN, STD = 0.2860, 0.3530  # Fashion-MNIST training-set statistics


def load_split(data_dir: str, split: str) -> accel.Dataset:
    return accel.Dataset.from_idx(f"{data_dir}/{split}-images-idx3-ubyte.gz",
                                  f"{data_dir}/{split}-labels-idx1-ubyte.gz", MEAN, STD)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=0, help="training steps per epoch (0: all)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    if not os.path.exists(f"{args.data}/train-images-idx3-ubyte.gz"):
        sys.exit(f"Fashion-MNIST is not in {args.data}: install it with `sudo apt install dataset-fashion-mnist` "
                 "(Debian, Ubuntu) or pass --data DIR")

    acc = accel.Accelerator()
    acc.set_seed(args.seed)
    train_loader = accel.DataLoader(load_split(args.data, "train"), batch_size=64, shuffle=True, seed=args.seed)
    test_loader = accel.DataLoader(load_split(args.data, "t10k"), batch_size=256, seed=args.seed)
    model = accel.Model.from_json(MODEL)
    optimizer = accel.Optimizer(model, "adamw", lr=2e-3)
    acc.prepare(model, optimizer, train_loader, test_loader)

    step = 0
    for epoch in range(1, args.epochs + 1):
        model.train()
        losses = []
        for inputs, labels in train_loader:
            if args.max_steps and len(losses) >= args.max_steps:
                continue  # drain the epoch without training, as the C example does
            optimizer.zero_grad()
            loss = model(inputs).loss("cross_entropy", labels)
            acc.backward(loss)
            optimizer.step()
            losses.append(loss.item())
            step += 1
            if step % 100 == 0:
                acc.print(f"step {step}: loss {losses[-1]:.6f}")

        model.eval()
        correct = total = 0
        for inputs, labels in test_loader:
            predictions = acc.gather_for_metrics(model(inputs).argmax(1))
            targets = acc.gather_for_metrics(labels)
            correct += predictions.eq(targets).sum().item()
            total += targets.numel()

        # Average the per-process mean losses so every process count prints the same kind of number.
        local = accel.tensor([sum(losses) / len(losses) if losses else 0.0], dtype="float64")
        mean_loss = acc.reduce(local, "mean").item()
        acc.print(f"epoch {epoch}: loss {mean_loss:.4f}, test accuracy {100.0 * correct / total:.2f}%")


if __name__ == "__main__":
    main()
