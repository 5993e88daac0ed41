#!/usr/bin/env bash
# No code of the library or of the unit tests calls std::filesystem::remove_all:
#   no_remove_all.sh SOURCE_DIR
# pip's LibTorch 2.x exports an old copy of it that the dynamic linker can pick
# over libstdc++'s, which then jumps to address 0 (docs/gpu.md); the tree
# removes directories with accel::detail::remove_tree (src/core/remove_tree.hpp).
# The C ABI's test programs (tests/capi/) link only libaccel and are left out.
set -euo pipefail
root=$1
cd "$root"
if hits=$(git grep -nE '(std::filesystem::|fs::)remove_all\(' -- 'src/*' 'tests/*' 'bench/*' ':!tests/capi/*'); then
  echo "FAIL: std::filesystem::remove_all is called; use accel::detail::remove_tree (docs/gpu.md):"
  echo "$hits" | sed 's/^/  /'
  exit 1
fi
echo "ok: no std::filesystem::remove_all in src/, tests/ or bench/"
