"""Run by test_distributed.py under `accel launch --parallelism_config_cp_size N` (or, with the
argument "option", under plain `accel launch`, the mesh asked for by the Accelerator): the JSON
GPT's sequence is cut over the processes (docs/parallelism.md). Each rank is given the probe's ids in
its own block of the sequence only, other ids elsewhere, and the logits (gathered whole) and the
loss are still those of the whole model (the prepared model's weights, loaded into one never
prepared); then a training step runs."""
import os
import sys

import numpy as np

import accel

BLOCK = ('"type": "TransformerEncoderLayer", "d_model": 16, "nhead": 2, "dim_feedforward": 32, '
         '"dropout": 0.0, "activation": "gelu", "batch_first": true, "norm_first": true, "causal": true')
SPEC = """{"inputs": ["input_ids", {"name": "attention_mask", "optional": true},
  {"name": "labels", "optional": true}], "nodes": [
  {"name": "wte", "type": "Embedding", "num_embeddings": 32, "embedding_dim": 16},
  {"name": "wpe", "type": "PositionalEmbedding", "num_positions": 8, "embedding_dim": 16, "batch_first": true},
  {"name": "h0", "input": ["wpe", "attention_mask"], %s}, {"name": "h1", "input": ["h0", "attention_mask"], %s},
  {"name": "ln_f", "type": "LayerNorm", "normalized_shape": 16},
  {"name": "logits", "type": "Linear", "in_features": 16, "out_features": 32, "weight": "wte.weight"},
  {"name": "loss", "type": "CausalLMLoss", "input": ["logits", "labels"]}], "outputs": ["logits", "loss"]}"""
LENGTH = 7  # no multiple of 4 or 6: the last chunk is padded


def main():
    spec = SPEC % (BLOCK, BLOCK)
    world = int(os.environ["WORLD_SIZE"])
    if "option" in sys.argv[1:]:
        acc = accel.Accelerator(cpu=True, parallelism_config=accel.ParallelismConfig(cp_size=world))
    else:
        acc = accel.Accelerator(cpu=True)
    assert acc.parallelism_config == accel.ParallelismConfig(cp_size=world), acc.parallelism_config
    assert acc.parallelism_config.cp_enabled
    acc.set_seed(0)
    model = accel.Model.from_json(spec)
    opt = accel.Optimizer(model, "adamw", lr=1e-3)
    acc.prepare(model, opt)
    reference = accel.Model.from_json(spec)
    reference.load_state_dict(acc.get_state_dict(model))

    ids = np.random.RandomState(1).randint(0, 32, (4, LENGTH)).astype(np.int64)
    mask = np.ones_like(ids)
    mask[3, 5:] = 0  # the last sequence is padded
    labels = np.where(mask == 1, ids, -100)
    # This rank's block: chunks r and 2 cp - 1 - r of 2 cp (docs/parallelism.md).
    chunk = -(-LENGTH // (2 * world))
    mine = (ids + 1 + acc.process_index) % 32
    for start in (acc.process_index * chunk, (2 * world - 1 - acc.process_index) * chunk):
        mine[:, start:start + chunk] = ids[:, start:start + chunk]
    # Accelerate's scope runs as it is: the model cuts the sequence itself.
    with acc.maybe_context_parallel(buffers=[mine, mask, labels], buffer_seq_dims=[1, 1, 1]):
        got = model(input_ids=mine, attention_mask=mask, labels=labels)
    want = reference(input_ids=ids, attention_mask=mask, labels=labels)
    # The same products over the same non-zero terms, in other matrix shapes: each logit is a
    # chain of at most 12 products and sums of at most 32 terms, which moves by at most
    # 12 * 32 * 6e-8 = 2.3e-5 of its magnitudes (float32's unit roundoff): 1e-4 of the largest.
    logits, whole = got.logits.numpy(), want.logits.numpy()
    assert logits.shape == (4, LENGTH, 32), logits.shape
    assert np.abs(logits - whole).max() <= 1e-4 * np.abs(whole).max(), np.abs(logits - whole).max()
    assert abs(got.loss.item() - want.loss.item()) <= 1e-4 * abs(want.loss.item()), (got.loss.item(),
                                                                                     want.loss.item())
    acc.backward(got.loss)
    opt.step()
    opt.zero_grad()
    print(f"ok cp {world} loss {got.loss.item():.6f}", flush=True)


if __name__ == "__main__":
    main()
