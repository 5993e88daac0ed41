"""A GPT written as a JSON graph spec equals its PyTorch twin.

graph_spec_run (tests/model/graph_spec_run.cpp) builds the JSON model in
libaccel, runs its named forward and writes its weights; the twin below is the
same network written with torch.nn (TransformerEncoderLayer, LayerNorm, an
lm head tied to the token embedding), loads those weights by name, and must
give the same logits and transformers' shifted LM loss. Both run in float64
(graph_spec_run's f64: the float32 initial weights widened exactly), so the
comparison is of the networks, not of two float32 kernels' summation orders.
"""
import json
import os
import subprocess

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn

VOCAB, WIDTH, HEADS, BLOCKS, POSITIONS = 256, 64, 4, 2, 32


def gpt_spec():
    block = {"type": "TransformerEncoderLayer", "d_model": WIDTH, "nhead": HEADS, "dim_feedforward": 4 * WIDTH,
             "dropout": 0.0, "activation": "gelu", "batch_first": True, "norm_first": True, "causal": True}
    return {
        "inputs": ["input_ids", {"name": "attention_mask", "optional": True}, {"name": "labels", "optional": True}],
        "nodes": [
            {"name": "wte", "type": "Embedding", "num_embeddings": VOCAB, "embedding_dim": WIDTH},
            {"name": "wpe", "type": "PositionalEmbedding", "num_positions": POSITIONS, "embedding_dim": WIDTH,
             "batch_first": True},
            {"name": "h", "type": "Sequential", "layers": [block] * BLOCKS, "input": ["wpe", "attention_mask"]},
            {"name": "ln_f", "type": "LayerNorm", "normalized_shape": WIDTH},
            {"name": "logits", "type": "Linear", "in_features": WIDTH, "out_features": VOCAB, "bias": False,
             "weight": "wte.weight"},
            {"name": "loss", "type": "CausalLMLoss", "input": ["logits", "labels"]},
        ],
        "outputs": ["logits", "loss"],
    }


class Twin(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, WIDTH)
        self.wpe = nn.Module()
        self.wpe.weight = nn.Parameter(torch.empty(POSITIONS, WIDTH))
        self.h = nn.Sequential(*[
            nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, 0.0, activation="gelu", batch_first=True,
                                       norm_first=True) for _ in range(BLOCKS)])
        self.ln_f = nn.LayerNorm(WIDTH)
        self.logits = nn.Linear(WIDTH, VOCAB, bias=False)
        self.logits.weight = self.wte.weight  # tied, as GPT2LMHeadModel's lm_head

    def forward(self, input_ids, attention_mask=None, labels=None):
        length = input_ids.shape[1]
        x = self.wte(input_ids) + self.wpe.weight[:length]
        causal = torch.triu(torch.ones(length, length, dtype=torch.bool), 1)
        padding = None if attention_mask is None else attention_mask == 0
        for layer in self.h:
            x = layer(x, src_mask=causal, src_key_padding_mask=padding)
        logits = self.logits(self.ln_f(x))
        # transformers' GPT2LMHeadModel loss.
        loss = F.cross_entropy(logits[..., :-1, :].reshape(-1, VOCAB), labels[..., 1:].reshape(-1), ignore_index=-100)
        return logits, loss


def run_libaccel(tmp_path, inputs):
    tool = os.environ.get("ACCEL_GRAPH_SPEC_RUN")
    if not tool:
        pytest.skip("ACCEL_GRAPH_SPEC_RUN is not set (CTest sets it)")
    spec, given = tmp_path / "spec.json", tmp_path / "inputs.safetensors"
    weights, outputs = tmp_path / "weights.safetensors", tmp_path / "outputs.safetensors"
    spec.write_text(json.dumps(gpt_spec()))
    save_file(inputs, str(given))
    subprocess.run([tool, str(spec), str(given), str(weights), str(outputs), "f64"], check=True)
    return load_file(str(weights)), load_file(str(outputs))


def twin_with(weights):
    twin = Twin().double()  # the weights below are float64
    # Trained mode with grad on keeps PyTorch off its fused inference path,
    # which zeroes padded positions instead of computing them.
    result = twin.load_state_dict(weights, strict=False)
    assert result.unexpected_keys == []
    assert result.missing_keys == ["logits.weight"]  # the tie: listed once, under wte.weight
    assert twin.logits.weight is twin.wte.weight
    return twin


def batch(with_padding):
    torch.manual_seed(1)
    ids = torch.randint(0, VOCAB, (3, 20))
    mask = torch.ones(3, 20, dtype=torch.int64)
    if with_padding:
        mask[1, 13:] = 0  # right padding, as the collator pads
        mask[2, 6:] = 0
    labels = ids.masked_fill(mask == 0, -100)
    return ids, mask, labels


@pytest.mark.parametrize("with_padding", [False, True])
def test_logits_and_loss_equal_the_pytorch_twin(tmp_path, with_padding):
    ids, mask, labels = batch(with_padding)
    inputs = {"input_ids": ids, "labels": labels}
    if with_padding:
        inputs["attention_mask"] = mask
    weights, outputs = run_libaccel(tmp_path, inputs)
    assert sorted(outputs) == ["logits", "loss"]
    logits, loss = twin_with(weights)(ids, mask if with_padding else None, labels)
    assert outputs["logits"].shape == (3, 20, VOCAB)
    assert outputs["logits"].dtype == torch.float64
    # The float32 comparison (atol 1e-5 + rtol 1e-6, about 3 ulps at the
    # logits' 60) held only while both sides ran the same kernels: on an AMD
    # EPYC (AVX-512) with Debian's LibTorch 1.13 on both sides they agreed bitwise
    # (5 draws; the weights change every run, LibTorch seeds at random), but
    # two float32 networks of 2 blocks (products over 64 to 256 terms, softmax,
    # LayerNorm) summed in other orders may differ by many ulps, with
    # no bound that holds for every kernel. In float64 (u = 1.1e-16) the two
    # sides take different kernels here and measured 1.1e-14 at most; 1e-9 is
    # 1e5 above that and 1e5 below what a wrong network leaves (a missed mask or
    # tie: 1e-4 and up, test_padding_changes_what_the_mask_hides).
    difference = (outputs["logits"] - logits.detach()).abs().max().item()
    print(f"float64 logits: worst difference {difference:.3g} (tolerance 1e-9)")
    torch.testing.assert_close(outputs["logits"], logits.detach(), rtol=0, atol=1e-9)
    torch.testing.assert_close(outputs["loss"], loss.detach(), rtol=0, atol=1e-9)


def test_padding_changes_what_the_mask_hides(tmp_path):
    # Without the mask, padded positions attend to the padding before them: the
    # twin's result there must then differ, or the comparison above proves nothing.
    ids, mask, labels = batch(True)
    weights, outputs = run_libaccel(tmp_path, {"input_ids": ids, "attention_mask": mask, "labels": labels})
    unmasked, _ = twin_with(weights)(ids, None, labels)
    assert not torch.allclose(outputs["logits"][1, 14:], unmasked.detach()[1, 14:], atol=1e-4)
