"""Regenerates tiny_mlp.pt, the TorchScript fixture of the model tests.

Run with a PyTorch whose TorchScript format LibTorch 1.13 reads:
    /usr/bin/python3 tests/model/files/make_torchscript_fixture.py
"""
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
