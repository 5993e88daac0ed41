"""Reads libaccel's tracker output back with the real tools' own readers.

Run by CTest with TRACKING_WRITER (the tracking_writer program) set."""
import csv
import json
import os
import signal
import subprocess
import time

import pytest

WRITER = os.environ["TRACKING_WRITER"]
STEPS = 25


def write_run(tmp_path, log_with, steps=STEPS, config=None, init_kwargs=None):
    extra = [json.dumps(config if config is not None else {"lr": 0.01, "optimizer": "adam", "epochs": 3})] \
        if config is not None or init_kwargs is not None else []
    extra += [json.dumps(init_kwargs)] if init_kwargs is not None else []
    # "all" includes trackio and comet_ml, which write outside logging_dir (their own stores).
    env = dict(os.environ, TRACKIO_DIR=str(tmp_path / "trackio"), COMET_OFFLINE_DIRECTORY=str(tmp_path / "comet"))
    subprocess.run([WRITER, log_with, str(tmp_path), "demo", str(steps)] + extra, check=True, timeout=60, env=env)


def python_text(value):
    """str(value) as Accelerate logs it, but a whole number without ".0" (libaccel's
    numbers do not say whether they were ints; see src/core/number_text.hpp)."""
    text = str(value)
    return text[:-2] if isinstance(value, float) and text.endswith(".0") else text


# Values whose 17-digit text differs from the shortest one that round-trips.
AWKWARD = {"lr": 0.1, "weight_decay": 3e-4, "eps": 1e-5, "third": 1 / 3, "big": 1.5e16, "tiny": -2.5e-300,
           "epochs": 3, "optimizer": "adam"}


def expected(step):
    return {"train/loss": 1.0 / (step + 1), "accuracy": step * 0.01}


def test_tensorboard_event_accumulator_reads_every_scalar(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    write_run(tmp_path, "tensorboard")
    run_dir = tmp_path / "demo"
    assert len(list(run_dir.glob("events.out.tfevents.*"))) == 1
    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    assert set(acc.Tags()["scalars"]) == {"train/loss", "accuracy"}
    for tag in ("train/loss", "accuracy"):
        events = acc.Scalars(tag)
        assert [e.step for e in events] == list(range(STEPS))
        for e in events:
            assert e.value == pytest.approx(expected(e.step)[tag], rel=1e-6, abs=1e-7)
    text = acc.Tensors("notes")
    assert text[0].tensor_proto.string_val == [b"hello tracking"]
    content = acc.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    data = plugin_data_pb2.HParamsPluginData.FromString(content)
    hparams = data.session_start_info.hparams
    assert hparams["lr"].number_value == pytest.approx(0.01)
    assert hparams["epochs"].number_value == 3
    assert hparams["optimizer"].string_value == "adam"


def test_tensorboard_init_kwargs_purge_a_resumed_run_and_name_its_file(tmp_path):
    # SummaryWriter's keywords through Accelerate's init_kwargs: a run resumed from a checkpoint
    # at step 10 (purge_step) hides what the first run logged from step 10 on.
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    write_run(tmp_path, "tensorboard")  # steps 0 to 24
    time.sleep(1.1)  # event files sort by their creation second: the resumed run's must come after
    write_run(tmp_path, "tensorboard", steps=5,
              init_kwargs={"tensorboard": {"purge_step": 10, "filename_suffix": ".resumed", "flush_secs": 30,
                                           "max_queue": 5}})
    files = sorted(p.name for p in (tmp_path / "demo").glob("events.out.tfevents.*"))
    assert len(files) == 2 and files[1].endswith(".resumed") and not files[0].endswith(".resumed")
    acc = EventAccumulator(str(tmp_path / "demo"), size_guidance={"scalars": 0})
    acc.Reload()
    # The first run's steps 10-24 are gone; the resumed run's 0-4 (the writer's steps) follow.
    assert [e.step for e in acc.Scalars("accuracy")] == list(range(10)) + list(range(5))
    bad = subprocess.run([WRITER, "tensorboard", str(tmp_path), "demo", "1", "{}", '{"tensorboard": {"comment": "x"}}'],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "'comment' (supported: filename_suffix, flush_secs, max_queue, purge_step)" \
        in bad.stderr, bad.stderr


def test_mlflow_client_reads_params_and_metric_history(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 opens file stores only when asked to

    write_run(tmp_path, "mlflow")
    write_run(tmp_path, "mlflow", steps=3)  # a second run joins the same experiment
    client = MlflowClient(tracking_uri=(tmp_path / "mlruns").as_uri())
    experiment = client.get_experiment_by_name("demo")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], order_by=["attributes.start_time ASC"])
    assert len(runs) == 2
    run = runs[0]
    assert run.info.status == "FINISHED"
    assert run.data.params == {"lr": "0.01", "optimizer": "adam", "epochs": "3"}
    assert run.data.tags["mlflow.runName"] == "demo"
    for key in ("train/loss", "accuracy"):
        history = client.get_metric_history(run.info.run_id, key)
        assert [m.step for m in history] == list(range(STEPS))
        for m in history:
            assert m.value == pytest.approx(expected(m.step)[key])


def test_mlflow_params_read_back_as_pythons_str(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    write_run(tmp_path, "mlflow", steps=4, config=AWKWARD)
    client = MlflowClient(tracking_uri=(tmp_path / "mlruns").as_uri())
    run = client.search_runs([client.get_experiment_by_name("demo").experiment_id])[0]
    assert run.data.params == {key: python_text(value) for key, value in AWKWARD.items()}
    history = client.get_metric_history(run.info.run_id, "accuracy")
    assert [m.value for m in history] == [expected(step)["accuracy"] for step in range(4)]  # exact, not approx


def test_csv_writes_params_and_values_as_pythons_str(tmp_path):
    write_run(tmp_path, "csv", steps=4, config=AWKWARD)
    with open(tmp_path / "demo" / "params.csv", newline="") as f:
        assert {row["name"]: row["value"] for row in csv.DictReader(f)} == {
            key: python_text(value) for key, value in AWKWARD.items()}
    with open(tmp_path / "demo" / "metrics.csv", newline="") as f:
        for row in csv.DictReader(f):
            assert row["value"] == python_text(expected(int(row["step"]))[row["tag"]]), row


def test_jsonl_and_csv_hold_one_record_per_log_call(tmp_path):
    write_run(tmp_path, "jsonl,csv")
    lines = (tmp_path / "demo" / "metrics.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert records[0] == {"step": 0, "notes": "hello tracking"}
    assert [r["step"] for r in records[1:]] == list(range(STEPS))
    for r in records[1:]:
        assert r["train/loss"] == pytest.approx(expected(r["step"])["train/loss"])
    assert json.loads((tmp_path / "demo" / "config.json").read_text()) == {
        "lr": 0.01, "optimizer": "adam", "epochs": 3}
    with open(tmp_path / "demo" / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * STEPS
    for row in rows:
        assert float(row["value"]) == pytest.approx(expected(int(row["step"]))[row["tag"]])


def test_all_picks_every_builtin_tracker(tmp_path):
    write_run(tmp_path, "all", steps=2)
    demo = tmp_path / "demo"
    assert (demo / "metrics.jsonl").exists() and (demo / "metrics.csv").exists()
    assert list(demo.glob("events.out.tfevents.*"))
    assert list((tmp_path / "mlruns").glob("*/*/metrics/accuracy"))
    assert list((tmp_path / "wandb").glob("offline-run-*/run-*.wandb"))
    assert (tmp_path / "dvclive" / "plots" / "metrics" / "accuracy.tsv").exists()
    assert (tmp_path / "trackio" / "demo.db").exists()
    assert len(list((tmp_path / ".aim" / "meta" / "chunks").iterdir())) == 1  # librocksdb is installed here
    assert len(list((tmp_path / "comet").glob("*.zip"))) == 1


def test_killed_writer_leaves_jsonl_parsable_up_to_its_last_full_line(tmp_path):
    path = tmp_path / "demo" / "metrics.jsonl"
    proc = subprocess.Popen([WRITER, "jsonl", str(tmp_path), "demo", "-1"])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if path.exists() and path.read_bytes().count(b"\n") >= 2000:
                break
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    data = path.read_bytes()
    full_lines = data[: data.rfind(b"\n") + 1].decode().splitlines()
    assert len(full_lines) >= 2000
    steps = [json.loads(line)["step"] for line in full_lines[1:]]
    assert steps == list(range(len(steps)))


def test_only_the_main_process_writes(tmp_path):
    cli = os.environ["ACCEL_CLI"]
    subprocess.run([cli, "launch", "--nproc_per_node", "2", "--master_port", "0",
                    WRITER, "jsonl", str(tmp_path), "demo", "5"], check=True, timeout=120)
    lines = (tmp_path / "demo" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [0, 0, 1, 2, 3, 4]  # text record, then 5 steps
