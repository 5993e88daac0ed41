"""Accelerate's configuration objects from Python: kwargs_handlers, dataloader_config,
project_config, rng_types and the setters, with Accelerate 1.x's defaults and messages
(accelerate/utils/dataclasses.py and tests/test_kwargs_handlers.py, ported)."""
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

import accel
from accel.utils import (AutocastKwargs, DataLoaderConfiguration, DDPCommunicationHookType,
                         DistributedDataParallelKwargs, GradientAccumulationPlugin, GradScalerKwargs,
                         InitProcessGroupKwargs, KwargsHandler, ProfileKwargs, ProjectConfiguration)
from ports import reserve_port

LINEAR = '[{"type": "Linear", "in_features": 64, "out_features": 4}]'


@dataclass
class MockClass(KwargsHandler):
    a: int = 0
    b: bool = False
    c: float = 3.0


def test_to_kwargs_gives_what_differs_from_the_defaults():
    # Accelerate's test_kwargs_handler.
    assert MockClass().to_kwargs() == {}
    assert MockClass(a=2).to_kwargs() == {"a": 2}
    assert MockClass(a=2, b=True).to_kwargs() == {"a": 2, "b": True}
    assert MockClass(a=2, c=2.25).to_kwargs() == {"a": 2, "c": 2.25}


def test_handlers_have_accelerates_defaults():
    assert DistributedDataParallelKwargs().to_kwargs() == {}
    assert DistributedDataParallelKwargs(bucket_cap_mb=15, find_unused_parameters=True).to_kwargs() == {
        "bucket_cap_mb": 15, "find_unused_parameters": True}
    assert "comm_hook" not in DistributedDataParallelKwargs(comm_hook="fp16").to_dict()
    assert GradScalerKwargs(init_scale=1024, growth_factor=2).to_kwargs() == {"init_scale": 1024}
    # Accelerate 1.x: the timeout follows the backend (600 s for nccl, else 1800 s).
    assert InitProcessGroupKwargs().timeout == timedelta(seconds=600)
    assert InitProcessGroupKwargs().to_kwargs() == {}
    assert InitProcessGroupKwargs(backend="gloo").to_kwargs() == {"backend": "gloo",
                                                                   "timeout": timedelta(seconds=1800)}
    assert AutocastKwargs(enabled=False).to_kwargs() == {"enabled": False}
    assert DDPCommunicationHookType.FP16 == "fp16" and str(DDPCommunicationHookType.BF16) == "bf16"


def test_each_handler_once_and_only_known_ones():
    with pytest.raises(ValueError, match="You can only pass one .*GradScalerKwargs.* in `kwargs_handlers`"):
        accel.Accelerator(cpu=True, kwargs_handlers=[GradScalerKwargs(), GradScalerKwargs(init_scale=2.0)])
    with pytest.raises(TypeError, match="Unsupported kwargs handler passed"):
        accel.Accelerator(cpu=True, kwargs_handlers=[object()])
    with pytest.raises(TypeError, match="Unsupported kwargs handler passed: MockClass"):
        accel.Accelerator(cpu=True, kwargs_handlers=[MockClass(a=1)])


def test_refused_handler_values_name_the_value():
    with pytest.raises(ValueError, match="comm_hook 'power_sgd' is not supported"):
        accel.Accelerator(cpu=True, kwargs_handlers=[DistributedDataParallelKwargs(comm_hook="power_sgd")])
    with pytest.raises(ValueError, match="comm_wrapper"):
        accel.Accelerator(cpu=True, kwargs_handlers=[DistributedDataParallelKwargs(comm_wrapper="fp16")])
    with pytest.raises(accel.AccelError, match='backend "mpi" is not built into libaccel'):
        accel.Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(backend="mpi")])
    # backend="nccl" is the handler's default, so (as in Accelerate's to_kwargs) it is not passed on:
    # a CPU run keeps its own backend and takes only the timeout.
    with accel.Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(backend="nccl",
                                                                            timeout=timedelta(hours=1))]) as acc:
        assert acc.timeout_ms() == 3_600_000
    with pytest.raises(accel.AccelError, match="init_method \"file:///x\""):
        accel.Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(init_method="file:///x")])
    with pytest.raises(ValueError, match="timeout_ms is given both as a keyword and by a kwargs handler"):
        accel.Accelerator(cpu=True, timeout_ms=5000,
                          kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=5))])
    with pytest.raises(ValueError, match="split_batches is given both as a keyword and in DataLoaderConfiguration"):
        accel.Accelerator(cpu=True, split_batches=True, dataloader_config=DataLoaderConfiguration())
    with pytest.raises(accel.AccelError, match='rng_types: "dice" is not one of torch, cuda, generator'):
        accel.Accelerator(cpu=True, rng_types=["torch", "dice"])


def test_handlers_reach_the_accelerator():
    init = InitProcessGroupKwargs(backend="gloo", init_method="env://", timeout=timedelta(seconds=800))
    ddp = DistributedDataParallelKwargs(bucket_cap_mb=15, find_unused_parameters=True, comm_hook="bf16")
    with accel.Accelerator(cpu=True, kwargs_handlers=[init, ddp, GradScalerKwargs(enabled=False)]) as acc:
        assert acc.timeout_ms() == 800_000
        assert acc.init_handler is init and acc.ddp_handler is ddp and acc.autocast_handler is None
    with accel.Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(minutes=1))]) as acc:
        assert acc.timeout_ms() == 60_000


def forward(**options):
    with accel.Accelerator(cpu=True, **options) as acc:
        acc.set_seed(3)
        model = accel.Model.from_json(LINEAR)
        acc.prepare(model)
        x = accel.tensor((0.37 * np.arange(64, dtype=np.float32) - 11.1).reshape(1, 64))
        return model(x).numpy()


def test_autocast_kwargs_turn_autocast_off_under_bf16():
    fp32 = forward(mixed_precision="no")
    bf16 = forward(mixed_precision="bf16")
    off = forward(mixed_precision="bf16", kwargs_handlers=[AutocastKwargs(enabled=False)])
    # Off: the float32 kernels on the same inputs, bit for bit. On: bfloat16's 8-bit mantissa
    # changes the low bits of 64-term dot products (see tests/capi/test_kwargs_api.c).
    assert np.array_equal(off, fp32)
    assert not np.array_equal(bf16, fp32)
    with accel.Accelerator(cpu=True, mixed_precision="bf16", kwargs_handlers=[AutocastKwargs(enabled=False)]) as acc:
        with acc.autocast():  # follows the handler: off
            pass
        with acc.autocast(autocast_handler=AutocastKwargs(enabled=True)):
            pass
        with acc.autocast(False), acc.autocast(enabled=True):  # the earlier spellings still work
            pass
        with pytest.raises(TypeError, match="autocast_handler must be an AutocastKwargs"):
            with acc.autocast(autocast_handler=GradScalerKwargs()):
                pass


def test_dataloader_configuration_and_even_batches_setter():
    config = DataLoaderConfiguration(split_batches=True, even_batches=False, dispatch_batches=True,
                                     use_seedable_sampler=True, data_seed=7, non_blocking=True,
                                     use_stateful_dataloader=True)
    with accel.Accelerator(cpu=True, dataloader_config=config) as acc:
        assert (acc.split_batches, acc.even_batches, acc.dispatch_batches, acc.use_seedable_sampler,
                acc.data_seed, acc.non_blocking, acc.use_stateful_dataloader) == (True, False, True, True, 7, True,
                                                                                  True)
        assert acc.dataloader_config == config
        acc.even_batches = True
        assert acc.even_batches and acc.dataloader_config.even_batches
    with accel.Accelerator(cpu=True) as acc:
        assert acc.dataloader_config == DataLoaderConfiguration()


def test_gradient_accumulation_steps_and_sync_gradients_setters():
    with accel.Accelerator(cpu=True, gradient_accumulation_plugin=GradientAccumulationPlugin(num_steps=2)) as acc:
        model = accel.Model.from_json(LINEAR)
        acc.prepare(model)

        def windows(n):
            seen = ""
            for _ in range(n):
                with acc.accumulate(model):
                    seen += "1" if acc.sync_gradients else "0"
            return seen

        # Accelerate's _do_sync: the micro-step counter runs on across the change.
        assert windows(4) == "0101"
        acc.gradient_accumulation_steps = 3
        assert acc.gradient_accumulation_steps == 3 == acc.gradient_state.num_steps
        assert windows(5) == "01001"
        with pytest.raises(accel.AccelError, match="gradient_accumulation_steps must be >= 1, got 0"):
            acc.gradient_accumulation_steps = 0
        with acc.accumulate(model):
            assert not acc.sync_gradients
            acc.sync_gradients = True
            assert acc.sync_gradients


def test_project_configuration_is_the_accelerators(tmp_path):
    config = ProjectConfiguration(project_dir=str(tmp_path), automatic_checkpoint_naming=True, total_limit=2,
                                  iteration=3)
    with accel.Accelerator(cpu=True, project_config=config) as acc:
        assert acc.project_configuration is config and acc.project_dir == str(tmp_path)
        acc.prepare(accel.Model.from_json(LINEAR))
        acc.save_state()
        assert (tmp_path / "checkpoints" / "checkpoint_3").is_dir()
        assert config.iteration == 4
        config.iteration = 9
        acc.save_state()
        assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["checkpoint_3", "checkpoint_9"]
    with pytest.raises(ValueError, match="project_dir is given both as a keyword and in ProjectConfiguration"):
        accel.Accelerator(cpu=True, project_dir=str(tmp_path), project_config=ProjectConfiguration(str(tmp_path)))


def test_profile_kwargs_give_the_trace_directory(tmp_path):
    handler = ProfileKwargs(activities=["cpu"], output_trace_dir=str(tmp_path))
    with accel.Accelerator(cpu=True, kwargs_handlers=[handler]) as acc:
        with acc.profile():
            accel.Model.from_json(LINEAR)
        trace = json.loads((tmp_path / "trace_0.json").read_text())
        assert trace["traceEvents"]
        with pytest.raises(ValueError, match=r"schedule_option needs \['active', 'warmup'\]"):
            with acc.profile(profile_handler=ProfileKwargs(schedule_option={"wait": 1})):
                pass


def test_profile_schedule_calls_on_trace_ready_as_torch_profiler_does(tmp_path):
    """torch.profiler.schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=2) over 10 steps:
    steps 3-4 and 7-8 recorded, on_trace_ready after steps 4 and 8 (PyTorch 2.15's ProfilerAction
    sequence: NONE, NONE, WARMUP, RECORD, RECORD_AND_SAVE, NONE, WARMUP, RECORD, RECORD_AND_SAVE, NONE)."""
    model = accel.Model.from_json('[{"type": "Linear", "in_features": 3, "out_features": 4}]')
    ready = []

    def on_trace_ready(prof):
        ready.append(prof.step_num)
        prof.export_chrome_trace(tmp_path / f"cycle_{len(ready)}.json")

    handler = ProfileKwargs(schedule_option={"wait": 1, "warmup": 1, "active": 2, "repeat": 2, "skip_first": 1},
                            on_trace_ready=on_trace_ready, record_shapes=True, output_trace_dir=str(tmp_path / "t"))
    with accel.Accelerator(cpu=True, kwargs_handlers=[handler]) as acc:
        with acc.profile() as prof:
            for step in range(10):
                model(accel.tensor(np.ones((step + 1, 3), np.float32)))  # the batch size says the step
                prof.step()
    assert ready == [5, 9]  # step_num counts the steps taken: after steps 4 and 8
    for n, expected in ((1, {4, 5}), (2, {8, 9})):
        trace = json.loads((tmp_path / f"cycle_{n}.json").read_text())
        batches = {e["args"]["Input Dims"][1][0] for e in trace["traceEvents"]  # addmm(bias, x, w^T)
                   if e.get("name") == "aten::addmm"}
        assert batches == expected, batches
    with pytest.raises(accel.AccelError, match="active is 0"):
        with acc_profile(tmp_path, {"wait": 1, "warmup": 0, "active": 0}):
            pass


def acc_profile(tmp_path, schedule):
    acc = accel.Accelerator(cpu=True)
    return acc.profile(str(tmp_path / "bad"), ProfileKwargs(schedule_option=schedule))


def test_profile_kwargs_record_shapes_memory_and_flops(tmp_path):
    # A bias-free Linear(3, 4) on a [2, 3] input: aten::mm of [2, 3] x [3, 4], 2 * 2 * 3 * 4 = 48
    # flops (torch.profiler's count for mm), and its [2, 4] float32 output, 32 bytes, allocated.
    handler = ProfileKwargs(record_shapes=True, profile_memory=True, with_flops=True, output_trace_dir=str(tmp_path))
    model = accel.Model.from_json('[{"type": "Linear", "in_features": 3, "out_features": 4, "bias": false}]')
    x = accel.tensor(np.ones((2, 3), np.float32))
    with accel.Accelerator(cpu=True, kwargs_handlers=[handler]) as acc:
        with acc.profile():
            model(x)
    events = json.loads((tmp_path / "trace_0.json").read_text())["traceEvents"]
    mm = [e for e in events if e["name"] == "aten::mm"]
    assert mm and mm[0]["args"]["Input Dims"] == [[2, 3], [3, 4]] and mm[0]["args"]["flops"] == 48
    assert any(e["name"] == "[memory]" and e["args"]["Bytes"] == 32 for e in events)
    # Without the options the trace has neither.
    with accel.Accelerator(cpu=True) as acc:
        with acc.profile(str(tmp_path / "plain")):
            model(x)
    plain = json.loads((tmp_path / "plain" / "trace_0.json").read_text())["traceEvents"]
    assert not any(e["name"] == "[memory]" or "Input Dims" in e.get("args", {}) for e in plain)


def test_profile_kwargs_with_stack_and_modules_on_torchscript(tmp_path):
    # A scripted Net calling its block, whose relu is the operator looked at. torch.profiler
    # (2.15, Kineto) writes that relu's "Module Hierarchy" as
    # "TOP(Net)::forward.block(Block)::forward." and its "Call stack" as its frames, each
    # followed by ";".
    import torch

    class Block(torch.nn.Module):
        def forward(self, x):
            y = x + 1
            return y.relu()

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return self.block(x).neg()

    path = tmp_path / "net.pt"
    torch.jit.script(Net()).save(str(path))
    model = accel.Model.from_torchscript(str(path))
    handler = ProfileKwargs(with_stack=True, with_modules=True, output_trace_dir=str(tmp_path / "t"))
    with accel.Accelerator(cpu=True, kwargs_handlers=[handler]) as acc:
        with acc.profile():
            model(accel.tensor(np.ones(2, np.float32)))
    events = json.loads((tmp_path / "t" / "trace_0.json").read_text())["traceEvents"]
    relu = [e["args"] for e in events if e["name"] == "aten::relu"]
    assert relu, "no aten::relu in the trace"
    assert relu[0]["Module Hierarchy"] == "TOP(Net)::forward.block(Block)::forward."
    # The stack is the one the TorchScript interpreter knows for the loaded file (its serialized
    # code), innermost first: what torch's own profiler records for that relu.
    loaded = torch.jit.load(str(path))
    with torch.autograd.profiler.profile(with_stack=True, use_kineto=False) as prof:
        loaded(torch.ones(2))
    torch_stack = next(e.stack for e in prof.function_events if e.name == "aten::relu")
    assert len(torch_stack) == 2 and relu[0]["Call stack"] == "".join(f + ";" for f in torch_stack)


def test_tensorboard_trace_handler_writes_what_the_profile_plugin_reads(tmp_path):
    # torch.profiler's way to TensorBoard: on_trace_ready=tensorboard_trace_handler(dir) under a
    # schedule (wait 1, active 2, repeat 1) over 4 training steps. TensorBoard's profile plugin
    # (torch-tb-profiler's RunProfileData, the parser behind its views) reads the file: two steps,
    # named after the recorded steps 1 and 2 as torch's ProfilerStep#1/#2, with the model's
    # product among the operators, and the CPU allocations in its memory view.
    from torch_tb_profiler.profiler.data import RunProfileData

    from accel.profiler import tensorboard_trace_handler

    model = accel.Model.from_json('[{"type": "Linear", "in_features": 3, "out_features": 4, "bias": false}]')
    x = accel.tensor(np.ones((2, 3), np.float32))
    for gzip_it in (False, True):
        logdir = tmp_path / f"tb_{gzip_it}"
        handler = ProfileKwargs(schedule_option={"wait": 1, "warmup": 0, "active": 2, "repeat": 1},
                                on_trace_ready=tensorboard_trace_handler(str(logdir), "worker0", use_gzip=gzip_it),
                                profile_memory=True, output_trace_dir=str(tmp_path / f"t_{gzip_it}"))
        with accel.Accelerator(cpu=True, kwargs_handlers=[handler]) as acc:
            with acc.profile() as prof:
                for _ in range(4):
                    model(x)
                    prof.step()
        files = os.listdir(logdir)
        assert len(files) == 1 and files[0].startswith("worker0.")
        assert files[0].endswith(".pt.trace.json.gz" if gzip_it else ".pt.trace.json")
        profile = RunProfileData.parse("worker0", "1", str(logdir / files[0]), str(tmp_path))
        assert profile.steps_names == ["1", "2"]
        assert "aten::mm" in {op.name for op in profile.op_list_groupby_name}
        assert profile.memory_snapshot is not None


def test_init_method_and_rng_types_across_processes():
    launcher = os.environ.get("ACCEL_CLI")
    if not launcher:
        pytest.skip("ACCEL_CLI (the accel command) is not set; run through CTest")
    worker = Path(__file__).parent / "programs" / "kwargs_worker.py"
    result = subprocess.run(
        [launcher, "launch", "--nproc_per_node", "2", "--master_port", "0", sys.executable, str(worker),
         str(reserve_port())], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[rank 0] kwargs ok" in result.stdout and "[rank 1] kwargs ok" in result.stdout
