#!/usr/bin/env bash
# A Go user's module outside the tree, as a Go user gets it: the binding's
# module served at a tagged version from a module proxy (GOPROXY=file://...,
# the layout the go command reads from proxy.golang.org: @v/list, .info, .mod,
# .zip) and fetched with `go get` (no `replace`), built with plain `go build`
# against libaccel installed into the staging prefix (found by pkg-config; no
# SWIG, no CMake, no CGO_* flags), then trained on 2 processes by the
# installed `accel launch`.
#   go_get.sh STAGE LIBDIR BINDIR REPO WORK_DIR GO GOCACHE VERSION
set -euo pipefail
stage=$1 libdir=$2 bindir=$3 repo=$4 work=$5 go=$6 gocache=$7 version=v$8
module=github.com/libaccel/libaccel/bindings/go
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work" && mkdir -p "$work/proxy/$module/@v" "$work/getter"
# The module zip: the files of bindings/go (git's view of them, as a tag would
# have), under the prefix MODULE@VERSION/, as cmd/go's module zips are laid out.
python3 - "$repo" "$module" "$version" "$work/proxy/$module/@v" <<'PY'
import json, os, subprocess, sys, zipfile
repo, module, version, out = sys.argv[1:]
files = subprocess.run(["git", "-C", repo, "ls-files", "-co", "--exclude-standard", "bindings/go"],
                       capture_output=True, text=True, check=True).stdout.split()
with zipfile.ZipFile(os.path.join(out, f"{version}.zip"), "w", zipfile.ZIP_DEFLATED) as archive:
    for path in sorted(files):
        if not os.path.isfile(os.path.join(repo, path)):
            continue  # deleted in the working tree
        archive.write(os.path.join(repo, path), f"{module}@{version}/" + path[len("bindings/go/"):])
with open(os.path.join(repo, "bindings/go/go.mod")) as src, open(os.path.join(out, f"{version}.mod"), "w") as dst:
    dst.write(src.read())
with open(os.path.join(out, f"{version}.info"), "w") as info:
    json.dump({"Version": version, "Time": "2026-01-01T00:00:00Z"}, info)
with open(os.path.join(out, "list"), "w") as listing:
    listing.write(version + "\n")
PY

cd "$work/getter"
cp "$repo/examples/go/train_fashion_mnist/main.go" main.go
unset CGO_CFLAGS CGO_CPPFLAGS CGO_CXXFLAGS CGO_LDFLAGS LD_LIBRARY_PATH GOFLAGS
# GOSUMDB off: the checksum database does not know a version served from a file.
export PKG_CONFIG_PATH=$stage/$libdir/pkgconfig GOPROXY=file://$work/proxy GOSUMDB=off GOTOOLCHAIN=local \
  GOCACHE=$gocache GOPATH=$work/gopath
"$go" mod init example.com/getter >/dev/null 2>&1
"$go" get "$module@latest" 2>&1 | tee "$work/get.log" || fail "go get $module@latest from the proxy failed"
grep -q "$module $version" go.mod || fail "go.mod does not require $module $version: $(cat go.mod)"
grep -q "^replace" go.mod && fail "go.mod has a replace"
"$go" build -o trainer . || fail "go build of the fetched module against $stage failed"
go_ldd=$(LD_LIBRARY_PATH=$stage/$libdir ldd trainer)
grep -F "libaccel.so.0 => $stage/" >/dev/null <<<"$go_ldd" || fail "the trainer does not load libaccel from $stage"

# A prefix outside the loader's path needs LD_LIBRARY_PATH at run time (a .deb's /usr does not).
LD_LIBRARY_PATH=$stage/$libdir OMP_NUM_THREADS=1 "$stage/$bindir/accel" launch --num_processes 2 --master_port 0 \
  ./trainer --epochs 1 --max-steps 20 | tee "$work/train.log"
grep -E 'epoch 1: loss [0-9.]+, test accuracy' "$work/train.log" >/dev/null || fail "no epoch line"
echo "ok: go get $module@latest resolved $version through $GOPROXY; the program trained on 2 processes"
