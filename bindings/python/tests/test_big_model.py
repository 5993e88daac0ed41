"""Big-model tools from Python: an empty JSON GPT, its sizes and Accelerate's device map (the
values the C test checks against Accelerate 0.22), a bad map named, and the GPT dispatched over
cpu and disk generating the fully loaded model's tokens."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import accel

LAYER = {"type": "TransformerEncoderLayer", "d_model": 64, "nhead": 4, "dim_feedforward": 256, "batch_first": True}
GPT = json.dumps({
    "inputs": ["input_ids"],
    "nodes": [
        {"name": "wte", "type": "Embedding", "num_embeddings": 256, "embedding_dim": 64},
        {"name": "h", "type": "Sequential", "layers": [LAYER] * 4},
        {"name": "ln_f", "type": "LayerNorm", "normalized_shape": 64},
        {"name": "logits", "type": "Linear", "in_features": 64, "out_features": 256, "bias": False},
    ],
    "outputs": ["logits"],
})


def export_gpt2(tmp_path):
    """transformers' GPT-2 traced to TorchScript by tests/hf (a random small config), and the
    first two rows of its batch: (the export folder, {input name: array})."""
    export = tmp_path / "gpt2"
    subprocess.run([sys.executable, os.path.join(os.environ["ACCEL_REPO"], "tests", "hf", "export_hf_models.py"),
                    "gpt2", str(export)], check=True,
                   env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    shapes = json.loads((export / "data.json").read_text())
    batch = {name: np.fromfile(export / f"{name}.bin", dtype="<i8").reshape(shape)[:2]
             for name, shape in shapes.items()}
    return export, batch


def greedy(model, prompt, steps):
    """Greedy generation without a cache: the argmax of the last position, appended."""
    model.eval()
    ids = list(prompt)
    for _ in range(steps):
        logits = model(accel.tensor(np.array([ids], dtype=np.int64))).numpy()
        ids.append(int(logits[0, -1].argmax()))
    return ids[len(prompt):]


def test_empty_model_sizes_and_device_map():
    with accel.init_empty_weights():
        model = accel.Model.from_json(GPT)
    assert model.num_parameters() == 232832
    sizes = accel.compute_module_sizes(model)
    assert sizes[""] == 931328 and sizes["h.0"] == 199936
    assert model.module_sizes("float16")[""] == 931328 // 2
    device_map = accel.infer_auto_device_map(model, max_memory={"cpu": 500000},
                                             no_split_module_classes=["TransformerEncoderLayer"])
    # Accelerate 0.22's infer_auto_device_map on the torch twin (tests/capi/test_big_model_api.c).
    assert device_map == {"wte": "cpu", "h.0": "cpu", "h.1": "disk", "h.2": "disk", "h.3": "disk",
                          "ln_f": "disk", "logits": "disk"}
    accel.check_device_map(model, device_map)
    with pytest.raises(accel.AccelError, match='"h.0" \\(199936 bytes\\)'):
        accel.infer_auto_device_map(model, max_memory={"cpu": "100000"},
                                    no_split_module_classes=["TransformerEncoderLayer"])
    with pytest.raises(accel.AccelError, match='"lm_head" names no module'):
        accel.check_device_map(model, {"wte": "cpu", "h": "disk", "lm_head": "cpu"})
    with pytest.raises(accel.AccelError, match='"logits.weight" is not placed'):
        accel.verify_device_map(model, {"wte": "cpu", "h": "disk", "ln_f": "cpu"})
    with pytest.raises(TypeError):
        accel.check_device_map(model, ["cpu"])
    # max_memory None: get_max_memory(), here the RAM available, far more than the model needs.
    budgets = accel.get_max_memory()
    assert list(budgets)[-1] == "cpu" and budgets["cpu"] > 931328
    assert accel.infer_auto_device_map(model, no_split_module_classes=["TransformerEncoderLayer"]) == {"": "cpu"}
    # Outside the block models are built with memory again.
    assert accel.compute_module_sizes(accel.Model.from_json(GPT))[""] == 931328


def test_offloaded_generation_equals_the_loaded_model(tmp_path):
    acc = accel.Accelerator(cpu=True)
    full = accel.Model.from_json(GPT)
    acc.save_model(full, str(tmp_path / "ckpt"))
    want = greedy(full, [1, 2, 3], 6)

    with accel.init_empty_weights():
        model = accel.Model.from_json(GPT)
    offload = tmp_path / "offload"
    with pytest.raises(accel.AccelError, match="no offload folder"):
        accel.load_checkpoint_and_dispatch(model, tmp_path / "ckpt", device_map={"": "disk"})
    assert not hasattr(model, "hf_device_map")  # a failed dispatch leaves no map behind
    with pytest.raises(accel.AccelError, match="places nothing"):
        accel.load_checkpoint_and_dispatch(model, tmp_path / "ckpt", device_map={})
    accel.load_checkpoint_and_dispatch(model, tmp_path / "ckpt", device_map="auto", max_memory={"cpu": 500000},
                                       no_split_module_classes=["TransformerEncoderLayer"], offload_folder=offload)
    assert os.path.exists(offload / "offload_index.json")
    assert greedy(model, [1, 2, 3], 6) == want
    # transformers' hf_device_map: the "auto" map as computed, the same infer_auto_device_map gives.
    assert model.hf_device_map == accel.infer_auto_device_map(model, {"cpu": 500000}, ["TransformerEncoderLayer"])
    assert set(model.hf_device_map.values()) == {"cpu", "disk"}
    assert accel.Accelerator(cpu=True).verify_device_map(model)

    # load_checkpoint_in_model: an empty model filled on the CPU.
    with accel.init_empty_weights():
        loaded = accel.Model.from_json(GPT)
    with pytest.raises(accel.AccelError, match="nowhere.safetensors.* does not exist"):
        accel.load_checkpoint_in_model(loaded, tmp_path / "nowhere.safetensors")
    accel.load_checkpoint_in_model(loaded, tmp_path / "ckpt")
    assert greedy(loaded, [1, 2, 3], 6) == want
    assert not hasattr(loaded, "hf_device_map") and not acc.verify_device_map(loaded)
    accel.load_checkpoint_and_dispatch(loaded, tmp_path / "ckpt")  # device_map=None: no map, as Accelerate
    assert not hasattr(loaded, "hf_device_map")


def test_balanced_memory_and_maps_match_accelerate():
    # Accelerate 1.15 on the torch twin of GPT (init_empty_weights), three 600 kB GPUs:
    #   get_balanced_memory(m, {0: 600000, 1: 600000, 2: 600000, "cpu": 10**9},
    #                       no_split_module_classes=["TransformerEncoderLayer"], low_zero=...)
    # and infer_auto_device_map over the result. No GPU is needed: budgets are numbers.
    with accel.init_empty_weights():
        model = accel.Model.from_json(GPT)
    budgets = {0: 600000, 1: 600000, 2: 600000, "cpu": 10**9}
    no_split = ["TransformerEncoderLayer"]
    balanced = accel.get_balanced_memory(model, budgets, no_split_module_classes=no_split)
    assert balanced == {0: 560362, 1: 560362, 2: 600000, "cpu": 10**9}
    assert accel.infer_auto_device_map(model, balanced, no_split) == {
        "wte": "cuda:0", "h.0": "cuda:0", "h.1": "cuda:1", "h.2": "cuda:1", "h.3": "cuda:2", "ln_f": "cuda:2",
        "logits": "cuda:2"}
    low_zero = accel.get_balanced_memory(model, budgets, no_split_module_classes=no_split, low_zero=True)
    assert low_zero == {0: 0, 1: 600000, 2: 600000, "cpu": 10**9}
    # GPU 0 left empty on purpose: nothing goes there, and no error for its zero budget.
    assert accel.infer_auto_device_map(model, low_zero, no_split) == {
        "wte": "cuda:1", "h.0": "cuda:1", "h.1": "cuda:1", "h.2": "cuda:2", "h.3": "cuda:2", "ln_f": "cuda:2",
        "logits": "cuda:2"}
    # Without a GPU the budgets are returned as given; the names are accel.utils' too.
    from accel.utils import get_balanced_memory
    assert get_balanced_memory(model, {"cpu": 10**6}) == {"cpu": 10**6}


def test_device_map_strings_are_accelerates(tmp_path):
    # Each of Accelerate's strings places the model (here, without GPUs, all on the CPU) and
    # the dispatched model generates what the saved one does.
    full = accel.Model.from_json(GPT)
    accel.Accelerator(cpu=True).save_model(full, str(tmp_path / "ckpt"))
    want = greedy(full, [4, 5], 3)
    for strategy in ("auto", "balanced", "balanced_low_0", "sequential"):
        with accel.init_empty_weights():
            empty = accel.Model.from_json(GPT)
        accel.load_checkpoint_and_dispatch(empty, tmp_path / "ckpt", device_map=strategy,
                                           no_split_module_classes=["TransformerEncoderLayer"])
        assert greedy(empty, [4, 5], 3) == want, strategy
    with pytest.raises(ValueError, match="'balanced_low_1'"):
        accel.load_checkpoint_and_dispatch(full, tmp_path / "ckpt", device_map="balanced_low_1")


def test_disk_offload_streams_the_weights_and_computes_the_same(tmp_path):
    # Accelerate's disk_offload: the weights go to offload_dir and to meta; generation is unchanged.
    model = accel.Model.from_json(GPT)
    want = greedy(model, [7, 8, 9], 4)
    assert accel.disk_offload(model, tmp_path / "offload") is model
    index = json.loads((tmp_path / "offload" / "offload_index.json").read_text())
    assert "wte.weight" in index and "h.3.linear2.bias" in index and "logits.weight" in index
    assert greedy(model, [7, 8, 9], 4) == want
    with pytest.raises(accel.AccelError, match="has no data"):
        accel.disk_offload(model, tmp_path / "again")  # its tensors are on meta now
    with pytest.raises(accel.AccelError, match='"cuda:64" but this machine has'):
        accel.disk_offload(accel.Model.from_json(GPT), tmp_path / "gpu", execution_device="cuda:64")
    with pytest.raises(accel.AccelError, match="JSON graph"):
        accel.disk_offload(accel.Model.from_json('[{"type": "Linear", "in_features": 2, "out_features": 2}]'),
                           tmp_path / "list")
    assert not (tmp_path / "list").exists()


def test_disk_offload_of_an_exported_gpt2_computes_the_same(tmp_path):
    # transformers' GPT-2 traced to TorchScript: every submodule holding tensors (embeddings,
    # Conv1Ds, norms, the attention's mask buffers) reads them back from offload_dir around each
    # of its calls; loss and logits are the fully loaded model's, bit for bit (the same kernels
    # on the same tensors).
    export, batch = export_gpt2(tmp_path)
    want = accel.Model.from_torchscript(str(export / "model.pt"))(**batch)
    model = accel.Model.from_torchscript(str(export / "model.pt"))
    assert accel.disk_offload(model, tmp_path / "offload") is model
    for _, p in model.named_parameters():
        with pytest.raises(accel.AccelError, match="meta"):  # no data outside its submodule's call
            p.numpy()
    for _ in range(2):
        got = model(**batch)
        assert np.array_equal(got.logits.numpy(), want.logits.numpy())
        assert np.array_equal(got.loss.numpy(), want.loss.numpy())
    with pytest.raises(accel.AccelError, match="meta"):
        next(iter(model.named_parameters()))[1].numpy()
    with pytest.raises(accel.AccelError, match="load it again"):
        accel.disk_offload(model, tmp_path / "b")  # it ran a forward since


def test_dispatch_model_of_a_loaded_model_generates_the_same(tmp_path):
    # Accelerate's dispatch_model: the loaded model spread over cpu and disk (its weights written
    # to offload_dir) generates the fully loaded model's tokens.
    model = accel.Model.from_json(GPT)
    want = greedy(model, [7, 8, 9], 4)
    device_map = {"wte": "cpu", "h.0": "cpu", "h.1": "disk", "h.2": "disk", "h.3": "disk", "ln_f": "cpu",
                  "logits": "disk"}
    with pytest.raises(accel.AccelError, match="no offload folder"):
        accel.dispatch_model(model, device_map)
    with pytest.raises(ValueError, match="main_device='cuda:0'"):
        accel.dispatch_model(model, device_map, main_device="cuda:0", offload_dir=tmp_path)
    assert accel.dispatch_model(model, device_map, offload_dir=tmp_path) is model
    assert model.hf_device_map == device_map and list(model.hf_device_map) == list(device_map)
    assert "h.1.linear1.weight" in json.loads((tmp_path / "offload_index.json").read_text())
    assert greedy(model, [7, 8, 9], 4) == want


def test_cpu_offload_computes_the_same_and_names_a_bad_device():
    # Accelerate's cpu_offload; onto the CPU the model runs from host memory (onto a GPU:
    # the CudaDispatch tests of the CUDA build).
    model = accel.Model.from_json(GPT)
    want = greedy(model, [7, 8, 9], 4)
    with pytest.raises(accel.AccelError, match="'tpu:0'|\"tpu:0\""):
        accel.cpu_offload(model, execution_device="tpu:0")
    with pytest.raises(accel.AccelError, match="cuda:64.*GPU"):
        accel.cpu_offload(model, execution_device="cuda:64")
    with pytest.raises(ValueError, match="state_dict"):
        accel.cpu_offload(model, state_dict={})
    assert accel.cpu_offload(model, execution_device="cpu", offload_buffers=True) is model
    assert greedy(model, [7, 8, 9], 4) == want
    with pytest.raises(accel.AccelError, match="JSON graph"):
        accel.cpu_offload(accel.Model.from_json('[{"type": "Linear", "in_features": 2, "out_features": 2}]'))


def test_init_on_device_meta_and_cpu():
    with accel.init_on_device("meta"):
        empty = accel.Model.from_json(GPT)
    assert accel.compute_module_sizes(empty)[""] == 931328
    with pytest.raises(accel.AccelError):  # an empty model has no data to run on
        greedy(empty, [1], 1)
    with accel.init_on_device("cpu"):
        full = accel.Model.from_json(GPT)
    assert len(greedy(full, [1], 2)) == 2
    with pytest.raises(ValueError, match="init_on_device\\('cuda:0'\\)"):
        with accel.init_on_device("cuda:0"):
            pass


def test_init_empty_weights_loads_an_exported_gpt2_without_its_weights(tmp_path):
    # Accelerate's init_empty_weights + load_checkpoint_and_dispatch for transformers' GPT-2 traced
    # to TorchScript: inside the scope no parameter is read from model.pt (each is on meta); the
    # causal-mask buffers, in no checkpoint, come from the file. Filled from what save_model wrote,
    # in memory or with the blocks streamed from disk around each call, its loss and logits are
    # the fully loaded model's, bit for bit (the same kernels on the same tensors).
    export, batch = export_gpt2(tmp_path)
    loaded = accel.Model.from_torchscript(export / "model.pt")
    want = loaded(**batch)
    accelerator = accel.Accelerator(cpu=True)
    accelerator.save_model(loaded, tmp_path / "ckpt")
    with open(tmp_path / "ckpt" / "model.safetensors", "rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    assert "transformer.h.0.attn.c_attn.weight" in header
    assert not any(k.endswith(".attn.bias") for k in header), "the causal mask is no checkpoint tensor"
    device_maps = [None, {"": "disk"},
                   {"transformer.wte": "cpu", "transformer.wpe": "cpu", "transformer.h": "disk",
                    "transformer.ln_f": "cpu", "lm_head": "cpu"}]
    for device_map in device_maps:
        with accel.init_empty_weights():
            model = accel.Model.from_torchscript(export / "model.pt")
        for name, p in model.named_parameters():
            with pytest.raises(accel.AccelError, match="meta"):
                p.numpy()
        if device_map is None:  # (a forward fixes the graph: disk offload must come before any)
            with pytest.raises(accel.AccelError):
                model(**batch)  # no weights yet
        accel.load_checkpoint_and_dispatch(model, tmp_path / "ckpt", device_map=device_map)
        for _ in range(2):
            got = model(**batch)
            assert np.array_equal(got.logits.numpy(), want.logits.numpy()), device_map
            assert np.array_equal(got.loss.numpy(), want.loss.numpy()), device_map
    with accel.init_empty_weights():
        model = accel.Model.from_torchscript(export / "model.pt")
    with pytest.raises(accel.AccelError, match="cuda:0"):
        accel.load_checkpoint_and_dispatch(model, tmp_path / "ckpt", device_map={"": "cuda:0"})
    accel.load_checkpoint_in_model(model, tmp_path / "ckpt")
    assert np.array_equal(model(**batch).logits.numpy(), want.logits.numpy())
