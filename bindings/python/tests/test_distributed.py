"""The Python binding across real processes started by `accel launch` (Gloo on loopback)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).parent / "programs" / "distributed_worker.py"


@pytest.mark.parametrize("nproc", [2, 3])
def test_training_sync_and_gather_for_metrics_across_processes(nproc):
    launcher = os.environ.get("ACCEL_CLI")
    if not launcher:
        pytest.skip("ACCEL_CLI (the accel command) is not set; run through CTest")
    result = subprocess.run(
        [launcher, "launch", "--nproc_per_node", str(nproc), "--master_port", "0", sys.executable, str(WORKER)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"[rank 0] ok {nproc}" in result.stdout


COLLECTIVES = Path(__file__).parent / "programs" / "collectives_worker.py"


@pytest.mark.parametrize("nproc,flags,extra", [(2, [], []), (3, [], []), (4, [], []),
                                               (2, [], ["no_broadcast_buffers"]), (3, ["--debug"], ["debug"])])
def test_collectives_match_accelerate_across_processes(nproc, flags, extra):
    launcher = os.environ.get("ACCEL_CLI")
    if not launcher:
        pytest.skip("ACCEL_CLI (the accel command) is not set; run through CTest")
    result = subprocess.run(
        [launcher, "launch", "--nproc_per_node", str(nproc), "--master_port", "0", *flags, sys.executable,
         str(COLLECTIVES), *extra],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"[rank 0] collectives ok {nproc}" in result.stdout


TENSOR_PARALLEL = Path(__file__).parent / "programs" / "tensor_parallel_worker.py"


@pytest.mark.parametrize("tp,how", [(2, "flags"), (2, "option"), (2, "sp")])
def test_tensor_parallel_split_model_computes_the_whole_models_function(tp, how):
    # The mesh from the launcher's flags, or from Accelerator(parallelism_config=...).
    # "sp": the flags' mesh, with a sequence-parallel plan in the model's spec.
    out = launch_mesh("tp", tp, how, TENSOR_PARALLEL)
    assert f"[rank 0] ok tp {tp}{' sp' if how == 'sp' else ''} loss" in out


def launch_mesh(dim, size, how, worker):
    """`accel launch` of a mesh worker on `size` ranks, the mesh from the launcher's
    --parallelism_config_{dim}_size (how != "option") or asked for by the worker; its stdout."""
    launcher = os.environ.get("ACCEL_CLI")
    if not launcher:
        pytest.skip("ACCEL_CLI (the accel command) is not set; run through CTest")
    flags = [f"--parallelism_config_{dim}_size", str(size)] if how != "option" else []
    result = subprocess.run(
        [launcher, "launch", "--nproc_per_node", str(size), "--master_port", "0", *flags, sys.executable,
         str(worker), *([how] if how != "flags" else [])],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


CONTEXT_PARALLEL = Path(__file__).parent / "programs" / "context_parallel_worker.py"
MESH_RANKS = Path(__file__).parent / "programs" / "mesh_ranks_worker.py"


@pytest.mark.parametrize("outer", ["dp_replicate", "cp"])
def test_mesh_ranks_read_the_process_index_row_major_with_tp_innermost(outer):
    # 4 processes as outer 2 x tp 2: a tensor-parallel group is two consecutive ranks.
    launcher = os.environ.get("ACCEL_CLI")
    if not launcher:
        pytest.skip("ACCEL_CLI (the accel command) is not set; run through CTest")
    result = subprocess.run(
        [launcher, "launch", "--nproc_per_node", "4", "--master_port", "0", f"--parallelism_config_{outer}_size", "2",
         "--parallelism_config_tp_size", "2", sys.executable, str(MESH_RANKS)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    for rank in range(4):
        place = {"dp_replicate": 0, "dp_shard": 0, "tp": rank % 2, "cp": 0}
        place[outer] = rank // 2
        expected = " ".join(f"{dim}={place[dim]}" for dim in ("dp_replicate", "dp_shard", "tp", "cp"))
        assert f"[rank {rank}] ranks {expected} save=True" in result.stdout, result.stdout


@pytest.mark.parametrize("cp,how", [(2, "flags"), (3, "option")])
def test_context_parallel_ranks_read_their_block_and_compute_the_whole_models_function(cp, how):
    assert f"[rank 0] ok cp {cp} loss" in launch_mesh("cp", cp, how, CONTEXT_PARALLEL)


PARTIAL_STATE = Path(__file__).parent / "programs" / "partial_state_worker.py"


def launch(nproc, worker, *args):
    """`accel launch` of a Python worker on nproc ranks; its stdout once it succeeded."""
    launcher = os.environ.get("ACCEL_CLI")
    if not launcher:
        pytest.skip("ACCEL_CLI (the accel command) is not set; run through CTest")
    result = subprocess.run(
        [launcher, "launch", "--nproc_per_node", str(nproc), "--master_port", "0", sys.executable, str(worker),
         *map(str, args)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.mark.parametrize("nproc", [2, 3])
def test_partial_state_before_and_beside_an_accelerator(nproc, tmp_path):
    assert f"[rank 0] partial state ok {nproc}" in launch(nproc, PARTIAL_STATE, tmp_path / "prepared.txt")


FULL_SHARD_LOAD = Path(__file__).parent / "programs" / "full_shard_load_worker.py"


def test_load_state_dict_into_a_full_shard_model_on_every_process():
    assert "[rank 0] full shard load ok 2" in launch(2, FULL_SHARD_LOAD)


LOCAL_SGD = Path(__file__).parent / "programs" / "local_sgd_worker.py"


@pytest.mark.parametrize("nproc", [2, 3])
def test_local_sgd_averages_the_replicas_every_n_steps(nproc):
    assert f"[rank 0] local sgd ok {nproc}" in launch(nproc, LOCAL_SGD)
