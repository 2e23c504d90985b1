#!/usr/bin/env bash
# HL7 v2 parsing, side by side in one run on this machine: Thoth (hl7v2), the hl7-parser and rust-hl7 crates
# (crates.io), HAPI v2 2.6 (Maven Central), python-hl7 and hl7apy (PyPI), and a naive memchr delimiter scan
# (the floor). Every engine reads the same four messages in messages/ and must read the same 10 values before it
# is timed. Message structures too: Thoth's parse + group tree, parse + validation and group-path reads against
# HAPI (its parse builds its structure; parse with its default validation; Terser.get) and hl7apy (strict parse +
# validate(), find_groups), every engine reading the same 10 values through group paths. Prints ratio tables
# (Markdown) and leaves the raw numbers in $OUT (default: results.tsv here).
#
#   bench/hl7v2/run.sh            # all engines
#   SKIP="hapi hl7apy" bench/hl7v2/run.sh   # leave some out (names: rust hapi python)
set -euo pipefail
cd "$(dirname "$0")"
HERE=$(pwd)
OUT=${OUT:-$HERE/results.tsv}
: > "$OUT"
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }

if ! skip rust; then
    echo "== Rust engines (release build)" >&2
    (cd rust && CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HERE/../../target-bench-hl7v2} cargo run --release --quiet -- "$HERE/messages") >> "$OUT"
fi
if ! skip hapi; then
    echo "== HAPI v2 2.6 (Maven Central)" >&2
    (cd java && mvn -q -DskipTests package >&2 && java -cp "target/classes:target/lib/*" thoth.HapiBench "$HERE/messages") >> "$OUT"
fi
if ! skip python; then
    echo "== python-hl7 and hl7apy (PyPI)" >&2
    python3 -m pip install --quiet --disable-pip-version-check -r python/requirements.txt >&2
    python3 python/bench.py "$HERE/messages" "${PY_BUDGET:-1.0}" >> "$OUT"
fi
python3 tabulate.py "$OUT" messages
