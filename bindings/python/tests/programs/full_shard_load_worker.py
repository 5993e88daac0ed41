"""Run by test_distributed.py under `accel launch` (2 processes): load_state_dict into a
FULL_SHARD model is collective (every process gathers the shards, writes the whole tensors and
keeps its slices), and get_state_dict then reads back what was loaded on every process."""
import numpy as np

import accel

SPEC = '[{"type": "Linear", "in_features": 6, "out_features": 5}, {"type": "ReLU"}, ' \
       '{"type": "Linear", "in_features": 5, "out_features": 3}]'


def main():
    acc = accel.Accelerator(cpu=True, sharding_strategy="FULL_SHARD")
    model = accel.Model.from_json(SPEC)
    opt = accel.Optimizer(model, "sgd", lr=0.1)
    acc.prepare(model, opt)
    rng = np.random.default_rng(7)  # the same tensors on every process
    state = {name: rng.standard_normal(array.shape).astype(np.float32)
             for name, array in acc.get_state_dict(model).items()}
    keys = model.load_state_dict(dict(state, unused=np.zeros(1, np.float32)), strict=False)
    assert keys == ([], ["unused"]), keys
    back = acc.get_state_dict(model)
    assert all(np.array_equal(back[name], state[name]) for name in state), "get_state_dict after the load"
    print(f"full shard load ok {acc.num_processes}", flush=True)
    acc.end_training()


if __name__ == "__main__":
    main()
