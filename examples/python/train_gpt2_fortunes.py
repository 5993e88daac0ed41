#!/usr/bin/env python3
"""Fine-tune a Hugging Face GPT-2 (exported as TorchScript) on Debian's fortunes with libaccel.

    accel launch --nproc_per_node 2 python3 train_gpt2_fortunes.py MODEL_DIR/model.pt

MODEL_DIR holds model.pt, a GPT2LMHeadModel traced through forward(input_ids,
attention_mask, labels) -> {"loss", "logits"} with a byte-level vocabulary of
256 (tests/hf/export_hf_models.py gpt2 MODEL_DIR makes one), and its
config.json. Fortunes are byte sequences cut to the model's n_positions.
Prints "initial perplexity P", "step S: loss L" every 10 steps, per epoch
"epoch E: loss L, perplexity P" (exact held-out perplexity over every process)
and a greedy sample, as examples/c/train_gpt_fortunes.c does.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

import accel

BATCH = 8


def load_fortunes(data_dir, files, max_length):
    """Every file's fortunes as byte sequences of at most max_length (longer ones
    are cut into pieces, so no byte is dropped); every tenth is held out."""
    parts = ([], [])
    fortune = 0
    for name in files.split(","):
        path = os.path.join(data_dir, name)
        sequences = accel.Sequences.from_text(path, accel.core.TEXT_SEPARATOR, "%")
        for i in range(len(sequences)):
            ids = sequences[i]["input_ids"]
            for start in range(0, len(ids), max_length):
                piece = ids[start:start + max_length]
                if len(piece) >= 2:  # one byte predicts nothing
                    parts[fortune % 10 == 9].append(piece)
            fortune += 1
    return [accel.Sequences.from_lists(part, vocab_size=256) for part in parts]


def per_sequence_losses(batch, out):
    """[B, 2] float64: each sequence's summed next-token loss and its number of
    predicted tokens (position t predicts label t + 1; -100 is ignored)."""
    logits = out["logits"].numpy().astype(np.float64)[:, :-1]
    labels = batch["labels"].numpy()[:, 1:]
    log_norm = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)
    mask = labels != -100
    picked = np.take_along_axis(logits, np.where(mask, labels, 0)[..., None], -1)[..., 0]
    return np.stack([((log_norm - picked) * mask).sum(1), mask.sum(1)], 1)


def perplexity(acc, model, loader):
    """exp(summed token losses / tokens) over every process; gather_for_metrics
    drops the sequences repeated to fill the last round, so each counts once."""
    model.eval()
    totals = np.zeros(2)
    for batch in loader:
        out = model(**batch)
        totals += acc.gather_for_metrics(accel.tensor(per_sequence_losses(batch, out))).numpy().sum(0)
    model.train()
    return math.exp(totals[0] / totals[1])


def sample(model, prompt, new_bytes, max_length):
    """Greedy decoding on the growing sequence. The trace needs labels, so they
    are the ids themselves and the loss is ignored."""
    model.eval()
    ids = list(prompt.encode())
    while len(ids) < min(len(prompt) + new_bytes, max_length):
        x = np.array([ids], dtype=np.int64)
        out = model(input_ids=x, attention_mask=np.ones_like(x), labels=x)
        ids.append(int(out["logits"].numpy()[0, -1].argmax()))
    model.train()
    return "".join(chr(b) if 32 <= b < 127 and chr(b) not in '"\\' else
                   {10: "\\n", 34: '\\"', 92: "\\\\"}.get(b, f"\\x{b:02x}") for b in ids)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="model.pt exported by tests/hf/export_hf_models.py gpt2")
    parser.add_argument("--data", default="/usr/share/games/fortunes")
    parser.add_argument("--files", default="linux,disclaimer", help="comma-separated fortune files")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=0, help="training steps per epoch (0: all)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--check", action="store_true", help="fail unless the held-out perplexity fell")
    args = parser.parse_args()
    for name in args.files.split(","):  # a first run often lacks the data: say where it comes from
        if not os.path.exists(os.path.join(args.data, name)):
            sys.exit(f"{os.path.join(args.data, name)} is not there: install the fortunes with "
                     "`sudo apt install fortunes` (Debian, Ubuntu) or pass --data DIR and --files NAMES")
    with open(os.path.join(os.path.dirname(args.model), "config.json")) as f:
        max_length = json.load(f)["n_positions"]

    acc = accel.Accelerator()
    acc.set_seed(args.seed)
    train_set, eval_set = load_fortunes(args.data, args.files, max_length)
    # Batches padded to their longest sequence; labels are input_ids with the padding set to -100.
    collator = accel.DataCollatorWithPadding(pad_id=0)
    train_loader = accel.DataLoader(train_set, batch_size=BATCH, shuffle=True, seed=args.seed, collate_fn=collator)
    eval_loader = accel.DataLoader(eval_set, batch_size=BATCH, seed=args.seed, collate_fn=collator)
    model = accel.Model.from_torchscript(args.model)
    optimizer = accel.Optimizer(model, "adamw", lr=3e-3)
    # Counted in unprepared batches: a prepared scheduler steps once per process per step.
    steps = len(train_loader)
    if args.max_steps:
        steps = min(steps, args.max_steps * acc.num_processes)
    scheduler = accel.Scheduler(optimizer, "linear_warmup", num_warmup_steps=steps * args.epochs // 10,
                                num_training_steps=steps * args.epochs)
    acc.prepare(model, optimizer, scheduler, train_loader, eval_loader)

    initial = last = perplexity(acc, model, eval_loader)
    acc.print(f"initial perplexity {initial:.3f}")
    step = 0
    for epoch in range(1, args.epochs + 1):
        losses = []
        for batch in train_loader:
            if args.max_steps and len(losses) >= args.max_steps:
                continue  # drain the epoch without training
            out = model(**batch)
            acc.backward(out.loss)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            losses.append(out.loss.item())
            step += 1
            if step % 10 == 0:
                acc.print(f"step {step}: loss {losses[-1]:.4f}")
        last = perplexity(acc, model, eval_loader)
        mean_loss = acc.reduce(accel.tensor([np.mean(losses) if losses else 0.0], dtype="float64"), "mean").item()
        acc.print(f"epoch {epoch}: loss {mean_loss:.4f}, perplexity {last:.3f}")
    acc.print(f'sample: "{sample(model, "The ", 40, max_length)}"')
    if args.check and not last < initial:
        sys.exit(f"rank {acc.process_index}: the perplexity did not fall ({initial:.3f} -> {last:.3f})")


if __name__ == "__main__":
    main()
