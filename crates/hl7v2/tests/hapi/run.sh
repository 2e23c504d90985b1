#!/usr/bin/env bash
# HAPI HL7 v2 2.6.0 differential harness: prints where HAPI places each segment of each message
# in its group tree (format: README.md). Usage: run.sh FILE|DIR...
# Builds once (Maven, JDK 17); rebuilds only when pom.xml or a source is newer than the jar or
# the dependency classpath file. Build output goes to stderr; stdout carries only the report.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
jar="$here/target/hapi-tree-0.jar"
cp_file="$here/target/classpath.txt"

stale=0
for out in "$jar" "$cp_file"; do
  [[ -f "$out" ]] || { stale=1; break; }
  if [[ -n "$(find "$here/pom.xml" "$here/src" -newer "$out" -print -quit)" ]]; then stale=1; break; fi
done
if (( stale )); then
  rm -f "$jar" "$cp_file"
  # (Maven -q still emits bare ANSI resets; strip them.)
  (cd "$here" && mvn -q -B -Dstyle.color=never package \
     && mvn -q -B -Dstyle.color=never dependency:build-classpath -Dmdep.outputFile="$cp_file") 2>&1 \
    | sed -e 's/\x1b\[[0-9;]*m//g' | grep -v '^$' >&2 || true
  [[ -f "$jar" && -f "$cp_file" ]] || { echo "run.sh: build failed" >&2; exit 1; }
fi

exec java -cp "$jar:$(cat "$cp_file")" Main "$@"
