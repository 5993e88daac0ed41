#!/usr/bin/env bash
# A Go user's module outside the tree: its own go.mod requiring the binding's
# module through a `replace` to this checkout, built with plain `go build`
# against libaccel installed into the staging prefix (found by pkg-config; no
# SWIG, no CMake, no CGO_* flags), then trained on 2 processes by the
# installed `accel launch`.
#   go_consumer.sh STAGE LIBDIR BINDIR REPO WORK_DIR GO GOCACHE
set -euo pipefail
stage=$1 libdir=$2 bindir=$3 repo=$4 work=$5 go=$6 gocache=$7
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work" && mkdir -p "$work/trainer"
cp "$repo/examples/go/train_fashion_mnist/main.go" "$work/trainer/main.go"
cat >"$work/trainer/go.mod" <<MOD
module example.com/trainer

go 1.19

require github.com/libaccel/libaccel/bindings/go v0.0.0

replace github.com/libaccel/libaccel/bindings/go => $repo/bindings/go
MOD
cd "$work/trainer"
unset CGO_CFLAGS CGO_CPPFLAGS CGO_CXXFLAGS CGO_LDFLAGS LD_LIBRARY_PATH
export PKG_CONFIG_PATH=$stage/$libdir/pkgconfig GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local \
  GOCACHE=$gocache GOPATH=$work/gopath
"$go" build -o "$work/trainer/trainer" . || fail "go build against $stage failed"
go_ldd=$(LD_LIBRARY_PATH=$stage/$libdir ldd "$work/trainer/trainer")
grep -F "libaccel.so.0 => $stage/" >/dev/null <<<"$go_ldd" || fail "the trainer does not load libaccel from $stage"

# A prefix outside the loader's path needs LD_LIBRARY_PATH at run time (a .deb's /usr does not).
LD_LIBRARY_PATH=$stage/$libdir OMP_NUM_THREADS=1 "$stage/$bindir/accel" launch --num_processes 2 --master_port 0 \
  "$work/trainer/trainer" --epochs 1 --max-steps 20 | tee "$work/train.log"
grep -E 'epoch 1: loss [0-9.]+, test accuracy' "$work/train.log" >/dev/null || fail "no epoch line"
