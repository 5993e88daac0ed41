"""Accelerate's notebook_launcher and debug_launcher: run a function in several processes of this
machine, from a notebook or a test, without `accel launch`.

The processes are forked, as Accelerate forks them, so the function may be defined in the notebook;
each has FORK_LAUNCHED=1, as Accelerate sets it (PartialState.fork_launched). Fork before training anything in the launching process: a parent that has already run LibTorch's
OpenMP threads can leave its children waiting on them (Accelerate asks the same of CUDA)."""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import traceback
from multiprocessing.connection import wait
from typing import Any, Callable, Dict, Optional, Sequence

__all__ = ["notebook_launcher", "debug_launcher"]


def _run_child(function: Callable[..., Any], args: Sequence[Any], env: Dict[str, str]) -> None:
    os.environ.update(env)
    os.environ["FORK_LAUNCHED"] = "1"  # as Accelerate's PrepareForLaunch: PartialState.fork_launched
    try:
        function(*args)
    except BaseException:  # noqa: BLE001 - reported, then the exit code says it failed
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _fork_processes(function: Callable[..., Any], args: Sequence[Any], num_processes: int,
                    env_of: Callable[[int], Dict[str, str]]) -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        raise RuntimeError("notebook_launcher needs the fork start method (Linux)")
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_run_child, args=(function, tuple(args), env_of(rank)), daemon=False)
                 for rank in range(num_processes)]
    for process in processes:
        process.start()
    failed = None
    try:
        running = {process.sentinel: rank for rank, process in enumerate(processes)}
        while running and failed is None:
            for sentinel in wait(list(running)):
                rank = running.pop(sentinel)
                processes[rank].join()
                if processes[rank].exitcode != 0:
                    failed = (rank, processes[rank].exitcode)
                    break
    finally:
        # One process failed (or the launcher was interrupted): the others would wait for it in
        # their next collective until the timeout, so they are stopped now, as torchrun does.
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                os.kill(process.pid, signal.SIGKILL)
                process.join()
    if failed is not None:
        rank, code = failed
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        raise RuntimeError(f"process {rank} of {num_processes} failed ({how}); its traceback is above")


def notebook_launcher(function: Callable[..., Any], args: Sequence[Any] = (), num_processes: Optional[int] = None,
                      mixed_precision: str = "no", use_port: str = "29500", master_addr: str = "127.0.0.1",
                      node_rank: int = 0, num_nodes: int = 1, rdzv_backend: str = "static", max_restarts: int = 0,
                      **unsupported: Any) -> None:
    """Accelerate's notebook_launcher: function(*args) in num_processes processes of this node
    (num_nodes nodes, this one node_rank, meeting at master_addr:use_port), each with the
    environment `accel launch` gives its ranks. num_processes None or 1 on one node: the function
    runs in this process. A process that fails stops the others and raises RuntimeError naming it.
    Elastic rendezvous (rdzv_backend other than "static") and restarts are `accel launch`'s."""
    if unsupported:
        raise TypeError(f"notebook_launcher: unexpected argument {sorted(unsupported)[0]!r}")
    if rdzv_backend != "static" or max_restarts:
        raise ValueError(f"notebook_launcher: rdzv_backend {rdzv_backend!r} and max_restarts {max_restarts} need "
                         "`accel launch` (elastic jobs); use rdzv_backend='static', max_restarts=0 here")
    if mixed_precision not in ("no", "fp16", "bf16", "fp8"):
        raise ValueError(f"Unknown mixed_precision mode: {mixed_precision}. Choose between no, fp16, bf16, fp8")
    for name, value in (("num_nodes", num_nodes), ("node_rank", node_rank)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"notebook_launcher: {name} must be an int >= 0, got {value!r}")
    if num_nodes < 1 or node_rank >= num_nodes:
        raise ValueError(f"notebook_launcher: node_rank {node_rank} is not below num_nodes {num_nodes}")
    if num_processes is None or (num_processes == 1 and num_nodes == 1):
        os.environ["ACCELERATE_MIXED_PRECISION"] = mixed_precision
        function(*args)
        return
    if isinstance(num_processes, bool) or not isinstance(num_processes, int) or num_processes < 1:
        raise ValueError(f"notebook_launcher: num_processes must be an int >= 1, got {num_processes!r}")
    world = num_processes * num_nodes

    def env_of(local_rank: int) -> Dict[str, str]:
        return {"RANK": str(node_rank * num_processes + local_rank), "LOCAL_RANK": str(local_rank),
                "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(num_processes), "GROUP_RANK": str(node_rank),
                "MASTER_ADDR": master_addr, "MASTER_PORT": str(use_port),
                "ACCELERATE_MIXED_PRECISION": mixed_precision}

    _fork_processes(function, args, num_processes, env_of)


def debug_launcher(function: Callable[..., Any], args: Sequence[Any] = (), num_processes: int = 2,
                   use_port: str = "29500") -> None:
    """Accelerate's debug_launcher: function(*args) in num_processes CPU processes on this machine
    (ACCELERATE_USE_CPU), for tests and debugging of distributed code."""
    if isinstance(num_processes, bool) or not isinstance(num_processes, int) or num_processes < 1:
        raise ValueError(f"debug_launcher: num_processes must be an int >= 1, got {num_processes!r}")

    def env_of(rank: int) -> Dict[str, str]:
        return {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(num_processes),
                "LOCAL_WORLD_SIZE": str(num_processes), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(use_port),
                "ACCELERATE_USE_CPU": "yes", "ACCELERATE_MIXED_PRECISION": "no"}

    _fork_processes(function, args, num_processes, env_of)
