"""accel merge-weights on PyTorch's distributed checkpoint (FSDP2, 2 processes,
tests/formats/files/dcp_fsdp2): the merged model.safetensors and
pytorch_model.bin hold, bit for bit, the model PyTorch had at the save, under
its own names; the folder may be given itself or through its checkpoint
directory, as Accelerate's merge-weights takes either.
Usage: check_merge_dcp.py ACCEL_CLI FIXTURE_DIR WORK_DIR"""
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
from safetensors.numpy import load_file

accel, fixture, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
want = load_file(os.path.join(fixture, "model_at_save.safetensors"))
for source, flags, name in [(os.path.join(fixture, "pytorch_model_fsdp_0"), [], "model.safetensors"),
                            (fixture, ["--unsafe_serialization"], "pytorch_model.bin")]:
    out = os.path.join(work, "unsafe" if flags else "safe")
    done = subprocess.run([accel, "merge-weights", source, out, *flags], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    print(done.stdout.strip())
    path = os.path.join(out, name)
    got = load_file(path) if name.endswith(".safetensors") else {k: v.numpy() for k, v in torch.load(path).items()}
    assert got.keys() == want.keys(), f"{path}: {sorted(got)} != {sorted(want)}"
    for key in want:
        assert got[key].dtype == want[key].dtype and np.array_equal(got[key], want[key]), f"{path}: {key} differs"
    print(f"{path}: the {len(want)} tensors PyTorch saved, bitwise")
