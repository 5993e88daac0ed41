"""Every file of a libaccel checkpoint opened the way Python Accelerate 0.22
opens it (torch.load; safetensors for the model), with the keys and shapes
Accelerate and PyTorch expect (issue 20, items 1 and 3); and PyTorch's own
scheduler state read back by libaccel."""
import itertools
import json
import math
import random

import numpy as np
import pytest

import accel

torch = pytest.importorskip("torch")  # python3-torch, installed by scripts/install-deps.sh

LINEAR = '[{"type": "Linear", "in_features": 4, "out_features": 3}]'
WARMUP = dict(num_warmup_steps=2, num_training_steps=20)


def _tamper(checkpoint, name, data):
    """Replaces a checkpoint file and its manifest entry, as someone who can write the directory could."""
    import xxhash
    (checkpoint / name).write_bytes(data)
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    manifest["files"][name] = {"bytes": len(data), "xxh3": xxhash.xxh3_64_hexdigest(data)}
    (checkpoint / "manifest.json").write_text(json.dumps(manifest))


def _warmup_lambda(step):
    """transformers' get_linear_schedule_with_warmup, libaccel's linear_warmup."""
    if step < WARMUP["num_warmup_steps"]:
        return step / max(1, WARMUP["num_warmup_steps"])
    rest = WARMUP["num_training_steps"] - WARMUP["num_warmup_steps"]
    return max(0.0, (WARMUP["num_training_steps"] - step) / max(1, rest))


def _run(tmp_path, kind, optimizer="adamw", steps=3, **options):
    acc = accel.Accelerator(cpu=True, project_dir=str(tmp_path))
    acc.set_seed(3)
    model = accel.Model.from_json(LINEAR)
    opt = accel.Optimizer(model, optimizer, lr=0.1)
    sched = accel.Scheduler(opt, kind, **options)
    rng = np.random.default_rng(1)
    data = [(rng.standard_normal(4).astype(np.float32), int(i % 3)) for i in range(24)]
    loader = accel.DataLoader(data, batch_size=4, shuffle=True, seed=5)
    acc.prepare(model, opt, sched, loader)
    for x, y in itertools.islice(loader, steps):
        acc.backward(model(x).loss("cross_entropy", y))
        opt.step()
        sched.step()
        opt.zero_grad()
    acc.keep_alive = (model, opt, loader)  # objects that die are left out of checkpoints
    return acc, sched


def _twin_optimizer(kind="adamw"):
    twin = torch.nn.Linear(4, 3)
    make = torch.optim.AdamW if kind == "adamw" else torch.optim.SGD
    return make(twin.parameters(), lr=0.1)


def test_every_file_loads_with_torch_load(tmp_path):
    from safetensors.torch import load_file
    acc, sched = _run(tmp_path, "linear_warmup", **WARMUP)
    ckpt = tmp_path / "ckpt"
    acc.save_state(str(ckpt))
    names = sorted(p.name for p in ckpt.iterdir())
    assert names == ["manifest.json", "model.safetensors", "optimizer.bin", "random_states_0.pkl", "scheduler.bin"]
    assert sorted(json.loads((ckpt / "manifest.json").read_text())["files"]) == [n for n in names if n != "manifest.json"]

    weights = load_file(str(ckpt / "model.safetensors"))
    assert sorted(v.shape for v in weights.values()) == [torch.Size([3]), torch.Size([3, 4])]

    optimizer = torch.load(str(ckpt / "optimizer.bin"))
    assert sorted(optimizer) == ["param_groups", "state"]
    assert sorted(optimizer["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]

    # scheduler.bin: LambdaLR's state_dict(), which PyTorch's LambdaLR takes.
    state = torch.load(str(ckpt / "scheduler.bin"))
    reference = torch.optim.lr_scheduler.LambdaLR(_twin_optimizer(), _warmup_lambda).state_dict()
    assert set(state) - {"libaccel_scheduler"} == set(reference)
    assert state["lr_lambdas"] == [None]
    assert (state["last_epoch"], state["_step_count"]) == (3, 4)
    assert state["_last_lr"] == [pytest.approx(sched.get_last_lr(), abs=0)]
    twin = torch.optim.lr_scheduler.LambdaLR(_twin_optimizer(), _warmup_lambda)
    twin.load_state_dict(state)
    twin.optimizer.param_groups[0]["lr"] = state["_last_lr"][0]
    for _ in range(4):
        twin.step()
        sched.step()
        assert twin.get_last_lr()[0] == pytest.approx(sched.get_last_lr(), rel=1e-12)

    # random_states_0.pkl: Accelerate's keys, each taken by its setter.
    states = torch.load(str(ckpt / "random_states_0.pkl"))
    assert set(states) == {"step", "random_state", "numpy_random_seed", "torch_manual_seed",
                           "torch_cuda_manual_seed", "libaccel_dataloaders"}
    assert states["torch_manual_seed"].dtype == torch.uint8
    assert states["torch_manual_seed"].shape == torch.get_rng_state().shape
    assert states["torch_cuda_manual_seed"] == []
    assert states["libaccel_dataloaders"] == [[0, 3]] and states["step"] == 0
    # Python's and numpy's generators as set_seed(3) leaves them (libaccel has none of its own).
    random.seed(3)
    assert states["random_state"] == random.getstate()
    random.setstate(states["random_state"])
    np.random.seed(3)
    expected = np.random.get_state()
    np.random.set_state(states["numpy_random_seed"])
    got = np.random.get_state()
    assert got[0] == expected[0] and np.array_equal(got[1], expected[1]) and got[2:] == expected[2:]
    torch.set_rng_state(states["torch_manual_seed"])


def test_accelerates_own_loader_takes_them(tmp_path):
    checkpointing = pytest.importorskip("accelerate.checkpointing")
    pytest.importorskip("accelerate").PartialState(cpu=True)  # Accelerate's logging needs it
    acc, sched = _run(tmp_path, "linear_warmup", **WARMUP)
    ckpt = tmp_path / "ckpt"
    acc.save_state(str(ckpt))
    optimizer = _twin_optimizer()
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _warmup_lambda)
    torch.manual_seed(1234)
    random.seed(1234)
    # Accelerate 0.22 reads models from pytorch_model.bin; the model is not part of this check.
    checkpointing.load_accelerator_state(str(ckpt), [], [optimizer], [scheduler], 0, None)
    assert scheduler.last_epoch == 3 and optimizer.state[optimizer.param_groups[0]["params"][0]]["step"].item() == 3
    saved = torch.load(str(ckpt / "random_states_0.pkl"))
    # Accelerate skips all generators silently when one state fails: all must have been set.
    assert torch.equal(torch.get_rng_state(), saved["torch_manual_seed"])
    assert random.getstate() == saved["random_state"]


@pytest.mark.parametrize("anneal", ["cos", "linear"])
def test_one_cycle_continues_in_pytorch(tmp_path, anneal):
    acc, sched = _run(tmp_path, "one_cycle", optimizer="sgd", steps=4, max_lr=0.5, total_steps=12,
                      anneal_strategy=anneal, three_phase=anneal == "linear")
    acc.save_state(str(tmp_path / "ckpt"))
    state = torch.load(str(tmp_path / "ckpt" / "scheduler.bin"))
    assert "anneal_func" not in state  # a bound method in PyTorch 1.13: code, never written
    twin = torch.optim.lr_scheduler.OneCycleLR(_twin_optimizer("sgd"), max_lr=0.5, total_steps=12,
                                               anneal_strategy=anneal, three_phase=anneal == "linear",
                                               cycle_momentum=False)
    assert [p["end_step"] for p in state["_schedule_phases"]] == [p["end_step"] for p in twin._schedule_phases]
    twin.load_state_dict(state)
    for _ in range(6):
        twin.step()
        sched.step()
        assert twin.get_last_lr()[0] == pytest.approx(sched.get_last_lr(), rel=1e-12)


# PyTorch's own torch.save of a scheduler (one-element lists written with APPEND,
# which LibTorch 1.13's unpickler lacks) is read by libaccel's data-only reader.
def test_pytorchs_scheduler_state_resumes_libaccel(tmp_path):
    acc, sched = _run(tmp_path, "step", optimizer="sgd", steps=1, step_size=2, gamma=0.5)
    ckpt = tmp_path / "ckpt"
    acc.save_state(str(ckpt))
    twin = torch.optim.lr_scheduler.StepLR(_twin_optimizer("sgd"), step_size=2, gamma=0.5)
    for _ in range(5):
        twin.optimizer.step()
        twin.step()
    path = tmp_path / "torch_scheduler.bin"
    torch.save(twin.state_dict(), str(path))  # PyTorch's zip container, no libaccel key
    _tamper(ckpt, "scheduler.bin", path.read_bytes())
    acc.load_state(str(ckpt))
    assert sched.last_epoch() == 5
    assert sched.get_last_lr() == twin.get_last_lr()[0]

    other = torch.optim.lr_scheduler.StepLR(_twin_optimizer("sgd"), step_size=3, gamma=0.5)
    torch.save(other.state_dict(), str(path))
    _tamper(ckpt, "scheduler.bin", path.read_bytes())
    with pytest.raises(accel.AccelError, match=r"scheduler\.bin.*\"step_size\" is 3, this scheduler's is 2"):
        acc.load_state(str(ckpt))
    assert sched.last_epoch() == 5


def test_scheduler_state_with_code_in_it_is_refused(tmp_path):
    acc, sched = _run(tmp_path, "step", optimizer="sgd", steps=1)
    ckpt = tmp_path / "ckpt"
    acc.save_state(str(ckpt))

    class Exploit:
        def __reduce__(self):
            import os
            return (os.system, ("touch " + str(tmp_path / "pwned"),))

    path = tmp_path / "evil.bin"
    torch.save({"last_epoch": Exploit()}, str(path))
    _tamper(ckpt, "scheduler.bin", path.read_bytes())
    with pytest.raises(accel.AccelError, match=r"scheduler\.bin.*names the global posix\.system"):
        acc.load_state(str(ckpt))
    assert not (tmp_path / "pwned").exists()
    assert sched.last_epoch() == 1 and not math.isnan(sched.get_last_lr())


def test_accelerate_022_load_state_reads_a_whole_directory(tmp_path):
    """save_state(safe_serialization=False): pytorch_model.bin instead of model.safetensors,
    so Accelerate 0.22's own Accelerator.load_state takes the whole directory (issue 20, item 1)."""
    accelerate = pytest.importorskip("accelerate")
    acc, sched = _run(tmp_path, "linear_warmup", **WARMUP)
    model, opt, loader = acc.keep_alive
    ckpt = tmp_path / "ckpt"
    acc.save_state(str(ckpt), safe_serialization=False)
    names = sorted(p.name for p in ckpt.iterdir())
    assert names == ["manifest.json", "optimizer.bin", "pytorch_model.bin", "random_states_0.pkl", "scheduler.bin"]
    weights = torch.load(str(ckpt / "pytorch_model.bin"))
    assert {k: tuple(v.shape) for k, v in weights.items()} == {"0.weight": (3, 4), "0.bias": (3,)}

    twin = torch.nn.Sequential(torch.nn.Linear(4, 3))
    optimizer = torch.optim.AdamW(twin.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _warmup_lambda)
    python = accelerate.Accelerator(cpu=True)
    twin, optimizer, scheduler = python.prepare(twin, optimizer, scheduler)
    python.load_state(str(ckpt))
    ours = acc.get_state_dict(model)
    for name, value in twin.state_dict().items():
        assert torch.equal(value, torch.as_tensor(np.asarray(ours[name]))), name
    assert scheduler.scheduler.last_epoch == 3
    assert optimizer.optimizer.state[optimizer.optimizer.param_groups[0]["params"][0]]["step"].item() == 3
    assert torch.equal(torch.get_rng_state(), torch.load(str(ckpt / "random_states_0.pkl"))["torch_manual_seed"])

    # And libaccel reads its own pickle back (the manifest covers it).
    before = {k: np.array(v) for k, v in ours.items()}
    x, y = next(iter(loader))  # move away from the checkpoint
    acc.backward(model(x).loss("cross_entropy", y))
    opt.step()
    assert not np.array_equal(np.asarray(acc.get_state_dict(model)["0.bias"]), before["0.bias"])
    acc.load_state(str(ckpt))
    for name, value in acc.get_state_dict(model).items():
        assert np.array_equal(np.asarray(value), before[name]), name


@pytest.mark.parametrize("kind", ["one_cycle", "multi_step"])
def test_torch_113s_own_one_cycle_and_multi_step_states_load(tmp_path, kind):
    """PyTorch 1.13 pickles OneCycleLR's anneal_func (a bound method: the scheduler
    object with its optimizer) and MultiStepLR's Counter: read as inert data / a dict."""
    if kind == "one_cycle":
        options = dict(max_lr=0.5, total_steps=12)
        make = lambda o: torch.optim.lr_scheduler.OneCycleLR(o, cycle_momentum=False, **options)  # noqa: E731
    else:
        options = dict(milestones=[2, 4, 4], gamma=0.5)
        make = lambda o: torch.optim.lr_scheduler.MultiStepLR(o, **options)  # noqa: E731
    acc, sched = _run(tmp_path, kind, optimizer="sgd", steps=1, **options)
    ckpt = tmp_path / "ckpt"
    acc.save_state(str(ckpt))
    twin = make(_twin_optimizer("sgd"))
    for _ in range(5):
        twin.optimizer.step()
        twin.step()
    path = tmp_path / "torch_scheduler.bin"
    torch.save(twin.state_dict(), str(path))
    _tamper(ckpt, "scheduler.bin", path.read_bytes())
    acc.load_state(str(ckpt))
    assert sched.last_epoch() == 5
    assert sched.get_last_lr() == pytest.approx(twin.get_last_lr()[0], rel=1e-12)
    for _ in range(3):
        twin.optimizer.step()
        twin.step()
        sched.step()
        assert sched.get_last_lr() == pytest.approx(twin.get_last_lr()[0], rel=1e-12)
