"""`accel config default` writes what `accelerate config default` writes on this
machine: compared key by key and byte for byte with Accelerate itself (skipped,
saying why, where accelerate cannot be imported; test_config_default.cpp holds
the expected values for machines with and without GPUs)."""
import json
import os
import shutil
import subprocess
import sys

import pytest


@pytest.mark.parametrize("precision", ["no", "fp16"])
def test_same_file_as_accelerate(tmp_path, precision):
    accel_cli = os.environ.get("ACCEL_CLI")
    if not accel_cli:
        pytest.skip("ACCEL_CLI (the accel command) is not set; run through CTest")
    accelerate = shutil.which("accelerate", path=os.path.dirname(sys.executable))
    if accelerate is None:
        pytest.skip(f"no accelerate command beside {sys.executable}")
    env = dict(os.environ, HF_HOME=str(tmp_path / "hf"))
    ours, theirs = tmp_path / "accel.yaml", tmp_path / "accelerate.yaml"
    subprocess.run([accel_cli, "config", "default", "--mixed_precision", precision, "--config_file", str(ours)],
                   check=True, env=env, capture_output=True, timeout=120)
    subprocess.run([accelerate, "config", "default", "--mixed_precision", precision, "--config_file", str(theirs)],
                   check=True, env=env, capture_output=True, timeout=300)
    assert json.loads(ours.read_text()) == json.loads(theirs.read_text())
    assert ours.read_text() == theirs.read_text()
