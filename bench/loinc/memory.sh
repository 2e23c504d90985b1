#!/usr/bin/env bash
# Memory and time of `thoth import loinc` and of `thoth serve` holding the result, on a synthetic LOINC release
# (gen_release.py). usage: bench/loinc/memory.sh [TERMS]   (default 105000, the size of a full release)
# env: THOTH (default target/debug/thoth), WORK (default a temp dir, removed at the end).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
THOTH="${THOTH:-$ROOT/target/debug/thoth}"
TERMS="${1:-105000}"
WORK="${WORK:-$(mktemp -d)}"
trap 'kill $SPID 2>/dev/null || true; rm -rf "$WORK"' EXIT
SPID=
python3 "$ROOT/bench/loinc/gen_release.py" "$WORK/Loinc_2.82" "$TERMS"
/usr/bin/time -v "$THOTH" --data "$WORK/data" import loinc "$WORK/Loinc_2.82" 2>"$WORK/import.time"
grep -E "Maximum resident|Elapsed" "$WORK/import.time"
ls -l "$WORK/data/terminology/loinc.store"
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
HTTP=$(port); MLLP=$(port)
START=$(date +%s.%N)
"$THOTH" --data "$WORK/data" serve --offline --http 127.0.0.1:$HTTP --mllp 127.0.0.1:$MLLP 2>"$WORK/serve.log" &
SPID=$!
until curl -sf "http://127.0.0.1:$HTTP/readyz" >/dev/null; do sleep 0.5; done
echo "serve ready after $(echo "$(date +%s.%N) - $START" | bc) s"
grep -E "VmHWM|VmRSS" /proc/$SPID/status
# A few LOINC answers from the store (lookup, validation, membership of http://loinc.org/vs), then the memory again.
CODE=$(python3 -c 'import csv,sys; r=csv.reader(open(sys.argv[1])); next(r); print(next(r)[0])' "$WORK/Loinc_2.82/LoincTable/Loinc.csv")
F="http://127.0.0.1:$HTTP/fhir"
for q in "CodeSystem/\$lookup?system=http://loinc.org&code=$CODE&property=*" \
         "CodeSystem/\$validate-code?url=http://loinc.org&code=$CODE" \
         "ValueSet/\$validate-code?url=http://loinc.org/vs&system=http://loinc.org&code=$CODE"; do
    /usr/bin/time -f "%e s  $q" curl -sf -o /dev/null "$F/$q"
done
grep -E "VmHWM|VmRSS" /proc/$SPID/status
