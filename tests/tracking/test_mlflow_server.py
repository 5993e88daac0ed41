"""The mlflow tracker against a real `mlflow server` from PyPI, as teams run it.

The server listens on loopback with a SQLite store; everything the tracker sent
is read back with MLflow's own MlflowClient. A small proxy in front of the
server injects the faults (503 answers, a server that goes away).

Run by CTest with MLFLOW_REST_WRITER (mlflow_rest_writer), TRACKING_WRITER and ACCEL_CLI set."""
import http.server
import json
import os
import pathlib
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

WRITER = os.environ["MLFLOW_REST_WRITER"]
FILE_WRITER = os.environ["TRACKING_WRITER"]
MLFLOW = str(pathlib.Path(sys.executable).with_name("mlflow"))
DEFAULT_CONFIG = '{"lr": 0.01, "optimizer": "adam", "epochs": 3}'  # the writer's own default
STEPS = 600  # two metrics a step: 1200 values, more than one log-batch request holds


sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "support"))
from reserve_port import reserve_port  # noqa: E402  (tests/support: a port no other test's connection takes)


def free_port():
    return reserve_port()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("mlflow_server")
    port = free_port()
    log = open(root / "server.log", "wb")
    proc = subprocess.Popen(
        [MLFLOW, "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{root}/mlflow.db", "--default-artifact-root", str(root / "artifacts")],
        stdout=log, stderr=subprocess.STDOUT, cwd=root)
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180  # the first start creates the SQLite schema
    while True:
        try:
            with urllib.request.urlopen(uri + "/health", timeout=5) as answer:
                if answer.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("mlflow server did not start:\n" + (root / "server.log").read_text()[-3000:])
        time.sleep(0.5)
    yield uri
    proc.terminate()
    proc.wait(timeout=30)


def run_writer(tmp_path, uri, project, steps=STEPS, config=None, init_kwargs=None, **env):
    environment = dict(os.environ, MLFLOW_TRACKING_URI=uri, **env)
    args = [WRITER, str(tmp_path), project, str(steps)]
    if config or init_kwargs:
        args.append(config or DEFAULT_CONFIG)
    if init_kwargs:
        args.append(json.dumps(init_kwargs))
    done = subprocess.run(args, env=environment, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = {}
    for line in done.stdout.splitlines():
        what, *rest = line.split(" ", 3)
        lines[what] = rest
    return lines, done.stderr


def status(lines, what):
    return int(lines[what][0])


def expected(step):
    return {"train/loss": 1.0 / (step + 1), "accuracy": step * 0.01}


def read_run(uri, experiment_name):
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(experiment_name)
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], order_by=["attributes.start_time ASC"])
    return client, runs


def assert_history(client, run_id, steps):
    for key in ("train/loss", "accuracy"):
        history = client.get_metric_history(run_id, key)
        assert sorted(m.step for m in history) == list(range(steps))
        for m in history:
            assert m.value == pytest.approx(expected(m.step)[key])
            assert m.timestamp > 1_600_000_000_000  # milliseconds since the epoch


def test_params_metrics_and_status_reach_a_real_server(server, tmp_path):
    lines, _ = run_writer(tmp_path, server, "demo")
    assert status(lines, "init") == 0 and status(lines, "end") == 0, lines
    client, runs = read_run(server, "demo")
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FINISHED"
    assert run.info.end_time is not None
    assert run.info.run_name == "demo"
    assert run.data.params == {"lr": "0.01", "optimizer": "adam", "epochs": "3"}
    assert_history(client, run.info.run_id, STEPS)
    assert not (tmp_path / "mlruns").exists()  # nothing went to the local store


def test_experiment_name_tags_and_run_id_from_the_environment(server, tmp_path):
    lines, _ = run_writer(tmp_path, server, "project", steps=5, MLFLOW_EXPERIMENT_NAME="team-exp",
                          MLFLOW_TAGS='{"team": "vision", "seed": 7}')
    assert status(lines, "end") == 0, lines
    client, runs = read_run(server, "team-exp")
    assert len(runs) == 1
    run_id = runs[0].info.run_id
    assert runs[0].data.tags["team"] == "vision" and runs[0].data.tags["seed"] == "7"
    # MLFLOW_RUN_ID resumes that run, as Accelerate's mlflow.start_run(run_id=...) does.
    lines, _ = run_writer(tmp_path, server, "project", steps=3, MLFLOW_RUN_ID=run_id)
    assert status(lines, "end") == 0, lines
    client, runs = read_run(server, "team-exp")
    assert [r.info.run_id for r in runs] == [run_id]
    assert runs[0].info.status == "FINISHED"
    assert len(client.get_metric_history(run_id, "accuracy")) == 5 + 3
    # MLflow refuses to change a param of a run: the params are lost and said so, the metrics still arrive.
    lines, stderr = run_writer(tmp_path, server, "project", steps=2, config='{"lr": 0.5}', MLFLOW_RUN_ID=run_id)
    assert status(lines, "end") == 3 and "1 params" in lines["end"][2] and "HTTP 400" in lines["end"][2], lines
    assert "lost 0 metrics, 1 params" in stderr
    client, runs = read_run(server, "team-exp")
    assert runs[0].data.params["lr"] == "0.01" and runs[0].info.status == "FAILED"
    assert len(client.get_metric_history(run_id, "accuracy")) == 5 + 3 + 2
    lines, _ = run_writer(tmp_path, server, "project", steps=1, MLFLOW_RUN_ID="0123456789abcdef0123456789abcdef")
    assert status(lines, "init") == 1, lines
    assert "run_id '0123456789abcdef0123456789abcdef' (MLFLOW_RUN_ID or init_kwargs)" in lines["init"][2]


def test_init_kwargs_name_describe_tag_and_resume_the_run(server, tmp_path):
    # Accelerate's MLflowTracker keywords, through init_trackers(init_kwargs={"mlflow": {...}}).
    kwargs = {"mlflow": {"run_name": "baseline", "description": "first try", "tags": {"team": "nlp", "seed": 7}}}
    lines, _ = run_writer(tmp_path, server, "kwargs-exp", steps=2, init_kwargs=kwargs)
    assert status(lines, "end") == 0, lines
    client, runs = read_run(server, "kwargs-exp")  # the experiment is still the project
    assert len(runs) == 1
    run = runs[0]
    assert run.info.run_name == "baseline" and run.data.tags["mlflow.runName"] == "baseline"
    assert run.data.tags["mlflow.note.content"] == "first try"
    assert run.data.tags["team"] == "nlp" and run.data.tags["seed"] == "7"
    resume = {"mlflow": {"run_id": run.info.run_id, "description": "second try", "tags": {"phase": "2"}}}
    lines, _ = run_writer(tmp_path, server, "kwargs-exp", steps=3, init_kwargs=resume)
    assert status(lines, "end") == 0, lines
    client, runs = read_run(server, "kwargs-exp")
    assert [r.info.run_id for r in runs] == [run.info.run_id]
    assert runs[0].info.run_name == "baseline"  # a resumed run keeps its name
    assert runs[0].data.tags["mlflow.note.content"] == "second try" and runs[0].data.tags["phase"] == "2"
    assert len(client.get_metric_history(run.info.run_id, "accuracy")) == 2 + 3


def test_only_the_main_process_talks_to_the_server(server, tmp_path):
    env = dict(os.environ, MLFLOW_TRACKING_URI=server)
    done = subprocess.run([os.environ["ACCEL_CLI"], "launch", "--nproc_per_node", "2", "--master_port", "0",
                           WRITER, str(tmp_path), "two-ranks", "20"], env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    # Each rank prints its own report; only rank 0 started a run, the other's calls did nothing.
    assert done.stdout.count("init 0") == 2 and done.stdout.count("end 0") == 2, done.stdout
    client, runs = read_run(server, "two-ranks")
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    assert_history(client, runs[0].info.run_id, 20)


class FaultyProxy:
    """Forwards to the real server, answering 503 to the first `fail_batches`
    log-batch requests, or vanishing (connection refused) once the run exists."""

    def __init__(self, upstream, fail_batches=0, die_after_run_created=False, hang_batches=False):
        proxy = self
        self.upstream, self.fail_batches, self.die = upstream, fail_batches, die_after_run_created
        self.hang = hang_batches
        self.batches_refused = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.forward(None)

            def do_POST(self):
                self.forward(self.rfile.read(int(self.headers.get("Content-Length", 0))))

            def forward(self, body):
                if self.path.endswith("runs/log-batch") and proxy.hang:
                    time.sleep(600)  # accepts the request and never answers
                    return
                if self.path.endswith("runs/log-batch") and proxy.batches_refused < proxy.fail_batches:
                    proxy.batches_refused += 1
                    return self.answer(503, b'{"error_code": "TEMPORARILY_UNAVAILABLE", "message": "busy"}')
                request = urllib.request.Request(proxy.upstream + self.path, data=body, method=self.command,
                                                 headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(request, timeout=60) as answer:
                        self.answer(answer.status, answer.read())
                except urllib.error.HTTPError as error:
                    self.answer(error.code, error.read())
                if proxy.die and self.path.endswith("runs/create"):
                    threading.Thread(target=proxy.stop).start()

            def answer(self, code, data):
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads, self.httpd.block_on_close = True, False  # hanging handlers must not block stop()
        self.uri = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


FAST_RETRIES = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "4", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "0.2",
                "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0.1"}


def test_503_answers_are_retried_and_every_value_arrives(server, tmp_path):
    proxy = FaultyProxy(server, fail_batches=3)
    try:
        lines, _ = run_writer(tmp_path, proxy.uri, "flaky", **FAST_RETRIES)
    finally:
        proxy.stop()
    assert proxy.batches_refused == 3
    assert status(lines, "end") == 0, lines
    client, runs = read_run(server, "flaky")
    assert runs[0].info.status == "FINISHED"
    assert runs[0].data.params == {"lr": "0.01", "optimizer": "adam", "epochs": "3"}
    assert_history(client, runs[0].info.run_id, STEPS)


def test_a_server_that_dies_fails_end_training_in_bounded_time_without_blocking_steps(server, tmp_path):
    proxy = FaultyProxy(server, die_after_run_created=True)
    lines, stderr = run_writer(tmp_path, proxy.uri, "dead", ACCEL_MLFLOW_FLUSH_TIMEOUT="5", **FAST_RETRIES)
    assert status(lines, "init") == 0, lines
    # log() only queues: a step never waits for the network (generous bound).
    assert float(lines["log_max_ms"][0]) < 500
    end_status, end_ms, message = status(lines, "end"), float(lines["end"][1]), lines["end"][2]
    assert end_status == 3, lines  # ACCEL_ERR_IO
    assert proxy.uri in message and "were not recorded" in message and "no answer" in message
    assert end_ms < 60_000  # 5 s of flush and a few for the status update, with a wide margin
    assert "lost" in stderr  # the library's log says what was dropped
    client, runs = read_run(server, "dead")
    assert runs[0].info.status == "RUNNING"  # the server never heard the end


def test_a_server_that_never_answers_cannot_hold_end_training_past_the_flush_timeout(server, tmp_path):
    proxy = FaultyProxy(server, hang_batches=True)
    try:
        lines, _ = run_writer(tmp_path, proxy.uri, "silent", steps=50, ACCEL_MLFLOW_FLUSH_TIMEOUT="3",
                              MLFLOW_HTTP_REQUEST_TIMEOUT="300")
    finally:
        proxy.stop()
    assert status(lines, "end") == 3 and "ACCEL_MLFLOW_FLUSH_TIMEOUT" in lines["end"][2], lines
    assert float(lines["end"][1]) < 60_000  # 3 s of flush, 10 s for the status update, wide margin


def test_an_unreachable_server_fails_init_trackers_naming_the_url(tmp_path):
    uri = f"http://127.0.0.1:{free_port()}"
    lines, _ = run_writer(tmp_path, uri, "nobody", MLFLOW_HTTP_REQUEST_MAX_RETRIES="1",
                          MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR="0.1")
    assert status(lines, "init") == 3, lines
    assert uri in lines["init"][2] and "no answer" in lines["init"][2]


def test_mlflow_3_reads_the_file_store_only_when_allowed_and_the_tracker_says_so(tmp_path):
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "MLFLOW_ALLOW_FILE_STORE")}
    done = subprocess.run([FILE_WRITER, "mlflow", str(tmp_path), "demo", "3"], env=env, capture_output=True,
                          text=True, timeout=60, check=True)
    assert "MLFLOW_ALLOW_FILE_STORE=true" in done.stderr and "mlflow server" in done.stderr
    uri = (tmp_path / "mlruns").as_uri()
    os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)
    with pytest.raises(MlflowException, match="MLFLOW_ALLOW_FILE_STORE"):
        MlflowClient(tracking_uri=uri).search_experiments()
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        runs = MlflowClient(tracking_uri=uri).search_runs(
            [MlflowClient(tracking_uri=uri).get_experiment_by_name("demo").experiment_id])
        assert runs[0].info.status == "FINISHED"
    finally:
        os.environ.pop("MLFLOW_ALLOW_FILE_STORE")
