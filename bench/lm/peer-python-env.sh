#!/usr/bin/env bash
# The LM bench's modern peer: what a Python user installs today, PyPI's torch
# and Accelerate (the venv of scripts/torch2-python-env.sh, .deps/py-torch2)
# plus transformers 5 (GPT-2 with SDPA attention by default), pinned below.
# Idempotent: a matching stamp skips the install. Prints the venv's python.
set -euo pipefail
cd "$(dirname "$0")/../.."
transformers=5.24.0
python="$(scripts/torch2-python-env.sh)"
stamp="$(dirname "$python")/../.installed-transformers-$transformers"
if [ ! -f "$stamp" ]; then
  echo "peer-python-env: installing transformers $transformers beside torch and accelerate" >&2
  "$python" -m pip install -q --disable-pip-version-check "transformers==$transformers" >&2
  touch "$stamp"
fi
echo "$python"
