"""Run by test_distributed.py under `accel launch`: Accelerate's PartialState
before and beside an Accelerator, with the expected values of Accelerate's own
split_between_processes tests (test_utils/scripts/test_script.py)."""
import math
import os
import sys
import time

import numpy as np

import accel


def main(scratch):
    state = accel.PartialState(cpu=True)
    n, rank = state.num_processes, state.process_index
    assert n == int(os.environ["WORLD_SIZE"]) and rank == int(os.environ["RANK"])
    assert state.use_distributed and state.distributed_type == accel.DistributedType.MULTI_CPU
    assert state.device == "cpu" and state.is_main_process == (rank == 0)
    assert state.is_last_process == (rank == n - 1)

    # main_process_first: the main process prepares, the others find it done.
    with state.main_process_first():
        if state.is_main_process:
            time.sleep(0.2)
            with open(scratch, "w") as f:
                f.write("ready")
        else:
            with open(scratch) as f:
                assert f.read() == "ready"

    # Accelerate's test_split_between_processes_list / _nested_dict / _tensor values.
    data = list(range(0, 2 * n))
    with state.split_between_processes(data) as results:
        assert results == data[2 * rank:2 * rank + 2], results
    data = list(range(0, 3 * n - 1))
    with state.split_between_processes(data, apply_padding=True) as results:
        if state.is_last_process:
            assert len(results) == math.ceil(len(data) / n), results
    nested = {"a": [1, 2, 3, 4, 5, 6, 7, 8], "b": ["a", "b", "c", "d", "e", "f", "g", "h"],
              "c": np.array([1, 2, 3, 4, 5, 6, 7, 8])}
    with state.split_between_processes(nested) as results:
        if n == 2:
            half = slice(4 * rank, 4 * rank + 4)
            assert results["a"] == nested["a"][half] and results["b"] == nested["b"][half]
            assert (results["c"] == nested["c"][half]).all()
    rows = accel.tensor(np.arange(2 * n * 2, dtype=np.float32).reshape(2 * n, 2))
    with state.split_between_processes(rows) as results:
        assert (results.numpy() == rows.numpy()[2 * rank:2 * rank + 2]).all()

    calls = []
    state.on_main_process(lambda: calls.append("main"))()
    assert calls == (["main"] if rank == 0 else [])

    # An Accelerator beside the state shares its process group: both collectives work.
    acc = accel.Accelerator(cpu=True)
    gathered = acc.gather(accel.tensor(np.array([float(rank)], np.float32))).numpy()
    assert list(gathered) == [float(r) for r in range(n)], gathered
    state.wait_for_everyone()
    acc.wait_for_everyone()
    acc.close()
    state.wait_for_everyone()  # the group outlives the accelerator
    state.close()
    print(f"partial state ok {n}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
