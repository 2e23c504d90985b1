#!/usr/bin/env bash
# A real Apache Kafka broker for the tests: one KRaft node (broker and controller in one JVM) on loopback.
#
#   scripts/kafka-broker.sh fetch              download the broker's jars from Maven Central (once; cached)
#   scripts/kafka-broker.sh start DIR PORT     format DIR on first use, start the broker on 127.0.0.1:PORT (its
#                                              controller on PORT+1), wait until it accepts connections
#   scripts/kafka-broker.sh stop DIR           stop it (SIGTERM, then SIGKILL after 30 s); DIR keeps its data, so
#                                              a later `start DIR PORT` brings the same topics and offsets back
#
# The jars are `org.apache.kafka:kafka_2.13` and its runtime dependencies, copied by Maven from Maven Central into
# $THOTH_KAFKA_CACHE (default ~/.cache/thoth/kafka-VERSION). Needs a Java 17+ runtime and Maven (scripts/test.sh
# installs both). Logs go to DIR/broker.log.
set -euo pipefail

KAFKA_VERSION="${THOTH_KAFKA_VERSION:-4.1.1}"
CACHE="${THOTH_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/thoth/kafka-$KAFKA_VERSION}"

fetch() {
    if [ -f "$CACHE/libs/.complete" ]; then
        return
    fi
    mkdir -p "$CACHE"
    cat >"$CACHE/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.thoth</groupId>
  <artifactId>kafka-broker</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$KAFKA_VERSION</version>
    </dependency>
    <!-- Kafka logs through SLF4J 1.7: the binding to the Log4j 2 it already depends on, as its own distribution has. -->
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>2.24.3</version>
    </dependency>
  </dependencies>
</project>
EOF
    rm -rf "$CACHE/libs"
    mvn -q -B -f "$CACHE/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$CACHE/libs" >&2
    touch "$CACHE/libs/.complete"
}

java_cmd() {
    # A small heap: the tests move at most a few hundred MB through one partition.
    java -Xms128m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true -cp "$CACHE/libs/*" "$@"
}

start() {
    local dir="$1" port="$2"
    local cport=$((port + 1))
    fetch
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    if [ -f "$dir/broker.pid" ] && kill -0 "$(cat "$dir/broker.pid")" 2>/dev/null; then
        echo "a broker already runs from $dir (pid $(cat "$dir/broker.pid"))" >&2
        exit 1
    fi
    cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
    # Warnings and the startup line the wait below looks for, nothing else (Kafka logs a lot at INFO).
    cat >"$dir/log4j2.properties" <<EOF
status = error
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = STDOUT
logger.raft.name = kafka.server.KafkaRaftServer
logger.raft.level = info
EOF
    if [ ! -f "$dir/data/meta.properties" ]; then
        local cluster
        cluster="$(java_cmd kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)"
        java_cmd kafka.tools.StorageTool format -t "$cluster" -c "$dir/server.properties" \
            >>"$dir/broker.log" 2>&1
    fi
    # setsid: the broker outlives this script, and a test's process group signal does not reach it.
    setsid bash -c 'exec "$@"' _ java -Xms128m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true \
        -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$CACHE/libs/*" kafka.Kafka "$dir/server.properties" >>"$dir/broker.log" 2>&1 </dev/null &
    echo $! >"$dir/broker.pid"
    local pid
    pid="$(cat "$dir/broker.pid")"
    for _ in $(seq 1 240); do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "the broker exited; the end of $dir/broker.log:" >&2
            tail -30 "$dir/broker.log" >&2
            exit 1
        fi
        # Ready once the broker (not only the controller) listens and has registered.
        if grep -q "Kafka Server started" "$dir/broker.log" 2>/dev/null \
            && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$pid"
            return
        fi
        sleep 0.5
    done
    echo "the broker did not start within 120 s; the end of $dir/broker.log:" >&2
    tail -30 "$dir/broker.log" >&2
    kill "$pid" 2>/dev/null || true
    exit 1
}

stop() {
    local dir="$1"
    [ -f "$dir/broker.pid" ] || return 0
    local pid
    pid="$(cat "$dir/broker.pid")"
    if kill "$pid" 2>/dev/null; then
        for _ in $(seq 1 60); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/broker.pid"
}

case "${1:-}" in
fetch) fetch ;;
start) start "$2" "$3" ;;
stop) stop "$2" ;;
*)
    echo "usage: $0 fetch | start DIR PORT | stop DIR" >&2
    exit 2
    ;;
esac
