#!/usr/bin/env bash
# `pip install ./bindings/python` into a fresh venv works offline, and the
# installed package imports and trains outside the source and build trees.
# Usage: pip_install.sh REPO WORK_DIR
set -euo pipefail
repo=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install -q --no-build-isolation --no-deps --no-index "$repo/bindings/python"
rm -rf "$repo/bindings/python/build" "$repo/bindings/python/accel.egg-info"
cd "$work"
env -u PYTHONPATH "$work/venv/bin/python" - <<'PY'
import accel, numpy as np
assert accel.__file__.startswith(__import__("sys").prefix), accel.__file__
model = accel.Model.from_json('[{"type": "Linear", "in_features": 2, "out_features": 2}]')
opt = accel.Optimizer(model, "sgd", lr=0.1)
acc = accel.Accelerator(cpu=True)
acc.prepare(model, opt)
acc.backward(model(accel.tensor(np.ones((1, 2), np.float32))).loss("cross_entropy", accel.tensor([1])))
opt.step()
print("installed accel", accel.version(), "works")
PY
