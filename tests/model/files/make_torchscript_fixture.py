"""Regenerates tiny_mlp.pt, the TorchScript fixture of the model tests.

Run with a PyTorch whose TorchScript format LibTorch 1.13 reads:
    /usr/bin/python3 tests/model/files/make_torchscript_fixture.py
"""
import json
import math
import os

import torch


class TinyMlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


torch.manual_seed(0)
module = torch.jit.script(TinyMlp())
here = os.path.dirname(os.path.abspath(__file__))
module.save(os.path.join(here, "tiny_mlp.pt"))
# The expected output for an all-ones input, checked by the C++ test.
print(module(torch.ones(1, 4)).tolist())


# Fixtures of the named forward (Model::forward(NamedTensors)): a dict, a
# NamedTuple and a plain tuple of outputs, and arguments with defaults.
from typing import Dict, NamedTuple, Optional, Tuple  # noqa: E402


class DictOut(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, bias: Optional[torch.Tensor] = None,
                scale: float = 2.0) -> Dict[str, torch.Tensor]:
        out = self.fc(x) * mask
        if bias is not None:
            out = out + bias
        return {"logits": out, "loss": (out * scale).sum()}


class Pair(NamedTuple):
    loss: torch.Tensor
    logits: torch.Tensor


class NamedTupleOut(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> Pair:
        out = self.fc(x) * mask
        return Pair(out.sum(), out)


class TupleOut(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        out = self.fc(x) * mask
        return out.sum(), out


class Tied(torch.nn.Module):
    """A language-model head tied to its embedding, with a bool causal-mask
    buffer that transformers does not save (persistent=False)."""

    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(10, 4)
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.wte.weight
        self.register_buffer("mask", torch.tril(torch.ones(3, 3, dtype=torch.bool)), persistent=False)
        self.register_buffer("steps", torch.zeros(1))

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor) -> Dict[str, torch.Tensor]:
        logits = self.head(self.wte(input_ids)) * self.mask[0, 0]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 10), labels.reshape(-1))
        return {"loss": loss, "logits": logits}


for name, cls in [("named_dict", DictOut), ("named_tuple", NamedTupleOut), ("plain_tuple", TupleOut)]:
    torch.manual_seed(0)
    torch.jit.script(cls()).save(os.path.join(here, name + ".pt"))
torch.manual_seed(0)
tied = Tied()
# The sidecar save_model reads: the names transformers' state_dict holds, so
# non-persistent buffers stay out of model.safetensors.
keys = json.dumps(list(tied.state_dict().keys()))
torch.jit.script(tied).save(os.path.join(here, "tied_lm.pt"), _extra_files={"accel/state_dict_keys.json": keys})


class TanhGeluMlp(torch.nn.Module):
    """GPT-2's MLP with transformers' NewGELUActivation written out, traced as
    the transformers export traces it (constants become tensor constants):
    the fixture of the load-time tanh-GELU rewrite (src/model/script_rewrites)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 16)
        self.proj = torch.nn.Linear(16, 4)

    def forward(self, x):
        h = self.fc(x)
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return self.proj(h)


torch.manual_seed(0)
torch.jit.trace(TanhGeluMlp(), torch.ones(2, 4)).save(os.path.join(here, "tanh_gelu_mlp.pt"))


class TracedOnCpu(torch.nn.Module):
    """What a trace bakes in: the device it ran on (arange's device=) and a
    tensor it made (a constant): the fixture of retarget_constants."""

    def forward(self, x):
        positions = torch.arange(x.shape[-1], device=x.device).to(x.dtype)
        return x + positions + torch.tensor([0.5, 1.5, 2.5])


torch.jit.trace(TracedOnCpu(), torch.ones(2, 3)).save(os.path.join(here, "traced_on_cpu.pt"))
