#!/usr/bin/env bash
# Python bindings vs python-hl7, hl7apy, json.loads + fhir.resources, in one run (docs/PERFORMANCE.md, "Python
# bindings"). Builds the package as a user does (`pip install ./python`: a release build) in a fresh virtual
# environment under bench/.cache, imports the terminology suite's SNOMED CT subset with a release `thoth`, and
# runs bench.py (which also iterates a 1 GB file in /tmp: BIG_GB=0.1 for a quick run). Needs cargo, python3 and
# ../shared.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
work=$root/bench/.cache/python
rm -rf "$work" && mkdir -p "$work"
cargo build --quiet --release -p thoth
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check \
    "hl7==0.4.5" "hl7apy==1.3.5" "fhir.resources==8.3.0" "$root/python"
"$root/target/release/thoth" --data "$work/data" import snomed --unpublished \
    ../shared/tx-ecosystem/tx-source/snomed > /dev/null
"$work/venv/bin/python" bench/python/bench.py "$work/data" --big-gb "${BIG_GB:-1.0}"
