#!/usr/bin/env bash
# What docs/packaging.md and doc.go say about the built files holds:
#   docs_match_files.sh SOURCE_DIR LIBACCEL ACCEL_COMMAND
# - every Debian package whose library libaccel.so.0 or the accel command links
#   (NEEDED, resolved with ldconfig and dpkg -S) is in the documented apt line for
#   the jar, libc6/libstdc++6/libgcc-s1 aside (every system has them; the Python
#   wheel bundles its libraries, which packaging_python_wheel checks);
# - the Go binding links through `#cgo pkg-config`, so doc.go advises PKG_CONFIG_PATH,
#   not CGO_LDFLAGS.
set -euo pipefail
root=$1 lib=$2 command=$3
fail() { echo "FAIL: $*" >&2; exit 1; }

# ldconfig's cache read once: piping `ldconfig -p` into an awk that exits at the first
# match let ldconfig die of SIGPIPE, which pipefail turned into a silent exit of this script.
cache=$(ldconfig -p)
documented=$(sed -n '/^    sudo apt install libtorch/,/^$/p' "$root/docs/packaging.md" | tr -s ' \\\n' '\n')
[ -n "$documented" ] || fail "no 'sudo apt install libtorch...' line in docs/packaging.md"
for binary in "$lib" "$command"; do
  for soname in $(readelf -d "$binary" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'); do
    path=$(awk -v l="$soname" '$1 == l && !found { print $NF; found = 1 }' <<<"$cache")
    [ -n "$path" ] || fail "$soname ($binary) is not in ldconfig's cache"
    package=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1) || true
    case $package in "" | libc6 | libstdc++6 | libgcc-s1) continue ;; esac
    grep -qx "$package" <<<"$documented" || fail "$(basename "$binary") links $soname from $package, which docs/packaging.md's apt line does not name"
    echo "$(basename "$binary"): $soname from $package: documented"
  done
done

if grep -q '^// #cgo pkg-config: accel' "$root/bindings/go/internal/core/cgoflags.go"; then
  doc=$root/bindings/go/accel/doc.go
  grep -q 'PKG_CONFIG_PATH' "$doc" || fail "doc.go does not say PKG_CONFIG_PATH, though cgo finds libaccel with pkg-config"
  if grep -q 'CGO_LDFLAGS=' "$doc"; then fail "doc.go advises CGO_LDFLAGS=..., though cgo finds libaccel with pkg-config"; fi
fi
echo "docs match the files"
