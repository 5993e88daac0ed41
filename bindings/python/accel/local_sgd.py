"""Accelerate's LocalSGD: train without synchronising gradients and average the model's
parameters across processes every local_sgd_steps steps (and on leaving the block).

    with LocalSGD(accelerator=acc, model=model, local_sgd_steps=8) as local_sgd:
        for x, y in loader:
            acc.backward(model(x).loss("cross_entropy", y))
            opt.step()
            opt.zero_grad()
            local_sgd.step()
"""
from __future__ import annotations

from typing import Any, Optional

from .models import Model

__all__ = ["LocalSGD"]


class LocalSGD:
    """As Accelerate's: enabled only with several processes; a sharded model raises AccelError
    (UNSUPPORTED) at the first average."""

    def __init__(self, accelerator: Any, model: Model, local_sgd_steps: int, enabled: bool = True) -> None:
        if isinstance(local_sgd_steps, bool) or not isinstance(local_sgd_steps, int) or local_sgd_steps < 1:
            raise ValueError(f"LocalSGD local_sgd_steps must be a positive int, got {local_sgd_steps!r}")
        self.enabled = bool(enabled) and accelerator.use_distributed
        self.num_steps = 0
        self.accelerator, self.model, self.local_sgd_steps = accelerator, model, local_sgd_steps
        self._no_sync: Optional[Any] = None

    def __enter__(self) -> "LocalSGD":
        if self.enabled:
            self._no_sync = self.accelerator.no_sync(self.model)
            self._no_sync.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            try:
                self._sync_and_avg_model_params()
            finally:
                self._no_sync.__exit__(*exc)

    def step(self) -> None:
        """Counts a step; every local_sgd_steps steps the parameters are averaged. Collective then."""
        self.num_steps += 1
        if self.enabled and self.num_steps % self.local_sgd_steps == 0:
            self._sync_and_avg_model_params()

    def _sync_and_avg_model_params(self) -> None:
        self.accelerator.average_parameters(self.model)
