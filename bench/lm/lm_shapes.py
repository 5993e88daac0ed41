"""The LM bench's shapes and FLOP count, without torch: the libaccel contestants
import this, not lm_model.py, so that their processes load no torch Python
module (which would add its own memory to the peak RSS the bench reports)."""

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
