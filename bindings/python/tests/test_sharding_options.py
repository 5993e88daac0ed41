"""Sharding options from Python as Accelerate users write them: FullyShardedDataParallelPlugin
(sharding_strategy, min_num_params, activation_checkpointing), the keyword options, their
errors, and held_bytes. One process here (nothing is sharded, the options are checked and
kept); tests/dist runs the strategies on 2 and 3 processes."""
import numpy as np
import pytest

import accel

MLP = '[{"type": "Linear", "in_features": 4, "out_features": 8}, {"type": "ReLU"}, ' \
      '{"type": "Linear", "in_features": 8, "out_features": 3}]'


def test_fsdp_plugin_is_accepted_and_checked():
    plugin = accel.FullyShardedDataParallelPlugin(min_num_params=1000, activation_checkpointing=True)
    acc = accel.Accelerator(cpu=True, fsdp_plugin=plugin)
    assert acc.num_processes == 1
    with pytest.raises(accel.AccelError, match="fsdp_activation_checkpointing.*SHARD_GRAD_OP"):
        accel.Accelerator(cpu=True, fsdp_plugin=accel.FullyShardedDataParallelPlugin(
            sharding_strategy="SHARD_GRAD_OP", activation_checkpointing=True))
    with pytest.raises(accel.AccelError, match="fsdp_activation_checkpointing.*NO_SHARD"):
        accel.Accelerator(cpu=True, sharding_strategy="NO_SHARD", fsdp_activation_checkpointing=True)
    with pytest.raises(accel.AccelError, match="fsdp_min_num_params.*-5"):
        accel.Accelerator(cpu=True, fsdp_min_num_params=-5)
    with pytest.raises(accel.AccelError, match="fsdp_activation_checkpointing.*2"):
        accel.Accelerator(cpu=True, fsdp_activation_checkpointing=2)
    with pytest.raises(ValueError, match="min_num_params"):
        accel.FullyShardedDataParallelPlugin(min_num_params=-1)
    with pytest.raises(ValueError, match="ZERO9"):
        accel.Accelerator(cpu=True, fsdp_plugin=accel.FullyShardedDataParallelPlugin(sharding_strategy="ZERO9"))


def test_held_bytes_counts_parameters_gradients_and_adamw_state():
    acc = accel.Accelerator(cpu=True)
    model = accel.Model.from_json(MLP)
    opt = accel.Optimizer(model, "adamw", lr=0.01)
    acc.prepare(model, opt)
    n = model.num_parameters()
    assert acc.held_bytes(model) == {"parameters": 4 * n, "gradients": 0, "optimizer_state": 0}
    x = accel.tensor(np.ones((2, 4), dtype=np.float32))
    y = accel.tensor(np.array([0, 1], dtype=np.int64))
    acc.backward(model(x).loss("cross_entropy", y))
    opt.step()
    # AdamW keeps two moments per parameter.
    assert acc.held_bytes(model, opt) == {"parameters": 4 * n, "gradients": 4 * n, "optimizer_state": 8 * n}


def test_transformer_layer_classes_are_checked_and_accepted():
    # transformer_auto_wrap_policy's names: a list or comma-separated; an empty one is refused.
    with pytest.raises(accel.AccelError, match="fsdp_transformer_layer_cls_to_wrap.*empty"):
        accel.Accelerator(cpu=True, fsdp_transformer_layer_cls_to_wrap=["GPT2Block", ""])
    accel.Accelerator(cpu=True, fsdp_transformer_layer_cls_to_wrap="GPT2Block,transformer.h.0")
    plugin = accel.FullyShardedDataParallelPlugin(transformer_cls_names_to_wrap=["GPT2Block"])
    assert plugin.transformer_cls_names_to_wrap == ["GPT2Block"]
    assert accel.Accelerator(cpu=True, fsdp_plugin=plugin).sharding_strategy == "FULL_SHARD"


def test_prefetch_options():
    accel.Accelerator(cpu=True, fsdp_backward_prefetch=False, fsdp_forward_prefetch=True)
    plugin = accel.FullyShardedDataParallelPlugin(backward_prefetch="NO_PREFETCH", forward_prefetch=True)
    accel.Accelerator(cpu=True, fsdp_plugin=plugin)
    with pytest.raises(ValueError, match="backward_prefetch 'EARLY'"):
        accel.FullyShardedDataParallelPlugin(backward_prefetch="EARLY")


def _train(acc, steps=5):
    np.random.seed(3)
    model = accel.Model.from_json(MLP)
    opt = accel.Optimizer(model, "adamw", lr=0.05)
    acc.prepare(model, opt)
    model.load_state_dict({k: accel.tensor(np.full(v.shape, 0.1, dtype=np.float32) * (i + 1))
                           for i, (k, v) in enumerate(acc.get_state_dict(model).items())})
    for step in range(steps):
        x = accel.tensor(np.random.rand(4, 4).astype(np.float32))
        y = accel.tensor(np.random.randint(0, 3, size=4).astype(np.int64))
        acc.backward(model(x).loss("cross_entropy", y))
        opt.step()
        opt.zero_grad()
    return {k: np.array(v) for k, v in acc.get_state_dict(model).items()}


def test_cpu_offload_as_fsdp_plugin_and_keyword():
    """One process with offload shards over a world of one and trains exactly as replicated."""
    class CPUOffload:  # torch's torch.distributed.fsdp.CPUOffload, as Accelerate users pass it
        offload_params = True
    plugin = accel.FullyShardedDataParallelPlugin(cpu_offload=CPUOffload())
    offloaded = accel.Accelerator(cpu=True, fsdp_plugin=plugin)
    assert offloaded.cpu_offload and offloaded.sharding_strategy == "FULL_SHARD"
    replicated = accel.Accelerator(cpu=True)
    assert not replicated.cpu_offload
    want, got = _train(replicated), _train(offloaded)
    assert want.keys() == got.keys()
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    zero2 = accel.Accelerator(cpu=True, sharding_strategy="SHARD_GRAD_OP", cpu_offload=True)
    assert zero2.cpu_offload
    for name, value in _train(zero2).items():
        np.testing.assert_array_equal(value, want[name], err_msg=name)
    with pytest.raises(accel.AccelError, match="cpu_offload.*NO_SHARD") as error:
        accel.Accelerator(cpu=True, sharding_strategy="NO_SHARD", cpu_offload=True)
    assert error.value.code == accel.core.ERR_UNSUPPORTED
    with pytest.raises(accel.AccelError, match="cpu_offload must be -1 \\(default\\), 0 or 1, got 3"):
        accel.Accelerator(cpu=True, sharding_strategy="FULL_SHARD", cpu_offload=3)


def test_sharded_state_dict_writes_distributed_checkpoints(tmp_path):
    # One process with cpu_offload shards over a world of one, so save_state writes sharded state:
    # with state_dict_type SHARDED_STATE_DICT as PyTorch's distributed checkpoint folders.
    plugin = accel.FullyShardedDataParallelPlugin(cpu_offload=True, state_dict_type="SHARDED_STATE_DICT")
    acc = accel.Accelerator(cpu=True, fsdp_plugin=plugin)
    acc.set_seed(3)
    model = accel.Model.from_json(MLP)
    opt = accel.Optimizer(model, "adamw", lr=0.01)
    acc.prepare(model, opt)
    x = accel.tensor(np.ones((2, 4), dtype=np.float32))
    y = accel.tensor(np.array([0, 1], dtype=np.int64))
    acc.backward(model(x).loss("cross_entropy", y))
    opt.step()
    acc.save_state(str(tmp_path / "state"))
    for folder in ("pytorch_model_fsdp_0", "optimizer_0"):
        assert (tmp_path / "state" / folder / ".metadata").is_file()
        assert (tmp_path / "state" / folder / "__0_0.distcp").is_file()
    assert not (tmp_path / "state" / "optimizer_rank0.bin").exists()
    saved = {name: np.array(t) for name, t in acc.get_state_dict(model).items()}
    # Read back unsharded, by an accelerator with the default state dict type.
    other = accel.Accelerator(cpu=True)
    again = accel.Model.from_json(MLP)
    other.prepare(again, accel.Optimizer(again, "adamw", lr=0.01))
    other.load_state(str(tmp_path / "state"))
    for name, t in other.get_state_dict(again).items():
        np.testing.assert_array_equal(np.array(t), saved[name])
    with pytest.raises(ValueError, match="state_dict_type 'LOCAL_STATE_DICT'"):
        accel.FullyShardedDataParallelPlugin(state_dict_type="LOCAL_STATE_DICT")
    with pytest.raises(accel.AccelError, match='fsdp_state_dict_type "FULL" is not FULL_STATE_DICT or SHARDED_STATE_DICT'):
        accel.Accelerator(cpu=True, fsdp_state_dict_type="FULL")
