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
    env = os.environ
    if sys.prefix != sys.base_prefix and not env.get("VIRTUAL_ENV"):
        # Run from a venv's bin without activating it: `accel launch` picks the
        # interpreter from VIRTUAL_ENV, so the ranks use this venv's Python (and
        # its accel) rather than the first python3 on PATH.
        env = dict(env, VIRTUAL_ENV=sys.prefix)
    os.execve(program, [program] + sys.argv[1:], env)


if __name__ == "__main__":
    main()
