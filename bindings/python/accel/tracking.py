"""Trackers (Accelerate's GeneralTracker and the adapter that runs a Python one), the progress
bar and get_logger."""
from __future__ import annotations

import json
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import core
from ._helpers import _closeable, _error_text, _ValueEnum

__all__ = ["BuiltinTracker", "GeneralTracker", "LoggerType", "Tracker", "ProgressBar", "get_logger"]


class Tracker:
    """Base class of custom trackers (Accelerate's GeneralTracker): set name, override what you need."""

    name = "custom"

    def store_init_configuration(self, config: Dict[str, Any]) -> None:
        pass

    def log(self, values: Dict[str, float], step: Optional[int] = None) -> None:
        pass

    def finish(self) -> None:
        pass


GeneralTracker = Tracker  # Accelerate's name (accelerate.tracking.GeneralTracker)


class LoggerType(_ValueEnum):
    """Accelerate's LoggerType (accelerate.utils): the built-in trackers by name, for log_with.
    str() gives the name. CLEARML and SWANLAB are Accelerate's members that libaccel has no
    tracker for: init_trackers names them; JSONL and CSV are libaccel's own."""

    ALL = "all"
    AIM = "aim"
    TENSORBOARD = "tensorboard"
    WANDB = "wandb"
    COMETML = "comet_ml"
    MLFLOW = "mlflow"
    CLEARML = "clearml"
    DVCLIVE = "dvclive"
    SWANLAB = "swanlab"
    TRACKIO = "trackio"
    JSONL = "jsonl"
    CSV = "csv"


class BuiltinTracker(Tracker):
    """A running built-in tracker as accelerator.get_tracker(name) gives it (Accelerate's
    TensorBoardTracker, WandBTracker, ...): log() writes to this tracker alone. The core writes
    the tracker's files, so there is no library object underneath: .tracker is this object."""

    main_process_only = True

    def __init__(self, accelerator: Any, name: str) -> None:
        self.name = name
        self._accelerator = weakref.proxy(accelerator)  # the accelerator keeps its trackers, not the reverse

    @property
    def tracker(self) -> "BuiltinTracker":
        return self

    def log(self, values: Dict[str, Any], step: Optional[int] = None, **kwargs: Any) -> None:
        """Numbers are scalars; strings are text values (as TensorBoard's tracker logs them)."""
        if kwargs:
            raise TypeError(f"the {self.name} tracker's log takes no keyword arguments {sorted(kwargs)} "
                            "(they are options of the Python library, which libaccel does not run)")
        step = -1 if step is None else step
        names, numbers, texts = _split_values(values)
        core.Accelerator.log_to(self._accelerator, self.name, names, numbers, step)
        for tag, text in texts.items():
            core.Accelerator.log_text_to(self._accelerator, self.name, tag, text, step)

    def store_init_configuration(self, config: Dict[str, Any]) -> None:
        raise NotImplementedError(f"the {self.name} tracker records its configuration at init_trackers(config=...)")

    def finish(self) -> None:
        raise NotImplementedError(f"the {self.name} tracker is finished by accelerator.end_training()")


def _split_values(values: Dict[str, Any]) -> Tuple[List[str], List[float], Dict[str, str]]:
    """A log call's values as the core takes them: the scalars' names and numbers (anything
    float() takes: ints, floats, numpy and accel scalars), and the strings (logged as text, as
    Accelerate's TensorBoard tracker logs them). Anything else is a TypeError naming its key."""
    names: List[str] = []
    numbers: List[float] = []
    texts: Dict[str, str] = {}
    for key, value in values.items():
        if isinstance(value, str):
            texts[key] = value
            continue
        try:
            numbers.append(float(value))
        except (TypeError, ValueError):
            raise TypeError(f"log: value {key!r} is a {type(value).__name__}; trackers take numbers and "
                            "strings") from None
        names.append(key)
    return names, numbers, texts


def _builtin_tracker_names() -> List[str]:
    """The built-in trackers' names as log_with takes them (not "all"): the core's list."""
    return core.builtin_tracker_names().split(",")


def _split_log_with(log_with: Any) -> Tuple[List[str], List[Any]]:
    """Accelerate's log_with: a name, a LoggerType, a tracker instance, or a list of them, into
    the built-in names and the instances (added with add_tracker). Raises TypeError naming any
    other item."""
    items = list(log_with) if isinstance(log_with, (list, tuple)) else [log_with]
    names: List[str] = []
    custom: List[Any] = []
    for item in items:
        if isinstance(item, LoggerType):
            names.append(item.value)
        elif isinstance(item, str):
            names.append(item)
        elif isinstance(item, Tracker) or (hasattr(item, "log") and hasattr(item, "name")):
            custom.append(item)
        else:
            raise TypeError(f"log_with takes tracker names, LoggerType members and tracker instances, "
                            f"not {type(item).__name__} ({item!r})")
    return names, custom


class _TrackerAdapter(core.Tracker):
    def __init__(self, tracker: Any) -> None:
        super().__init__()
        self.tracker = tracker

    def init(self, run_name: str, config_json: str) -> str:
        try:
            if hasattr(self.tracker, "store_init_configuration"):
                self.tracker.store_init_configuration(json.loads(config_json))
            return ""
        except BaseException as error:
            return _error_text(error)

    def log(self, names: Sequence[str], values: Sequence[float], step: int) -> str:
        try:
            self.tracker.log(dict(zip(names, values)), None if step < 0 else step)
            return ""
        except BaseException as error:
            return _error_text(error)

    def finish(self) -> str:
        try:
            if hasattr(self.tracker, "finish"):
                self.tracker.finish()
            return ""
        except BaseException as error:
            return _error_text(error)


# ------------------------------------------------------ logging, progress ----

ProgressBar = core.ProgressBar
_closeable(ProgressBar, core.close_progress)


class _Logger:
    """Accelerate's get_logger: messages go to stderr, by default from the main process only."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _log(self, level: int, message: str, main_process_only: bool) -> None:
        core.log_message(self.name, level, str(message), main_process_only)

    def debug(self, message: str, main_process_only: bool = True) -> None:
        self._log(core.LOG_DEBUG, message, main_process_only)

    def info(self, message: str, main_process_only: bool = True) -> None:
        self._log(core.LOG_INFO, message, main_process_only)

    def warning(self, message: str, main_process_only: bool = True) -> None:
        self._log(core.LOG_WARNING, message, main_process_only)

    def error(self, message: str, main_process_only: bool = True) -> None:
        self._log(core.LOG_ERROR, message, main_process_only)


def get_logger(name: str) -> _Logger:
    return _Logger(name)
