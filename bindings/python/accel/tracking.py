"""Trackers (Accelerate's GeneralTracker and the adapter that runs a Python one), the progress
bar and get_logger."""
from __future__ import annotations

import json
from typing import Any, Dict, Optional, Sequence

from . import core
from ._helpers import _closeable, _error_text

__all__ = ["Tracker", "ProgressBar", "get_logger"]


class Tracker:
    """Base class of custom trackers (Accelerate's GeneralTracker): set name, override what you need."""

    name = "custom"

    def store_init_configuration(self, config: Dict[str, Any]) -> None:
        pass

    def log(self, values: Dict[str, float], step: Optional[int] = None) -> None:
        pass

    def finish(self) -> None:
        pass


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
