"""Run by test_distributed.py under `accel launch`: Accelerate's LocalSGD. Each process
trains on its own data without synchronising gradients, so the replicas drift apart; every
local_sgd_steps steps (and on leaving the block) each parameter becomes the mean across
processes, which every process then holds bit for bit."""
import numpy as np

import accel


def params(acc, model):
    return {name: value.copy() for name, value in acc.get_state_dict(model).items()}


def main():
    acc = accel.Accelerator(cpu=True)
    n, rank = acc.num_processes, acc.process_index
    acc.set_seed(0)  # the same initial weights everywhere
    model = accel.Model.from_json('[{"type": "Linear", "in_features": 4, "out_features": 3}]')
    opt = accel.Optimizer(model, "sgd", lr=0.1)
    acc.prepare(model, opt)
    rng = np.random.default_rng(100 + rank)  # each process its own data
    with accel.LocalSGD(accelerator=acc, model=model, local_sgd_steps=2) as local_sgd:
        assert local_sgd.enabled
        for step in range(4):
            x = accel.tensor(rng.standard_normal((8, 4)).astype(np.float32))
            y = accel.tensor(rng.integers(0, 3, 8).astype(np.int64))
            acc.backward(model(x).loss("cross_entropy", y))
            opt.step()
            opt.zero_grad()
            before = params(acc, model)
            local_sgd.step()
            after = params(acc, model)
            everyone_before = acc.gather_object([before])
            everyone_after = acc.gather_object([after])
            if step % 2 == 0:  # no average: the replicas differ, and nothing changed here
                assert all((after[k] == before[k]).all() for k in after)
                assert any((everyone_after[0][k] != everyone_after[1][k]).any() for k in after)
            else:  # averaged: the mean of what each process held, the same bits everywhere
                for k in after:
                    mean = sum(p[k] for p in everyone_before) / n
                    np.testing.assert_allclose(after[k], mean, rtol=0, atol=1e-6)  # float32 sums of n terms
                    assert all((p[k] == after[k]).all() for p in everyone_after)
    print(f"local sgd ok {n}", flush=True)


if __name__ == "__main__":
    main()
