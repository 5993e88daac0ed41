"""Run by test_distributed.py under `accel launch --parallelism_config_tp_size N` (or, with the
argument "option", under plain `accel launch`, the mesh asked for by the Accelerator; with "sp",
sequence parallelism too): the
JSON GPT's transformer layers are split over the processes (docs/parallelism.md), a
training step runs, and the split model computes what the whole model (gathered by
get_state_dict, loaded into a model that was never prepared) computes."""
import os
import sys

import numpy as np

import accel

BLOCK = ('"type": "TransformerEncoderLayer", "d_model": 16, "nhead": 2, "dim_feedforward": 32, '
         '"dropout": 0.0, "activation": "gelu", "batch_first": true, "norm_first": true, "causal": true')
SPEC = """{"inputs": ["input_ids", {"name": "labels", "optional": true}], "nodes": [
  {"name": "wte", "type": "Embedding", "num_embeddings": 32, "embedding_dim": 16},
  {"name": "wpe", "type": "PositionalEmbedding", "num_positions": 8, "embedding_dim": 16, "batch_first": true},
  {"name": "h0", %s}, {"name": "h1", %s},
  {"name": "ln_f", "type": "LayerNorm", "normalized_shape": 16},
  {"name": "logits", "type": "Linear", "in_features": 16, "out_features": 32, "weight": "wte.weight"},
  {"name": "loss", "type": "CausalLMLoss", "input": ["logits", "labels"]}], "outputs": ["loss"]%s}"""
# With "sp": Megatron-style sequence parallelism on top (docs/parallelism.md): the norms, residual
# adds and ln_f run on each rank's block of the sequence.
SEQUENCE_PLAN = (', "tp_plan": {"*.self_attn": "colwise", "*.self_attn.out_proj": "rowwise", '
                 '"*.linear1": "colwise", "*.linear2": "rowwise", "*.norm1": "sequence_parallel", '
                 '"*.norm2": "sequence_parallel", "ln_f": "sequence_parallel"}')


def main():
    sequence_parallel = "sp" in sys.argv[1:]
    spec = SPEC % (BLOCK, BLOCK, SEQUENCE_PLAN if sequence_parallel else "")
    if "option" in sys.argv[1:]:
        mesh = accel.ParallelismConfig(tp_size=int(os.environ["WORLD_SIZE"]))
        acc = accel.Accelerator(cpu=True, parallelism_config=mesh)
    else:
        acc = accel.Accelerator(cpu=True)
    acc.set_seed(0)
    model = accel.Model.from_json(spec)
    opt = accel.Optimizer(model, "adamw", lr=1e-3)
    acc.prepare(model, opt)
    tp = acc.num_processes
    assert acc.parallelism_config == accel.ParallelismConfig(tp_size=tp), acc.parallelism_config
    shapes = {name: tuple(t.shape()) for name, t in model.named_parameters()}
    assert shapes["h0.linear1.weight"] == (32 // tp, 16), shapes["h0.linear1.weight"]
    assert shapes["h0.self_attn.in_proj_weight"] == (48 // tp, 16), shapes["h0.self_attn.in_proj_weight"]
    assert shapes["ln_f.weight"] == (16,), shapes["ln_f.weight"]

    ids = np.random.RandomState(1).randint(0, 32, (4, 8)).astype(np.int64)
    acc.backward(model(input_ids=ids, labels=ids).loss)
    opt.step()
    opt.zero_grad()

    whole = acc.get_state_dict(model)  # collective: every rank gathers the slices
    assert whole["h0.linear1.weight"].shape == (32, 16)
    reference = accel.Model.from_json(spec)
    reference.load_state_dict(whole)
    probe = np.random.RandomState(2).randint(0, 32, (4, 8)).astype(np.int64)
    split_loss = model(input_ids=probe, labels=probe).loss.item()
    whole_loss = reference(input_ids=probe, labels=probe).loss.item()
    # The same function with sums reassociated: the mean of 28 token losses of
    # about 3.5 moves by at most 28 * 6e-8 * 3.5 = 5.9e-6 from reordering (float32's
    # unit roundoff 6e-8); the products inside add 16 or 32 terms, less again.
    assert abs(split_loss - whole_loss) <= 1e-5, (split_loss, whole_loss)
    if sequence_parallel:
        # The blocks are real: a sequence of 7 does not split over 2 ranks, and h0 says so
        # (plain tensor parallelism takes it).
        odd = probe[:, :7]
        try:
            model(input_ids=odd, labels=odd)
            raise AssertionError("a sequence of 7 ran under sequence parallelism")
        except accel.AccelError as e:
            assert "h0" in str(e), str(e)
    print(f"ok tp {tp}{' sp' if sequence_parallel else ''} loss {split_loss:.6f}", flush=True)


if __name__ == "__main__":
    main()
