#!/usr/bin/env bash
# Installs the Maven artifact org.libaccel:libaccel (jar, sources, javadoc, pom) into a
# local repository with Maven's install plugin, offline. The java_maven_install target
# and tests/packaging/maven_consumer.sh run it.
#   install.sh REPO POM JAR SOURCES_JAR JAVADOC_JAR
set -euo pipefail
repo=$1 pom=$2 jar=$3 sources=$4 javadoc=$5
# Run outside any project folder, so that no pom.xml there is read.
cd "$(mktemp -d)" && trap 'rm -rf "$PWD"' EXIT
mvn -o -B -q -Dmaven.repo.local="$repo" org.apache.maven.plugins:maven-install-plugin:3.1.4:install-file \
  -Dfile="$jar" -DpomFile="$pom" -Dsources="$sources" -Djavadoc="$javadoc" ||
  { echo "install.sh: mvn -o failed; scripts/java-deps.sh (with ACCEL_MAVEN_REPO=$repo) fetches its plugins" >&2; exit 1; }
echo "installed org.libaccel:libaccel into $repo"
