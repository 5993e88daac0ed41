#!/usr/bin/env bash
# Downloads the Java test tools from Maven Central into .deps/java (git-ignored):
# the JUnit 5 console launcher, a self-contained jar that runs the JUnit suite.
# Idempotent and checksum-verified; prints nothing when up to date. Nothing is
# downloaded at test time. Skipped (with a note) when no JDK is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v javac >/dev/null || { echo "java-deps: no javac, skipping the Java test tools"; exit 0; }

version=1.10.2
sha1=552303cce67dc3485ded393d744c0f6b5cae355b
name=junit-platform-console-standalone-$version.jar
dir=.deps/java
url=https://repo1.maven.org/maven2/org/junit/platform/junit-platform-console-standalone/$version/$name

if [ -f "$dir/$name" ] && echo "$sha1  $dir/$name" | sha1sum -c --status; then
  exit 0
fi
mkdir -p "$dir"
curl -fsSL --retry 3 -o "$dir/$name.part" "$url"
echo "$sha1  $dir/$name.part" | sha1sum -c --status || { echo "java-deps: checksum mismatch for $url" >&2; exit 1; }
mv "$dir/$name.part" "$dir/$name"
