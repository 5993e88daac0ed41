"""Run by test_kwargs_handlers.py under `accel launch`: the process group from an
InitProcessGroupKwargs (gloo, tcp://HOST:PORT, a timeout) and Accelerate's rng_types
across real processes. argv: the port for init_method."""
import sys
from datetime import timedelta

import numpy as np

import accel
from accel.utils import InitProcessGroupKwargs

LINEAR = '[{"type": "Linear", "in_features": 4, "out_features": 3}]'


class Samples:
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return np.full(4, i, np.float32), i % 2


def fresh_weights(acc):
    """A fresh model's weights: what LibTorch's CPU generator draws next."""
    return acc.get_state_dict(accel.Model.from_json(LINEAR))["0.weight"].tolist()


def main():
    port = int(sys.argv[1])
    init = InitProcessGroupKwargs(backend="gloo", init_method=f"tcp://127.0.0.1:{port}",
                                  timeout=timedelta(seconds=90))
    acc = accel.Accelerator(cpu=True, kwargs_handlers=[init], rng_types=["torch", "generator"])
    assert acc.num_processes == 2 and acc.timeout_ms() == 90_000, (acc.num_processes, acc.timeout_ms())
    assert acc.use_distributed and not acc.multi_device

    # Generators seeded apart draw apart; synchronize_rng_states hands everyone process 0's.
    acc.set_seed(100 + acc.process_index)
    draws = acc.gather_object([fresh_weights(acc)])
    assert draws[0] != draws[1], "set_seed per rank should draw differently"
    acc.set_seed(100 + acc.process_index)
    acc.synchronize_rng_states(["torch"])
    draws = acc.gather_object([fresh_weights(acc)])
    assert draws[0] == draws[1], "synchronize_rng_states(['torch']) left the generators apart"

    # rng_types=["torch"]: each epoch of a prepared loader starts from process 0's generator.
    acc.set_seed(200 + acc.process_index)
    loader = accel.DataLoader(Samples(), batch_size=2)
    acc.prepare(loader)
    next(iter(loader))
    draws = acc.gather_object([fresh_weights(acc)])
    assert draws[0] == draws[1], "the epoch's start did not synchronize the torch generator"
    acc.wait_for_everyone()
    print(f"[rank {acc.process_index}] kwargs ok", flush=True)


if __name__ == "__main__":
    main()
