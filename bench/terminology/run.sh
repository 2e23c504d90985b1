#!/usr/bin/env bash
# FHIR terminology operations over HTTP, in the manner of Hades's published benchmark: wrk with 2 threads and 10
# keep-alive connections, a warm-up at the same shape, then a measured run per operation; lookups, subsumption and
# validation rotate through pools of codes, text search through 3-6 letter prefixes, search by canonical URL
# through the packages' value set URLs; all eleven of Hades's rows (package value sets standing in for VSAC's
# extensional one) and four of ours. The floor is the trivial
# /healthz handler of the same server (same middleware), so each ratio is the share of the HTTP floor an
# operation keeps.
#
# Content: the full-scale synthetic SNOMED CT release (bench/snomed's generator, 370,000 active concepts), the
# LOINC subset of the conformance tests, ICD-10-CM (CDC tabular XML, April 2026) and the two FHIR packages in
# ../shared/data/fhir/packages.
#
# usage: bench/terminology/run.sh [CONCEPTS]   (default 370000; needs wrk: apt-get install wrk)
#        SKIP_IMPORT=1 reuses the data directory of an earlier run; DURATION (default 15s), WARMUP (5s), PORT;
#        OPS="lookup-snomed ..." times only those operations (each between two runs of the floor).
#        PIN=1 gives each side a core of its own: the server on CPU 0 with one HTTP thread, wrk on CPU 1 with one
#        thread (10 connections still). On a 2-core machine the default shape runs wrk's two threads and the
#        server's two on the same two cores; when the server keeps up with wrk, every request then waits for a
#        core in turn and the p99 is the scheduler's (the floor's own is 4-7 ms). Pinned, the latencies are the
#        server's, and both the floor and the operations are bound by the server's one core.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SHARED=$ROOT/../shared
CONCEPTS=${1:-370000}
WORK=${WORK:-/tmp/thoth-terminology-bench}
PORT=${PORT:-18090}
MLLP_PORT=${MLLP_PORT:-12590}
DURATION=${DURATION:-15s}
WARMUP=${WARMUP:-5s}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
command -v wrk >/dev/null || { echo "wrk missing: apt-get install wrk" >&2; exit 1; }
[ -d "$SHARED/data" ] || { echo "missing $SHARED (../shared beside the checkout)" >&2; exit 1; }

[ -n "${NO_BUILD:-}" ] || cargo build --release -p thoth >&2
THOTH=$CARGO_TARGET_DIR/release/thoth
mkdir -p "$WORK"
RF2=$WORK/rf2-$CONCEPTS
[ -d "$RF2" ] || "$THOTH" dev gen-snomed --concepts "$CONCEPTS" --seed 1 --out "$RF2" >&2
DATA=$WORK/data-$CONCEPTS
if [ "${SKIP_IMPORT:-0}" = 1 ] && [ -d "$DATA/snomed" ]; then
  echo "# import skipped (SKIP_IMPORT=1, data in $DATA)"
else
  rm -rf "$DATA"
  "$THOTH" --data "$DATA" import snomed "$RF2" >&2
  "$THOTH" --data "$DATA" import loinc "$SHARED/tx-ecosystem/tx-source/loinc" >&2
  "$THOTH" --data "$DATA" import icd10cm "$SHARED/data/icd10cm/icd10c-tabular-April-1-2026.xml.gz" >&2
  for p in "$SHARED"/data/fhir/packages/*.tgz; do "$THOTH" --data "$DATA" import fhir-package "$p" >&2; done
fi

SERVER_ON=() WRK_ON=() WRK_THREADS=2 SERVE_ARGS=()
if [ -n "${PIN:-}" ]; then
  SERVER_ON=(taskset -c 0) WRK_ON=(taskset -c 1) WRK_THREADS=1 SERVE_ARGS=(--http-threads 1)
fi
"${SERVER_ON[@]}" "$THOTH" --data "$DATA" serve --offline --http 127.0.0.1:$PORT --mllp 127.0.0.1:$MLLP_PORT "${SERVE_ARGS[@]}" >"$WORK/serve.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null || { echo "server did not start; see $WORK/serve.log" >&2; exit 1; }

# Pools, taken from the content itself (every 37th/53rd/101st row, up to 2,000 entries like Hades's pools).
SCT=http://snomed.info/sct
CONCEPT_FILE=$(ls "$RF2"/Snapshot/Terminology/sct2_Concept_Snapshot_*.txt)
REL_FILE=$(ls "$RF2"/Snapshot/Terminology/sct2_Relationship_Snapshot_*.txt)
DESC_FILE=$(ls "$RF2"/Snapshot/Terminology/sct2_Description_Snapshot-*.txt)
MAP_FILE=$(ls "$RF2"/Snapshot/Refset/Map/der2_iisssccRefset_ExtendedMapSnapshot_*.txt)
awk -F'\t' 'NR>1 && $3==1 {print $1}' "$CONCEPT_FILE" | awk 'NR%37==0 && ++n<=2000' >"$WORK/sct-codes.txt"
awk -F'\t' 'NR>1 && $3==1 && $8==116680003 {print $5, $6}' "$REL_FILE" | awk 'NR%53==0 && ++n<=2000' >"$WORK/sct-pairs.txt"
awk -F'\t' 'NR>1 && $3==1 {split(tolower($8), w, " "); n=3+NR%4; if (length(w[1])>=n && w[1] ~ /^[a-z]+$/) print substr(w[1],1,n)}' "$DESC_FILE" \
  | awk 'NR%101==0 && ++n<=2000' >"$WORK/prefixes.txt"
awk -F'\t' 'NR>1 && $3==1 {print $6}' "$MAP_FILE" | awk 'NR%7==0 && ++n<=2000' >"$WORK/sct-mapped.txt"
tail -n +2 "$SHARED/tx-ecosystem/tx-source/loinc/LoincTable/Loinc.csv" | cut -d, -f1 | tr -d '"' | head -2000 >"$WORK/loinc-codes.txt"
# The CDC code list writes codes without the dot (A000); FHIR uses the dotted form (A00.0). Ranges are chapters.
tr -d '\r' <"$SHARED/data/icd10cm/code-list-April-2026.txt" | grep -E '^[A-Z][0-9]' | grep -v -- - \
  | awk 'NR%29==0 && ++n<=2000 {print (length($0)>3 ? substr($0,1,3) "." substr($0,4) : $0)}' >"$WORK/icd-codes.txt"

FINDING=404684003
FINDING_SITE=363698007
# The body structure with the most descendants in the synthetic release (seed 1), as in the ECL bench.
SITE=${SITE:-10177576004}
ECL_REFINEMENT="<< $FINDING : $FINDING_SITE = << $SITE"
urlenc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
ECL_VS=$(urlenc "$SCT?fhir_vs=ecl/$ECL_REFINEMENT")
ISA_VS=$(urlenc "$SCT?fhir_vs=isa/$FINDING")
CM=$(urlenc "$SCT?fhir_cm=447562003")

P=$WORK/paths
mkdir -p "$P"
echo "/healthz" >"$P/floor.txt"
sed "s|^|/fhir/CodeSystem/\$lookup?system=$SCT\&code=|" "$WORK/sct-codes.txt" >"$P/lookup-snomed.txt"
sed "s|^|/fhir/CodeSystem/\$lookup?system=http://loinc.org\&code=|" "$WORK/loinc-codes.txt" >"$P/lookup-loinc.txt"
sed "s|^|/fhir/CodeSystem/\$lookup?system=http://hl7.org/fhir/sid/icd-10-cm\&code=|" "$WORK/icd-codes.txt" >"$P/lookup-icd10cm.txt"
awk -v s="$SCT" '{print "/fhir/CodeSystem/$subsumes?system=" s "&codeA=" $1 "&codeB=" $2}' "$WORK/sct-pairs.txt" >"$P/subsumes-snomed.txt"
sed "s|^|/fhir/CodeSystem/\$validate-code?url=$SCT\&code=|" "$WORK/sct-codes.txt" >"$P/validate-cs-snomed.txt"
sed "s|^|/fhir/ValueSet/\$validate-code?url=$ISA_VS\&system=$SCT\&code=|" "$WORK/sct-codes.txt" >"$P/validate-vs-snomed.txt"
sed "s|^|/fhir/ValueSet/\$validate-code?url=http://loinc.org/vs\&system=http://loinc.org\&code=|" "$WORK/loinc-codes.txt" >"$P/validate-vs-loinc.txt"
sed "s|^|/fhir/ValueSet/\$expand?url=$(urlenc "$SCT?fhir_vs")\&count=10\&filter=|" "$WORK/prefixes.txt" >"$P/expand-search.txt"
echo "/fhir/ValueSet/\$expand?url=$ECL_VS&count=10" >"$P/expand-ecl.txt"
echo "/fhir/ValueSet/\$expand?url=$ISA_VS&count=10" >"$P/expand-isa.txt"
echo "/fhir/ValueSet/\$expand?url=http://hl7.org/fhir/ValueSet/observation-status" >"$P/expand-package.txt"
# Hades's extensional (VSAC) row: a value set that lists a few hundred codes, expanded whole (R4's ISO 3166-1
# alpha-2 value set, 249 codes).
echo "/fhir/ValueSet/\$expand?url=http://hl7.org/fhir/ValueSet/iso3166-1-2" >"$P/expand-extensional.txt"
# FHIR search by canonical URL (every value set of the packages, up to 2,000) and the catalogue browse.
python3 - "$PORT" >"$P/search-vs-url.txt" <<'PY'
import json, sys, urllib.parse, urllib.request
urls = []
for offset in (0, 1000):
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/fhir/ValueSet?_elements=url&_count=1000&_offset={offset}") as r:
        bundle = json.load(r)
    urls += [e["resource"]["url"] for e in bundle.get("entry", []) if "url" in e.get("resource", {})]
for u in sorted(set(urls))[:2000]:
    print("/fhir/ValueSet?url=" + urllib.parse.quote(u, safe=""))
PY
echo "/fhir/ValueSet?_count=10&_summary=true" >"$P/browse-vs.txt"
sed "s|^|/fhir/ConceptMap/\$translate?url=$CM\&system=$SCT\&code=|" "$WORK/sct-mapped.txt" >"$P/translate-icd10.txt"

# Hades's eleven rows (lookup-snomed, lookup-loinc, expand-search, search-vs-url, browse-vs, subsumes-snomed,
# validate-vs-snomed, expand-isa, expand-ecl, expand-extensional, translate-icd10) and four of ours.
OPS=${OPS:-"lookup-snomed lookup-loinc lookup-icd10cm expand-search search-vs-url browse-vs subsumes-snomed validate-cs-snomed validate-vs-snomed validate-vs-loinc expand-isa expand-ecl expand-package expand-extensional translate-icd10"}

# Every operation must answer 200 on its first pool entry before anything is timed.
for op in $OPS; do
  path=$(head -1 "$P/$op.txt")
  code=$(curl -s -o "$WORK/check-$op.json" -w '%{http_code}' "http://127.0.0.1:$PORT$path")
  [ "$code" = 200 ] || { echo "$op answered $code for $path (see $WORK/check-$op.json)" >&2; exit 1; }
done

run() { # op duration -> "rps p50 p99" (latencies in ms)
  WRK_PATHS="$P/$1.txt" "${WRK_ON[@]}" wrk -t$WRK_THREADS -c10 -d"$2" --latency -s bench/snomed/rotate.lua "http://127.0.0.1:$PORT" | awk '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    /^ +50%/ {p50 = ms($2)} /^ +99%/ {p99 = ms($2)} /Requests\/sec/ {rps = $2}
    /Non-2xx/ {bad = $4} END {printf "%s %.3f %.3f %s\n", rps, p50, p99, bad + 0}'
}

echo "# wrk -t$WRK_THREADS -c10${PIN:+, pinned: server on CPU 0 (one HTTP thread), wrk on CPU 1}"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# RSS after start: $(ps -o rss= -p $PID) KiB"
# The floor moves by 10-20% from one run to the next on a shared machine, so each operation is measured between
# two floor runs and compared with their mean (each floor run serves its two neighbours).
floor_run() { run floor "$WARMUP" >/dev/null; run floor "$DURATION"; }
printf "%-20s %10s %9s %9s %10s %8s %7s\n" operation "req/s" "p50 ms" "p99 ms" "floor r/s" "floor%" non2xx
read -r before fp50 fp99 _ < <(floor_run)
printf "%-20s %10s %9s %9s\n" floor "$before" "$fp50" "$fp99"
for op in $OPS; do
  [ "$op" = floor ] && continue
  run "$op" "$WARMUP" >/dev/null
  read -r rps p50 p99 bad < <(run "$op" "$DURATION")
  read -r after fp50 fp99 _ < <(floor_run)
  floor_rps=$(awk -v a="$before" -v b="$after" 'BEGIN {printf "%.0f", (a + b) / 2}')
  pct=$(awk -v a="$rps" -v b="$floor_rps" 'BEGIN {printf "%.0f", 100 * a / b}')
  printf "%-20s %10s %9s %9s %10s %7s%% %7s\n" "$op" "$rps" "$p50" "$p99" "$floor_rps" "$pct" "$bad"
  printf "%-20s %10s %9s %9s\n" floor "$after" "$fp50" "$fp99"
  before=$after
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# RSS after the runs: $(ps -o rss= -p $PID) KiB"
