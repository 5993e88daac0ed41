"""loader.set_progress: a bar per epoch on rank 0, redrawn with \\r on a terminal, lines on a pipe."""
import os
import subprocess
import sys

import pytest

PROGRAM = """
import sys
import numpy as np
import accel

class Numbers:
    def __len__(self):
        return 20
    def __getitem__(self, i):
        return np.array([i], np.float32), i

acc = accel.Accelerator()
loader = accel.DataLoader(Numbers(), batch_size=2)
acc.prepare(loader)
loader.set_progress(sys.argv[1] if len(sys.argv) > 1 else None)
for epoch in range(2):
    for batch in loader:
        pass
"""


def run(args, **kwargs):
    env = dict(os.environ)
    env.pop("ACCEL_DISABLE_PROGRESS_BAR", None)
    return subprocess.run(args, env=env, timeout=120, **kwargs)


def test_a_pipe_gets_a_line_every_tenth_per_epoch():
    result = run([sys.executable, "-c", PROGRAM, "train"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("train:")]
    assert len(lines) == 20, result.stderr  # 10 batches an epoch, 2 epochs
    assert lines[9].startswith("train: 100% 10/10") and lines[19].startswith("train: 100% 10/10")
    assert "\r" not in result.stderr
    quiet = run([sys.executable, "-c", PROGRAM], capture_output=True, text=True)  # set_progress(None): off
    assert quiet.returncode == 0 and "train" not in quiet.stderr and "%" not in quiet.stderr, quiet.stderr


def test_a_terminal_gets_the_bar_redrawn_in_place():
    master, slave = os.openpty()
    try:
        result = run([sys.executable, "-c", PROGRAM, ""], stdout=subprocess.DEVNULL, stderr=slave)
    finally:
        os.close(slave)
    out = b""
    try:
        while chunk := os.read(master, 65536):
            out += chunk
    except OSError:  # EIO: the terminal's other end is closed and drained
        pass
    os.close(master)
    text = out.decode()
    assert result.returncode == 0, text
    assert text.count("\repoch 0 |") >= 10 and text.count("\repoch 1 |") >= 10, repr(text)
    assert "| 100% 10/10" in text


def test_only_rank_zero_draws():
    launcher = os.environ.get("ACCEL_CLI")
    if not launcher:
        pytest.skip("ACCEL_CLI (the accel command) is not set; run through CTest")
    result = run([launcher, "launch", "--nproc_per_node", "2", "--master_port", "0", sys.executable, "-c", PROGRAM,
                  "train"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout + result.stderr
    # Prepared on 2 processes each has 5 batches an epoch: rank 0's 2 epochs show 2 full bars.
    assert out.count("train: 100% 5/5") == 2, out
