#!/usr/bin/env bash
# Downloads the Java test tools from Maven Central into .deps/java (git-ignored):
# the JUnit 5 console launcher, a self-contained jar that runs the JUnit suite,
# and the Maven plugins of the Maven artifact's build and test (.deps/m2).
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

if ! { [ -f "$dir/$name" ] && echo "$sha1  $dir/$name" | sha1sum -c --status; }; then
  mkdir -p "$dir"
  curl -fsSL --retry 3 -o "$dir/$name.part" "$url"
  echo "$sha1  $dir/$name.part" | sha1sum -c --status || { echo "java-deps: checksum mismatch for $url" >&2; exit 1; }
  mv "$dir/$name.part" "$dir/$name"
fi

# The Maven plugins (packaging/maven/plugins-pom.xml) in a local repository, so that
# `cmake --build build --target java_maven_install` and the Maven consumer test run
# offline. ACCEL_MAVEN_REPO moves it (the CMake cache variable of the same name must
# then name the same folder).
if command -v mvn >/dev/null; then
  repo=$(realpath -m "${ACCEL_MAVEN_REPO:-.deps/m2}")
  stamp=$repo/.libaccel-plugins-$(sha1sum packaging/maven/plugins-pom.xml | cut -c1-12)
  if [ ! -f "$stamp" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    cp packaging/maven/plugins-pom.xml "$work/pom.xml"
    (cd "$work" && mvn -B -q -Dmaven.repo.local="$repo" compile dependency:build-classpath -Dmdep.outputFile=cp.txt \
      org.apache.maven.plugins:maven-install-plugin:3.1.4:install-file -Dfile=pom.xml -DpomFile=pom.xml)
    touch "$stamp"
  fi
else
  echo "java-deps: no mvn (apt-get install maven), skipping the Maven plugins"
fi
