#!/usr/bin/env bash
# Creates (or updates) the Python environment the test suite uses: a venv of
# Debian's /usr/bin/python3 at .venv that also sees Debian's packages (numpy,
# python3-torch for benchmarks), plus the test tools from PyPI listed in
# scripts/requirements-test.txt. Prints nothing on success when up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${ACCEL_VENV:-$PWD/.venv}"
requirements=scripts/requirements-test.txt
stamp="$venv/.requirements-installed"
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
if [ ! -f "$stamp" ] || ! cmp -s "$requirements" "$stamp"; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$stamp"
fi
