#!/usr/bin/env bash
# Every C and C++ file of the tree is formatted as .clang-format says, and
# every Go file as gofmt says (where gofmt is installed):
#   format_check.sh SOURCE_DIR
# Skipped (exit 77) outside a git checkout, or without clang-format 14 (Debian
# bookworm's, which formatted the tree; other versions break lines differently).
# The generated Go wrapper (bindings/go/internal/core) is SWIG's, not ours.
set -euo pipefail
root=$1
command -v clang-format >/dev/null || { echo "skipped: clang-format not installed (apt install clang-format)"; exit 77; }
version=$(clang-format --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
[ "$version" = 14 ] || { echo "skipped: clang-format $version, the tree is formatted with 14"; exit 77; }
git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "skipped: not a git checkout"; exit 77; }
mapfile -t files < <(git -C "$root" ls-files '*.c' '*.h' '*.cpp' '*.hpp' | grep -v '^bindings/go/internal/core/')
# One clang-format for all files (a process per file took 17 s); it names each
# file that differs in its "error: code should be clang-formatted" lines.
cd "$root"
if ! report=$(clang-format --style=file --dry-run -Werror "${files[@]}" 2>&1); then
  echo "FAIL: not formatted as .clang-format says (clang-format -i FILE):"
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/  \1/p' <<<"$report" | sort -u
  exit 1
fi
echo "ok: ${#files[@]} files formatted as .clang-format says"
if command -v gofmt >/dev/null; then
  mapfile -t go_files < <(git ls-files '*.go' | grep -v '^bindings/go/internal/core/')
  unformatted=$(gofmt -l "${go_files[@]}")
  if [ -n "$unformatted" ]; then
    echo "FAIL: not formatted as gofmt says (gofmt -w FILE):"
    sed 's/^/  /' <<<"$unformatted"
    exit 1
  fi
  echo "ok: ${#go_files[@]} Go files formatted as gofmt says"
fi
