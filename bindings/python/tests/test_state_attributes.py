"""Accelerate's state attributes from Python: PartialState's backend, default_device, debug,
fork_launched, initialized, set_device and destroy_process_group; the Accelerator's step,
rng_types, log_with, native_amp and step_scheduler_with_optimizer; AcceleratorState's and
GradientState's remaining names; print once per machine with print's keywords."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import accel
from ports import reserve_port

LINEAR = '[{"type": "Linear", "in_features": 4, "out_features": 3}]'
PRINT_WORKER = Path(__file__).parent / "programs" / "print_worker.py"
PRINTS = ("accelerator.print", "state.print", "C print", "partial state print")


def test_partial_state_attributes_on_one_process(monkeypatch):
    monkeypatch.delenv("ACCELERATE_DEBUG_MODE", raising=False)
    monkeypatch.delenv("FORK_LAUNCHED", raising=False)
    state = accel.PartialState(cpu=True)
    assert state.backend is None and state.initialized and not state.debug and not state.fork_launched
    # default_device is what device would be without cpu=True, before the index picks a GPU.
    with accel.PartialState() as chosen:
        assert chosen.device.split(":")[0] == state.default_device
    state.set_device()
    assert state.device == "cpu"
    assert repr(state) == ("Distributed environment: NO\nNum processes: 1\nProcess index: 0\n"
                           "Local process index: 0\nDevice: cpu\n")
    monkeypatch.setenv("ACCELERATE_DEBUG_MODE", "yes")
    assert state.debug
    monkeypatch.setenv("ACCELERATE_DEBUG_MODE", "maybe")
    with pytest.raises(ValueError, match="ACCELERATE_DEBUG_MODE='maybe'"):
        state.debug
    with pytest.raises(ValueError, match="group=None"):
        state.destroy_process_group(group="world")
    monkeypatch.setenv("FORK_LAUNCHED", "1")
    state.destroy_process_group()  # fork-launched: nothing happens, as in Accelerate
    assert state.initialized
    monkeypatch.setenv("FORK_LAUNCHED", "0")
    state.destroy_process_group()
    assert not state.initialized and repr(state) == "PartialState (closed)"
    with pytest.raises(ValueError, match="closed"):
        state.set_device()


def test_print_takes_prints_keywords(capsys):
    with accel.Accelerator(cpu=True) as acc:
        acc.print("a", 1, sep="-", end="!\n")
        acc.state.print("to stderr", file=sys.stderr)
        with accel.PartialState(cpu=True) as state:
            state.print("x", "y", sep="+")
    out, err = capsys.readouterr()
    assert out == "a-1!\nx+y\n" and err == "to stderr\n"


def test_accelerator_attributes_as_given(tmp_path):
    with accel.Accelerator(cpu=True) as acc:
        assert acc.rng_types == ["generator"] and acc.log_with == [] and acc.step_scheduler_with_optimizer
        assert not acc.native_amp and acc.backend is None and acc.step == 0

    class Custom(accel.GeneralTracker):
        name = "custom"
        requires_logging_directory = False

        @property
        def tracker(self):
            return self

        def store_init_configuration(self, values):
            pass

        def log(self, values, step=None, **kwargs):
            pass

    custom = Custom()
    with accel.Accelerator(cpu=True, mixed_precision="bf16", rng_types=["torch", "generator"],
                           log_with=["jsonl", custom], project_dir=str(tmp_path),
                           step_scheduler_with_optimizer=False) as acc:
        assert acc.rng_types == ["torch", "generator"] and acc.log_with == ["jsonl", custom]
        assert acc.native_amp and not acc.step_scheduler_with_optimizer
    with accel.Accelerator(cpu=True, rng_types="torch") as acc:  # one name, not its letters
        assert acc.rng_types == ["torch"]
    with pytest.raises(TypeError, match="step_scheduler_with_optimizer|has no option"):
        accel.Accelerator(cpu=True, step_scheduler_with_optimizr=False)


def _train(acc, steps):
    model = accel.Model.from_json(LINEAR)
    opt = accel.Optimizer(model, "sgd", lr=1.0)
    scheduler = accel.Scheduler(opt, "exponential", gamma=0.5)
    data = [(np.ones(4, np.float32), 0)] * (2 * steps)
    loader = accel.DataLoader(data, batch_size=2)
    model, opt, loader, scheduler = acc.prepare(model, opt, loader, scheduler)
    counted = []
    for x, y in loader:
        with acc.accumulate(model):
            counted.append(acc.step)
            acc.backward(model(x).loss("cross_entropy", y))
            opt.step()
            scheduler.step()
            opt.zero_grad()
    return counted, scheduler


def test_step_counts_micro_steps_and_the_scheduler_follows_the_option():
    with accel.Accelerator(cpu=True, gradient_accumulation_steps=2) as acc:
        counted, scheduler = _train(acc, 3)
        # Accelerate's _do_sync: +1 per micro-step, back to 0 at the loader's last batch.
        assert counted == [1, 2, 0]
        assert scheduler.last_epoch() == 2  # the optimizer stepped at micro-steps 2 and 3 (end of loader)
        plugin = acc.gradient_state
        assert (plugin.adjust_scheduler, plugin.sync_with_dataloader, plugin.initialized) == (False, True, True)
        assert plugin.plugin_kwargs == {"num_steps": 2}
        assert "Gradient accumulation plugin: {'num_steps': 2}" in repr(plugin)
    with accel.Accelerator(cpu=True, gradient_accumulation_steps=2, step_scheduler_with_optimizer=False) as acc:
        counted, scheduler = _train(acc, 3)
        assert scheduler.last_epoch() == 3  # every call
    plugin = accel.GradientAccumulationPlugin(num_steps=3, sync_with_dataloader=False, sync_each_batch=True)
    with accel.Accelerator(cpu=True, gradient_accumulation_plugin=plugin) as acc:
        counted, _ = _train(acc, 4)
        assert counted == [1, 2, 3, 4]  # no reset at the loader's end without sync_with_dataloader
        assert acc.gradient_state.plugin_kwargs == {"num_steps": 3, "sync_with_dataloader": False,
                                                    "sync_each_batch": True}


def test_accelerator_state_offers_the_process_calls():
    with accel.Accelerator(cpu=True) as acc:
        state = acc.state
        assert state.initialized and not state.fork_launched and state.backend is None
        assert state.parallelism_config.dp_replicate_size == 1 and state.debug is False
        with state.main_process_first(), state.local_main_process_first():
            pass
        with state.split_between_processes([1, 2, 3]) as share:
            assert share == [1, 2, 3]
        state.wait_for_everyone()
    assert not state.initialized


def test_print_is_once_per_machine():
    launcher = os.environ.get("ACCEL_CLI")
    if not launcher:
        pytest.skip("ACCEL_CLI (the accel command) is not set; run through CTest")
    # One machine, two processes: only process 0 prints.
    result = subprocess.run([launcher, "launch", "--nproc_per_node", "2", "--master_port", "0", sys.executable,
                             str(PRINT_WORKER), "one"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    for what in PRINTS:
        assert f"[one] {what} from rank 0" in result.stdout, result.stdout
        assert f"[one] {what} from rank 1" not in result.stdout, result.stdout
    assert "[one] rank 1 backend gloo state.backend gloo" in result.stdout
    # Two machines of one process each (the torchrun contract on one host): both print.
    port = reserve_port()
    ranks = [subprocess.Popen([sys.executable, str(PRINT_WORKER), "two"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              env=dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK="0",
                                       LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)))
             for rank in range(2)]
    outputs = [p.communicate(timeout=120)[0] for p in ranks]
    for rank, (process, output) in enumerate(zip(ranks, outputs)):
        assert process.returncode == 0, output
        for what in PRINTS:
            assert f"[two] {what} from rank {rank}" in output, output
