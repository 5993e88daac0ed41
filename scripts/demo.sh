#!/usr/bin/env bash
# The demo: install dependencies, build, then train the C example on Fashion-MNIST
# with 2 processes over Gloo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec build/bin/accel launch --nproc_per_node 2 build/bin/train_fashion_mnist --epochs 2 "$@"
