"""One run logging to every built-in tracker at once, each read back by its own
tool: wandb (`wandb leet inspect`, `wandb sync --dry-run`), DVCLive/DVC
(`dvc metrics show`, `dvc plots show`, `Live(resume=True)`), trackio
(`trackio list runs`, `trackio get run/metric`), Aim (`aim storage
reindex`, then aim's SDK: `Repo.iter_runs`) and Comet (`comet offline --csv`,
comet_ml's own message schemas) here, in the venv of
scripts/trackers-python-env.sh; TensorBoard's EventAccumulator and MLflow's
client in the main test venv (ACCEL_TEST_PYTHON), on the same directory.

Run by CTest with TRACKING_WRITER (tests/tracking/tracking_writer.c) set."""
import csv
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

WRITER = os.environ["TRACKING_WRITER"]
BIN = Path(sys.executable).parent
STEPS = 300  # enough rows for the wandb log to cross its 32 KiB blocks
CONFIG = {"lr": 0.01, "optimizer": "adam", "epochs": 3}
KWARGS = {"wandb": {"name": "first-run", "tags": ["baseline", "cpu"], "notes": "from C", "id": "accel01"},
          "trackio": {"name": "first-run", "group": "sweep-a"},
          "aim": {"experiment": "sweep-a"},
          "comet_ml": {"workspace": "team", "name": "first-run", "tags": ["baseline"]}}


def expected(step):
    return {"train/loss": 1.0 / (step + 1), "accuracy": step * 0.01}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """tracking_writer all <dir> demo STEPS CONFIG INIT_KWARGS, from inside a DVC repository."""
    root = tmp_path_factory.mktemp("trackers")
    subprocess.run([BIN / "dvc", "init", "--no-scm", "-q"], cwd=root, check=True, timeout=120)
    env = dict(os.environ, WANDB_DIR="", WANDB_MODE="", TRACKIO_DIR=str(root / "trackio"),
               COMET_OFFLINE_DIRECTORY=str(root / "comet"))
    subprocess.run([WRITER, "all", str(root / "logs"), "demo", str(STEPS), json.dumps(CONFIG), json.dumps(KWARGS)],
                   cwd=root, env=env, check=True, timeout=120)
    return root


def wandb_run_dir(root):
    runs = list((root / "logs" / "wandb").glob("offline-run-*-accel01"))
    assert len(runs) == 1, runs
    return runs[0]


def test_wandb_summary_config_and_tags(run):
    out = subprocess.run([BIN / "wandb", "leet", "inspect", "--summary", "--json", str(wandb_run_dir(run))],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    summary = json.loads(out)
    assert summary["run_id"] == "accel01"
    assert summary["project"] == "demo"
    assert summary["name"] == "first-run"
    assert summary["notes"] == "from C"
    assert summary["tags"] == ["baseline", "cpu"]
    assert summary["state"] == "finished" and summary["exit_code"] == 0
    assert summary["config"] == CONFIG
    assert summary["step"] == STEPS - 1
    last = expected(STEPS - 1)
    assert summary["summary"]["train/loss"] == pytest.approx(last["train/loss"], rel=1e-15)
    assert summary["summary"]["accuracy"] == pytest.approx(last["accuracy"], rel=1e-15)


def test_wandb_history_has_every_step_with_the_text_merged_into_step_0(run):
    run_file = next(wandb_run_dir(run).glob("run-accel01.wandb"))
    out = subprocess.run([BIN / "wandb", "leet", "inspect", "--json", str(run_file)],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    rows = [json.loads(line)["history"] for line in out.splitlines() if json.loads(line)["type"] == "history"]
    assert [row["step"]["num"] for row in rows] == list(range(STEPS))
    for row in rows:
        item = row["item"]
        assert item["_step"] == row["step"]["num"]
        for key, value in expected(item["_step"]).items():
            assert item[key] == pytest.approx(value, rel=1e-15)  # doubles written in their shortest exact text
    assert rows[0]["item"]["notes"] == "hello tracking"


def test_wandb_sync_accepts_the_offline_run(run):
    out = subprocess.run([BIN / "wandb", "sync", "--dry-run", str(wandb_run_dir(run))],
                         check=True, capture_output=True, text=True, timeout=120)
    assert "Would sync 1 run(s)" in out.stdout + out.stderr
    assert "run-accel01.wandb" in out.stdout + out.stderr


def test_dvc_reads_the_dvclive_metrics_and_plots(run):
    metrics = json.loads(subprocess.run([BIN / "dvc", "metrics", "show", "--json"], cwd=run, check=True,
                                        capture_output=True, text=True, timeout=120).stdout)
    data = metrics[""]["data"]["logs/dvclive/metrics.json"]["data"]
    last = expected(STEPS - 1)
    assert data["step"] == STEPS - 1
    assert data["train"]["loss"] == pytest.approx(last["train/loss"], rel=1e-15)
    assert data["accuracy"] == pytest.approx(last["accuracy"], rel=1e-15)
    plots = json.loads(subprocess.run([BIN / "dvc", "plots", "show", "--json"], cwd=run, check=True,
                                      capture_output=True, text=True, timeout=120).stdout)["data"]
    loss = plots["logs/dvclive/plots/metrics/train/loss.tsv"][0]["content"]["data"]["values"]
    assert [int(v["step"]) for v in loss] == list(range(STEPS))
    for v in loss:
        assert float(v["loss"]) == pytest.approx(expected(int(v["step"]))["train/loss"], rel=1e-15)
    assert "logs/dvclive/plots/metrics/accuracy.tsv" in plots


def test_dvclive_resumes_after_our_last_step_and_reads_our_params(run):
    import yaml
    from dvclive import Live

    live_dir = run / "logs" / "dvclive"
    assert yaml.safe_load((live_dir / "params.yaml").read_text()) == CONFIG
    with Live(dir=str(live_dir), resume=True, save_dvc_exp=False) as live:
        assert live.step == STEPS  # DVCLive continues after the last step in our metrics.json


def trackio_json(run, *args):
    env = dict(os.environ, TRACKIO_DIR=str(run / "trackio"))
    out = subprocess.run([BIN / "trackio", *args, "--project", "demo", "--json"], env=env, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    return json.loads(out)


def test_trackio_lists_the_run_with_its_config_and_every_step(run):
    assert trackio_json(run, "list", "runs")["runs"] == ["first-run"]
    info = trackio_json(run, "get", "run", "--run", "first-run")
    assert {k: v for k, v in info["config"].items() if not k.startswith("_")} == CONFIG
    assert info["config"]["_Group"] == "sweep-a"
    assert info["num_logs"] == STEPS + 1  # the text at step 0 is a row of its own, as trackio.log writes it
    assert info["last_step"] == STEPS - 1
    assert set(info["metrics"]) >= {"train/loss", "accuracy"}
    values = trackio_json(run, "get", "metric", "--run", "first-run", "--metric", "train/loss")["values"]
    assert [v["step"] for v in values] == list(range(STEPS))
    for v in values:
        assert v["value"] == pytest.approx(expected(v["step"])["train/loss"], rel=1e-15)


# Aim's SDK on the repository: each run with its name, experiment, hparams and every metric's
# steps and values (aim 3.29's Repo, Run and Metric.data).
AIM_READER = """
import json, sys
from aim import Repo
runs = []
for r in Repo(sys.argv[1]).iter_runs():
    metrics = {}
    for m in r.metrics():
        steps, (values, epochs, times) = m.data.items_list()
        metrics[m.name] = {"context": m.context.to_dict(), "steps": list(steps), "values": list(values),
                           "first_step": m.first_step(), "last_step": m.last_step()}
    runs.append({"name": r.name, "experiment": r.experiment, "hparams": r["hparams"], "active": r.active,
                 "metrics": metrics})
print(json.dumps(runs))
"""


def test_aim_sdk_reads_the_run_with_its_hparams_and_every_step(run):
    repo = run / "logs"
    assert (repo / ".aim" / "run_metadata.sqlite").is_file()
    # Aim reads a finished run once its index holds it: what `aim up` does as it indexes.
    subprocess.run([BIN / "aim", "storage", "--repo", str(repo), "reindex"], input="y\n", text=True, check=True,
                   capture_output=True, timeout=300)
    runs = json.loads(subprocess.run([sys.executable, "-c", AIM_READER, str(repo)], check=True, capture_output=True,
                                     text=True, timeout=300).stdout)
    assert len(runs) == 1, runs
    got = runs[0]
    assert got["name"] == "demo" and got["experiment"] == "sweep-a" and not got["active"]
    assert got["hparams"] == CONFIG  # epochs stays an int, as Python's Accelerate passes it
    assert sorted(got["metrics"]) == ["accuracy", "train/loss"], "the text is no metric"
    for name in ("train/loss", "accuracy"):
        metric = got["metrics"][name]
        assert metric["context"] == {}
        assert metric["first_step"] == 0 and metric["last_step"] == STEPS - 1
        order = sorted(range(STEPS), key=lambda i: metric["steps"][i])
        assert [metric["steps"][i] for i in order] == list(range(STEPS))
        assert [metric["values"][i] for i in order] == [expected(step)[name] for step in range(STEPS)]


def comet_archive(run):
    archives = list((run / "comet").glob("*.zip"))
    assert len(archives) == 1, archives
    return archives[0]


def test_comet_offline_reads_the_archive(run):
    out = subprocess.run([BIN / "comet", "offline", "--csv", str(comet_archive(run))], check=True,
                         capture_output=True, text=True, timeout=300).stdout
    all_rows = list(csv.DictReader(io.StringIO(out)))
    assert {(r["workspace"], r["project"]) for r in all_rows} == {("team", "demo")}
    rows = [r for r in all_rows if r["level"] == "detail"]  # (besides each value's maximum and minimum)
    params = {r["name"]: r["value"] for r in rows if r["section"] == "param" and r["name"] != "curr_step"}
    assert params == {k: str(v) for k, v in CONFIG.items()}
    steps = [int(r["value"]) for r in rows if r["section"] == "param" and r["name"] == "curr_step"]
    assert steps == list(range(STEPS))
    metrics = [(r["name"], float(r["value"])) for r in rows if r["section"] == "metric"]
    assert metrics == [(k, expected(s)[k]) for s in range(STEPS) for k in sorted(expected(s))]


def test_comet_messages_pass_comet_mls_own_schemas(run):
    from comet_ml import schemas

    with zipfile.ZipFile(comet_archive(run)) as archive:
        experiment = json.loads(archive.read("experiment.json"))
        messages = [json.loads(line) for line in archive.read("messages.json").decode().splitlines()]
    schemas.get_experiment_file_validator().validate(experiment)
    assert experiment["project_name"] == "demo" and experiment["tags"] == ["baseline"]
    assert experiment["start_time"] <= experiment["stop_time"]
    validators = {"metric_msg": schemas.get_metric_msg_validator(),
                  "parameter_msg": schemas.get_parameter_msg_validator(),
                  "log_other": schemas.get_log_other_msg_validator()}
    for message in messages:
        validators[message["type"]].validate(message["payload"])
    assert [m["payload"]["message_id"] for m in messages] == list(range(1, len(messages) + 1))
    others = {m["payload"]["key"]: m["payload"]["value"] for m in messages if m["type"] == "log_other"}
    assert others == {"offline_experiment": True, "Name": "first-run", "notes": "hello tracking"}


def test_tensorboard_and_mlflow_read_the_same_run(run):
    """The main venv's readers (tensorboard, mlflow) on the directory the run above wrote."""
    script = f"""
import glob, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator({str(run / 'logs' / 'demo')!r}, size_guidance={{"scalars": 0}}); acc.Reload()
assert [e.step for e in acc.Scalars("train/loss")] == list(range({STEPS})), acc.Tags()
import mlflow
client = mlflow.MlflowClient(tracking_uri="file://" + {str(run / 'logs' / 'mlruns')!r})
exp = client.get_experiment_by_name("demo")
(r,) = client.search_runs([exp.experiment_id])
assert r.data.params == {{"lr": "0.01", "optimizer": "adam", "epochs": "3"}}, r.data.params
assert len(client.get_metric_history(r.info.run_id, "train/loss")) == {STEPS}
"""
    env = dict(os.environ, MLFLOW_ALLOW_FILE_STORE="true")
    subprocess.run([os.environ["ACCEL_TEST_PYTHON"], "-c", script], env=env, check=True, timeout=300)
