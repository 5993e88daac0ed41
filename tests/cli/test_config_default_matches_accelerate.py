"""`accel config default` writes what `accelerate config default` writes on this
machine: byte for byte with Accelerate 1.x (the venv of scripts/torch2-python-env.sh,
ACCEL_TORCH2_PYTHON), and key by key with the test venv's Accelerate 0.22, which
did not write enable_cpu_affinity yet. Each comparison is skipped, saying why,
where its accelerate is missing; test_config_default.cpp holds the expected
values for machines with and without GPUs."""
import json
import os
import shutil
import subprocess
import sys

import pytest


def write_both(tmp_path, precision, accelerate):
    accel_cli = os.environ.get("ACCEL_CLI")
    if not accel_cli:
        pytest.skip("ACCEL_CLI (the accel command) is not set; run through CTest")
    env = dict(os.environ, HF_HOME=str(tmp_path / "hf"))
    ours, theirs = tmp_path / "accel.yaml", tmp_path / "accelerate.yaml"
    subprocess.run([accel_cli, "config", "default", "--mixed_precision", precision, "--config_file", str(ours)],
                   check=True, env=env, capture_output=True, timeout=120)
    subprocess.run([accelerate, "config", "default", "--mixed_precision", precision, "--config_file", str(theirs)],
                   check=True, env=env, capture_output=True, timeout=300)
    return ours.read_text(), theirs.read_text()


@pytest.mark.parametrize("precision", ["no", "fp16"])
def test_same_file_as_accelerate_1x(tmp_path, precision):
    python = os.environ.get("ACCEL_TORCH2_PYTHON", "")
    accelerate = shutil.which("accelerate", path=os.path.dirname(python)) if python else None
    if accelerate is None:
        pytest.skip("no Accelerate 1.x (ACCEL_TORCH2_PYTHON: scripts/torch2-python-env.sh makes it)")
    ours, theirs = write_both(tmp_path, precision, accelerate)
    assert json.loads(ours) == json.loads(theirs)
    assert ours == theirs


@pytest.mark.parametrize("precision", ["no", "fp16"])
def test_same_keys_as_accelerate_0_22(tmp_path, precision):
    accelerate = shutil.which("accelerate", path=os.path.dirname(sys.executable))
    if accelerate is None:
        pytest.skip(f"no accelerate command beside {sys.executable}")
    ours, theirs = write_both(tmp_path, precision, accelerate)
    ours_json = json.loads(ours)
    assert ours_json.pop("enable_cpu_affinity") is False  # written since Accelerate 1.x
    assert ours_json == json.loads(theirs)
