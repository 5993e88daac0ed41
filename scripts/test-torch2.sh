#!/usr/bin/env bash
# The LibTorch 2.x configuration: libaccel built into ./build-torch2 against the
# LibTorch inside PyPI's torch wheel (scripts/torch2-env.sh, pinned there) on the
# CPU, and its tests that do not depend on Debian's torch 1.13 run under CTest:
# the C ABI tests, the unit tests, the multi-process tests over Gloo, the launcher's
# and the C examples; and the Python wheel, which is this configuration's
# (packaging_python_wheel: built from a copy of the tree, repaired, installed next
# to PyPI's torch in a fresh venv); and the Maven jar that bundles this LibTorch
# (packaging_maven_torch_natives: its classes and JNI library from the 1.13 build's
# build/java/maven, which scripts/test.sh builds first). scripts/test.sh runs it after the 1.13 suite
# (skip with ACCEL_TORCH2_TESTS=0). Arguments go to ctest.
#
# Left to the 1.13 suite: the bindings from the build tree (they reach LibTorch only through the C ABI,
# whose tests run here; and the test venv holds Debian's torch 1.13, whose libraries
# must not meet these in one process), the CLI's configuration commands (no LibTorch
# call), and the tests that export or read models with Python's transformers (hf_*).
set -euo pipefail
cd "$(dirname "$0")/.."
torch=$(scripts/torch2-env.sh)
# PyTorch 2.x in Python, for the tests against its FSDP and distributed checkpoint.
torch_python=$(scripts/torch2-python-env.sh)
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-10G}  # as scripts/test.sh: the wheel test reuses this build's objects
plain_maven=""
[ -d build/java/maven ] && plain_maven=$PWD/build/java/maven
cmake -S . -B build-torch2 -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DACCEL_TORCH_WHEEL="$torch" \
  -DACCEL_BUILD_BENCH=OFF -DACCEL_BUILD_FUZZERS=OFF -DACCEL_BUILD_BINDINGS=OFF \
  -DACCEL_TORCH2_PYTHON="$torch_python" -DACCEL_PLAIN_MAVEN_DIR="$plain_maven" >/dev/null
cmake --build build-torch2 -j "${ACCEL_BUILD_JOBS:-2}"
scripts/seed-ctest-costs.sh build-torch2
cd build-torch2
# The multi-process matrix runs whole in the 1.13 suite; the strategies' code above the
# adapter is the same in both worlds. Here each collective path and strategy runs once:
# NO_SHARD through dist_gradients/dist_sharding_none, ZeRO-1/2 through dist_sharding_*,
# FULL_SHARD on 2 ranks (plain, offload, checkpointing, GPT, HF GPT-2, resume, c10d
# hooks) and HYBRID on 4; left out are the larger worlds and longer schedules of the
# same programs (dist_full_shard_*_3 but other_world_size, *_clip_accum_*, the
# dist_no_shard_* twins of FULL_SHARD's tests, hybrid adamw, four of the five
# dist_reshard_from_* sources) and the Slurm test, whose
# environment parsing has no LibTorch call (its MPI twin stays). A NO_SHARD twin that
# records a kept test's reference still runs: CTest adds the fixtures a test requires.
skip='^(cli_python|dist_python|cli_config|dist_no_shard_|dist_under_slurm$)'
skip+='|^dist_full_shard_((adamw|sgd|gpt_[a-z0-9_]+|hf_gpt2_[a-z0-9_]+)_3|.*clip_accum.*|hybrid_adamw_accum_4)$'
# The checkpoint matrix across strategies and worlds: one source here (every
# target strategy), all five in the 1.13 suite; the code above the adapter is shared.
skip+='|^dist_reshard_from_(none|zero1|zero2|hybrid)$'
# Tensor parallelism: the collectives, each split and the checkpoints once here
# (tp 2 x DDP with the vocabulary, tp 2 x FULL_SHARD, the resume and reload, the C
# program, one refusal); the other meshes and compositions in the 1.13 suite.
# TorchScript tensor parallelism: GPT-2 on tp 2 and tp 2 x FULL_SHARD 2, BERT on tp 2 here.
skip+='|^dist_script_tensor_parallel_(tp2_dp2_4|tp2_full_shard2_blocks_4)$'
skip+='|^dist_tensor_parallel_(tp2_dp_replicate2_4|tp2_zero2_2_4|tp2_full_shard2_resume_4|tp2_hsdp2x2_8|accumulate_tp2_dp2_4|bf16_tp2_dp2_4|vocab_tp2_full_shard2_4|refuse_(unpaired|heads|tied)_[0-9]|record_bf16)$'
exec ctest --output-on-failure -j "${ACCEL_TEST_JOBS:-2}" \
  -R '^(capi_|unit_tests$|dist_|cli_|host_|example_c_|checkpoint_resume|packaging_python_wheel$|packaging_maven_torch_natives$)' -E "($skip)" "$@"
