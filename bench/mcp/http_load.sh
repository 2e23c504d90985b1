#!/usr/bin/env bash
# The HTTP terminology routes with and without a thousand concurrent MCP clients on the same server.
#
# usage: bench/mcp/http_load.sh PORT
#   PORT  a running `thoth serve` whose data holds a SNOMED CT release with 11687002 and 404684003 (the
#         conformance subset does)
# Alternates (3 rounds) 5 s of wrk on GET /fhir/CodeSystem/$lookup alone and the same 5 s while a second wrk
# holds 1,000 connections to POST /mcp, each making one `subsumed_by` tools/call per second (MCP_DELAY_MS).
# Prints req/s and p99 of the terminology route for each run.
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
