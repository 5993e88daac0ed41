"""Run by test_distributed.py under `accel launch`: trains on a Python dataset and
checks, from inside every process, what Accelerate promises across processes."""
import sys

import numpy as np

import accel


class Samples:
    def __len__(self):
        return 21  # not divisible by 2 or 4: the last round is completed from the start

    def __getitem__(self, i):
        x = np.array([i / 21.0, (i % 5) / 5.0, 1.0, -1.0], np.float32)
        return x, i % 3


def main():
    acc = accel.Accelerator(cpu=True, gradient_accumulation_steps=2)
    acc.set_seed(0)
    model = accel.Model.from_json('[{"type": "Linear", "in_features": 4, "out_features": 3}]')
    opt = accel.Optimizer(model, "sgd", lr=0.5)
    loader = accel.DataLoader(Samples(), batch_size=2, shuffle=True, seed=1, num_workers=1)
    acc.prepare(model, opt, loader)

    for x, y in loader:
        with acc.accumulate(model):
            acc.backward(model(x).loss("cross_entropy", y))
            opt.step()
            opt.zero_grad()

    # Replicas stay identical: compare everyone's output on a fixed input.
    probe = accel.tensor(np.eye(4, dtype=np.float32))
    outputs = acc.gather(model(probe)).numpy().reshape(acc.num_processes, 4, 3)
    assert all(np.array_equal(outputs[0], o) for o in outputs[1:]), "replicas diverged"

    # gather_for_metrics sees every sample exactly once.
    labels = []
    for _, y in loader:
        labels.append(acc.gather_for_metrics(y).numpy())
    labels = np.concatenate(labels)
    assert len(labels) == 21, f"gathered {len(labels)} labels"
    assert sorted(labels.tolist()) == sorted(i % 3 for i in range(21))

    # Properties as in Accelerate: only rank 0 takes the main-process branch.
    assert acc.is_main_process == (acc.process_index == 0)
    assert acc.is_last_process == (acc.process_index == acc.num_processes - 1)
    assert acc.distributed_type == accel.DistributedType.MULTI_CPU
    mains = acc.gather_object([1 if acc.is_main_process else 0])
    assert sum(mains) == 1, mains

    # Accelerate's gather_object concatenates the processes' lists: [obj] gives one item each.
    ranks = acc.gather_object([{"rank": acc.process_index}])
    assert ranks == [{"rank": r} for r in range(acc.num_processes)], ranks
    assert acc.gather_object(["x"] * acc.process_index) == ["x"] * sum(range(acc.num_processes))
    try:
        acc.gather_object(acc.process_index)
        raise AssertionError("gather_object of an int should be a TypeError")
    except TypeError as error:
        assert "pass [obj]" in str(error), error
    acc.print(f"ok {acc.num_processes}")


if __name__ == "__main__":
    sys.exit(main())
