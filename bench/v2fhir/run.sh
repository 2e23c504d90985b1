#!/usr/bin/env bash
# HL7 v2 to FHIR R4, side by side in one run on this machine: Thoth (crates/v2fhir, criterion bench) against
# LinuxForHealth's hl7v2-fhir-converter (Maven Central, in process, after JIT warm-up). Both parse and convert the
# same two messages of bench/hl7v2/messages (ADT^A01 316 B, ORU^R01 814 B) to a FHIR Bundle as JSON bytes, and
# both check the Bundle holds the patient before timing. Prints µs per message and the ratio (Markdown) and leaves
# the raw engine/message/op/ns lines in $OUT (default: results.tsv here).
#
#   bench/v2fhir/run.sh                       # both engines
#   SKIP=lfh bench/v2fhir/run.sh              # leave one out (names: rust lfh)
#   LFH_WARM_MS=10000 LFH_BUDGET_MS=5000 ...  # LinuxForHealth's warm-up and timed budget per message
#   PROFILE=bench bench/v2fhir/run.sh         # Thoth built as `cargo bench` builds it by default (no LTO); the
#                                             # default is `dist`, the profile of the shipped binary
#
# Both sides measure wall time (criterion does; the Java side follows) and report a median, so on a shared machine
# both include time lost to other processes: compare within one run, not across runs.
set -euo pipefail
cd "$(dirname "$0")"
HERE=$(pwd)
ROOT=$(cd ../.. && pwd)
MESSAGES=$ROOT/bench/hl7v2/messages
OUT=${OUT:-$HERE/results.tsv}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
: > "$OUT"
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }

if ! skip rust; then
    echo "== Thoth v2fhir (cargo bench, criterion)" >&2
    # The shipped binary's profile (`dist`: release with whole-program LTO), unless PROFILE says another.
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET cargo bench --quiet --profile "${PROFILE:-dist}" -p v2fhir --bench v2fhir >&2)
    # Criterion's median of its samples, in ns per iteration (the Java side reports a median too).
    for m in adt_a01_316B oru_r01_814B; do
        est=$TARGET/criterion/$m/parse+convert/new/estimates.json
        python3 -c 'import json,sys; print("thoth\t%s\tparse+convert\t%.1f" % (sys.argv[2], json.load(open(sys.argv[1]))["median"]["point_estimate"]))' "$est" "$m"
    done >> "$OUT"
fi
if ! skip lfh; then
    echo "== LinuxForHealth hl7v2-fhir-converter v1.1.0 (Maven Central)" >&2
    (cd java && mvn -q -B -Dstyle.color=never -DskipTests package >&2)
    # The converter's FHIR registry logs INFO lines through java.util.logging to stderr: kept out of the way, and
    # shown only when the run fails.
    log=java/target/lfh-stderr.log
    if ! java -cp "java/target/classes:java/target/lib/*" thoth.LfhBench "$MESSAGES" "${LFH_WARM_MS:-10000}" \
        "${LFH_BUDGET_MS:-5000}" >> "$OUT" 2> "$log"; then
        cat "$log" >&2
        exit 1
    fi
fi

python3 - "$OUT" <<'PY'
import sys
from collections import defaultdict
ns = defaultdict(dict)
for line in open(sys.argv[1]):
    if line.strip():
        engine, msg, op, t = line.rstrip("\n").split("\t")
        ns[(msg, op)][engine] = float(t)
print("| message | operation | Thoth | LinuxForHealth v1.1.0 | Thoth is × faster |")
print("|---|---|---|---|---|")
for (msg, op), by in ns.items():
    thoth, lfh = by.get("thoth"), by.get("linuxforhealth")
    cell = lambda t: "—" if t is None else f"{t / 1000:,.1f} µs"
    ratio = f"{lfh / thoth:,.0f}×" if thoth and lfh else "—"
    print(f"| {msg} | {op} | {cell(thoth)} | {cell(lfh)} | {ratio} |")
PY
