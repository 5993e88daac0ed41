"""Where LibTorch comes from, before the extension loads.

The wheel (pyproject.toml) links the LibTorch inside PyPI's torch package and
carries none of its own: as torch extensions do, it imports torch first, which
loads libtorch_cpu, libc10 and torch's OpenMP into the process, where the
extension's libaccel.so.0 then finds them. A torch of another version would
load with a LibTorch whose C++ ABI differs, so it is refused here by name.

A build tree or the Debian package (python3-libaccel) has no ``_wheel`` module:
there libaccel's RUNPATH or the system's loader finds LibTorch, and Python's
torch is not imported.
"""
try:
    from ._wheel import TORCH_VERSION
except ImportError:
    TORCH_VERSION = None

if TORCH_VERSION is not None:
    try:
        import torch
    except ImportError as error:
        raise ImportError(f"accel: this wheel runs on PyPI's torch {TORCH_VERSION}, which is not installed "
                          f"(pip install torch=={TORCH_VERSION})") from error
    _found = torch.__version__.split("+")[0]
    if _found != TORCH_VERSION:
        raise ImportError(f"accel: this wheel was built for torch {TORCH_VERSION}, but torch {torch.__version__} "
                          f"is installed ({torch.__file__}); LibTorch has no stable ABI across releases: "
                          f"pip install torch=={TORCH_VERSION}")
