#!/usr/bin/env bash
# Installs every system package libaccel needs to build, test and run its demo on Debian 12.
# Idempotent: packages already present are skipped by apt. Run as root (or with sudo available).
#   scripts/install-deps.sh           everything: the library, tests, bindings, packaging, benchmarks
#   scripts/install-deps.sh --demo    only what scripts/demo.sh builds and runs (library, CLI, examples)
set -euo pipefail

# The library, the `accel` command and the C examples, with their data.
demo_packages=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev libgloo-dev libdnnl-dev libopenblas0-openmp
  nlohmann-json3-dev libcli11-dev zlib1g-dev libxxhash-dev libcurl4-openssl-dev libyaml-cpp-dev libsqlite3-dev
  libprotobuf-dev protobuf-compiler
  dataset-fashion-mnist fortunes
)

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libtorch-dev            # LibTorch 1.13.1 (CPU, Gloo, c10d)
  libgloo-dev             # Gloo headers, included by c10d's ProcessGroupGloo.hpp
  libdnnl-dev             # oneDNN headers: float32 CPU products through the libdnnl LibTorch links (src/matmul)
  libopenblas0-openmp     # fast BLAS: without it LibTorch uses the 13x slower reference BLAS
  nlohmann-json3-dev libcli11-dev zlib1g-dev
  libxxhash-dev           # checkpoint checksums (XXH3)
  libcurl4-openssl-dev    # the MLflow tracker talks to an MLflow tracking server over HTTP(S)
  libsqlite3-dev          # the trackio and aim trackers write SQLite stores
  librocksdb7.8           # the aim tracker writes Aim's RocksDB repository (loaded with dlopen when used)
  libyaml-cpp-dev         # Accelerate config files (accel launch --config_file, accel config)
  libprotobuf-dev protobuf-compiler   # TensorBoard event files (src/tracking/proto)
  libgtest-dev libgmock-dev
  clang libclang-rt-14-dev libomp-14-dev # libFuzzer for the safetensors fuzz test; OpenMP for the clang sanitizer build
  swig python3-dev python3-venv python3-numpy   # SWIG bindings; Python test environment (scripts/python-env.sh)
  openjdk-17-jdk-headless curl ca-certificates  # Java binding; JUnit from Maven Central (scripts/java-deps.sh)
  maven                   # the Maven artifact (java_maven_install) and its consumer test
  golang-go               # the Go binding (Go 1.19 here; a newer /usr/local/go/bin/go is used when present)
  dataset-fashion-mnist   # example data in /usr/share/datasets/fashion-mnist
  fortunes                # real English text (/usr/share/games/fortunes) for the byte-level language-model examples
  dpkg-dev file lintian   # packaging/build-deb.sh (CPack's dpkg-shlibdeps) and its lintian test
  abigail-tools           # abidw/abidiff: the ABI check against packaging/abi (packaging_abi_unchanged)
  clang-format            # the style of .clang-format (format_check)
  python3-torch           # bench/run.sh peer, and the tests read our optimizer.bin with torch.load
  openmpi-bin             # mpirun starts ranks without accel launch (dist_under_mpirun; Open MPI 4.1)
  slurm-wlm munge         # a real Slurm the test starts itself from a throwaway config (dist_under_slurm);
                          # the system's own slurmctld/slurmd/munge services are neither configured nor used
)

if [ "${1:-}" = --demo ]; then
  packages=("${demo_packages[@]}")
elif [ $# -gt 0 ]; then
  echo "install-deps: unknown argument '$1' (use --demo, or nothing for everything)" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
