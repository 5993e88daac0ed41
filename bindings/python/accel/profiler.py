"""accel.profiler: torch.profiler's trace handler for accelerator.profile(), so that a script
that passes ``on_trace_ready=torch.profiler.tensorboard_trace_handler(dir)`` ports by changing the
import, and runs without torch installed."""
from __future__ import annotations

import os
import socket
import time
from typing import Any, Callable, Optional

__all__ = ["tensorboard_trace_handler"]


def tensorboard_trace_handler(dir_name: str, worker_name: Optional[str] = None,
                              use_gzip: bool = False) -> Callable[[Any], None]:
    """torch.profiler.tensorboard_trace_handler: returns an on_trace_ready that writes each
    finished trace to dir_name/<worker_name>.<time in ns>.pt.trace.json (.gz with use_gzip),
    where TensorBoard's profile plugin (torch-tb-profiler) finds it; worker_name defaults to
    "<host>_<pid>". Give a ProfileKwargs(on_trace_ready=...) a schedule_option, as with torch:
    without one it runs once, when the profile ends."""
    def handler(profile: Any) -> None:
        nonlocal worker_name
        os.makedirs(dir_name, exist_ok=True)
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker_name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        profile.export_chrome_trace(os.path.join(dir_name, name))
    return handler
