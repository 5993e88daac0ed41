"""Plain torch.distributed.checkpoint (PyTorch 2.x, one process, no mesh)
reads the distributed checkpoint that libaccel's save_state wrote under
tp 2 x FULL_SHARD over dp_shard 2 (SHARDED_STATE_DICT): every rank's boxes of
its slices and shards make the whole tensors.
- The model equals, bit for bit, what save_model wrote from the same run at
  the same step (gathered whole through another route).
- With FULL_STATE (optimizer.bin of the same mesh saved with
  FULL_STATE_DICT, gathered whole over tp and dp_shard), the optimizer state
  equals it bit for bit: the two runs do the same arithmetic in the same order.
Usage: check_tp_dcp.py STATE SAVE_MODEL_DIR [FULL_STATE]"""
import os
import sys
import tempfile

import torch
from safetensors.torch import load_file
from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

state, saved = sys.argv[1], sys.argv[2]
full_state = sys.argv[3] if len(sys.argv) > 3 else None
with tempfile.TemporaryDirectory() as scratch:
    dcp_to_torch_save(os.path.join(state, "pytorch_model_fsdp_0"), os.path.join(scratch, "model.pt"))
    dcp_to_torch_save(os.path.join(state, "optimizer_0"), os.path.join(scratch, "optimizer.pt"))
    model = torch.load(os.path.join(scratch, "model.pt"))["model"]
    optimizer = torch.load(os.path.join(scratch, "optimizer.pt"))["optimizer"]

whole = {}
for name in sorted(os.listdir(saved)):
    if name.endswith(".safetensors"):
        whole.update(load_file(os.path.join(saved, name)))
names = optimizer["param_groups"][0]["params"]
# save_model leaves out buffers a model does not persist (GPT-2's attn.bias); save_state keeps every one.
missing = sorted(set(whole) - set(model))
assert not missing, f"the checkpoint lacks {missing}"
extra = sorted(set(model) - set(whole))
assert not set(extra) & set(names), f"save_model lacks the parameters {sorted(set(extra) & set(names))}"
for name, tensor in whole.items():
    assert model[name].shape == tensor.shape, f"{name}: {tuple(model[name].shape)}, save_model's {tuple(tensor.shape)}"
    assert torch.equal(model[name], tensor), f"{name} differs from save_model's"

for name in names:
    for key in ("exp_avg", "exp_avg_sq"):
        value = optimizer["state"][name][key]
        assert value.shape == model[name].shape, f"{name}.{key} has shape {tuple(value.shape)}"
if full_state is None:
    print(f"torch.distributed.checkpoint read {len(model)} model tensors whole")
    sys.exit(0)
# FULL_STATE_DICT's optimizer.bin: PyTorch's structure, parameters by index in the group's order.
# libaccel's pickle names a type tag (TorchScript's restore_type_tag), which weights_only refuses.
full = torch.load(os.path.join(full_state, "optimizer.bin"), weights_only=False)
assert len(names) == len(full["state"]), f"{len(names)} parameters, optimizer.bin has {len(full['state'])}"
for index, name in enumerate(names):
    for key in ("exp_avg", "exp_avg_sq"):
        ours, reference = optimizer["state"][name][key], full["state"][index][key]
        assert torch.equal(ours, reference), f"{name}.{key} differs from the FULL_STATE_DICT save's"
    assert float(optimizer["state"][name]["step"]) == float(full["state"][index]["step"]) == 50.0
for option in ("lr", "betas", "eps", "weight_decay"):
    assert optimizer["param_groups"][0][option] == full["param_groups"][0][option], option
print(f"torch.distributed.checkpoint read {len(model)} model tensors and the state of {len(names)} parameters whole")
