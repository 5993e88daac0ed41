"""PyTorch FSDP (fully_shard, on the CPU over Gloo) saving what Accelerate's FSDP
save_state writes with SHARDED_STATE_DICT: the model and the optimizer state as
distributed checkpoints in pytorch_model_fsdp_0/ and optimizer_0/, keyed
{"model": ...} and {"optimizer": ...} (accelerate/utils/fsdp_utils.py's
save_fsdp_model / save_fsdp_optimizer under fsdp_version 2, which Accelerate
itself runs only on GPUs). The model, data and steps are dist_reshard.cpp's:
3 AdamW steps in float64, the save into OUT/state, 5 more steps whose global
losses rank 0 writes to OUT/losses (what libaccel must continue with); rank 0
also writes the whole model at the save to OUT/model_at_save.safetensors.
`fsdp_dcp.py load DIR` goes the other way: FSDP2 on this world loads
DIR/state, which libaccel's save_state wrote with FSDP_STATE_DICT_TYPE=
SHARDED_STATE_DICT (dist_reshard.cpp save), as Accelerate's load_fsdp_model /
load_fsdp_optimizer do, and its 5 following losses must be libaccel's
(DIR/losses) to 1e-11 (float64; dist_reshard.cpp derives the bound); plain
torch.distributed.checkpoint (dcp_to_torch_save, one process, no FSDP) must
read the same model.
Usage (under torchrun): fsdp_dcp.py OUT | fsdp_dcp.py load DIR"""
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict, get_optimizer_state_dict
from torch.distributed.fsdp import fully_shard
from safetensors.torch import save_file

loading = sys.argv[1] == "load"
out = sys.argv[-1]
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


options = StateDictOptions(full_state_dict=False)


def finish():
    # Every process is done; leave without tearing Gloo down: its teardown
    # aborted now and then on 2 cores ("terminate called without an active
    # exception", SIGABRT) after all the work, failing a run that had passed.
    dist.barrier()
    sys.stdout.flush()
    os._exit(0)


if loading:
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save
    from torch.distributed.checkpoint.state_dict import set_model_state_dict, set_optimizer_state_dict
    state = os.path.join(out, "state")
    model_state = {"model": get_model_state_dict(model, options=options)}
    dcp.load(model_state, storage_reader=dcp.FileSystemReader(os.path.join(state, "pytorch_model_fsdp_0")))
    set_model_state_dict(model, model_state["model"], options=options)
    optimizer_state = {"optimizer": get_optimizer_state_dict(model, optimizer, options=options)}
    dcp.load(optimizer_state, storage_reader=dcp.FileSystemReader(os.path.join(state, "optimizer_0")))
    set_optimizer_state_dict(model, optimizer, optimizer_state["optimizer"], options=options)
    whole = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if rank == 0:  # plain PyTorch, no process group of its own: the same tensors
        plain = os.path.join(out, "plain.pt")
        dcp_to_torch_save(os.path.join(state, "pytorch_model_fsdp_0"), plain)
        read = torch.load(plain)["model"]
        assert read.keys() == whole.keys(), f"{sorted(read.keys())} != {sorted(whole.keys())}"
        for name, tensor in whole.items():
            assert torch.equal(read[name], tensor), f"plain DCP read of {name} differs"
    with open(os.path.join(out, "losses")) as f:
        expected = [float(line) for line in f]
    for n, want in zip(range(3, 8), expected):
        got = step(n)
        assert abs(got - want) <= 1e-11, f"step {n}: PyTorch's loss {got!r}, libaccel's {want!r}"
    if rank == 0:
        print(f"PyTorch FSDP x{world} loaded libaccel's distributed checkpoint; 5 steps continue its losses; "
              f"plain torch.distributed.checkpoint reads the same {len(whole)} tensors")
    finish()
for n in range(3):
    step(n)
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
finish()
