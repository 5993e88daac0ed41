"""Accelerate's ParallelismConfig (docs/parallelism.md)."""
from __future__ import annotations

import os
from typing import List, Optional

__all__ = ["ParallelismConfig", "TorchContextParallelConfig"]

_ENV = {"dp_replicate": "PARALLELISM_CONFIG_DP_REPLICATE_SIZE", "dp_shard": "PARALLELISM_CONFIG_DP_SHARD_SIZE",
        "tp": "PARALLELISM_CONFIG_TP_SIZE", "cp": "PARALLELISM_CONFIG_CP_SIZE"}


class TorchContextParallelConfig:
    """Accelerate's TorchContextParallelConfig, ParallelismConfig's cp_handler: how context
    parallelism exchanges the keys and values. "allgather" (Accelerate's default) is what libaccel
    does; "alltoall" (the ring rotation) is not built: ValueError naming it."""

    def __init__(self, cp_comm_strategy: str = "allgather") -> None:
        if cp_comm_strategy != "allgather":
            raise ValueError(f"cp_comm_strategy {cp_comm_strategy!r} is not supported: context parallelism "
                             "all-gathers the keys and values ('allgather', Accelerate's default)")
        self.cp_comm_strategy = cp_comm_strategy

    def __repr__(self) -> str:
        return f"TorchContextParallelConfig(cp_comm_strategy={self.cp_comm_strategy!r})"


class ParallelismConfig:
    """Accelerate's ParallelismConfig: the world factored into dp_replicate x dp_shard x cp x tp
    (tp innermost). Tensor parallelism splits a JSON-spec model's transformer layers over tp_size
    consecutive ranks; context parallelism cuts a JSON graph model's sequence over cp_size ranks
    (which see the same batches); data parallelism runs over dp_replicate x dp_shard, a sharding
    strategy (fsdp_plugin) over dp_shard x cp (Accelerate's dp_shard_cp). A size left None is read from PARALLELISM_CONFIG_*_SIZE, else 1, as
    Accelerate does. Pass it as Accelerator(parallelism_config=...); the sizes must multiply to the
    number of processes (checked there)."""

    def __init__(self, dp_replicate_size: Optional[int] = None, dp_shard_size: Optional[int] = None,
                 tp_size: Optional[int] = None, cp_size: Optional[int] = None,
                 cp_handler: Optional[TorchContextParallelConfig] = None) -> None:
        if cp_handler is not None and not isinstance(cp_handler, TorchContextParallelConfig):
            raise TypeError(f"cp_handler must be a TorchContextParallelConfig, got {type(cp_handler).__name__}")
        self.cp_handler = cp_handler
        given = {"dp_replicate": dp_replicate_size, "dp_shard": dp_shard_size, "tp": tp_size, "cp": cp_size}
        for dim, size in given.items():
            if size is None:
                text = os.environ.get(_ENV[dim], "1")
                try:
                    size = int(text)
                except ValueError:
                    raise ValueError(f"environment variable {_ENV[dim]}={text!r} is not an integer") from None
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise ValueError(f"{dim}_size must be an int >= 1, got {size!r}")
            setattr(self, f"{dim}_size", size)

    @property
    def total_size(self) -> int:
        return self.dp_replicate_size * self.dp_shard_size * self.tp_size * self.cp_size

    @property
    def data_parallel_size(self) -> int:
        return self.dp_replicate_size * self.dp_shard_size

    @property
    def tp_enabled(self) -> bool:
        return self.tp_size > 1

    @property
    def cp_enabled(self) -> bool:
        return self.cp_size > 1

    @property
    def dp_replicate_enabled(self) -> bool:
        return self.dp_replicate_size > 1

    @property
    def dp_shard_enabled(self) -> bool:
        return self.dp_shard_size > 1

    @property
    def non_data_parallel_size(self) -> int:
        """tp_size x cp_size: the ranks that see the same batch."""
        return self.tp_size * self.cp_size

    # The enabled dimensions by role, as Accelerate's properties of the same names list them.
    @property
    def dp_dim_names(self) -> List[str]:
        """The data-parallel dimensions (different batches)."""
        return [d for d, on in (("dp_replicate", self.dp_replicate_enabled), ("dp_shard", self.dp_shard_enabled)) if on]

    @property
    def non_dp_dim_names(self) -> List[str]:
        """The dimensions whose ranks see the same batch."""
        return [d for d, on in (("tp", self.tp_enabled), ("cp", self.cp_enabled)) if on]

    @property
    def dp_shard_cp_dim_names(self) -> List[str]:
        """The dimensions a sharding strategy shards the model over."""
        return [d for d, on in (("dp_shard", self.dp_shard_enabled), ("cp", self.cp_enabled)) if on]

    @property
    def dp_cp_dim_names(self) -> List[str]:
        """The dimensions gradients (and the loss) are averaged over."""
        return self.dp_dim_names + (["cp"] if self.cp_enabled else [])

    @property
    def fsdp_dim_names(self) -> List[str]:
        """Accelerate's FSDP mesh: dp_replicate when enabled, then the flattened dp_shard x cp."""
        return (["dp_replicate"] if self.dp_replicate_enabled else []) + ["dp_shard_cp"]

    @property
    def active_mesh_dims(self) -> List[str]:
        return self.dp_dim_names + self.non_dp_dim_names

    def _sizes(self) -> tuple:
        return (self.dp_replicate_size, self.dp_shard_size, self.tp_size, self.cp_size)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ParallelismConfig) and self._sizes() == other._sizes()

    def __repr__(self) -> str:
        return (f"ParallelismConfig(dp_replicate_size={self.dp_replicate_size}, dp_shard_size={self.dp_shard_size}, "
                f"tp_size={self.tp_size}, cp_size={self.cp_size})")
