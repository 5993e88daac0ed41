"""The unsharded contents of libaccel checkpoints, compared bitwise (run_reshard_matrix.sh).

Usage: check_reshard.py SRC_STATE OUT_STATE [SRC_STATE OUT_STATE ...]
       check_reshard.py --merged MODEL_SAFETENSORS STATE  (accel merge-weights' output holds STATE's parameters)

Each pair: a checkpoint saved under one strategy and world size, and what a run
under another wrote right after loading it. Both are put back together here,
independently of libaccel's resharding code, from the layout their manifests
record (whole / flat: the parameters end to end, each process holding an equal
chunk; units: each wrap unit's parameters end to end, each process holding an
equal chunk of every unit), and must hold the same parameters, the same
optimizer state per parameter (exp_avg, exp_avg_sq) and the same step, bit for bit."""
import json
import math
import os
import sys

import torch
from safetensors.torch import load_file


def layout_params(layout):
    if layout["kind"] != "units":
        return [(name, shape) for name, shape in layout["params"]]
    return [(p["name"], p["shape"]) for unit in layout["units"] for p in unit["params"]]


def put_together(layout, vectors):
    """Each parameter's flat values from the members' vectors."""
    out = {}
    if layout["kind"] == "units":
        for unit in layout["units"]:
            start, chunk = unit["shard_offset"], unit["chunk"]
            buffer = torch.cat([v[start:start + chunk] for v in vectors])
            for p in unit["params"]:
                out[p["name"]] = buffer[p["offset"]:p["offset"] + math.prod(p["shape"])].reshape(p["shape"])
        return out
    flat, offset = torch.cat(vectors), 0
    for name, shape in layout["params"]:
        out[name] = flat[offset:offset + math.prod(shape)].reshape(shape)
        offset += math.prod(shape)
    return out


def full_state(state_dir):
    manifest = json.load(open(os.path.join(state_dir, "manifest.json")))
    layout = manifest["layouts"][0]
    members = range(layout["group"])
    values = {}
    if manifest["sharded_models"]:
        shards = [load_file(os.path.join(state_dir, f"model_rank{m}.safetensors"))["flat_param_shard"] for m in members]
        params = put_together(layout, shards)
    else:
        model = load_file(os.path.join(state_dir, "model.safetensors"))
        params = {name: model[name] for name, _ in layout_params(layout)}
    for name, tensor in params.items():
        values[("parameter", name)] = tensor
    if layout["kind"] == "whole":
        state = torch.load(os.path.join(state_dir, "optimizer.bin"))["state"]
        for index, (name, _) in enumerate(layout_params(layout)):
            for key, value in state[index].items():
                values[("optimizer", name, key)] = value
    else:
        states = [torch.load(os.path.join(state_dir, f"optimizer_rank{m}.bin"))["state"][0] for m in members]
        for key in states[0]:
            if key == "step":
                for s in states:
                    values[("step", len(values))] = s["step"]
                continue
            for name, tensor in put_together(layout, [s[key] for s in states]).items():
                values[("optimizer", name, key)] = tensor
    steps = {float(v) for k, v in values.items() if k[0] == "step" or k[-1] == "step"}
    assert len(steps) == 1, f"{state_dir}: steps {steps}"
    values = {k: v for k, v in values.items() if k[0] != "step" and k[-1] != "step"}
    return values, steps.pop(), layout["kind"], layout["group"]


if sys.argv[1] == "--merged":
    merged, (state, _, kind, group) = load_file(sys.argv[2]), full_state(sys.argv[3])
    params = {k[1]: v for k, v in state.items() if k[0] == "parameter"}
    assert params.keys() <= merged.keys(), f"{sys.argv[2]} lacks {sorted(params.keys() - merged.keys())}"
    for name, tensor in params.items():
        assert torch.equal(merged[name], tensor), f"{sys.argv[2]}: {name} differs from {sys.argv[3]}"
    print(f"{sys.argv[2]}: the {len(params)} parameters of {sys.argv[3]} ({kind} x{group}), bitwise")
    sys.exit(0)

pairs = sys.argv[1:]
assert pairs and len(pairs) % 2 == 0, __doc__
for src, out in zip(pairs[::2], pairs[1::2]):
    want, want_step, src_kind, src_group = full_state(src)
    have, have_step, out_kind, out_group = full_state(out)
    assert want.keys() == have.keys(), f"{out}: holds {sorted(have.keys() ^ want.keys())} differently from {src}"
    for key, tensor in want.items():
        assert have[key].dtype == tensor.dtype and torch.equal(have[key], tensor), f"{out}: {key} differs from {src}"
    assert have_step == want_step, f"{out}: step {have_step}, {src} {want_step}"
    print(f"{src} ({src_kind} x{src_group}) -> {out} ({out_kind} x{out_group}): "
          f"{len(want)} tensors bitwise equal, step {int(want_step)}")
