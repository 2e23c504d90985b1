#!/usr/bin/env bash
# CPU time per request of a running server and of wrk, per operation: steadier than requests per second when the
# machine is shared, and it tells the server's user time (the operation and the HTTP stack) from its system time
# (sockets, wake-ups) and from the client's.
#
# usage: bench/terminology/cpu.sh PID PORT POOL...
#   PID   the server's process id; PORT its HTTP port
#   POOL  a file of request paths (one per line, rotated like bench/terminology/run.sh does; run.sh leaves its
#         pools in $WORK/paths/*.txt), or a single request path (anything that is not a file)
#   DURATION (default 5s) per measured run, after a 2 s warm-up at the same shape.
# prints: pool, req/s, p99, then µs per request: server total (user), wrk, idle (both cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
PID=$1 PORT=$2
shift 2
DURATION=${DURATION:-5s}
command -v wrk >/dev/null || { echo "wrk missing: apt-get install wrk" >&2; exit 1; }
ticks() { awk '{print $14 + $15, $14}' "/proc/$1/stat"; }   # utime+stime, utime (clock ticks)
idle() { awk '/^cpu / {print $5 + $6}' /proc/stat; }
HZ=$(getconf CLK_TCK)
ONE=$(mktemp)
OUT=$(mktemp)
trap 'rm -f "$ONE" "$OUT"' EXIT
for pool in "$@"; do
  if [[ -f $pool ]]; then file=$pool; else echo "$pool" >"$ONE"; file=$ONE; fi
  WRK_PATHS=$file wrk -t2 -c10 -d2s -s bench/snomed/rotate.lua "http://127.0.0.1:$PORT" >/dev/null
  read -r s0 u0 < <(ticks "$PID"); i0=$(idle)
  WRK_PATHS=$file wrk -t2 -c10 -d"$DURATION" --latency -s bench/snomed/rotate.lua "http://127.0.0.1:$PORT" >"$OUT" &
  client=$!
  sleep 0.2
  wrk_pid=$(pgrep -P "$client" wrk || echo "$client")
  w=0
  # wrk's own ticks, read until it exits (its /proc entry goes with it).
  while kill -0 "$client" 2>/dev/null; do w=$(ticks "$wrk_pid" 2>/dev/null | cut -d' ' -f1 || echo "$w"); sleep 0.1; done
  read -r s1 u1 < <(ticks "$PID"); i1=$(idle)
  read -r rps p99 n < <(awk '/^ +99%/ {p = $2} /requests in/ {n = $1} /Requests\/sec/ {r = $2} END {print r, p, n}' "$OUT")
  us() { awk -v t="$1" -v n="$n" -v hz="$HZ" 'BEGIN {printf "%.2f", t * 1e6 / hz / n}'; }
  printf "%-40s %10s %8s  server %6s (user %6s)  wrk %6s  idle %6s us/req\n" "$(basename "$pool")" "$rps" "$p99" \
    "$(us $((s1 - s0)))" "$(us $((u1 - u0)))" "$(us "${w:-0}")" "$(us $((i1 - i0)))"
done
