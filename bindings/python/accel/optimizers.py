"""accel.Optimizer and accel.Scheduler: PyTorch's names for SWIG's optimizer and scheduler options."""
from __future__ import annotations

from typing import Any, Dict, Optional, Union

from . import core
from ._helpers import _closeable, _set_fields
from .core import OptimizerOptions, SchedulerOptions
from .models import Model, ModelParameters

__all__ = ["Optimizer", "Scheduler"]


_OPTIMIZERS = {"sgd": core.OPTIM_SGD, "adam": core.OPTIM_ADAM, "adamw": core.OPTIM_ADAMW,
               "rmsprop": core.OPTIM_RMSPROP, "adagrad": core.OPTIM_ADAGRAD}

# The keywords of torch.optim's constructors that libaccel's optimizers take, per kind. A keyword
# passed here is known to be given, so one the optimizer lacks is a TypeError as in PyTorch, even
# with its default value (the core sees only the options struct and refuses such a field only
# when it differs from the default).
_KEYWORDS = {
    "sgd": {"lr", "momentum", "dampening", "weight_decay", "nesterov"},
    "adam": {"lr", "betas", "eps", "weight_decay", "amsgrad"},
    "adamw": {"lr", "betas", "eps", "weight_decay", "amsgrad"},
    "rmsprop": {"lr", "alpha", "eps", "weight_decay", "momentum", "centered"},
    "adagrad": {"lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"},
}


def _check_keywords(kind: str, options: Dict[str, Any]) -> None:
    for key in options:
        if key not in _KEYWORDS[kind]:
            owners = sorted(name for name, keys in _KEYWORDS.items() if key in keys)
            where = f" (it applies to {', '.join(owners)})" if owners else ""
            raise TypeError(f"optimizer {kind!r} got an unexpected keyword argument {key!r}{where}")


class Optimizer(core.Optimizer):
    """An optimizer over a model's parameters: Optimizer(model, "adamw", lr=1e-3, weight_decay=0.01),
    or Optimizer(model.parameters(), ...) as torch.optim's optimizers are built (all of them: no
    parameter groups).

    Options use PyTorch's names (lr, weight_decay, momentum, betas, eps, ...)."""

    def __init__(self, model: Union[Model, ModelParameters], kind: str = "adamw", **options: Any) -> None:
        if isinstance(model, ModelParameters):
            model = model.model
        if kind not in _OPTIMIZERS:
            raise ValueError(f"unknown optimizer {kind!r}; expected one of {sorted(_OPTIMIZERS)}")
        _check_keywords(kind, options)
        opts = OptimizerOptions(_OPTIMIZERS[kind])
        _set_fields(opts, options, f"optimizer {kind!r}")
        super().__init__(model, opts)
        self._model = model

    @property
    def lr(self) -> float:
        return self.get_lr()

    @lr.setter
    def lr(self, value: float) -> None:
        self.set_lr(value)

    @property
    def step_was_skipped(self) -> bool:
        """Whether the last step() was skipped by the fp16 loss scaler (inf or NaN gradients)."""
        return core.Optimizer.step_was_skipped(self)


_closeable(Optimizer, core.close_optimizer)

_SCHEDULERS = {
    "step": core.SCHED_STEP, "multi_step": core.SCHED_MULTI_STEP, "exponential": core.SCHED_EXPONENTIAL,
    "cosine_annealing": core.SCHED_COSINE_ANNEALING, "linear": core.SCHED_LINEAR, "constant": core.SCHED_CONSTANT,
    "polynomial": core.SCHED_POLYNOMIAL, "one_cycle": core.SCHED_ONE_CYCLE,
    "linear_warmup": core.SCHED_LINEAR_WARMUP, "cosine_warmup": core.SCHED_COSINE_WARMUP,
    "reduce_on_plateau": core.SCHED_REDUCE_ON_PLATEAU,
}


class Scheduler(core.Scheduler):
    """A learning-rate schedule: Scheduler(opt, "linear_warmup", num_warmup_steps=10, num_training_steps=100).

    Options use PyTorch's names; mode="max" and threshold_mode="abs" for reduce_on_plateau."""

    def __init__(self, optimizer: Optimizer, kind: str, **options: Any) -> None:
        if kind not in _SCHEDULERS:
            raise ValueError(f"unknown scheduler {kind!r}; expected one of {sorted(_SCHEDULERS)}")
        opts = SchedulerOptions(_SCHEDULERS[kind])
        milestones = list(options.pop("milestones", []))
        if "mode" in options:
            opts.mode_max = {"min": 0, "max": 1}[options.pop("mode")]
        if "threshold_mode" in options:
            opts.threshold_abs = {"rel": 0, "abs": 1}[options.pop("threshold_mode")]
        if "anneal_strategy" in options:
            opts.anneal_linear = {"cos": 0, "linear": 1}[options.pop("anneal_strategy")]
        _set_fields(opts, options, f"scheduler {kind!r}")
        super().__init__(optimizer, opts, milestones)
        self._optimizer = optimizer

    def step(self, metric: Optional[float] = None) -> None:
        if metric is None:
            super().step()
        else:
            self.step_metric(metric)


_closeable(Scheduler, core.close_scheduler)
