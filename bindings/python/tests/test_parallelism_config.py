"""Accelerate's ParallelismConfig from Python on one process: the names, the
environment fallback, and the checks against the world (the multi-process
runs are in test_distributed.py)."""
import pytest

import accel


def test_defaults_environment_and_checks(monkeypatch):
    config = accel.ParallelismConfig(tp_size=2)
    assert (config.dp_replicate_size, config.dp_shard_size, config.tp_size, config.cp_size) == (1, 1, 2, 1)
    assert config.total_size == 2 and config.data_parallel_size == 1 and config.tp_enabled
    assert not config.cp_enabled and accel.ParallelismConfig(cp_size=2).cp_enabled
    monkeypatch.setenv("PARALLELISM_CONFIG_DP_SHARD_SIZE", "4")
    assert accel.ParallelismConfig().dp_shard_size == 4  # None reads the variable, as Accelerate's
    monkeypatch.setenv("PARALLELISM_CONFIG_DP_SHARD_SIZE", "four")
    with pytest.raises(ValueError, match="PARALLELISM_CONFIG_DP_SHARD_SIZE='four'"):
        accel.ParallelismConfig()
    monkeypatch.delenv("PARALLELISM_CONFIG_DP_SHARD_SIZE")
    with pytest.raises(ValueError, match="tp_size must be an int >= 1, got 0"):
        accel.ParallelismConfig(tp_size=0)

    acc = accel.Accelerator(cpu=True)
    assert acc.parallelism_config == accel.ParallelismConfig()  # one process, no mesh
    with pytest.raises(accel.AccelError, match="the world has 1 processes"):
        accel.Accelerator(cpu=True, parallelism_config=accel.ParallelismConfig(tp_size=2))
    with pytest.raises(TypeError, match="parallelism_config must be a ParallelismConfig"):
        accel.Accelerator(cpu=True, parallelism_config={"tp_size": 2})


# Accelerate 1.15's values for the same sizes (checked against its ParallelismConfig: the same
# lists in the same order; it refuses dp_replicate with tp or cp, which libaccel composes).
DIM_NAMES = [
    (dict(dp_shard_size=2, tp_size=2), ["dp_shard"], ["tp"], ["dp_shard"], ["dp_shard"], ["dp_shard_cp"],
     ["dp_shard", "tp"]),
    (dict(dp_replicate_size=2), ["dp_replicate"], [], [], ["dp_replicate"], ["dp_replicate", "dp_shard_cp"],
     ["dp_replicate"]),
    (dict(dp_shard_size=2, cp_size=2), ["dp_shard"], ["cp"], ["dp_shard", "cp"], ["dp_shard", "cp"], ["dp_shard_cp"],
     ["dp_shard", "cp"]),
    (dict(dp_replicate_size=2, dp_shard_size=2, tp_size=2, cp_size=2), ["dp_replicate", "dp_shard"], ["tp", "cp"],
     ["dp_shard", "cp"], ["dp_replicate", "dp_shard", "cp"], ["dp_replicate", "dp_shard_cp"],
     ["dp_replicate", "dp_shard", "tp", "cp"]),
    (dict(), [], [], [], [], ["dp_shard_cp"], []),
]


@pytest.mark.parametrize("sizes,dp,non_dp,dp_shard_cp,dp_cp,fsdp,active", DIM_NAMES)
def test_dimension_names_by_role_are_accelerates(sizes, dp, non_dp, dp_shard_cp, dp_cp, fsdp, active):
    config = accel.ParallelismConfig(**dict(dict(dp_replicate_size=1, dp_shard_size=1, tp_size=1, cp_size=1), **sizes))
    assert (config.dp_dim_names, config.non_dp_dim_names, config.dp_shard_cp_dim_names, config.dp_cp_dim_names,
            config.fsdp_dim_names, config.active_mesh_dims) == (dp, non_dp, dp_shard_cp, dp_cp, fsdp, active)
    assert config.dp_replicate_enabled == ("dp_replicate" in dp) and config.dp_shard_enabled == ("dp_shard" in dp)
    assert config.non_data_parallel_size == config.tp_size * config.cp_size


def test_one_process_is_rank_zero_everywhere():
    acc = accel.Accelerator(cpu=True)
    assert (acc.data_parallel_rank, acc.data_parallel_shard_rank, acc.tensor_parallel_rank,
            acc.context_parallel_rank) == (0, 0, 0, 0)
    assert acc.should_save_model
    with pytest.raises(NotImplementedError, match="Pipeline parallelism is not supported"):
        acc.pipeline_parallel_rank


def test_maybe_context_parallel_checks_its_buffers_and_leaves_them_whole():
    # Accelerate's scope: here the prepared model cuts the sequence itself, so a script's
    # `with accelerator.maybe_context_parallel(...)` runs as it is (a cp run: test_distributed.py).
    import numpy as np
    acc = accel.Accelerator(cpu=True)
    ids = np.arange(12, dtype=np.int64).reshape(2, 6)
    with acc.maybe_context_parallel(buffers=[ids, ids], buffer_seq_dims=[1, 1], no_restore_buffers={0}):
        assert ids.shape == (2, 6)
    with acc.maybe_context_parallel():
        pass
    with pytest.raises(ValueError, match=r"buffer_seq_dims\[1\] = 2 is not a dimension of buffers\[1\], shape \(2, 6\)"):
        with acc.maybe_context_parallel(buffers=[ids, ids], buffer_seq_dims=[1, 2]):
            pass
    with pytest.raises(ValueError, match="2 buffers but 1 buffer_seq_dims"):
        with acc.maybe_context_parallel(buffers=[ids, ids], buffer_seq_dims=[1]):
            pass


def test_cp_handler_takes_accelerates_default_strategy_only():
    config = accel.ParallelismConfig(cp_size=2, cp_handler=accel.utils.TorchContextParallelConfig())
    assert config.cp_handler.cp_comm_strategy == "allgather"
    assert config == accel.ParallelismConfig(cp_size=2)  # the mesh is the sizes
    with pytest.raises(ValueError, match="cp_comm_strategy 'alltoall' is not supported"):
        accel.TorchContextParallelConfig(cp_comm_strategy="alltoall")
    with pytest.raises(TypeError, match="cp_handler must be a TorchContextParallelConfig, got dict"):
        accel.ParallelismConfig(cp_size=2, cp_handler={"cp_comm_strategy": "allgather"})
