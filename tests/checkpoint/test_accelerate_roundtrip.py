"""Checkpoints cross between Python Accelerate 0.22 and libaccel's C ABI, both
ways, with 2 processes started by `accel launch` (issue 20, item 2):

  Accelerate 50 micro-steps -> save_state -> libaccel (C) load_state + 50 more
      == 100 uninterrupted Accelerate micro-steps;
  libaccel (C) 50 micro-steps -> save_state(safe_serialization=0) ->
      Accelerate 0.22 load_state + 50 more == 100 uninterrupted libaccel micro-steps;

to 1e-6, for SGD with momentum and AdamW, a linear-warmup LambdaLR and
OneCycleLR, with gradient accumulation. The Python side is
bindings/python/tests/programs/accelerate_trainer.py, the C side
accelerate_roundtrip.c (ACCEL_ROUNDTRIP)."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("accelerate")
from safetensors.numpy import load_file  # noqa: E402

TRAINER = Path(__file__).resolve().parents[2] / "bindings" / "python" / "tests" / "programs" / "accelerate_trainer.py"
STEPS = 50


def _launch(*command):
    launcher, program = os.environ.get("ACCEL_CLI"), os.environ.get("ACCEL_ROUNDTRIP")
    if not launcher or not program:
        pytest.skip("ACCEL_CLI and ACCEL_ROUNDTRIP are not set; run through CTest")
    argv = [launcher, "launch", "--nproc_per_node", "2", "--master_port", "0"]
    argv += [sys.executable, str(TRAINER), *command[1:]] if command[0] == "python" else [program, *command[1:]]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=240,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _assert_close(out):
    expected = np.load(out / "final.npz")
    ours = load_file(str(out / "c_final" / "model.safetensors"))
    assert sorted(ours) == sorted(expected.files)
    # Not yet within CONTRIBUTING's policy: 50 steps trained by Accelerate
    # and 50 by libaccel, against 100 by one of them, in float32 to 1e-6.
    # Measured on an AMD EPYC (AVX-512): SGD 0 (all four runs), AdamW 1.2e-7
    # to 2.4e-7: a 4x margin that AdamW's amplification of rounding can take on
    # another CPU's kernels. The fix is float64 on both sides, which needs a
    # model dtype in the C ABI (issue 36); until then the worst error is printed.
    for name in expected.files:
        print(f"{name}: worst difference {float(np.abs(ours[name] - expected[name]).max()):.3g}")  # pytest -s
        np.testing.assert_allclose(ours[name], expected[name], rtol=0, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("kind,schedule,accumulation", [("sgd", "warmup", 2), ("adamw", "onecycle", 2)])
def test_c_continues_an_accelerate_checkpoint(tmp_path, kind, schedule, accumulation):
    _launch("python", kind, str(STEPS), str(tmp_path), schedule, str(accumulation))
    checkpoint = tmp_path / "checkpoint"
    assert {"pytorch_model.bin", "optimizer.bin", "scheduler.bin", "random_states_1.pkl"} <= set(os.listdir(checkpoint))
    assert "accelerate_roundtrip resume ok 2" in _launch("c", "resume", kind, schedule, str(accumulation), str(STEPS),
                                                         str(tmp_path))
    _assert_close(tmp_path)


# PyTorch's OneCycleLR keeps initial_lr, max_lr and min_lr in the optimizer's
# param_groups, and optimizer.load_state_dict replaces the groups with the saved
# ones: libaccel's optimizer.bin carries the keys the prepared scheduler adds,
# or Accelerate's OneCycleLR fails with KeyError 'initial_lr'.
@pytest.mark.parametrize("kind,schedule,accumulation", [
    ("adamw", "warmup", 2), ("sgd", "warmup", 2), ("sgd", "onecycle", 2), ("adamw", "onecycle", 2)])
def test_accelerate_continues_a_c_checkpoint(tmp_path, kind, schedule, accumulation):
    assert "accelerate_roundtrip save ok 2" in _launch("c", "save", kind, schedule, str(accumulation), str(STEPS),
                                                       str(tmp_path))
    checkpoint = tmp_path / "checkpoint"
    assert {"pytorch_model.bin", "optimizer.bin", "scheduler.bin", "random_states_0.pkl", "random_states_1.pkl",
            "manifest.json"} == set(os.listdir(checkpoint))
    _launch("python", kind, str(STEPS), str(tmp_path), schedule, str(accumulation), "resume")
    _assert_close(tmp_path)
