"""PyTorch FSDP (fully_shard, on the CPU over Gloo) saving what Accelerate's FSDP
save_state writes with SHARDED_STATE_DICT: the model and the optimizer state as
distributed checkpoints in pytorch_model_fsdp_0/ and optimizer_0/, keyed
{"model": ...} and {"optimizer": ...} (accelerate/utils/fsdp_utils.py's
save_fsdp_model / save_fsdp_optimizer under fsdp_version 2, which Accelerate
itself runs only on GPUs). The model, data and steps are dist_reshard.cpp's:
3 AdamW steps in float64, the save into OUT/state, 5 more steps whose global
losses rank 0 writes to OUT/losses (what libaccel must continue with); rank 0
also writes the whole model at the save to OUT/model_at_save.safetensors.
Usage (under torchrun): fsdp_dcp.py OUT"""
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict, get_optimizer_state_dict
from torch.distributed.fsdp import fully_shard
from safetensors.torch import save_file

out = sys.argv[1]
dist.init_process_group("gloo")
world, rank = dist.get_world_size(), dist.get_rank()
torch.manual_seed(6)
model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 8), torch.nn.Tanh(),
                            torch.nn.Linear(8, 3)).double()
for layer in model:
    if isinstance(layer, torch.nn.Linear):
        fully_shard(layer)
fully_shard(model)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)


def step(n):
    torch.manual_seed(1000 + n)
    x, y = torch.randn(12, 6).double(), torch.randint(0, 3, (12,))
    share = 12 // world
    loss = torch.nn.functional.cross_entropy(model(x[rank * share:(rank + 1) * share]),
                                             y[rank * share:(rank + 1) * share])
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    total = loss.detach().clone()
    dist.all_reduce(total)
    return total.item() / world


for n in range(3):
    step(n)
options = StateDictOptions(full_state_dict=False)
state = os.path.join(out, "state")
dcp.save({"model": get_model_state_dict(model, options=options)},
         storage_writer=dcp.FileSystemWriter(os.path.join(state, "pytorch_model_fsdp_0")))
dcp.save({"optimizer": get_optimizer_state_dict(model, optimizer, options=options)},
         storage_writer=dcp.FileSystemWriter(os.path.join(state, "optimizer_0")))
# The whole model at the save, for readers to compare with (tests/formats/test_dcp.cpp's fixture).
whole = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
if rank == 0:
    save_file({name: t.contiguous() for name, t in whole.items()}, os.path.join(out, "model_at_save.safetensors"))
losses = [step(n) for n in range(3, 8)]
if rank == 0:
    with open(os.path.join(out, "losses"), "w") as f:
        f.writelines(f"{loss!r}\n" for loss in losses)
dist.destroy_process_group()
