"""Token sequences with a Python collate_fn across 2 real processes started by `accel launch`."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).parent / "programs" / "sequences_worker.py"


def test_collate_fn_batches_shard_and_gather_across_processes():
    launcher = os.environ.get("ACCEL_CLI")
    if not launcher:
        pytest.skip("ACCEL_CLI (the accel command) is not set; run through CTest")
    result = subprocess.run(
        [launcher, "launch", "--nproc_per_node", "2", "--master_port", "0", sys.executable, str(WORKER)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[rank 0] ok 2" in result.stdout and "[rank 1] ok 2" in result.stdout
