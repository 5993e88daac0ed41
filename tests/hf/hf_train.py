"""hf_train.c in Python, through the binding's keyword forward:

    hf_train.py DATA_DIR OUT_DIR STEPS

run on every process of `accel launch`; same batches, checks and outputs."""
import json
import os
import sys

import numpy as np

import accel


def main():
    data_dir, out_dir, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    shapes = json.load(open(os.path.join(data_dir, "data.json")))
    data = {name: np.fromfile(os.path.join(data_dir, name + ".bin"), dtype="<i8").reshape(shape)
            for name, shape in shapes.items()}
    rows = len(data["input_ids"])

    def batch(first, count):
        index = [(first + r) % rows for r in range(count)]
        return {name: np.ascontiguousarray(values[index]) for name, values in data.items()}

    acc = accel.Accelerator(cpu=True, project_dir=out_dir)
    model = accel.Model.from_torchscript(os.path.join(data_dir, "model.pt"))
    optimizer = accel.Optimizer(model, "adamw", lr=3e-3)
    model, optimizer = acc.prepare(model, optimizer)

    def eval_loss():
        model.eval()
        out = model(**batch(0, rows))
        model.train()
        return float(out.loss), out["logits"]

    # Under tensor parallelism (an Accelerate config's parallelism_config) the tp
    # consecutive ranks of a group train on the same rows: the rows are dealt to the groups.
    tp_size = acc.parallelism_config.tp_size
    data_rank, data_world = acc.process_index // tp_size, acc.num_processes // tp_size
    first, _ = eval_loss()
    for step in range(steps):
        out = model(**batch(2 * (step * data_world + data_rank), 2))
        acc.backward(out.loss)
        optimizer.step()
        optimizer.zero_grad()
    last, logits = eval_loss()

    # A sequence longer than the position table: an AccelError naming the inputs' shapes.
    too_long = {name: np.zeros((1, 65), np.int64) for name in ("input_ids", "attention_mask", "labels")}
    if "gpt2" in open(os.path.join(data_dir, "config.json")).read():
        try:
            model(**too_long)
            sys.exit("a 65-token sequence into 64 positions was accepted")
        except accel.AccelError as error:
            assert error.code == accel.core.ERR_INVALID_ARGUMENT and "input_ids [1, 65] Long" in str(error), error

    # Whole tensors under FULL_SHARD too (get_state_dict gathers them there, collectively).
    checksum = sum(float(t.astype(np.float64).sum()) for t in acc.get_state_dict(model).values())
    everyone = acc.gather(accel.tensor(np.array([checksum]))).numpy()
    held = acc.held_bytes(model, optimizer)
    strategy = {"NO_SHARD": 0, "SHARD_OPTIMIZER": 1, "SHARD_GRAD_OP": 2, "FULL_SHARD": 3, "HYBRID_SHARD": 4}[
        acc.sharding_strategy]
    print(f"rank {acc.process_index}: eval loss {first:.5f} -> {last:.5f}, parameter checksum {checksum:.9g}; "
          f"sharding strategy {strategy} holds {held['parameters']} + {held['gradients']} + "
          f"{held['optimizer_state']} bytes; cpu offload {int(acc.cpu_offload)}")
    acc.save_model(model, os.path.join(out_dir, "saved"))
    if acc.is_main_process:
        logits.numpy().astype("<f4").tofile(os.path.join(out_dir, "logits.bin"))
        with open(os.path.join(out_dir, "losses.txt"), "w") as f:
            f.write(f"{first:.6f} {last:.6f}\n")
    if not last < first * 0.8 or not (everyone == everyone[0]).all():
        sys.exit(f"rank {acc.process_index}: the loss did not fall by 20% or the replicas differ: {everyone}")


if __name__ == "__main__":
    main()
