#!/usr/bin/env bash
# Terminology replicas: REPLICAS `thoth serve --read-only` processes over one data directory against one process,
# the same content and the same load. Memory: the resident (RSS) and proportional (PSS) set sizes of every
# process from /proc/PID/smaps_rollup, after the load, summed; PSS divides each shared page among the processes
# that map it, so the sum is what the machine really spends. Throughput: wrk through Debian's haproxy (HTTP mode,
# round robin per request, /readyz health checks) across the replicas, against one process through the same
# proxy and one process without it.
#
# Content: the synthetic SNOMED CT release at full scale (bench/snomed's generator, 370,000 active concepts), and
# only it, so that the numbers are the store's (FHIR packages and ICD-10-CM are loaded into each process's own
# heap: they add the same private memory to every replica).
# Load: $lookup and $subsumes in turn, from pools taken from the release (as bench/terminology/run.sh). Memory is measured twice: after that load (each process has touched the part
# of the store the pools reach), and with --preload (each process has read the whole store file in).
#
# usage: bench/replicas/run.sh [CONCEPTS]   (default 370000; needs wrk and haproxy: apt-get install wrk haproxy)
#        REPLICAS (4), DURATION per operation (10s), WARMUP (3s), PORT (first of the replicas' ports, 18100),
#        SKIP_IMPORT=1 reuses the data directory of an earlier run, NO_BUILD=1 uses the existing release binary,
#        SERVE_ARGS more options for every server (e.g. "--http-threads 1").
set -euo pipefail
cd "$(dirname "$0")/../.."
CONCEPTS=${1:-370000}
REPLICAS=${REPLICAS:-4}
WORK=${WORK:-/tmp/thoth-replicas-bench}
PORT=${PORT:-18100}
LB_PORT=$((PORT + 99))
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-3s}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
for tool in wrk haproxy; do
  command -v $tool >/dev/null || { echo "$tool missing: apt-get install wrk haproxy" >&2; exit 1; }
done

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
fi

SCT=http://snomed.info/sct
CONCEPT_FILE=$(ls "$RF2"/Snapshot/Terminology/sct2_Concept_Snapshot_*.txt)
REL_FILE=$(ls "$RF2"/Snapshot/Terminology/sct2_Relationship_Snapshot_*.txt)
DESC_FILE=$(ls "$RF2"/Snapshot/Terminology/sct2_Description_Snapshot-*.txt)
P=$WORK/paths
mkdir -p "$P"
awk -F'\t' 'NR>1 && $3==1 {print $1}' "$CONCEPT_FILE" | awk 'NR%37==0 && ++n<=2000' \
  | sed "s|^|/fhir/CodeSystem/\$lookup?system=$SCT\&code=|" >"$P/lookup.txt"
awk -F'\t' 'NR>1 && $3==1 && $8==116680003 {print $5, $6}' "$REL_FILE" | awk 'NR%53==0 && ++n<=2000' \
  | awk -v s="$SCT" '{print "/fhir/CodeSystem/$subsumes?system=" s "&codeA=" $1 "&codeB=" $2}' >"$P/subsumes.txt"
awk -F'\t' 'NR>1 && $3==1 {split(tolower($8), w, " "); n=3+NR%4; if (length(w[1])>=n && w[1] ~ /^[a-z]+$/) print substr(w[1],1,n)}' "$DESC_FILE" \
  | awk 'NR%101==0 && ++n<=2000' \
  | sed "s|^|/fhir/ValueSet/\$expand?url=http%3A%2F%2Fsnomed.info%2Fsct%3Ffhir_vs\&count=10\&filter=|" >"$P/search.txt"
# Text search ($expand with a filter, the pool in search.txt) is left out: on this revision ten concurrent
# searches over the full-scale store stall the server (0 answers in 5 s, a lone search 5 s behind them; the same
# with the binary of the revision before this script), which would measure that, not the replicas.
OPS=${OPS:-"lookup subsumes"}

PIDS=()
HAPROXY_PID=
# SERVE_ARGS: more options for every `thoth serve` (e.g. "--http-threads 1", one thread per replica)
read -r -a SERVE_EXTRA <<<"${SERVE_ARGS:-}"
stop_all() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  [ -z "$HAPROXY_PID" ] || { kill "$HAPROXY_PID" 2>/dev/null || true; wait "$HAPROXY_PID" 2>/dev/null || true; }
  PIDS=() HAPROXY_PID=
}
trap stop_all EXIT

start_replicas() { # n
  for i in $(seq 0 $(($1 - 1))); do
    "$THOTH" --data "$DATA" serve --read-only --http 127.0.0.1:$((PORT + i)) "${SERVE_EXTRA[@]}" >"$WORK/replica-$i.log" 2>&1 &
    PIDS+=($!)
  done
  for i in $(seq 0 $(($1 - 1))); do
    for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$((PORT + i))/readyz" >/dev/null && break; sleep 0.1; done
    curl -sf "http://127.0.0.1:$((PORT + i))/readyz" >/dev/null || { echo "replica $i not ready; see $WORK/replica-$i.log" >&2; exit 1; }
  done
}

start_haproxy() { # n
  {
    printf 'global\n  maxconn 4096\n  nbthread 1\n'
    printf 'defaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n  http-reuse always\n'
    printf 'frontend thoth\n  bind 127.0.0.1:%s\n  default_backend replicas\n' "$LB_PORT"
    printf 'backend replicas\n  balance roundrobin\n  option httpchk GET /readyz\n'
    for i in $(seq 0 $(($1 - 1))); do printf '  server r%s 127.0.0.1:%s check inter 1s\n' "$i" $((PORT + i)); done
  } >"$WORK/haproxy.cfg"
  haproxy -f "$WORK/haproxy.cfg" -db >"$WORK/haproxy.log" 2>&1 &
  HAPROXY_PID=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$LB_PORT/readyz" >/dev/null && break; sleep 0.1; done
  curl -sf "http://127.0.0.1:$LB_PORT/readyz" >/dev/null || { echo "haproxy did not start; see $WORK/haproxy.log" >&2; exit 1; }
}

server_cpu_ticks() { # -> user + system clock ticks of the running replicas, summed
  for pid in "${PIDS[@]}"; do cut -d')' -f2 "/proc/$pid/stat"; done | awk '{t += $12 + $13} END {print t + 0}'
}

wrk_rps() { # port op duration -> req/s (non-2xx answers fail the run); also writes the replicas' CPU time per
  # request (µs, user + system) to $WORK/cpu-PORT-OP-N.txt: whether replicas add work per request (contention
  # over the shared store), which on a machine with more cores than this one decides whether they scale
  local before after
  before=$(server_cpu_ticks)
  WRK_PATHS="$P/$2.txt" wrk -t2 -c10 -d"$3" --latency -s bench/snomed/rotate.lua "http://127.0.0.1:$1" \
    >"$WORK/wrk-$1-$2-${#PIDS[@]}.txt"
  after=$(server_cpu_ticks)
  awk -v ticks=$((after - before)) -v hz="$(getconf CLK_TCK)" '
    / requests in / {n = $1} END {if (n > 0) printf "%.1f\n", ticks / hz * 1e6 / n}' \
    "$WORK/wrk-$1-$2-${#PIDS[@]}.txt" >"$WORK/cpu-$1-$2-${#PIDS[@]}.txt"
  awk '/Requests\/sec/ {rps = $2} /Non-2xx/ {bad = $4}
    END {if (bad > 0) {print "non-2xx: " bad > "/dev/stderr"; exit 1} printf "%.0f\n", rps}' \
    "$WORK/wrk-$1-$2-${#PIDS[@]}.txt"
}

load() { # port -> "lookup subsumes search" req/s
  local out=()
  for op in $OPS; do
    wrk_rps "$1" "$op" "$WARMUP" >/dev/null
    out+=("$(wrk_rps "$1" "$op" "$DURATION")")
  done
  echo "${out[*]}"
}

memory() { # -> "rss_kib pss_kib pss_anon_kib pss_file_kib" summed over the running replicas
  for pid in "${PIDS[@]}"; do cat "/proc/$pid/smaps_rollup"; done | awk '
    $1 == "Rss:" {rss += $2} $1 == "Pss:" {pss += $2} $1 == "Pss_Anon:" {anon += $2} $1 == "Pss_File:" {file += $2}
    END {printf "%d %d %d %d\n", rss, pss, anon, file}'
}

for op in $OPS; do
  start_replicas 1
  path=$(head -1 "$P/$op.txt")
  code=$(curl -s -o "$WORK/check-$op.json" -w '%{http_code}' "http://127.0.0.1:$PORT$path")
  stop_all
  [ "$code" = 200 ] || { echo "$op answered $code for $path (see $WORK/check-$op.json)" >&2; exit 1; }
done

echo "# $(nproc) cores; store: $(du -sh "$DATA/snomed" | cut -f1) ($CONCEPTS concepts); wrk -t2 -c10, $DURATION per operation after $WARMUP warm-up"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

start_replicas 1
read -r d_lookup d_subsumes < <(load $PORT)
start_haproxy 1
read -r h1_lookup h1_subsumes < <(load $LB_PORT)
read -r rss1 pss1 anon1 file1 < <(memory)
stop_all

start_replicas "$REPLICAS"
start_haproxy "$REPLICAS"
read -r hn_lookup hn_subsumes < <(load $LB_PORT)
read -r rssn pssn anonn filen < <(memory)
stop_all

# The same with --preload: every process reads the whole store file in at start (the steady state of a replica
# that has served long enough to touch all of it), then the warm-up load only.
SERVE_EXTRA+=(--preload)
warm() { for op in $OPS; do wrk_rps "$1" "$op" "$WARMUP" >/dev/null; done; }
start_replicas 1
start_haproxy 1
warm $LB_PORT
read -r prss1 ppss1 panon1 pfile1 < <(memory)
stop_all
start_replicas "$REPLICAS"
start_haproxy "$REPLICAS"
warm $LB_PORT
read -r prssn ppssn panonn pfilen < <(memory)
stop_all

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
mib() { awk -v k="$1" 'BEGIN {printf "%.0f", k / 1024}'; }
echo
printf "%-34s %10s %10s %10s %10s\n" "memory (MiB, summed)" RSS PSS "PSS anon" "PSS file"
printf "%-34s %10s %10s %10s %10s\n" "1 process" "$(mib $rss1)" "$(mib $pss1)" "$(mib $anon1)" "$(mib $file1)"
printf "%-34s %10s %10s %10s %10s\n" "$REPLICAS replicas" "$(mib $rssn)" "$(mib $pssn)" "$(mib $anonn)" "$(mib $filen)"
printf "%-34s %10s %10s %10s %10s\n" "ratio" "$(ratio $rssn $rss1)" "$(ratio $pssn $pss1)" "$(ratio $anonn $anon1)" "$(ratio $filen $file1)"
printf "%-34s %10s %10s %10s %10s\n" "1 process, --preload" "$(mib $prss1)" "$(mib $ppss1)" "$(mib $panon1)" "$(mib $pfile1)"
printf "%-34s %10s %10s %10s %10s\n" "$REPLICAS replicas, --preload" "$(mib $prssn)" "$(mib $ppssn)" "$(mib $panonn)" "$(mib $pfilen)"
printf "%-34s %10s %10s %10s %10s\n" "ratio, --preload" "$(ratio $prssn $prss1)" "$(ratio $ppssn $ppss1)" "$(ratio $panonn $panon1)" "$(ratio $pfilen $pfile1)"
echo
printf "%-34s %10s %10s\n" "throughput (req/s)" lookup subsumes
printf "%-34s %10s %10s\n" "1 process, direct" "$d_lookup" "$d_subsumes"
printf "%-34s %10s %10s\n" "1 process, through haproxy" "$h1_lookup" "$h1_subsumes"
printf "%-34s %10s %10s\n" "$REPLICAS replicas, through haproxy" "$hn_lookup" "$hn_subsumes"
printf "%-34s %10s %10s\n" "$REPLICAS replicas / 1, through haproxy" "$(ratio $hn_lookup $h1_lookup)" "$(ratio $hn_subsumes $h1_subsumes)"
echo
cpu() { cat "$WORK/cpu-$LB_PORT-$1-$2.txt"; }
printf "%-34s %10s %10s\n" "server CPU per request (µs)" lookup subsumes
printf "%-34s %10s %10s\n" "1 process, through haproxy" "$(cpu lookup 1)" "$(cpu subsumes 1)"
printf "%-34s %10s %10s\n" "$REPLICAS replicas, through haproxy" "$(cpu lookup "$REPLICAS")" "$(cpu subsumes "$REPLICAS")"
printf "%-34s %10s %10s\n" "$REPLICAS replicas / 1" "$(ratio "$(cpu lookup "$REPLICAS")" "$(cpu lookup 1)")" "$(ratio "$(cpu subsumes "$REPLICAS")" "$(cpu subsumes 1)")"
printf "%-34s %10s %10s\n" "$REPLICAS replicas via haproxy / 1 direct" "$(ratio $hn_lookup $d_lookup)" "$(ratio $hn_subsumes $d_subsumes)"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
