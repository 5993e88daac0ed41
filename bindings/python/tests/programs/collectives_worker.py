"""Run by test_distributed.py under `accel launch`: Accelerate's collective
expectations (its test_script.py split tests, operations on nested
structures, reduce "none"/scale, broadcast_object_list, gather_for_metrics
with objects) and DDP's broadcast_buffers, checked in every process."""
import collections
import sys

import numpy as np

import accel

Pair = collections.namedtuple("Pair", "first second")


def check_split(acc):
    n, rank = acc.num_processes, acc.process_index
    # Accelerate's test_split_between_processes_list
    with acc.split_between_processes(list(range(2 * n))) as share:
        assert share == [2 * rank, 2 * rank + 1], share
    data = list(range(3 * n - 1))
    with acc.split_between_processes(data, apply_padding=True) as share:
        assert len(share) == 3, share
        if acc.is_last_process:
            assert share == [3 * rank, 3 * rank + 1, 3 * rank + 1], share
    # Fewer items than processes: the surplus process gets nothing (or the last item, padded).
    items = [f"p{i}" for i in range(n - 1)]
    with acc.split_between_processes(items) as share:
        assert share == ([items[rank]] if rank < n - 1 else []), share
    with acc.split_between_processes(tuple(items), apply_padding=True) as share:
        assert share == ((items[rank],) if rank < n - 1 else (items[-1],)), share
    t = accel.tensor(np.arange(2 * (n - 1), dtype=np.float32).reshape(n - 1, 2))
    with acc.split_between_processes(t) as share:
        assert list(share.shape()) == ([1, 2] if rank < n - 1 else [0, 2]), share.shape()
    # Accelerate's test_split_between_processes_nested_dict (8 items)
    a = [1, 2, 3, 4, 5, 6, 7, 8]
    b = ["a", "b", "c", "d", "e", "f", "g", "h"]
    c = accel.tensor(np.arange(1, 9, dtype=np.int64))
    with acc.split_between_processes({"a": a, "b": b, "c": c}) as share:
        per, extra = divmod(8, n)
        start = rank * per + min(rank, extra)
        stop = start + per + (1 if rank < extra else 0)
        assert share["a"] == a[start:stop] and share["b"] == b[start:stop], share
        assert share["c"].tolist() == a[start:stop], share["c"].tolist()
    try:
        with acc.split_between_processes({"a": [1, 2], "b": [1]}):
            raise AssertionError("unequal dict values were split")
    except ValueError as error:
        assert "same length" in str(error), error


def check_nested(acc):
    n, rank = acc.num_processes, acc.process_index
    rows = accel.tensor(np.full((rank + 1, 2), rank, dtype=np.float32))
    vec = accel.tensor(np.array([rank, 1.0], dtype=np.float32))
    data = {"rows": rows, "pair": Pair(vec, [vec])}
    gathered = acc.gather(data)
    assert isinstance(gathered, dict) and isinstance(gathered["pair"], Pair)
    assert list(gathered["rows"].shape()) == [n * (n + 1) // 2, 2]
    assert gathered["pair"].second[0].tolist() == [v for r in range(n) for v in (r, 1.0)]

    total = n * (n - 1) / 2
    reduced = acc.reduce((vec, [vec]), "sum", scale=2.0)
    assert isinstance(reduced, tuple) and reduced[0].tolist() == [2 * total, 2.0 * n], reduced[0].tolist()
    assert acc.reduce(vec, "none").tolist() == [total, float(n)]  # summed, not averaged
    assert np.allclose(acc.reduce({"v": vec}, "mean")["v"].numpy(), [total / n, 1.0])

    sent = acc.broadcast([vec, {"x": vec}], from_process=n - 1)  # equal shapes everywhere
    assert sent[0].tolist() == [n - 1, 1.0] and sent[1]["x"].tolist() == [n - 1, 1.0]

    padded = acc.pad_across_processes({"rows": rows, "vec": vec}, dim=0, pad_index=-1)
    assert list(padded["rows"].shape()) == [n, 2] and list(padded["vec"].shape()) == [2]
    if rank < n - 1:
        assert padded["rows"].numpy()[-1].tolist() == [-1, -1]
    try:
        acc.gather({"x": rows, "bad": "text"})
        raise AssertionError("a string was gathered")
    except TypeError as error:
        assert "str" in str(error), error

    objects = acc.broadcast_object_list([{"rank": rank}, "hello" if rank == 1 else None], from_process=1)
    assert objects == [{"rank": 1}, "hello"], objects


class Samples:
    def __init__(self, num_processes):
        self.n = 4 * num_processes + 1  # a short last round: gather_for_metrics drops the filler

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.array([float(i)], np.float32), i


def check_metrics_objects(acc):
    samples = Samples(acc.num_processes)
    loader = accel.DataLoader(samples, batch_size=2)
    acc.prepare(loader)
    seen = []
    for x, y in loader:
        names = [f"sample{int(v)}" for v in y.tolist()]
        seen.extend(acc.gather_for_metrics(names, use_gather_object=True))
    assert sorted(seen) == sorted(f"sample{i}" for i in range(len(samples))), seen


def check_buffers(acc, broadcast_buffers):
    model = accel.Model.from_json('[{"type": "Linear", "in_features": 3, "out_features": 4},'
                                  ' {"type": "BatchNorm1d", "num_features": 4}]')
    acc.prepare(model)
    rng = np.random.default_rng(acc.process_index + 1)
    model(accel.tensor(rng.normal(size=(8, 3)).astype(np.float32) * (acc.process_index + 1)))
    same = accel.tensor(np.random.default_rng(42).normal(size=(8, 3)).astype(np.float32))
    model(same)  # starts from rank 0's statistics when broadcast_buffers
    model.eval()
    out = acc.gather(model(same)).numpy().reshape(acc.num_processes, 8, 4)
    equal = all(np.allclose(out[r], out[0], atol=1e-6) for r in range(1, acc.num_processes))
    assert equal == broadcast_buffers, (broadcast_buffers, out[:, 0])


def check_debug_mode(acc, debug):
    assert acc.debug_mode() == debug
    if not debug:
        return  # out of debug mode a mismatch is left to the backend, as in Accelerate
    mine = accel.tensor(np.zeros((2 if acc.process_index == 1 else 1, 2), np.float32))
    for op in (lambda: acc.reduce(mine), lambda: acc.broadcast({"x": mine})):
        try:
            op()
            raise AssertionError("mismatched shapes passed in debug mode")
        except accel.AccelError as error:
            assert "rank 1 passed Float[2, 2] but rank 0 passed Float[1, 2]" in str(error), error


def main():
    broadcast_buffers = "no_broadcast_buffers" not in sys.argv
    acc = accel.Accelerator(cpu=True, broadcast_buffers=broadcast_buffers)
    check_debug_mode(acc, "debug" in sys.argv)
    check_split(acc)
    check_nested(acc)
    check_metrics_objects(acc)
    check_buffers(acc, broadcast_buffers)
    acc.wait_for_everyone()
    print(f"[rank {acc.process_index}] collectives ok {acc.num_processes}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
