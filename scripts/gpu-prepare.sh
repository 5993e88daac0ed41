#!/usr/bin/env bash
# Prepares, on this (Debian) machine, what a GPU session's device machine lacks,
# so that scripts/gpu-check.sh can run there in one short call:
#   .deps/usr   the system libraries of the CPU build (protobuf, yaml-cpp,
#               nlohmann-json, CLI11, GoogleTest, Gloo's headers, xxhash, curl,
#               sqlite
#               and their runtime libraries), unpacked from Debian's packages
#   .lm/model.pt the LM bench's TorchScript GPT-2, exported with the test venv
#               (torch 1.13, transformers 4.49; a CPU trace runs on a GPU)
# Both are ignored by git; name them in the device call's carry:
# [".deps/usr", ".lm"] (not all of .deps, which also holds the Java build's
# jars); about 60 MB with the tree, under the 64 MB a call carries.
set -euo pipefail
cd "$(dirname "$0")/.."
packages="libcurl4-openssl-dev libcurl4 libbrotli1 libgssapi-krb5-2 libk5crypto3 libkrb5-3 libkrb5support0
  libkeyutils1 libcom-err2 libidn2-0 libunistring2 libldap-2.5-0 libsasl2-2 libnghttp2-14 libpsl5 librtmp1
  libgnutls30 libhogweed6 libnettle8 libgmp10 libp11-kit0 libtasn1-6 libffi8 libssh2-1 libssl3 libzstd1 zlib1g
  zlib1g-dev libprotobuf-dev libprotobuf32 libprotobuf-lite32 protobuf-compiler libprotoc32 libyaml-cpp-dev
  libyaml-cpp0.7 libsqlite3-dev libsqlite3-0 nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libgloo-dev libxxhash-dev libxxhash0"
debs=$(mktemp -d)
trap 'rm -rf "$debs"' EXIT
# shellcheck disable=SC2086 # one word per package
(cd "$debs" && apt-get download $packages >/dev/null)
rm -rf .deps/usr .deps/lib .deps/etc
mkdir -p .deps
for deb in "$debs"/*.deb; do dpkg -x "$deb" .deps; done
lib=.deps/usr/lib/x86_64-linux-gnu
mv .deps/lib/x86_64-linux-gnu/* "$lib"/ && rm -rf .deps/lib .deps/etc
rm -rf .deps/usr/share/doc .deps/usr/share/man .deps/usr/share/lintian
rm -f "$lib"/libsqlite3.a "$lib"/libprotobuf.a "$lib"/libprotobuf-lite.a "$lib"/libprotoc.a "$lib"/libcurl.a "$lib"/libz.a "$lib"/libxxhash.a
ln -sf libz.so.1.2.13 "$lib"/libz.so  # the -dev package's link is absolute
scripts/python-env.sh
mkdir -p .lm
HF_HUB_OFFLINE=1 .venv/bin/python bench/lm/lm_model.py .lm
du -sh .deps/usr .lm
