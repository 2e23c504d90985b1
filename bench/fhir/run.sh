#!/usr/bin/env bash
# FHIR formats: Thoth (JSON, XML, binary) vs HAPI FHIR 8.8.1 (JSON, XML; Maven Central, FhirContext.forR4())
# vs fhir.resources (PyPI), parse and serialize, in one run on one machine. Prints the tables of
# docs/PERFORMANCE.md ("FHIR formats"). Needs cargo, a JDK 17+ with Maven, python3 and ../shared.
set -euo pipefail
cd "$(dirname "$0")"
here=$PWD
root=$(cd ../.. && pwd)
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
results=$work/results.tsv

echo "== inputs and Thoth ($work)" >&2
(cd "$root" && cargo run --quiet --release -p fhir --example compare -- --write-inputs "$work/inputs") > "$results"

echo "== HAPI FHIR 8.8.1" >&2
(cd hapi && mvn -q -B dependency:build-classpath -Dmdep.outputFile="$work/hapi-cp.txt" >&2)
mkdir -p "$work/classes"
javac -cp "$(cat "$work/hapi-cp.txt")" -d "$work/classes" hapi/src/main/java/HapiBench.java
java -Xmx2g -cp "$work/classes:$(cat "$work/hapi-cp.txt")" HapiBench "$work/inputs" >> "$results"

echo "== fhir.resources" >&2
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "fhir.resources[xml]==8.3.0"
"$work/venv/bin/python" fhir_resources_bench.py "$work/inputs" >> "$results"

python3 "$here/summarize.py" "$results"
