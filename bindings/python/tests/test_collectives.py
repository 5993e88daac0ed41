"""Collectives on nested structures and split_between_processes in one process
(test_distributed.py runs the same with 2-4 processes)."""
import collections

import numpy as np
import pytest

import accel

Pair = collections.namedtuple("Pair", "first second")


@pytest.fixture(scope="module")
def acc():
    return accel.Accelerator(cpu=True)


def test_nested_structures_keep_their_shape(acc):
    t = accel.tensor(np.array([[1.0, 2.0]], np.float32))
    data = {"a": t, "b": [t, (t,)], "c": Pair(t, {"d": t})}
    for result in (acc.gather(data), acc.broadcast(data), acc.reduce(data, "mean"), acc.pad_across_processes(data)):
        assert set(result) == {"a", "b", "c"}
        assert isinstance(result["b"], list) and isinstance(result["b"][1], tuple)
        assert isinstance(result["c"], Pair) and result["c"].second["d"].tolist() == [[1.0, 2.0]]
    assert acc.gather_for_metrics([t, t])[1].tolist() == [[1.0, 2.0]]


def test_reduce_none_and_scale(acc):
    t = accel.tensor(np.array([1.0, 3.0], np.float32))
    assert acc.reduce(t, "none").tolist() == [1.0, 3.0]
    assert acc.reduce(t, "sum", scale=0.5).tolist() == [0.5, 1.5]
    assert acc.reduce([t], "mean", scale=2.0)[0].tolist() == [2.0, 6.0]
    with pytest.raises(ValueError, match="max"):
        acc.reduce(t, "max")
    with pytest.raises(accel.AccelError, match="scale"):
        acc.reduce(t, "sum", scale=float("nan"))


def test_non_tensors_are_a_type_error_naming_the_type(acc):
    with pytest.raises(TypeError, match="set"):
        acc.gather([{1, 2}])
    with pytest.raises(TypeError, match="int"):
        acc.reduce({"x": 3})


def test_gather_for_metrics_with_objects(acc):
    assert acc.gather_for_metrics(["a", "b"], use_gather_object=True) == ["a", "b"]
    assert acc.gather_for_metrics({"not": "tensors"}) == [{"not": "tensors"}]


def test_broadcast_object_list_in_place(acc):
    objects = [1, "two", {"three": 3}]
    assert acc.broadcast_object_list(objects) is objects
    assert objects == [1, "two", {"three": 3}]


def test_split_between_processes_one_process_gets_everything(acc):
    with acc.split_between_processes([1, 2, 3], apply_padding=True) as share:
        assert share == [1, 2, 3]
    with acc.split_between_processes({"a": (1, 2), "b": ["x", "y"]}) as share:
        assert share == {"a": (1, 2), "b": ["x", "y"]}
    with acc.split_between_processes(accel.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))) as share:
        assert list(share.shape()) == [3, 2]
    with acc.split_between_processes([]) as share:
        assert share == []
    with pytest.raises(TypeError, match="int"):
        with acc.split_between_processes(5):
            pass
    with pytest.raises(ValueError, match="same length"):
        with acc.split_between_processes({"a": [1], "b": [1, 2]}):
            pass
