#!/usr/bin/env bash
# The demo: install dependencies, build, then train the C example on Fashion-MNIST
# with 2 processes over Gloo. `scripts/demo.sh lm` trains the C byte-level GPT
# (examples/c/train_gpt_fortunes.c) on Debian's fortunes instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
if [ "${1:-}" = lm ]; then  # scripts/demo.sh lm: the byte-level GPT on the fortunes instead
  shift
  exec build/bin/accel launch --nproc_per_node 2 build/bin/train_gpt_fortunes "$@"
fi
exec build/bin/accel launch --nproc_per_node 2 build/bin/train_fashion_mnist --epochs 2 "$@"
