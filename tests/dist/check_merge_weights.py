"""accel merge-weights on a real FULL_SHARD save_state (dist_full_shard resume, 2 processes):
the merged model.safetensors (and, with --unsafe_serialization, pytorch_model.bin) holds, under
the same names and bit for bit, what save_model wrote
at the same step; Python's safetensors reads it; bad inputs are errors naming the file.
Usage: check_merge_weights.py ACCEL_CLI CHECKPOINT_ROOT"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
from safetensors.numpy import load_file

accel, root = sys.argv[1], sys.argv[2]
state, full = os.path.join(root, "state"), os.path.join(root, "full_at_save", "model.safetensors")
work = tempfile.mkdtemp(prefix="merge-weights-")


def run(*args):
    return subprocess.run([accel, "merge-weights", *args], capture_output=True, text=True)


try:
    done = run(state, os.path.join(work, "merged"))
    assert done.returncode == 0, done.stderr
    print(done.stdout.strip())
    merged = load_file(os.path.join(work, "merged", "model.safetensors"))
    want = load_file(full)
    assert sorted(merged) == sorted(want), (sorted(merged), sorted(want))
    for name, value in want.items():
        assert merged[name].dtype == value.dtype and merged[name].shape == value.shape, name
        assert np.array_equal(merged[name], value), name
    print(f"merged {len(merged)} tensors equal save_model's bit for bit")

    # Bad input, each named: a full checkpoint, a missing rank file, shards of two world sizes.
    bad = run(os.path.dirname(full), os.path.join(work, "x"))
    assert bad.returncode != 0 and "model_rank0.safetensors" in bad.stderr and "missing" in bad.stderr, bad.stderr
    partial = os.path.join(work, "partial")
    shutil.copytree(state, partial)
    os.remove(os.path.join(partial, "model_rank1.safetensors"))
    bad = run(partial, os.path.join(work, "y"))
    assert bad.returncode != 0 and "model_rank1.safetensors: missing: the checkpoint was saved by 2" in bad.stderr, \
        bad.stderr
    bad = run(state, "/proc/no-such-dir/out")
    assert bad.returncode != 0 and "/proc/no-such-dir/out" in bad.stderr, bad.stderr
    print("bad inputs refused, each naming the file or flag")

    # --unsafe_serialization: pytorch_model.bin in torch.save's format, read by torch.load.
    done = run(state, os.path.join(work, "unsafe"), "--unsafe_serialization")
    assert done.returncode == 0, done.stderr
    pickled = torch.load(os.path.join(work, "unsafe", "pytorch_model.bin"))
    assert sorted(pickled) == sorted(want), (sorted(pickled), sorted(want))
    for name, value in want.items():
        assert np.array_equal(pickled[name].numpy(), value), name
    print(f"--unsafe_serialization: torch.load reads the same {len(pickled)} tensors")
finally:
    shutil.rmtree(work, ignore_errors=True)
