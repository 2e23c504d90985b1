#!/usr/bin/env bash
# The HTTP terminology routes with and without a thousand concurrent MCP clients on the same server.
#
# usage: bench/mcp/http_load.sh PORT
#   PORT  a running `thoth serve` whose data holds a SNOMED CT release with 11687002 and 404684003 (the
#         conformance subset does)
# Alternates (3 rounds) 5 s of wrk on GET /fhir/CodeSystem/$lookup alone and the same 5 s while a second wrk
# holds 1,000 connections to POST /mcp, each making one `subsumed_by` tools/call per second (MCP_DELAY_MS).
# Prints req/s and p99 of the terminology route for each run. Then, since on a shared 2-core machine those ratios
# move by tens of percent between neighbouring runs, the server's own CPU time: per MCP call (the thousand
# clients alone) and per `$lookup` (wrk alone), read from /proc/PID/task/*/schedstat of the server listening on
# PORT, and the share of one core the thousand clients' calls take: what a server saturated by the route loses.
set -euo pipefail
cd "$(dirname "$0")/../.."
PORT=$1
DURATION=${DURATION:-5}   # seconds
command -v wrk >/dev/null || { echo "wrk missing: apt-get install wrk" >&2; exit 1; }
ulimit -n 8192 || true
URL="http://127.0.0.1:$PORT"
LOOKUP="$URL/fhir/CodeSystem/\$lookup?system=http://snomed.info/sct&code=11687002"
OUT=$(mktemp); MCP_OUT=$(mktemp)
trap 'rm -f "$OUT" "$MCP_OUT"' EXIT
# The MCP call must work before it is measured.
curl -sf -X POST "$URL/mcp" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -H 'MCP-Protocol-Version: 2025-06-18' \
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"subsumed_by","arguments":{"concept_id":11687002,"subsumer_id":404684003}}}' \
  | grep -q '"subsumedBy":true' || { echo "POST /mcp did not answer the tool call" >&2; exit 1; }
report() { awk -v label="$1" '/^ +99%/ {p = $2} /Requests\/sec/ {r = $2} END {printf "%-22s %10s req/s  p99 %s\n", label, r, p}' "$OUT"; }
wrk -t1 -c10 -d2s "$LOOKUP" >/dev/null   # warm-up
for round in 1 2 3; do
  wrk -t1 -c10 -d"${DURATION}s" --latency "$LOOKUP" >"$OUT"; report "alone"
  wrk -t1 -c1000 -d"$((DURATION + 2))s" -s bench/mcp/mcp_call.lua "$URL/mcp" >"$MCP_OUT" &
  mcp=$!
  sleep 1   # the thousand connections are open
  wrk -t1 -c10 -d"${DURATION}s" --latency "$LOOKUP" >"$OUT"; report "with 1000 MCP clients"
  wait "$mcp"
  awk '/Requests\/sec/ {printf "%-22s %10s MCP calls/s", "", $2} /Non-2xx/ {printf "  (%s non-2xx!)", $NF} END {print ""}' "$MCP_OUT"
done

# The server's CPU time per request, by the scheduler's count over all of its threads.
PID=${SERVER_PID:-$(ss -ltnpH "sport = :$PORT" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)}
if [ -z "$PID" ] || [ ! -d "/proc/$PID" ]; then
  echo "server process not found (set SERVER_PID): CPU time not measured" >&2; exit 0
fi
cpu_ns() { local s=0 a; for t in /proc/"$PID"/task/*/schedstat; do read -r a _ < "$t" && s=$((s + a)); done; echo "$s"; }
per_request() { # label wrk-args... -> prints server CPU per request and requests/s
  local before after n rps
  before=$(cpu_ns); wrk "${@:2}" >"$OUT"; after=$(cpu_ns)
  n=$(awk '/requests in/ {print $1}' "$OUT"); rps=$(awk '/Requests\/sec/ {print $2}' "$OUT")
  echo "$1 $(( (after - before) / n / 1000 )) $rps"
}
read -r _ mcp_us mcp_rps < <(per_request mcp -t1 -c1000 -d"$((DURATION + 2))s" -s bench/mcp/mcp_call.lua "$URL/mcp")
read -r _ lookup_us _ < <(per_request lookup -t1 -c10 -d"${DURATION}s" "$LOOKUP")
awk -v m="$mcp_us" -v r="$mcp_rps" -v l="$lookup_us" 'BEGIN {
  printf "server CPU: %d us per MCP call (1000 clients, %.0f calls/s), %d us per $lookup (10 busy connections)\n", m, r, l
  printf "the MCP calls take %.1f%% of one core\n", m * r / 1e4 }'

