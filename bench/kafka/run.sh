#!/usr/bin/env bash
# Throughput of the interface engine with a Kafka route against the same run with a `dir` route, side by side.
#
#   bench/kafka/run.sh [MESSAGES] [ROUNDS]     # default 20000 messages per case, 3 alternating rounds
#   PROFILE=dev bench/kafka/run.sh ...         # the debug build (no release build of the dependencies needed)
#
# Each case: the `mllp_bench route` example (release) opens an engine with one route, sends MESSAGES ADT^A01
# messages over 8 MLLP connections to it (one in flight per connection, every ACK checked) and waits until the
# route has delivered all of them; it prints the acknowledged msg/s and the delivered msg/s (messages / time from
# the first send to the last delivery). The Kafka route produces to a real broker (scripts/kafka-broker.sh) on
# loopback; the dir route writes one fsynced file per message. The store is durable in both.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
N=${1:-20000}
ROUNDS=${2:-3}
SAMPLE=$ROOT/../shared/data/hl7v2/fhir-converter/ADT-A01-01.hl7
[ -f "$SAMPLE" ] || { echo "missing $SAMPLE (../shared beside the checkout)"; exit 1; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
PROFILE=${PROFILE:-release}
[ -n "${NO_BUILD:-}" ] || cargo build --profile "$PROFILE" -p interface --features kafka --example mllp_bench >&2
if [ "$PROFILE" = dev ]; then BIN=$CARGO_TARGET_DIR/debug/examples/mllp_bench; else BIN=$CARGO_TARGET_DIR/$PROFILE/examples/mllp_bench; fi

WORK=$(mktemp -d)
PORT=${KAFKA_PORT:-19392}
trap 'bash scripts/kafka-broker.sh stop "$WORK/broker"; rm -rf "$WORK"' EXIT
bash scripts/kafka-broker.sh start "$WORK/broker" "$PORT" >/dev/null

cat >"$WORK/dir.toml" <<EOF
[[route]]
name = "files"
dir = "$WORK/out"
EOF
cat >"$WORK/kafka.toml" <<EOF
[[route]]
name = "stream"
kafka = { brokers = "127.0.0.1:$PORT", topic = "bench", key = "control_id" }
EOF

echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# round route json"
for round in $(seq 1 "$ROUNDS"); do
    for route in dir kafka; do
        rm -rf "$WORK/data" "$WORK/out"
        echo "$round $route $("$BIN" route "$WORK/$route.toml" "$WORK/data" 8 "$N" "$SAMPLE")"
    done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
