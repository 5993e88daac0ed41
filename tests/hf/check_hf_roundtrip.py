"""The proof that a Hugging Face model exported from Python trains through
libaccel and comes back to transformers:

    check_hf_roundtrip.py gpt2|bert|llama WORK_DIR ACCEL_CLI TRAINER...

exports the model (export_hf_models.py), runs TRAINER DATA_DIR OUT_DIR STEPS
on 2 processes with `accel launch` (the trainer fails unless the loss falls by
20% and the replicas end identical), then checks that model.safetensors holds
transformers' names (the tied lm_head.weight and the non-persistent buffers
left out), that from_pretrained loads it with no missing or unexpected keys,
and that its logits equal libaccel's to 1e-5. HF_LAUNCH_CONFIG in the
environment: a config file for `accel launch` (FULL_SHARD per block, or
tensor parallelism of 2, say).
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
from safetensors import safe_open
from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 12


def main():
    kind, work, cli, trainer = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    shutil.rmtree(work, ignore_errors=True)
    data, out = os.path.join(work, "data"), os.path.join(work, "out")
    os.makedirs(out)
    subprocess.run([sys.executable, os.path.join(HERE, "export_hf_models.py"), kind, data], check=True)
    # HF_LAUNCH_CONFIG: an `accel launch --config_file` (FULL_SHARD per block, say).
    config = ["--config_file", os.environ["HF_LAUNCH_CONFIG"]] if os.environ.get("HF_LAUNCH_CONFIG") else []
    # Llama's loss falls more slowly at the trainer's learning rate: by 20% in about 12 steps, so it gets 20.
    steps = 20 if kind == "llama" else STEPS
    run = subprocess.run([cli, "launch", *config, "--nproc_per_node", "2", "--master_port", "0", *trainer, data, out,
                          str(steps)], timeout=240, stdout=subprocess.PIPE, text=True)
    print(run.stdout, end="")
    assert run.returncode == 0, f"the trainer failed ({run.returncode})"
    tensor_parallel = bool(config) and "parallelism_config_tp_size: 2" in open(os.environ["HF_LAUNCH_CONFIG"]).read()
    if tensor_parallel:  # each of the 2 processes holds its slices: less than the whole model's bytes
        held = [int(line.split(" holds ")[1].split(" ")[0]) for line in run.stdout.splitlines() if " holds " in line]
        # GPT-2: 70,976 of its 120,576 parameters a rank (docs/parallelism.md); BERT: 59,012 of 92,100
        # (each layer's query, key, value, intermediate and both output weights, 33,088, halved); Llama:
        # 74,048 of 115,008 (each layer's q, k, v, o projections, 16,384, and gate, up, down, 24,576, halved).
        local = {"gpt2": 70976, "bert": 59012, "llama": 74048}[kind]
        assert held == [local * 4] * 2, f"the ranks hold {held} parameter bytes, not {local * 4} each"
    elif config:  # the config's FULL_SHARD (3) ran: each of 2 processes holds half of the 482304 parameter bytes
        assert run.stdout.count("sharding strategy 3 holds 241152 + 241152") == 2, "FULL_SHARD did not run"
        # fsdp_offload_params: the shards' master weights, gradients and optimizer state on the CPU.
        offload = "fsdp_offload_params: true" in open(os.environ["HF_LAUNCH_CONFIG"]).read()
        assert run.stdout.count(f"cpu offload {int(offload)}") == 2, "cpu_offload is not what the config says"

    first, last = map(float, open(os.path.join(out, "losses.txt")).read().split())
    assert last < first * 0.8, (first, last)

    saved = os.path.join(out, "saved")
    # save_model wrote the config the export recorded: from_pretrained reads the directory as it is.
    with open(os.path.join(saved, "config.json")) as f, open(os.path.join(data, "config.json")) as g:
        assert json.load(f) == json.load(g), "save_model's config.json is not the exported model's config"
    with safe_open(os.path.join(saved, "model.safetensors"), "pt") as f:
        names = set(f.keys())
    auto = AutoModelForSequenceClassification if kind == "bert" else AutoModelForCausalLM
    model, info = auto.from_pretrained(saved, output_loading_info=True)
    # What transformers' save_pretrained writes: its state_dict less the tied copy (GPT-2's; Llama's head is its own).
    expected = {k for k in model.state_dict() if k != "lm_head.weight" or kind == "llama"}
    assert names == expected, f"extra {sorted(names - expected)}, missing {sorted(expected - names)}"
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys")), info
    if kind == "gpt2":
        # from_pretrained re-ties lm_head to wte, so the logits below match only
        # if libaccel kept the two one tensor through training.
        assert model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()

    shapes = json.load(open(os.path.join(data, "data.json")))
    batch = {name: torch.from_numpy(np.fromfile(os.path.join(data, name + ".bin"), dtype="<i8").reshape(shape))
             for name, shape in shapes.items()}
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    ours = torch.from_numpy(np.fromfile(os.path.join(out, "logits.bin"), dtype="<f4").reshape(logits.shape))
    difference = (logits - ours).abs().max().item()
    # One evaluation of the same saved weights by two sets of float32 kernels
    # (libaccel's TorchScript with oneDNN products and the fused aten::gelu,
    # against transformers' modules): no training between them, so nothing
    # amplifies the rounding; each side is a few ulps of the logits from exact
    # through the network's depth, and another CPU's blocking changes which
    # way elements round, not how far. Measured on an AMD EPYC (AVX-512):
    # 3.6e-7 for gpt2 and bert, whose logits reach 2.1 (1.5 to 3 ulps); 1e-5
    # is 28x that (84 u relative to the largest logit). The largest |logit| is
    # printed below so a log shows the scale.
    assert difference <= 1e-5, f"from_pretrained's logits differ from libaccel's by {difference}"
    print(f"{kind}: eval loss {first:.4f} -> {last:.4f}; {len(names)} tensors saved; logits match to {difference:.2e} (largest |logit| {logits.abs().max().item():.3g})")


if __name__ == "__main__":
    main()
