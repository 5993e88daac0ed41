#!/usr/bin/env bash
# The trackers' own readers, in a venv of their own at .deps/py-trackers
# (git-ignored): wandb (its `wandb leet inspect` and `wandb sync --dry-run` read
# our offline runs), DVCLive with DVC (`dvc metrics show`, `dvc plots show`,
# DVCLive's resume), trackio (`trackio list` / `trackio get` on its store) and
# Aim (`aim storage reindex` and its SDK on our repository) and comet_ml
# (`comet offline` and its message schemas on our offline archive). Separate from .venv because they need protobuf 5+ and a
# newer huggingface_hub than transformers 4.49 there. Idempotent: a stamp
# matching the pins below skips the install. Prints the venv's python.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.deps/py-trackers
pins="pytest==8.3.3 wandb==0.31.0 dvclive==3.49.1 dvc==3.67.1 trackio==0.43.0 aim==3.29.1 comet_ml==3.58.8"
stamp="$venv/.installed-$(echo "$pins" | tr ' =' '_-')"
if [ ! -f "$stamp" ]; then
  rm -rf "$venv"
  echo "trackers-python-env: installing $pins into $venv" >&2
  /usr/bin/python3 -m venv "$venv"
  # shellcheck disable=SC2086
  "$venv/bin/python" -m pip install -q --disable-pip-version-check $pins >&2
  touch "$stamp"
fi
echo "$PWD/$venv/bin/python"
