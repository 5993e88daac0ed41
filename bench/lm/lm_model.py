"""The LM bench's model, one definition for every contestant: transformers'
GPT-2 with 6 layers, n_embd 256, 4 heads, 128 positions, vocabulary 256,
dropout 0, random-initialised with seed 0 (nothing from a hub).

    python3 lm_model.py OUT_DIR    writes OUT_DIR/model.pt, the TorchScript
                                    trace libaccel's contestant trains
"""
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

BATCH, LENGTH, VOCAB = 8, 128, 256
LAYERS, WIDTH = 6, 256


def flops_per_token():
    """Floating-point operations to train on one token (forward and backward),
    counting the matrix products, which are all but a few percent of the work:
    a layer's c_attn, attn.c_proj, c_fc and mlp.c_proj hold 3 + 1 + 4 + 4 = 12
    WIDTH^2 weights and lm_head WIDTH x VOCAB, each weight one multiply-add
    (2 FLOPs) per token forward; attention's q kT and weights x v are LENGTH x
    WIDTH multiply-adds each per token and layer (the full square, as every
    contestant computes it, masked or not). Backward costs twice the forward.
    6 layers x 256: 3 x (2 x (12 x 6 x 256^2 + 256 x 256) + 4 x 6 x 128 x 256)
    = 31,064,064, about 31 MFLOP."""
    forward = 2 * (12 * LAYERS * WIDTH ** 2 + WIDTH * VOCAB) + 4 * LAYERS * LENGTH * WIDTH
    return 3 * forward


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
