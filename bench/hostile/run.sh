#!/usr/bin/env bash
# Hostile load against one `thoth serve`, on loopback only, each case bounded: what issue 27 asks the server to
# survive, measured. Prints one line per case; docs/SECURITY.md ("Measured under hostile load") records a run.
#
#   bench/hostile/run.sh [CONCEPTS]     # default 100000 (the synthetic SNOMED CT release the ECL case expands)
#   NO_BUILD=1 uses target/release/thoth as it is (THOTH=path another binary); WORK (default /tmp/thoth-hostile)
#   keeps the generated release.
#
# Cases (bench/hostile/load.py does the clients):
#   fuzzy    20 fuzzy text searches of 2,000 and of 5,000 words at once: resident memory against idle
#   idle     20,000 idle HTTP connections and 2,000 idle MLLP connections: /healthz on a new connection and an
#            MLLP client connected before the flood, both timed
#   methods  100,000 requests with made-up methods: the size of /metrics before and after
#   view     a 16 MiB message of tiny segments over MLLP, then GET /messages/{id}: resident memory and answer size
#   ecl      as many `/v1/snomed/expand?ecl=*` as there are cores, looping: /healthz latency meanwhile
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CONCEPTS=${1:-100000}
WORK=${WORK:-/tmp/thoth-hostile}
HTTP=${HTTP_PORT:-18470}
MLLP=${MLLP_PORT:-12470}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
[ -n "${NO_BUILD:-}" ] || cargo build --release -p thoth >&2
THOTH=${THOTH:-$CARGO_TARGET_DIR/release/thoth}
mkdir -p "$WORK"
RF2=$WORK/rf2-$CONCEPTS
[ -d "$RF2" ] || "$THOTH" dev gen-snomed --concepts "$CONCEPTS" --seed 1 --out "$RF2" >&2
DATA=$WORK/data-$CONCEPTS
[ -d "$DATA/snomed" ] || "$THOTH" --data "$DATA" import snomed "$RF2" >&2
rm -rf "$DATA/messages" "$DATA/audit.log"
# 22,000 client sockets and as many server ones: raise the descriptor limit as far as this shell may.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
"$THOTH" --data "$DATA" serve --offline --http 127.0.0.1:$HTTP --mllp 127.0.0.1:$MLLP >"$WORK/serve.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$HTTP/readyz" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$HTTP/readyz" >/dev/null || { echo "server did not start; see $WORK/serve.log" >&2; exit 1; }
python3 bench/hostile/load.py --pid $PID --http $HTTP --mllp $MLLP --cores "$(nproc)" "${CASES:-fuzzy idle methods view ecl}"
