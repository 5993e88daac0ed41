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
    os.execve(program, [program] + sys.argv[1:], env)


if __name__ == "__main__":
    main()
