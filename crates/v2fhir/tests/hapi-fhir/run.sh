#!/usr/bin/env bash
# HAPI FHIR 8.8.1 (R4) harness: reads Bundles as NDJSON on stdin, prints one verdict line per Bundle ("ok", or
# "error<TAB>..."). Usage: run.sh < bundles.ndjson (the strict parser), run.sh validate < bundles.ndjson (the R4
# instance validator; each error "<location> :: <message>").
# Builds once (Maven, JDK 17); rebuilds only when pom.xml or a source is newer than the jar or the dependency
# classpath file. Build output goes to stderr; stdout carries only the verdicts.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
jar="$here/target/hapi-fhir-strict-0.jar"
cp_file="$here/target/classpath.txt"

# The tests run this twice at once (the strict parser and the validator): one builds while the other waits.
mkdir -p "$here/target"
exec 9>"$here/target/.build-lock"
flock 9
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
flock -u 9
exec 9>&-

exec java -cp "$jar:$(cat "$cp_file")" Main "$@"
