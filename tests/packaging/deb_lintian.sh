#!/usr/bin/env bash
# Runs lintian on the packages deb_build.sh made: no error allowed; warnings are printed.
#   deb_lintian.sh OUT_DIR
set -euo pipefail
out=$1
command -v lintian >/dev/null || { echo "FAIL: lintian is not installed (scripts/install-deps.sh)" >&2; exit 1; }
debs=("$out"/*.deb)
[ ${#debs[@]} -ge 2 ] && [ -f "${debs[0]}" ] || { echo "FAIL: expected at least 2 packages in $out" >&2; exit 1; }
# --fail-on error: the exit status is non-zero for errors only; warnings are shown.
lintian --fail-on error --display-info --allow-root "${debs[@]}"
