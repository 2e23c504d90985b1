#!/usr/bin/env bash
# Full-scale SNOMED CT measurements: generate the synthetic International-shaped release, import it (time, peak
# memory, store size), serve it (open time, resident memory), and drive the native API with wrk (10 connections,
# rotating ids and prefixes) against the trivial /healthz handler on the same server.
#
# usage: bench/snomed/run.sh [CONCEPTS]      (default 370000; needs wrk: apt-get install wrk)
#        SKIP_IMPORT=1 reuses the store from an earlier run; PORT / MLLP_PORT choose the listeners.
set -euo pipefail
cd "$(dirname "$0")/../.."
CONCEPTS=${1:-370000}
WORK=${WORK:-/tmp/thoth-snomed-bench}
PORT=${PORT:-18080}
MLLP_PORT=${MLLP_PORT:-12575}
DURATION=${DURATION:-10s}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
command -v wrk >/dev/null || { echo "wrk missing: apt-get install wrk" >&2; exit 1; }

cargo build --release -p thoth
THOTH=$CARGO_TARGET_DIR/release/thoth
mkdir -p "$WORK"
RF2=$WORK/rf2-$CONCEPTS
if [ ! -d "$RF2" ]; then
  /usr/bin/time -f "generate: %e s, peak %M KiB" "$THOTH" dev gen-snomed --concepts "$CONCEPTS" --seed 1 --out "$RF2"
fi
DATA=$WORK/data-$CONCEPTS
if [ "${SKIP_IMPORT:-0}" = 1 ] && [ -d "$DATA/snomed" ]; then
  echo "== import skipped (SKIP_IMPORT=1, store in $DATA)"
else
  rm -rf "$DATA"
  echo "== import"
  /usr/bin/time -f "import: %e s wall, peak RSS %M KiB" "$THOTH" --data "$DATA" import snomed "$RF2" 2>&1 | grep -v "^building\|rows$" | tail -12
fi
du -sh "$DATA/snomed"/store-*

echo "== serve"
RUST_LOG=info "$THOTH" --data "$DATA" serve --offline --http 127.0.0.1:$PORT --mllp 127.0.0.1:$MLLP_PORT >"$WORK/serve.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done
grep -o "SNOMED CT store open.*" "$WORK/serve.log" || true
echo "RSS after open: $(ps -o rss= -p $PID) KiB"

# Rotating paths: active concept ids from the release, their parents for subsumption, prefixes of their terms.
CONCEPT_FILE=$(ls "$RF2"/Snapshot/Terminology/sct2_Concept_Snapshot_*.txt)
awk -F'\t' 'NR>1 && $3==1 {print $1}' "$CONCEPT_FILE" | awk 'NR%37==0 && ++n<=10000' >"$WORK/ids.txt"
REL_FILE=$(ls "$RF2"/Snapshot/Terminology/sct2_Relationship_Snapshot_*.txt)
awk -F'\t' 'NR>1 && $3==1 && $8==116680003 {print $5, $6}' "$REL_FILE" | awk 'NR%53==0 && ++n<=10000' >"$WORK/pairs.txt"
DESC_FILE=$(ls "$RF2"/Snapshot/Terminology/sct2_Description_Snapshot-*.txt)
awk -F'\t' 'NR>1 && $3==1 {split(tolower($8), w, " "); n=3+NR%4; if (length(w[1])>=n) print substr(w[1],1,n)}' "$DESC_FILE" \
  | awk 'NR%101==0 && ++n<=10000' >"$WORK/prefixes.txt"
sed 's|^|/v1/snomed/concepts/|' "$WORK/ids.txt" >"$WORK/paths-lookup.txt"
awk '{print "/v1/snomed/concepts/" $1 "/subsumed-by/" $2}' "$WORK/pairs.txt" >"$WORK/paths-subsumed.txt"
sed 's|^|/v1/snomed/search?maxHits=10\&s=|' "$WORK/prefixes.txt" >"$WORK/paths-search.txt"
echo "/healthz" >"$WORK/paths-healthz.txt"

run() {
  WRK_PATHS="$WORK/paths-$1.txt" wrk -t2 -c10 -d"$DURATION" -s bench/snomed/rotate.lua "http://127.0.0.1:$PORT" \
    | awk -v name="$1" '/Requests\/sec/ {print name, $2} /Latency / {print name "-latency", $2}'
}
# Warm the pages each route touches (the store is memory-mapped: first touches are page faults), then measure.
for r in lookup subsumed search; do
  WRK_PATHS="$WORK/paths-$r.txt" wrk -t2 -c10 -d3s -s bench/snomed/rotate.lua "http://127.0.0.1:$PORT" >/dev/null
done
RESULTS=$(for r in healthz lookup subsumed search; do run $r; done)
echo "$RESULTS"
echo "RSS after load: $(ps -o rss= -p $PID) KiB"
echo "$RESULTS" | awk '/^healthz / {h=$2} /^(lookup|subsumed|search) / {printf "%s / healthz = %.0f%%\n", $1, 100*$2/h}'
