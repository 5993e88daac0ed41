"""Training-loop features from Python: accumulation, checkpoints, custom objects, hooks, trackers."""
import json
import os

import numpy as np
import pytest

import accel

LINEAR = '[{"type": "Linear", "in_features": 4, "out_features": 3}]'


def _xxh3(data):
    import xxhash
    return xxhash.xxh3_64_hexdigest(data)


def _tamper(checkpoint, name, data):
    """Replaces a checkpoint file and rewrites its manifest entry to match, as
    someone who can write the directory could (checksums catch damage, not that)."""
    (checkpoint / name).write_bytes(data)
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    manifest["files"][name] = {"bytes": len(data), "xxh3": _xxh3(data)}
    (checkpoint / "manifest.json").write_text(json.dumps(manifest))


def make_objects(tmp_path, **options):
    """A seeded accelerator, model, AdamW and shuffled loader, not prepared yet."""
    acc = accel.Accelerator(cpu=True, project_dir=str(tmp_path), **options)
    acc.set_seed(3)
    model = accel.Model.from_json(LINEAR)
    opt = accel.Optimizer(model, "adamw", lr=0.01)
    rng = np.random.default_rng(1)
    data = [(rng.standard_normal(4).astype(np.float32), int(i % 3)) for i in range(24)]
    loader = accel.DataLoader(data, batch_size=4, shuffle=True, seed=5)
    return acc, model, opt, loader


def make_run(tmp_path, **options):
    acc, model, opt, loader = make_objects(tmp_path, **options)
    acc.prepare(model, opt, loader)
    return acc, model, opt, loader


def train_steps(acc, model, opt, loader, steps):
    losses = []
    for x, y in loader:
        if len(losses) == steps:
            break
        with acc.accumulate(model):
            loss = model(x).loss("cross_entropy", y)
            acc.backward(loss)
            opt.step()
            opt.zero_grad()
        losses.append(loss.item())
    return losses


def test_accumulate_context_syncs_every_nth_step(tmp_path):
    acc, model, opt, loader = make_run(tmp_path, gradient_accumulation_steps=2)
    syncs = []
    for x, y in loader:
        with acc.accumulate(model):
            acc.backward(model(x).loss("cross_entropy", y))
            syncs.append(acc.sync_gradients)
            opt.step()
            opt.zero_grad()
    assert syncs == [False, True] * 3


def test_an_evaluation_before_the_last_step_keeps_its_sync(tmp_path):
    """24 samples in 6 batches with a window of 4: the last batch ends a short window and must
    sync (sync_with_dataloader), also when an evaluation loop ran at that batch before the
    step; the evaluation's own end no longer hides the training loader's."""
    acc, model, opt, loader = make_run(tmp_path, gradient_accumulation_steps=4)
    evaluation = acc.prepare(accel.DataLoader([(np.zeros(4, np.float32), 0)] * 5, batch_size=2))
    syncs, remainders = [], []
    for step, (x, y) in enumerate(loader):
        if step == len(loader) - 1:
            assert sum(1 for _ in evaluation) == 3
        with acc.accumulate(model):
            acc.backward(model(x).loss("cross_entropy", y))
            syncs.append(acc.sync_gradients)
            remainders.append(acc.gradient_state.remainder)
            opt.step()
            opt.zero_grad()
    assert syncs == [False, False, False, True, False, True]
    assert remainders == [0] * 6  # 24 % 4, the training loader's, not the evaluation's 5 % 2


def test_save_and_load_state_resume_exactly(tmp_path):
    acc, model, opt, loader = make_run(tmp_path)
    train_steps(acc, model, opt, loader, 2)
    acc.save_state(str(tmp_path / "ckpt"))
    expected = train_steps(acc, model, opt, loader, 3)

    acc2, model2, opt2, loader2 = make_run(tmp_path)
    acc2.load_state(str(tmp_path / "ckpt"))
    assert train_steps(acc2, model2, opt2, loader2, 3) == expected


def test_load_state_of_missing_directory_names_it(tmp_path):
    acc, *_ = make_run(tmp_path)
    with pytest.raises(accel.AccelError, match="no-such-checkpoint"):
        acc.load_state(str(tmp_path / "no-such-checkpoint"))


def test_registered_python_object_is_saved_and_restored(tmp_path):
    class Counter:
        def __init__(self):
            self.count = 0

        def state_dict(self):
            return {"count": self.count, "blob": bytes(range(256))}

        def load_state_dict(self, state):
            assert state["blob"] == bytes(range(256))
            self.count = state["count"]

    acc, *_ = make_run(tmp_path)
    counter = Counter()
    acc.register_for_checkpointing(counter)
    counter.count = 7
    acc.save_state(str(tmp_path / "ckpt"))
    counter.count = 0
    acc.load_state(str(tmp_path / "ckpt"))
    assert counter.count == 7
    with pytest.raises(TypeError, match="state_dict"):
        acc.register_for_checkpointing(object())


class _Point:
    def __init__(self, x):
        self.x = x


class _Holder:
    def __init__(self):
        self.point = _Point(1)

    def state_dict(self):
        return {"point": self.point}

    def load_state_dict(self, state):
        self.point = state["point"]


def test_checkpoint_objects_hold_plain_data_unless_pickle_is_allowed(tmp_path):
    import collections

    class Plain:
        state = None

        def state_dict(self):
            return collections.OrderedDict(a=[1, 2.5, "x", b"y", None, (3, 4), {5}])

        def load_state_dict(self, state):
            self.state = state

    acc, *_ = make_run(tmp_path)
    plain = Plain()
    acc.register_for_checkpointing(plain)
    acc.save_state(str(tmp_path / "plain"))
    acc.load_state(str(tmp_path / "plain"))
    assert plain.state == plain.state_dict()

    acc, *_ = make_run(tmp_path)
    acc.register_for_checkpointing(_Holder())
    with pytest.raises(accel.AccelError, match="_Point is not plain data.*allow_pickle=True"):
        acc.save_state(str(tmp_path / "refused"))
    assert not (tmp_path / "refused").exists()

    acc, *_ = make_run(tmp_path)
    holder = _Holder()
    acc.register_for_checkpointing(holder, allow_pickle=True)
    acc.save_state(str(tmp_path / "pickled"))
    holder.point = _Point(5)
    acc.load_state(str(tmp_path / "pickled"))
    assert holder.point.x == 1


def test_a_planted_pickle_does_not_run_on_load(tmp_path):
    import pickle as pickle_module

    class Counter:
        count = 0

        def state_dict(self):
            return {"count": self.count}

        def load_state_dict(self, state):
            self.count = state["count"]

    acc, *_ = make_run(tmp_path)
    acc.register_for_checkpointing(Counter())
    acc.save_state(str(tmp_path / "ckpt"))

    class Exploit:
        def __reduce__(self):
            return (os.system, ("touch " + str(tmp_path / "pwned"),))

    # custom_checkpoint_0.pkl holds the object's bytes as a pickled bytes object (torch.load returns them).
    torch = pytest.importorskip("torch")
    assert torch.load(str(tmp_path / "ckpt" / "custom_checkpoint_0.pkl")) == pickle_module.dumps({"count": 0})
    import io
    wrapped = io.BytesIO()
    torch.save(pickle_module.dumps(Exploit()), wrapped, pickle_protocol=4)
    _tamper(tmp_path / "ckpt", "custom_checkpoint_0.pkl", wrapped.getvalue())
    with pytest.raises(accel.AccelError, match="posix.system is not plain data"):
        acc.load_state(str(tmp_path / "ckpt"))
    assert not (tmp_path / "pwned").exists()


def test_failing_checkpoint_object_fails_save_state_with_its_message(tmp_path):
    class Broken:
        def state_dict(self):
            raise RuntimeError("cannot serialise the widget")

        def load_state_dict(self, state):
            pass

    acc, *_ = make_run(tmp_path)
    acc.register_for_checkpointing(Broken())
    with pytest.raises(accel.AccelError, match="cannot serialise the widget"):
        acc.save_state(str(tmp_path / "ckpt"))
    assert not (tmp_path / "ckpt").exists()


def test_pre_hooks_run_and_can_be_removed(tmp_path):
    acc, *_ = make_run(tmp_path)
    seen = []
    handle = acc.register_save_state_pre_hook(lambda d: seen.append(("save", os.path.basename(d))))
    acc.register_load_state_pre_hook(lambda d: seen.append(("load", os.path.basename(d))))
    acc.save_state(str(tmp_path / "a"))
    acc.load_state(str(tmp_path / "a"))
    handle.remove()
    acc.save_state(str(tmp_path / "b"))
    assert seen == [("save", "a"), ("load", "a")]
    with pytest.raises(accel.AccelError):
        handle.remove()


def test_pre_hooks_get_models_and_weights_as_accelerate_passes_them(tmp_path):
    # Accelerate: save hooks get (models, weights, output_dir), load hooks (models, input_dir).
    acc, model, *_ = make_run(tmp_path)
    seen = {}

    def save_hook(models, weights, output_dir):
        seen["save"] = (models, weights, output_dir)

    def load_hook(models, input_dir):
        seen["load"] = (models, input_dir)

    acc.register_save_state_pre_hook(save_hook)
    acc.register_load_state_pre_hook(load_hook)
    acc.save_state(str(tmp_path / "c"))
    acc.load_state(str(tmp_path / "c"))
    models, weights, output_dir = seen["save"]
    assert models == [model] and os.path.basename(output_dir) == "c" and len(weights) == 1
    expected = acc.get_state_dict(model)
    assert list(weights[0]) == list(expected)
    assert all(np.array_equal(weights[0][k], expected[k]) for k in expected)
    assert seen["load"][0] == [model] and os.path.basename(seen["load"][1]) == "c"
    assert acc.free_memory(model) == [None] and acc._models == []


def test_automatic_checkpoint_naming_and_total_limit(tmp_path):
    acc, *_ = make_run(tmp_path, automatic_checkpoint_naming=True, total_limit=2)
    for _ in range(3):
        acc.save_state()
    assert sorted(os.listdir(tmp_path / "checkpoints")) == ["checkpoint_1", "checkpoint_2"]
    assert acc.save_iteration == 3


def test_save_model_and_load_checkpoint_in_model(tmp_path):
    acc, model, opt, loader = make_run(tmp_path)
    acc.save_model(model, str(tmp_path / "export"))
    assert (tmp_path / "export" / "model.safetensors").exists()
    other = accel.Model.from_json(LINEAR)
    assert acc.load_checkpoint_in_model(other, str(tmp_path / "export" / "model.safetensors")) == (0, 0)
    x = accel.tensor(np.ones((2, 4), np.float32))
    np.testing.assert_array_equal(model(x).numpy(), other(x).numpy())


def test_save_named_tensors_reads_back_with_safetensors_and_as_a_dataset(tmp_path):
    from safetensors.numpy import load_file

    acc = accel.Accelerator(cpu=True)
    shards = tmp_path / "shards"
    shards.mkdir()
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    acc.save({"x": accel.tensor(x), "y": np.arange(6, dtype=np.int64)}, str(shards / "part-0.safetensors"))
    back = load_file(str(shards / "part-0.safetensors"))
    np.testing.assert_array_equal(back["x"], x)
    np.testing.assert_array_equal(back["y"], np.arange(6))
    assert accel.Dataset.from_safetensors(str(shards), ["x", "y"]).size() == 6
    with pytest.raises(accel.AccelError, match="bad.safetensors"):
        acc.save({"x": x}, str(tmp_path / "no" / "such" / "dir" / "bad.safetensors"))


def test_custom_and_builtin_trackers(tmp_path):
    class Recorder(accel.Tracker):
        name = "recorder"

        def __init__(self):
            self.config, self.logged, self.finished = None, [], False

        def store_init_configuration(self, config):
            self.config = config

        def log(self, values, step=None):
            self.logged.append((values, step))

        def finish(self):
            self.finished = True

    acc, *_ = make_run(tmp_path, log_with=["jsonl"])
    recorder = Recorder()
    acc.add_tracker(recorder)
    acc.init_trackers("run", {"lr": 0.01, "model": "linear"})
    acc.log({"loss": 0.5, "accuracy": 0.75}, step=3)
    acc.log({"loss": 0.25})
    acc.end_training()
    assert recorder.config == {"lr": 0.01, "model": "linear"}
    assert recorder.logged == [({"loss": 0.5, "accuracy": 0.75}, 3), ({"loss": 0.25}, None)]
    assert recorder.finished
    records = [json.loads(line) for path in (tmp_path / "logs").rglob("*.jsonl") for line in path.open()]
    assert any(r.get("loss") == 0.5 for r in records)


def test_log_with_takes_logger_types_and_tracker_instances_as_accelerate_does(tmp_path):
    """Accelerate's log_with: LoggerType members (accelerate.utils) and GeneralTracker instances
    (accelerate.tracking) beside names; anything else is a TypeError naming it."""
    from accel.tracking import GeneralTracker
    from accel.utils import LoggerType

    class Recorder(GeneralTracker):
        name = "recorder"

        def __init__(self):
            self.logged = []

        def log(self, values, step=None):
            self.logged.append((values, step))

    assert str(LoggerType.COMETML) == "comet_ml" and "aim" in LoggerType.list()
    recorder = Recorder()
    acc, *_ = make_run(tmp_path, log_with=[LoggerType.CSV, recorder, "jsonl"])
    assert acc.get_tracker("recorder") is recorder
    acc.init_trackers("run")
    acc.log({"loss": 0.5}, step=1)
    acc.end_training()
    assert recorder.logged == [({"loss": 0.5}, 1)]
    assert list((tmp_path / "logs").rglob("metrics.csv")) and list((tmp_path / "logs").rglob("metrics.jsonl"))
    single, *_ = make_run(tmp_path / "single", log_with=LoggerType.JSONL)
    single.init_trackers("run")
    single.end_training()
    with pytest.raises(TypeError, match="int"):
        accel.Accelerator(cpu=True, log_with=[3])
    unbuilt, *_ = make_run(tmp_path / "clearml", log_with=LoggerType.CLEARML)
    with pytest.raises(accel.AccelError, match="'clearml'"):
        unbuilt.init_trackers("run")


def test_init_kwargs_reach_the_builtin_trackers(tmp_path):
    """Accelerate's init_trackers(init_kwargs=...): wandb's run name and id, dvclive's dir."""
    acc, *_ = make_run(tmp_path, log_with=["wandb", "dvclive"])
    with pytest.raises(accel.AccelError, match="'entity_name'"):
        acc.init_trackers("run", init_kwargs={"wandb": {"entity_name": "me"}})
    acc.init_trackers("run", {"lr": 0.01}, init_kwargs={"wandb": {"name": "py", "id": "py01"},
                                                       "dvclive": {"dir": str(tmp_path / "live")}})
    acc.log({"loss": 0.5}, step=2)
    acc.end_training()
    assert list((tmp_path / "logs" / "wandb").glob("offline-run-*-py01/run-py01.wandb"))
    assert (tmp_path / "live" / "plots" / "metrics" / "loss.tsv").read_text() == "step\tloss\n2\t0.5\n"


def test_failing_tracker_names_its_error(tmp_path):
    class Failing(accel.Tracker):
        name = "failing"

        def log(self, values, step=None):
            raise ValueError("tracker backend is down")

    acc, *_ = make_run(tmp_path)
    acc.add_tracker(Failing())
    acc.init_trackers("run")
    with pytest.raises(accel.AccelError, match="tracker backend is down"):
        acc.log({"loss": 1.0})


def test_profile_writes_a_trace(tmp_path):
    acc, model, *_ = make_run(tmp_path)
    with acc.profile(str(tmp_path / "trace")):
        model(accel.tensor(np.ones((2, 4), np.float32)))
    assert (tmp_path / "trace" / "trace_0.json").exists()


def test_profile_ends_only_on_its_own_thread(tmp_path):
    import threading
    from accel import core
    acc, model, *_ = make_run(tmp_path)
    run = core.Profile.begin(acc, str(tmp_path / "trace"))
    errors = []

    def end_elsewhere():
        try:
            run.end()
        except accel.AccelError as error:
            errors.append(str(error))

    thread = threading.Thread(target=end_elsewhere)
    thread.start()
    thread.join()
    assert len(errors) == 1 and "another thread" in errors[0]
    model(accel.tensor(np.ones((2, 4), np.float32)))  # still recording here
    run.end()
    assert '"accel::forward"' in (tmp_path / "trace" / "trace_0.json").read_text()


def test_scopes_and_single_process_collectives(tmp_path):
    acc, model, *_ = make_run(tmp_path)
    with acc.main_process_first(), acc.autocast(), acc.no_sync(model):
        pass
    t = accel.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    np.testing.assert_array_equal(acc.gather(t).numpy(), t.numpy())
    np.testing.assert_array_equal(acc.reduce(t, "mean").numpy(), t.numpy())
    assert acc.gather_object({"rank": 0}) == {"rank": 0}  # one process: the object itself, as Accelerate
    with pytest.raises(ValueError, match="reduction"):
        acc.reduce(t, "max")
    with pytest.raises(accel.AccelError):
        acc.autocast_end()


def test_optimizer_state_is_a_pytorch_state_dict(tmp_path):
    import torch  # python3-torch, installed by scripts/install-deps.sh
    acc, model, opt, loader = make_run(tmp_path)
    train_steps(acc, model, opt, loader, 3)
    acc.save_state(str(tmp_path / "ckpt"))
    state = torch.load(str(tmp_path / "ckpt" / "optimizer.bin"))
    assert sorted(state) == ["param_groups", "state"]
    assert sorted(state["state"]) == [0, 1]
    assert sorted(state["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    assert state["state"][0]["step"].item() == 3
    group = state["param_groups"][0]
    assert group["params"] == [0, 1] and group["lr"] == pytest.approx(0.01) and group["betas"] == (0.9, 0.999)
    # PyTorch's own AdamW takes it for the same shapes.
    twin = torch.nn.Linear(4, 3)
    torch_opt = torch.optim.AdamW(twin.parameters(), lr=0.5)
    torch_opt.load_state_dict(state)
    assert torch_opt.param_groups[0]["lr"] == pytest.approx(0.01)
    assert torch.equal(torch_opt.state[twin.weight]["exp_avg"], state["state"][0]["exp_avg"])


def test_optimizer_state_with_code_in_it_is_refused(tmp_path):
    import torch  # python3-torch, installed by scripts/install-deps.sh
    acc, model, opt, loader = make_run(tmp_path)
    train_steps(acc, model, opt, loader, 2)
    acc.save_state(str(tmp_path / "ckpt"))

    class Exploit:
        def __reduce__(self):
            return (os.system, ("touch " + str(tmp_path / "pwned"),))

    path = tmp_path / "evil.bin"
    torch.save({"state": {}, "param_groups": [Exploit()]}, str(path))
    _tamper(tmp_path / "ckpt", "optimizer.bin", path.read_bytes())
    with pytest.raises(accel.AccelError, match="optimizer.bin|not a PyTorch pickle of plain data"):
        acc.load_state(str(tmp_path / "ckpt"))
    assert not (tmp_path / "pwned").exists()


def test_partial_state_on_one_process():
    state = accel.PartialState(cpu=True)
    assert (state.process_index, state.local_process_index, state.num_processes) == (0, 0, 1)
    assert state.is_main_process and state.is_last_process and not state.use_distributed
    assert state.distributed_type == accel.DistributedType.NO and state.device == "cpu"
    with state.split_between_processes([1, 2, 3]) as share:
        assert share == [1, 2, 3]
    with state.main_process_first():
        pass
    state.wait_for_everyone()
    acc = accel.Accelerator(cpu=True)  # beside it, as in Accelerate
    assert acc.num_processes == 1
    with pytest.raises(ValueError, match="backend 'nccl'"):
        accel.PartialState(cpu=True, backend="nccl")
    with pytest.raises(TypeError, match="unsupported arguments"):
        accel.PartialState(init_method="tcp://x")
    state.close()
    with pytest.raises(ValueError):
        state.process_index


def test_local_sgd_on_one_process_is_off_and_refuses_bad_steps(tmp_path):
    acc, model, opt, loader = make_run(tmp_path)
    with accel.LocalSGD(accelerator=acc, model=model, local_sgd_steps=2) as local_sgd:
        assert not local_sgd.enabled  # as Accelerate: nothing to average alone
        local_sgd.step()
    assert local_sgd.num_steps == 1
    with pytest.raises(ValueError, match="local_sgd_steps"):
        accel.LocalSGD(accelerator=acc, model=model, local_sgd_steps=0)
    with pytest.raises(accel.AccelError, match="not prepared"):
        acc.average_parameters(accel.Model.from_json(LINEAR))


def test_prepare_one_object_at_a_time_as_accelerate_names_it(tmp_path):
    # prepare_model / _optimizer / _data_loader / _scheduler return what they prepared and record
    # it as prepare() does: the same run either way.
    def run(one_at_a_time):
        acc, model, opt, loader = make_objects(tmp_path)
        scheduler = accel.Scheduler(opt, "multi_step", milestones=[1, 2], gamma=0.5)
        if one_at_a_time:
            assert acc.prepare_model(model, evaluation_mode=False) is model
            assert acc.prepare_optimizer(opt, device_placement=True) is opt
            assert acc.prepare_data_loader(loader, device_placement=True) is loader
            assert acc.prepare_scheduler(scheduler) is scheduler
        else:
            acc.prepare(model, opt, loader, scheduler)
        seen = []
        acc.register_save_state_pre_hook(lambda models, weights, output_dir: seen.append(models))
        losses = train_steps(acc, model, opt, loader, 3)
        acc.save_state(str(tmp_path / ("one" if one_at_a_time else "all")))
        assert seen == [[model]] and not acc.optimizer_step_was_skipped
        return losses

    assert run(True) == run(False)


def test_prepare_one_at_a_time_refuses_what_it_cannot_honour(tmp_path):
    acc = accel.Accelerator(cpu=True, project_dir=str(tmp_path))
    model = accel.Model.from_json(LINEAR)
    with pytest.raises(ValueError, match=r"prepare_model\(device_placement=False\)"):
        acc.prepare_model(model, device_placement=False)
    loader = accel.DataLoader([(np.zeros(4, np.float32), 0)] * 4, batch_size=2)
    with pytest.raises(ValueError, match=r"device_placement=False\) differs from the accelerator's device_placement=True"):
        acc.prepare_data_loader(loader, device_placement=False)
    with pytest.raises(ValueError, match="slice_fn_for_dispatch"):
        acc.prepare_data_loader(loader, slice_fn_for_dispatch=lambda t, i: t)
    assert acc.device_placement and acc._models == []
