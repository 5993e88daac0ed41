#!/usr/bin/env bash
# The LM bench's modern peer: what a Python user installs today, PyPI's torch
# and Accelerate (the venv of scripts/torch2-python-env.sh, .deps/py-torch2)
# plus transformers 5 (GPT-2 with SDPA attention by default), pinned below.
# transformers goes into its own venv, .deps/py-lm-peer, which sees torch and
# Accelerate through a .pth file: the tests' venv stays as its script makes it.
# Idempotent: a matching stamp skips the install. Prints the venv's python.
set -euo pipefail
cd "$(dirname "$0")/../.."
transformers=5.24.0
torch_python="$(scripts/torch2-python-env.sh)"
venv=.deps/py-lm-peer
stamp="$venv/.installed-transformers-$transformers"
if [ ! -f "$stamp" ]; then
  rm -rf "$venv"
  echo "peer-python-env: installing transformers $transformers into $venv" >&2
  python3 -m venv "$venv"
  site="$("$torch_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  echo "$site" > "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/torch2.pth"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "transformers==$transformers" >&2
  touch "$stamp"
fi
echo "$PWD/$venv/bin/python"
