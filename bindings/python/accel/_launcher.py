"""The `accel` console script of the wheel: runs the `accel` program bundled in
the package (accel/bin/accel), so `accel launch` works from a venv's bin."""
import os
import sys


def main() -> None:
    program = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "accel")
    if not os.access(program, os.X_OK):
        # A build-tree package (PYTHONPATH=build/python) has no bundled program.
        sys.exit(f"accel: {program} is missing: this accel package was not installed from the wheel; "
                 "use build/bin/accel")
    # `accel launch train.py` runs the ranks with ACCEL_PYTHON: this Python, the one
    # this accel package is installed in (as Accelerate runs sys.executable), not the
    # first python3 on PATH nor another venv that happens to be active.
    env = dict(os.environ, ACCEL_PYTHON=sys.executable)
    torch_lib = _torch_library_dir()
    if torch_lib:
        # accel-selftest (estimate-memory, merge-weights...) links libaccel, which links
        # the LibTorch of the installed torch package; a program has no `import torch`.
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (torch_lib, env.get("LD_LIBRARY_PATH")) if p)
    os.execve(program, [program] + sys.argv[1:], env)


def _torch_library_dir():
    """The lib/ of the torch package the wheel runs on, found without importing torch."""
    from . import _libtorch
    if _libtorch.TORCH_VERSION is None:  # only the wheel runs on PyPI's torch
        return None
    import importlib.util
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None  # accel-selftest then says which library it lacks
    return os.path.join(spec.submodule_search_locations[0], "lib")


if __name__ == "__main__":
    main()
