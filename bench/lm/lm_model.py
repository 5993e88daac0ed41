"""The LM bench's model, one definition for every contestant: transformers'
GPT-2 with 6 layers, n_embd 256, 4 heads, 128 positions, vocabulary 256,
dropout 0, random-initialised with seed 0 (nothing from a hub).

    python3 lm_model.py OUT_DIR    writes OUT_DIR/model.pt, the TorchScript
                                    trace libaccel's contestant trains
"""
import os
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lm_shapes import BATCH, LAYERS, LENGTH, VOCAB, WIDTH  # noqa: E402,F401 (the bench's one definition)


class Exported(GPT2LMHeadModel):
    """forward(input_ids, attention_mask, labels) -> {"loss", "logits"}: the trace's signature."""

    def forward(self, input_ids, attention_mask, labels):
        out = super().forward(input_ids=input_ids, attention_mask=attention_mask, labels=labels, return_dict=True)
        return {"loss": out.loss, "logits": out.logits}


def build(attn=None):
    """attn: transformers' attn_implementation ("eager", "sdpa"); None keeps its default."""
    torch.manual_seed(0)
    # torchscript=False keeps lm_head.weight and wte.weight one tensor (tied).
    extra = {"attn_implementation": attn} if attn else {}
    config = GPT2Config(n_layer=LAYERS, n_embd=WIDTH, n_head=4, n_positions=LENGTH, vocab_size=VOCAB, resid_pdrop=0.0,
                        embd_pdrop=0.0, attn_pdrop=0.0, torchscript=False, **extra)
    return Exported(config)


def batch(rank, index):
    """The index-th batch of a rank: random ids, full attention, labels = ids."""
    g = torch.Generator().manual_seed(1000 * rank + index)
    ids = torch.randint(0, VOCAB, (BATCH, LENGTH), generator=g)
    return ids, torch.ones_like(ids), ids.clone()


def bool_buffers(model):
    """GPT-2's constant causal masks: Gloo in torch 1.13 cannot broadcast bool
    tensors, so DDP (and Accelerate's prepare) must leave them out."""
    return [name for name, b in model.named_buffers() if b.dtype == torch.bool]


if __name__ == "__main__":
    model = build().eval()
    ids, mask, labels = batch(0, 0)
    traced = torch.jit.trace(model, (ids, mask, labels), strict=False, check_trace=False)
    torch.jit.save(traced, sys.argv[1] + "/model.pt")
