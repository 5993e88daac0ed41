#!/usr/bin/env bash
# Installs the Maven artifact org.libaccel:libaccel (jar, sources, javadoc, pom) into a
# local repository with Maven's install plugin, offline. The java_maven_install target
# and tests/packaging/maven_consumer.sh run it; each CLASSIFIER=FILE after the javadoc
# jar is installed beside them as a classified jar (the linux-x86_64-torch jar of
# packaging/maven/torch-natives-jar.sh).
#   install.sh REPO POM JAR SOURCES_JAR JAVADOC_JAR [CLASSIFIER=FILE ...]
set -euo pipefail
repo=$1 pom=$2 jar=$3 sources=$4 javadoc=$5
shift 5
for extra in "$@"; do
  case $extra in
    ?*=?*) ;;
    *) echo "install.sh: '$extra' is not CLASSIFIER=FILE" >&2; exit 2 ;;
  esac
done
# Run outside any project folder, so that no pom.xml there is read.
here=$PWD
cd "$(mktemp -d)" && trap 'rm -rf "$PWD"' EXIT
install_file() {
  mvn -o -B -q -Dmaven.repo.local="$repo" org.apache.maven.plugins:maven-install-plugin:3.1.4:install-file \
    -DpomFile="$pom" "$@" ||
    { echo "install.sh: mvn -o failed; scripts/java-deps.sh (with ACCEL_MAVEN_REPO=$repo) fetches its plugins" >&2; exit 1; }
}
install_file -Dfile="$jar" -Dsources="$sources" -Djavadoc="$javadoc"
classifiers=()
for extra in "$@"; do
  file=${extra#*=}
  case $file in /*) ;; *) file=$here/$file ;; esac
  install_file -Dfile="$file" -Dclassifier="${extra%%=*}"
  classifiers+=("${extra%%=*}")
done
echo "installed org.libaccel:libaccel${classifiers[*]:+ (and ${classifiers[*]})} into $repo"
