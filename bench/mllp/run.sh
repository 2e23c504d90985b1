#!/usr/bin/env bash
# Thoth's MLLP listener against HAPI v2 2.6's (Maven Central), side by side on loopback, in one run.
#
#   bench/mllp/run.sh [MESSAGES]          # default 20000 per case; SKIP_CRASH=1 skips the crash test, NO_BUILD=1 the build
#
# Cases: {HAPI, Thoth non-durable, Thoth durable} x {1, 8 connections} x {ADT^A01, ORU^R01}. Each case is
# measured by the same client, `interface::load` (what `thoth mllp bench` runs: sequential send-and-wait per
# connection, latency per message), from the small `mllp_bench` example binary, which also serves the engine.
# Then the crash test at full size: THOTH_CRASH_MESSAGES=100000.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
N=${1:-20000}
SAMPLES=$ROOT/../shared/data/hl7v2/fhir-converter
[ -d "$SAMPLES" ] || { echo "missing $SAMPLES (../shared beside the checkout)"; exit 1; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
[ -n "${NO_BUILD:-}" ] || cargo build --release -p interface --example mllp_bench >&2
BIN=$CARGO_TARGET_DIR/release/examples/mllp_bench
(cd bench/mllp/hapi && mvn -q -B package dependency:build-classpath -Dmdep.outputFile=cp.txt >&2)
HAPI_CP="$ROOT/bench/mllp/hapi/target/classes:$(cat bench/mllp/hapi/cp.txt)"

WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
# One message per file with CR line ends (the samples use LF).
for f in ADT-A01-01 ORU-R01-01; do tr '\n' '\r' < "$SAMPLES/$f.hl7" > "$WORK/$f.hl7"; done

wait_port() { for _ in $(seq 300); do (echo > /dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; exit 1; }

run_cases() { # name port
  for conns in 1 8; do
    for f in ADT-A01-01 ORU-R01-01; do
      result=$("$BIN" load 127.0.0.1:$2 $conns "$N" "$WORK/$f.hl7")
      echo "$1 $conns $f $result"
    done
  done
}

echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# engine connections message json"
java -cp "$HAPI_CP" bench.HapiServer 12575 > "$WORK/hapi.log" 2>&1 &
HAPI_PID=$!
wait_port 12575
run_cases hapi 12575
kill $HAPI_PID; wait $HAPI_PID 2>/dev/null || true

for mode in nondurable durable; do
  "$BIN" serve 127.0.0.1:12576 "$WORK/data-$mode" $mode 2> "$WORK/thoth-$mode.log" &
  PID=$!
  wait_port 12576
  run_cases thoth-$mode 12576
  kill -INT $PID; wait $PID || true
done

echo "# load average after the cases: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "${SKIP_CRASH:-}" ] && exit 0
echo "# crash test, 100000 messages"
THOTH_CRASH_MESSAGES=100000 cargo test --release -p thoth --test it crash -- --nocapture 2>&1 | grep -E "crash test:|test result"
