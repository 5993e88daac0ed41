"""Accelerate's names and keywords from Python: set_seed, state, save_state(output_dir=...),
save_model(max_shard_size=...), clip_grad_*_, get_state_dict, get_tracker, decorators, ..."""
import inspect
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import accel

LINEAR = '[{"type": "Linear", "in_features": 4, "out_features": 3}]'
SEED_WORKER = Path(__file__).parent / "programs" / "seed_worker.py"


def draws(acc):
    """What every generator set_seed seeds gives next: LibTorch (a fresh model's weights), random, numpy."""
    weights = acc.get_state_dict(accel.Model.from_json(LINEAR))["0.weight"]
    return weights.tolist(), random.random(), float(np.random.rand())


def test_version():
    assert accel.__version__ == accel.version() and accel.__version__.count(".") == 2


def test_set_seed_seeds_libtorch_random_and_numpy():
    with accel.Accelerator(cpu=True) as acc:
        acc.set_seed(42)
        first = draws(acc)
        acc.set_seed(42)
        assert draws(acc) == first
        acc.set_seed(43)
        assert all(a != b for a, b in zip(draws(acc), first))
        acc.set_seed(42, device_specific=True)  # one process: process index 0 is added
        assert draws(acc) == first


def test_utils_set_seed_seeds_before_any_accelerator_as_the_method_does():
    from accel.utils import set_seed  # the import a ported script keeps
    set_seed(42)
    with accel.Accelerator(cpu=True) as acc:
        seeded_first = draws(acc)
        acc.set_seed(42)
        assert draws(acc) == seeded_first
        set_seed(42, device_specific=True)  # one process: PartialState's index 0 is added
        assert draws(acc) == seeded_first
        set_seed(43)
        assert all(a != b for a, b in zip(draws(acc), seeded_first))
    with pytest.raises(ValueError, match=r"seed -1 .* outside numpy's range"):
        set_seed(-1)
    with pytest.raises(TypeError, match="seed must be an int, got str"):
        set_seed("42")
    assert accel.set_seed is set_seed


def test_set_seed_checks_the_seed_before_seeding_anything():
    with accel.Accelerator(cpu=True) as acc:
        acc.set_seed(5)
        expected = draws(acc)
        acc.set_seed(5)
        with pytest.raises(ValueError, match=r"seed -1 .* outside numpy's range"):
            acc.set_seed(-1)
        with pytest.raises(ValueError, match=r"seed 4294967296"):
            acc.set_seed(2**32)
        with pytest.raises(TypeError, match="seed must be an int, got float"):
            acc.set_seed(1.5)
        assert draws(acc) == expected  # nothing was reseeded by the refused calls
    with pytest.raises(ValueError, match="Accelerator is closed"):
        acc.set_seed(5)


def test_set_seed_seeds_an_imported_torch_and_deterministic_reaches_it():
    # In a child: deterministic algorithms stay on for the rest of a process.
    code = (
        "import torch, accel\n"
        "acc = accel.Accelerator(cpu=True)\n"
        "acc.set_seed(7, deterministic=True)\n"
        "a = torch.rand(3)\n"
        "torch.manual_seed(7)\n"
        "assert torch.equal(a, torch.rand(3))\n"
        "assert torch.are_deterministic_algorithms_enabled()\n"
        "print('ok')\n")
    pytest.importorskip("torch")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "ok" in result.stdout, result.stdout + result.stderr


def test_set_seed_device_specific_across_processes():
    launcher = os.environ.get("ACCEL_CLI")
    if not launcher:
        pytest.skip("ACCEL_CLI (the accel command) is not set; run through CTest")
    result = subprocess.run(
        [launcher, "launch", "--nproc_per_node", "2", "--master_port", "0", sys.executable, str(SEED_WORKER)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[rank 0] seed ok" in result.stdout and "[rank 1] seed ok" in result.stdout


def test_state_and_gradient_state_are_views_with_accelerates_names():
    with accel.Accelerator(cpu=True, gradient_accumulation_steps=2) as acc:
        state = acc.state
        assert isinstance(state, accel.AcceleratorState)
        assert (state.num_processes, state.process_index, state.local_process_index) == (1, 0, 0)
        assert state.is_main_process and state.is_local_main_process and state.is_last_process
        assert state.device == "cpu" and state.mixed_precision == "no" and not state.use_distributed
        assert state.distributed_type == accel.DistributedType.NO
        assert "Num processes: 1" in repr(state) and "Mixed precision type: no" in repr(state)
        assert acc.gradient_state.num_steps == 2 and acc.gradient_state.sync_gradients
        for name in ("device", "mixed_precision", "state", "use_distributed", "optimizer_step_was_skipped"):
            assert isinstance(getattr(type(acc), name), property), name
    with pytest.raises(ValueError, match="closed"):
        acc.state


def test_save_state_and_load_state_take_accelerates_keywords(tmp_path):
    acc = accel.Accelerator(cpu=True, project_dir=str(tmp_path))
    model = accel.Model.from_json(LINEAR)
    acc.prepare(model)
    acc.save_state(output_dir=str(tmp_path / "ckpt"))
    acc.load_state(input_dir=tmp_path / "ckpt")  # a path-like works too
    assert (tmp_path / "ckpt" / "manifest.json").exists()


@pytest.mark.parametrize("size, expected", [
    (1000, 1000), ("5GB", 5 * 10**9), ("5Gb", 5 * 10**9 // 8), ("500MB", 500 * 10**6), ("2.5KB", 2500),
    ("1GiB", 2**30), ("3MiB", 3 * 2**20), ("1kib", 1024)])
def test_max_shard_size_reads_as_accelerate_reads_it(size, expected):
    assert accel._shard_size_bytes(size) == expected


def test_max_shard_size_values_match_accelerate_itself():
    modeling = pytest.importorskip("accelerate.utils.modeling")
    for size in (1000, "5GB", "5Gb", "500MB", "100Mb", "2.5KB", "1GiB", "3MiB", "7KiB"):
        assert accel._shard_size_bytes(size) == modeling.convert_file_size_to_int(size), size


def test_bad_max_shard_size_is_named():
    with pytest.raises(ValueError, match="max_shard_size '10XB' is not a number followed by a unit"):
        accel._shard_size_bytes("10XB")
    with pytest.raises(ValueError, match="max_shard_size 0 must be positive"):
        accel._shard_size_bytes(0)
    with pytest.raises(TypeError, match="max_shard_size must be an int or a str"):
        accel._shard_size_bytes(True)


def test_save_model_shards_by_max_shard_size_and_writes_pickles(tmp_path):
    with accel.Accelerator(cpu=True) as acc:
        model = accel.Model.from_json(LINEAR)
        acc.save_model(model, tmp_path / "one", max_shard_size="10GB")
        assert (tmp_path / "one" / "model.safetensors").exists()
        acc.save_model(model, str(tmp_path / "two"), max_shard_size=50)  # weight 48 bytes, bias 12
        index = json.loads((tmp_path / "two" / "model.safetensors.index.json").read_text())
        assert sorted(index["weight_map"]) == ["0.bias", "0.weight"]
        assert len(set(index["weight_map"].values())) == 2
        # safe_serialization=False: Hugging Face's pytorch_model.bin, which torch.load and
        # nn.Module.load_state_dict take.
        acc.save_model(model, str(tmp_path / "three"), safe_serialization=False)
        torch = pytest.importorskip("torch")
        twin = torch.nn.Sequential(torch.nn.Linear(4, 3))
        twin.load_state_dict(torch.load(str(tmp_path / "three" / "pytorch_model.bin")))
        ours = acc.get_state_dict(model)
        assert all(np.array_equal(v.numpy(), ours[k]) for k, v in twin.state_dict().items())
        acc.save_model(model, str(tmp_path / "five"), max_shard_size=50, safe_serialization=False)
        index = json.loads((tmp_path / "five" / "pytorch_model.bin.index.json").read_text())
        assert sorted(set(index["weight_map"].values())) == ["pytorch_model-00001-of-00002.bin",
                                                             "pytorch_model-00002-of-00002.bin"]
        with pytest.raises(ValueError, match="max_shard_size 'big'"):
            acc.save_model(model, str(tmp_path / "four"), max_shard_size="big")
        assert not (tmp_path / "four").exists()


def test_clip_grad_and_unwrap_and_state_dict():
    with accel.Accelerator(cpu=True) as acc:
        model = accel.Model.from_json(LINEAR)
        opt = accel.Optimizer(model, "sgd", lr=0.1)
        acc.prepare(model, opt)
        x = accel.tensor(np.full((8, 4), 10.0, np.float32))
        acc.backward(model(x).loss("mse", accel.tensor(np.zeros((8, 3), np.float32))))
        norm = acc.clip_grad_norm_(model, max_norm=1.0)
        assert norm.item() > 1.0 and float(norm) == norm.item()
        assert acc.clip_grad_norm_(model, 1.0).item() == pytest.approx(1.0, rel=1e-4)
        acc.clip_grad_value_(model, clip_value=0.01)
        assert acc.clip_grad_norm_(model, 100.0).item() <= 0.01 * np.sqrt(15) + 1e-6
        with pytest.raises(TypeError, match="clip_grad_norm_ takes the Model"):
            acc.clip_grad_norm_([1, 2], 1.0)
        # Accelerate's spelling: model.parameters() stands for its model (as in torch.optim too).
        assert accel.Optimizer(model.parameters(), "sgd", lr=0.1)._model is model
        params = model.parameters()
        assert [p.numpy().shape for p in params] == [(3, 4), (3,)]
        assert [p.numpy().tolist() for p in params] == [t.numpy().tolist() for _, t in model.named_parameters()]
        acc.backward(model(x).loss("mse", accel.tensor(np.zeros((8, 3), np.float32))))
        assert acc.clip_grad_norm_(model.parameters(), max_norm=1.0).item() > 1.0
        assert acc.clip_grad_norm_(model.parameters(), 1.0).item() == pytest.approx(1.0, rel=1e-4)
        acc.clip_grad_value_(model.parameters(), clip_value=0.01)
        assert acc.clip_grad_norm_(model, 100.0).item() <= 0.01 * np.sqrt(15) + 1e-6
        assert acc.unwrap_model(model) is model
        state = acc.get_state_dict(model)
        assert list(state) == ["0.weight", "0.bias"]
        assert state["0.weight"].shape == (3, 4) and state["0.weight"].dtype == np.float32
        assert acc.optimizer_step_was_skipped is False and opt.step_was_skipped is False


def test_skip_first_batches_on_the_accelerator():
    with accel.Accelerator(cpu=True) as acc:
        loader = accel.DataLoader([(np.float32(i), i) for i in range(10)], batch_size=2)
        acc.prepare(loader)
        rest = acc.skip_first_batches(loader, num_batches=3)
        assert [y.tolist() for _, y in rest] == [[6, 7], [8, 9]]
        with pytest.raises(TypeError, match="skip_first_batches takes a DataLoader"):
            acc.skip_first_batches([1, 2], 1)


def test_get_tracker_returns_the_custom_tracker_or_a_blank_one(tmp_path):
    class Run:
        pass

    class Mine(accel.Tracker):
        name = "mine"

        def __init__(self):
            self.tracker = Run()

    with accel.Accelerator(cpu=True, project_dir=str(tmp_path), log_with=["csv", "jsonl"]) as acc:
        mine = Mine()
        acc.add_tracker(mine)
        assert acc.trackers == []  # before init_trackers, as Accelerate's
        assert acc.get_tracker("mine") is mine
        assert acc.get_tracker("mine", unwrap=True) is mine.tracker
        blank = acc.get_tracker("wandb")  # nothing runs before init_trackers: Accelerate's blank tracker
        assert type(blank) is accel.Tracker and blank.log({"x": 1.0}) is None
        acc.init_trackers("run")
        assert [t.name for t in acc.trackers] == ["csv", "jsonl", "mine"] and acc.trackers[2] is mine
        acc.end_training()


def test_get_tracker_logs_to_one_builtin_tracker(tmp_path):
    # Accelerate: accelerator.get_tracker("tensorboard").log(...) writes to that tracker only.
    with accel.Accelerator(cpu=True, project_dir=str(tmp_path), log_with=["jsonl", "csv"]) as acc:
        acc.init_trackers("run")
        jsonl = acc.get_tracker("jsonl")
        assert isinstance(jsonl, accel.BuiltinTracker) and jsonl.name == "jsonl"
        assert acc.trackers == [jsonl, acc.get_tracker("csv")]  # Accelerate's list, in log_with's order
        assert acc.get_tracker("jsonl", unwrap=True).tracker is acc.get_tracker("jsonl", unwrap=True)
        jsonl.log({"loss": 0.5, "note": "warm-up"}, step=2)
        acc.get_tracker("csv").log({"acc": 0.25})
        with pytest.raises(ValueError, match=r"^wandb is not an available tracker stored inside the `Accelerator`\.$"):
            acc.get_tracker("wandb")
        with pytest.raises(TypeError, match=r"takes no keyword arguments \['commit'\]"):
            jsonl.log({"loss": 1.0}, commit=False)
        with pytest.raises(NotImplementedError, match="init_trackers"):
            jsonl.store_init_configuration({"lr": 0.1})
        acc.end_training()
    records = [json.loads(line) for line in (tmp_path / "logs" / "run" / "metrics.jsonl").read_text().splitlines()]
    assert records == [{"loss": 0.5, "step": 2}, {"note": "warm-up", "step": 2}]
    assert (tmp_path / "logs" / "run" / "metrics.csv").read_text().splitlines()[1:] == [",acc,0.25"]


def test_log_takes_numbers_and_strings_as_accelerate_does(tmp_path):
    with accel.Accelerator(cpu=True, project_dir=str(tmp_path), log_with="jsonl") as acc:
        acc.init_trackers("run")
        acc.log({"loss": np.float32(0.5), "epoch": 1, "stage": "warm-up"}, step=3)
        with pytest.raises(TypeError, match=r"log: value 'lrs' is a list; trackers take numbers and strings"):
            acc.log({"lrs": [0.1, 0.2]})
        with pytest.raises(TypeError, match=r"log_kwargs \['wandb'\]"):
            acc.log({"loss": 1.0}, log_kwargs={"wandb": {"commit": False}})
        acc.end_training()
    records = [json.loads(line) for line in (tmp_path / "logs" / "run" / "metrics.jsonl").read_text().splitlines()]
    assert records == [{"epoch": 1.0, "loss": 0.5, "step": 3}, {"stage": "warm-up", "step": 3}]


def test_get_tracker_across_processes(tmp_path):
    launcher = os.environ.get("ACCEL_CLI")
    if not launcher:
        pytest.skip("ACCEL_CLI (the accel command) is not set; run through CTest")
    worker = Path(__file__).parent / "programs" / "tracker_worker.py"
    result = subprocess.run(
        [launcher, "launch", "--nproc_per_node", "2", "--master_port", "0", sys.executable, str(worker), str(tmp_path)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[rank 0] tracker ok" in result.stdout and "[rank 1] tracker ok" in result.stdout
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [{"rank": 0.0, "step": 0}]  # the main process's only


def test_process_decorators_run_where_they_say():
    calls = []
    with accel.Accelerator(cpu=True) as acc:
        @acc.on_main_process
        def main_only(x):
            calls.append(("main", x))
            return x

        @acc.on_process(process_index=0)
        def first():
            calls.append("first")

        # One process runs everything, as in Accelerate (not distributed).
        @acc.on_process(process_index=3)
        def fourth():
            calls.append("fourth")

        assert main_only(5) == 5 and main_only.__name__ == "main_only"
        first()
        fourth()
        acc.on_local_main_process(lambda: calls.append("local"))()
        acc.on_last_process(lambda: calls.append("last"))()
        assert calls == [("main", 5), "first", "fourth", "local", "last"]
        with pytest.raises(TypeError, match="on_process needs process_index"):
            acc.on_process(lambda: None)
        with pytest.raises(TypeError, match="expected a function to decorate, got int"):
            acc.on_main_process(3)


def test_an_option_the_optimizer_lacks_is_a_type_error_naming_it():
    # PyTorch's constructors raise TypeError for a keyword they lack, whatever its value.
    model = accel.Model.from_json(LINEAR)
    for value in (0.9, 0.0):  # 0 is SGD's default momentum: given, it is still refused
        with pytest.raises(TypeError, match=r"optimizer 'adamw' got an unexpected keyword argument 'momentum' "
                                            r"\(it applies to rmsprop, sgd\)"):
            accel.Optimizer(model, "adamw", momentum=value)
    with pytest.raises(TypeError, match="optimizer 'sgd' got an unexpected keyword argument 'betas'"):
        accel.Optimizer(model, "sgd", betas=(0.9, 0.999))
    with pytest.raises(TypeError, match=r"'adagrad' got an unexpected keyword argument 'fused'$"):
        accel.Optimizer(model, "adagrad", fused=True)
    accel.Optimizer(model, "sgd", momentum=0.9, nesterov=True)
    accel.Optimizer(model.parameters(), "rmsprop", alpha=0.9, momentum=0.1, centered=True, eps=1e-6)
    accel.Optimizer(model, "adagrad", lr_decay=0.1, initial_accumulator_value=0.5)


def test_the_optimizer_keywords_are_torch_optims():
    torch = pytest.importorskip("torch")
    from accel.optimizers import _KEYWORDS
    classes = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
               "rmsprop": torch.optim.RMSprop, "adagrad": torch.optim.Adagrad}
    for kind, cls in classes.items():
        accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "params"}
        assert _KEYWORDS[kind] <= accepted, kind
        with pytest.raises(TypeError):  # what libaccel refuses, torch refuses too
            cls([torch.zeros(1, requires_grad=True)], **{sorted(set().union(*_KEYWORDS.values()) - accepted)[0]: 0})
