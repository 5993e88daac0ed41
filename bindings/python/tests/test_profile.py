"""accelerator.profile() writes Trace Event Format files that a real trace reader
(viztracer, from PyPI) merges across ranks into one timeline (issue 21, item 6)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("viztracer")

WORKER = Path(__file__).parent / "programs" / "profile_worker.py"


def test_two_ranks_traces_merge_into_one_timeline(tmp_path):
    launcher = os.environ.get("ACCEL_CLI")
    if not launcher:
        pytest.skip("ACCEL_CLI (the accel command) is not set; run through CTest")
    traces = tmp_path / "traces"
    result = subprocess.run([launcher, "launch", "--nproc_per_node", "2", "--master_port", "0", sys.executable,
                             str(WORKER), str(traces)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr

    for rank in (0, 1):
        document = json.loads((traces / f"trace_{rank}.json").read_text())
        assert isinstance(document, dict) and isinstance(document["traceEvents"], list)
        events = document["traceEvents"]
        assert {e["pid"] for e in events} == {rank}
        names = [e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"]
        assert names == [f"rank {rank}"]
        assert any(e.get("ph") == "M" and e["name"] == "thread_name" for e in events)

    merged = tmp_path / "merged.json"
    combine = subprocess.run([sys.executable, "-m", "viztracer", "--combine", str(traces / "trace_0.json"),
                              str(traces / "trace_1.json"), "--output_file", str(merged)],
                             capture_output=True, text=True, timeout=120)
    assert combine.returncode == 0, combine.stdout + combine.stderr
    events = json.loads(merged.read_text())["traceEvents"]
    ops = {(e["pid"], e["name"]) for e in events if e.get("ph") == "X"}
    for rank in (0, 1):
        assert (rank, "aten::mse_loss") in ops or (rank, "aten::linear") in ops or (rank, "aten::addmm") in ops, \
            f"rank {rank}'s operators are not in the merged timeline"
