"""Accelerate parity of schedulers, accumulation, checkpoints and model files
from Python (issue 17, items 13-15 and 17-19)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import accel

WORKER = Path(__file__).parent / "programs" / "scheduler_worker.py"
BN_SPEC = ('[{"type": "Linear", "in_features": 4, "out_features": 8}, {"type": "BatchNorm1d", "num_features": 8},'
           ' {"type": "Linear", "in_features": 8, "out_features": 2}]')


@pytest.mark.parametrize("nproc,split", [(2, False), (3, True), (4, False)])
def test_scheduler_steps_as_accelerate_across_processes(nproc, split):
    launcher = os.environ.get("ACCEL_CLI")
    if not launcher:
        pytest.skip("ACCEL_CLI (the accel command) is not set; run through CTest")
    command = [launcher, "launch", "--nproc_per_node", str(nproc), "--master_port", "0", sys.executable, str(WORKER)]
    result = subprocess.run(command + (["split"] if split else []), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"[rank 0] scheduler parity ok {nproc}" in result.stdout


def test_launcher_accumulation_steps_win_and_the_plugin(monkeypatch):
    monkeypatch.setenv("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "4")
    assert accel.Accelerator(cpu=True, gradient_accumulation_steps=2).gradient_accumulation_steps == 4
    monkeypatch.delenv("ACCELERATE_GRADIENT_ACCUMULATION_STEPS")
    plugin = accel.GradientAccumulationPlugin(num_steps=3, sync_each_batch=True, adjust_scheduler=True)
    acc = accel.Accelerator(cpu=True, gradient_accumulation_plugin=plugin)
    assert acc.gradient_accumulation_steps == 3
    with pytest.raises(ValueError, match="only pass one"):
        accel.Accelerator(cpu=True, gradient_accumulation_steps=2, gradient_accumulation_plugin=plugin)
    # adjust_scheduler: a micro-step's call counts towards OneCycle's total_steps.
    model = accel.Model.from_json(BN_SPEC)
    opt = accel.Optimizer(model, "sgd", lr=1.0)
    cycle = accel.Scheduler(opt, "one_cycle", max_lr=0.1, total_steps=3)
    acc.prepare(model, opt, cycle)
    for _ in range(3):
        with acc.accumulate(model):
            cycle.step()
    assert cycle.last_epoch() == 1
    for _ in range(3):
        with acc.accumulate(model):
            cycle.step()
    assert cycle.last_epoch() == 1  # capped: 1 step + 4 counted micro-steps + 1 > total_steps


def test_save_state_returns_the_folder_and_never_replaces_a_checkpoint(tmp_path):
    acc = accel.Accelerator(cpu=True, project_dir=str(tmp_path), automatic_checkpoint_naming=True)
    model = accel.Model.from_json(BN_SPEC)
    acc.prepare(model)
    assert acc.save_state() == str(tmp_path / "checkpoints" / "checkpoint_0")
    assert acc.save_state(str(tmp_path / "mine")) == str(tmp_path / "mine")
    assert acc.project_configuration.iteration == 1 == acc.save_iteration
    acc.project_configuration.iteration = 0
    with pytest.raises(accel.AccelError, match="checkpoint_0 \\(iteration 0\\) already exists") as error:
        acc.save_state()
    assert error.value.code == accel.core.ERR_INVALID_ARGUMENT
    acc.project_configuration.iteration = 5
    assert acc.save_state() == str(tmp_path / "checkpoints" / "checkpoint_5")
    with pytest.raises(accel.AccelError, match="-1"):
        acc.project_configuration.iteration = -1
    # free_memory/clear: nothing prepared is saved any more.
    acc.clear()
    acc.save_state(str(tmp_path / "after"))
    manifest = json.loads((tmp_path / "after" / "manifest.json").read_text())
    assert (manifest["models"], manifest["optimizers"], manifest["schedulers"]) == (0, 0, 0)


def _accelerate_index(max_shard_size):
    """What Accelerate 0.22 writes for the same model: its shard_checkpoint and json.dumps(sort_keys=True)."""
    torch = pytest.importorskip("torch")
    utils = pytest.importorskip("accelerate.utils")
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 2))
    _, index = utils.shard_checkpoint(net.state_dict(), max_shard_size=max_shard_size,
                                      weights_name="model.safetensors")
    return json.dumps(index, indent=2, sort_keys=True) + "\n"


CHECKED_IN_INDEX_130 = {
    "0.weight": 1, "0.bias": 2, "1.weight": 2, "1.bias": 2, "1.running_mean": 2,
    "1.running_var": 3, "1.num_batches_tracked": 3, "2.weight": 3, "2.bias": 3,
}


@pytest.mark.parametrize("max_shard_size", [130, 200, 300])
def test_save_model_shards_as_hugging_face(tmp_path, max_shard_size):
    acc = accel.Accelerator(cpu=True)
    model = accel.Model.from_json(BN_SPEC)
    acc.save_model(model, str(tmp_path), max_shard_size=max_shard_size)
    written = (tmp_path / "model.safetensors.index.json").read_text()
    weight_map = json.loads(written)["weight_map"]
    assert list(weight_map) == sorted(weight_map)
    if max_shard_size == 130:
        assert {k: int(v[6:11]) for k, v in weight_map.items()} == CHECKED_IN_INDEX_130
    assert written == _accelerate_index(max_shard_size)


def test_load_checkpoint_in_model_is_not_strict_by_default(tmp_path):
    acc = accel.Accelerator(cpu=True)
    acc.save_model(accel.Model.from_json('[{"type": "Linear", "in_features": 4, "out_features": 8}]'),
                   str(tmp_path))
    bigger = accel.Model.from_json(BN_SPEC)
    # Accelerate's load_checkpoint_in_model loads with strict=False.
    assert acc.load_checkpoint_in_model(bigger, str(tmp_path / "model.safetensors")) == (7, 0)
    with pytest.raises(accel.AccelError, match="2.weight"):
        acc.load_checkpoint_in_model(bigger, str(tmp_path / "model.safetensors"), strict=True)
