//! Kafka routes and sources against a real Apache Kafka broker (scripts/kafka-broker.sh: KRaft, one node, on
//! loopback), with `thoth serve` killed by SIGKILL and the broker stopped and restarted during the load.
//!
//! `THOTH_KAFKA_MESSAGES` sets the load (CI: 10,000 each; the full run is 100,000, see docs/PERFORMANCE.md).

use crate::{Server, free_port, sample, with_control_id};
use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message as _};
use rdkafka::producer::{FutureProducer, FutureRecord};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn messages() -> usize {
    std::env::var("THOTH_KAFKA_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// A broker started by scripts/kafka-broker.sh; stopped when dropped.
struct Broker {
    dir: PathBuf,
    port: u16,
}

impl Broker {
    fn script() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka-broker.sh")
    }

    fn start(dir: &Path) -> Broker {
        // The broker's controller listens on port + 1. Both are taken below Linux's ephemeral range (32768 and up),
        // from which `free_port` and every outgoing connection draw theirs: the tests stop the broker and start it
        // again on the same ports, and in between another test's server or client took one (the restart failed
        // with "Address already in use").
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let base = 20_000 + (nanos % 6_000) as u16 * 2;
        let port = (0..6_000u16)
            .map(|i| 20_000 + (base - 20_000 + 2 * i) % 12_000)
            .find(|&p| {
                std::net::TcpListener::bind(("127.0.0.1", p)).is_ok()
                    && std::net::TcpListener::bind(("127.0.0.1", p + 1)).is_ok()
            })
            .expect("a free pair of ports below 32768");
        let broker = Broker {
            dir: dir.to_path_buf(),
            port,
        };
        broker.up();
        broker
    }

    fn up(&self) {
        let out = Command::new("bash")
            .arg(Self::script())
            .arg("start")
            .arg(&self.dir)
            .arg(self.port.to_string())
            .output()
            .expect("run scripts/kafka-broker.sh");
        assert!(
            out.status.success(),
            "the Kafka broker did not start (needs Java 17+ and Maven, as scripts/test.sh installs):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn down(&self) {
        let _ = Command::new("bash")
            .arg(Self::script())
            .arg("stop")
            .arg(&self.dir)
            .status();
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.down();
    }
}

/// The ends of the server's and the broker's logs, for a failure's message: a stall shows only there.
fn logs(store: &Path, broker: &Broker) -> String {
    let tail = |path: PathBuf| {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        format!(
            "--- the end of {}:\n{}",
            path.display(),
            lines[lines.len().saturating_sub(80)..].join("\n")
        )
    };
    format!(
        "{}\n{}",
        tail(store.join("serve.log")),
        tail(broker.dir.join("broker.log"))
    )
}

/// One record read back from a topic.
struct Record {
    key: Option<Vec<u8>>,
    value: Vec<u8>,
    headers: HashMap<String, String>,
}

/// Every record of partition 0 of `topic`, from the beginning to its end now.
fn read_topic(brokers: &str, topic: &str) -> Vec<Record> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", "thoth-test-reader")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let (low, high) = consumer
        .fetch_watermarks(topic, 0, Duration::from_secs(30))
        .unwrap();
    let mut tpl = rdkafka::TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, rdkafka::Offset::Offset(low))
        .unwrap();
    consumer.assign(&tpl).unwrap();
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut next = low;
    while next < high {
        assert!(
            Instant::now() < deadline,
            "reading the topic back took too long"
        );
        let Some(m) = consumer.poll(Duration::from_secs(1)) else {
            continue;
        };
        let m = m.unwrap();
        next = m.offset() + 1;
        let headers = m
            .headers()
            .map(|h| {
                h.iter()
                    .map(|h| {
                        (
                            h.key.to_string(),
                            String::from_utf8_lossy(h.value.unwrap_or_default()).into_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.push(Record {
            key: m.key().map(<[u8]>::to_vec),
            value: m.payload().unwrap_or_default().to_vec(),
            headers,
        });
    }
    out
}

/// A Prometheus series' value in `/metrics`.
fn metric(server: &Server, series: &str) -> Option<f64> {
    let text = reqwest::blocking::get(server.url("/metrics"))
        .ok()?
        .text()
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn total(server: &Server, status: Option<&str>) -> u64 {
    let mut q = vec![("limit", "0")];
    if let Some(s) = status {
        q.push(("status", s));
    }
    let page: serde_json::Value = reqwest::blocking::Client::new()
        .get(server.url("/messages"))
        .query(&q)
        .send()
        .unwrap()
        .json()
        .unwrap();
    page["total"].as_u64().unwrap()
}

/// The test: N messages over MLLP on 8 connections into a Kafka route; `thoth serve` killed with SIGKILL
/// a third of the way and restarted; the broker stopped and restarted half way. Then the topic holds
/// every acknowledged message, and a message found twice carries the same key and message id both times.
#[test]
fn kafka_route_survives_kill_9_and_a_broker_restart() {
    let total_messages = messages();
    let connections = 8;
    let data = tempfile::tempdir().unwrap();
    let broker = Broker::start(&data.path().join("broker"));
    let topic = "hl7.crash";
    let config = data.path().join("thoth.toml");
    std::fs::write(
        &config,
        format!(
            "[delivery]\ninitial_backoff_ms = 100\nmax_backoff_ms = 1000\nmax_attempts = 100000\n\
             attempt_timeout_ms = 3000\n\
             [[route]]\nname = \"stream\"\n\
             kafka = {{ brokers = \"{}\", topic = \"{topic}\", key = \"control_id\" }}\n",
            broker.addr()
        ),
    )
    .unwrap();
    let store = data.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let (http, mllp_port) = (free_port(), free_port());
    let mut server = Server::start(&store, http, mllp_port, Some(&config));

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let template = sample("ADT-A01-01.hl7");
    let acked: Arc<Mutex<HashSet<String>>> = Arc::default();
    let acked_count = Arc::new(AtomicUsize::new(0));
    let addr = format!("127.0.0.1:{mllp_port}");
    let deadline = Instant::now() + Duration::from_secs(900);
    // Senders behave like real ones: on a broken connection they reconnect and resend the unacknowledged message.
    let senders: Vec<_> = (0..connections)
        .map(|c| {
            let (acked, acked_count, addr, template) = (
                acked.clone(),
                acked_count.clone(),
                addr.clone(),
                template.clone(),
            );
            runtime.spawn(async move {
                let mut client: Option<mllp::Client> = None;
                for i in (c..total_messages).step_by(connections) {
                    let id = format!("K-{i}");
                    let msg = with_control_id(&template, &id);
                    loop {
                        assert!(Instant::now() < deadline, "the load did not finish in time");
                        if client.is_none() {
                            match mllp::Client::connect(&addr, Default::default()).await {
                                Ok(cl) => client = Some(cl),
                                Err(_) => {
                                    tokio::time::sleep(Duration::from_millis(20)).await;
                                    continue;
                                }
                            }
                        }
                        match client.as_mut().unwrap().send(&msg).await {
                            Ok(ack) => {
                                let ack = hl7v2::Message::parse(&ack);
                                assert_eq!(ack.get("MSA-2").as_deref(), Some(id.as_str()));
                                assert_eq!(ack.get("MSA-1").as_deref(), Some("AA"));
                                acked.lock().unwrap().insert(id);
                                acked_count.fetch_add(1, Ordering::SeqCst);
                                break;
                            }
                            Err(_) => client = None,
                        }
                    }
                }
            })
        })
        .collect();
    let started = Instant::now();
    let wait_acks = |n: usize| {
        while acked_count.load(Ordering::SeqCst) < n {
            assert!(Instant::now() < deadline, "the load did not progress");
            std::thread::sleep(Duration::from_millis(2));
        }
    };

    wait_acks(total_messages / 3);
    server.kill9();
    let killed_at = acked_count.load(Ordering::SeqCst);
    let server = Server::start(&store, http, mllp_port, Some(&config));

    // The broker goes away for a while: the MLLP listener keeps acknowledging, deliveries queue in the store.
    wait_acks(total_messages / 2);
    let down_at = acked_count.load(Ordering::SeqCst);
    broker.down();
    std::thread::sleep(Duration::from_secs(5));
    broker.up();
    let acked_while_down = acked_count.load(Ordering::SeqCst) - down_at;

    for s in senders {
        runtime.block_on(s).unwrap();
    }
    let load_secs = started.elapsed().as_secs_f64();
    assert_eq!(acked_count.load(Ordering::SeqCst), total_messages);
    assert!(
        acked_while_down > 0,
        "the MLLP listener acknowledged nothing while the broker was down"
    );
    // Everything is delivered in the end.
    let until = Instant::now() + Duration::from_secs(600);
    while total(&server, Some("pending")) > 0 {
        assert!(
            Instant::now() < until,
            "deliveries still pending after 600 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The outage showed in the route's metrics (the server counted since its restart, before the outage).
    let failures = metric(
        &server,
        "thoth_engine_route_failures_total{route=\"stream\"}",
    )
    .unwrap();
    assert!(
        failures > 0.0,
        "no failed attempt counted during the broker outage"
    );
    assert_eq!(
        metric(&server, "thoth_engine_route_pending{route=\"stream\"}"),
        Some(0.0)
    );

    let records = read_topic(&broker.addr(), topic);
    let mut by_control: HashMap<String, Vec<&Record>> = HashMap::new();
    for r in &records {
        let control = r.headers.get("hl7.control_id").cloned().unwrap_or_default();
        // The value is the message as sent, and its headers say what it is.
        let msg = hl7v2::Message::parse(&r.value);
        assert_eq!(msg.get("MSH-10").as_deref(), Some(control.as_str()));
        assert_eq!(r.headers.get("hl7.type").map(String::as_str), Some("ADT"));
        assert_eq!(
            r.headers.get("hl7.trigger").map(String::as_str),
            Some("A01")
        );
        assert!(r.headers.contains_key("hl7.version"));
        assert!(r.headers.contains_key("thoth.message_id"));
        let sender = r.headers.get("hl7.sender").cloned().unwrap_or_default();
        assert_eq!(
            r.key.as_deref(),
            Some(format!("{sender}/{control}").as_bytes())
        );
        by_control.entry(control).or_default().push(r);
    }
    let acked = acked.lock().unwrap().clone();
    let missing: Vec<_> = acked
        .iter()
        .filter(|id| !by_control.contains_key(*id))
        .collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged messages are not in Kafka, e.g. {:?}",
        missing.len(),
        missing.iter().take(5).collect::<Vec<_>>()
    );
    let mut duplicated = 0;
    for (control, copies) in &by_control {
        if copies.len() > 1 {
            duplicated += 1;
            let first = copies[0];
            for c in &copies[1..] {
                assert_eq!(c.key, first.key, "{control}: copies with different keys");
                assert_eq!(
                    c.headers.get("thoth.message_id"),
                    first.headers.get("thoth.message_id"),
                    "{control}: copies with different message ids"
                );
            }
        }
    }
    eprintln!(
        "kafka route: {total_messages} messages over {connections} connections in {load_secs:.1} s; \
         thoth killed after {killed_at} ACKs, broker down after {down_at} ({acked_while_down} ACKed while it \
         was down); {} records, {duplicated} messages twice (same key and message id), 0 missing, \
         {failures} failed attempts",
        records.len()
    );
    drop(server);
}

/// The other direction: N messages produced to a topic, consumed by `thoth serve`'s `[[kafka_source]]` while it is
/// killed with SIGKILL and the broker restarts. Then the store holds every message.
#[test]
fn kafka_source_survives_kill_9_and_a_broker_restart() {
    let total_messages = messages();
    let data = tempfile::tempdir().unwrap();
    let broker = Broker::start(&data.path().join("broker"));
    let topic = "hl7.in";
    // Produce everything first (the test's own idempotent producer).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let template = sample("ORU-R01-01.hl7");
    runtime.block_on(async {
        let producer: FutureProducer = ClientConfig::new()
            .set("bootstrap.servers", broker.addr())
            .set("enable.idempotence", "true")
            .set("linger.ms", "5")
            .create()
            .unwrap();
        let mut pending: Vec<rdkafka::producer::DeliveryFuture> = Vec::new();
        for i in 0..total_messages {
            let msg = with_control_id(&template, &format!("S-{i}"));
            let fut = producer
                .send_result(FutureRecord::<(), _>::to(topic).payload(&msg))
                .map_err(|(e, _)| e)
                .unwrap();
            pending.push(fut);
            if pending.len() >= 10_000 {
                for f in pending.drain(..) {
                    f.await.unwrap().unwrap();
                }
            }
        }
        for f in pending.drain(..) {
            f.await.unwrap().unwrap();
        }
    });

    let config = data.path().join("thoth.toml");
    std::fs::write(
        &config,
        format!(
            "[[kafka_source]]\nbrokers = \"{}\"\ntopic = \"{topic}\"\ngroup = \"thoth\"\n",
            broker.addr()
        ),
    )
    .unwrap();
    let store = data.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let (http, mllp_port) = (free_port(), free_port());
    let started = Instant::now();
    let mut server = Server::start(&store, http, mllp_port, Some(&config));
    let deadline = Instant::now() + Duration::from_secs(900);
    let wait_stored = |server: &Server, n: u64| loop {
        let t = total(server, None);
        if t >= n {
            return t;
        }
        assert!(
            Instant::now() < deadline,
            "the source stopped at {t} messages\n{}",
            logs(&store, &broker)
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let n = total_messages as u64;
    wait_stored(&server, n / 3);
    server.kill9();
    let server = Server::start(&store, http, mllp_port, Some(&config));
    let before_outage = wait_stored(&server, 2 * n / 3);
    broker.down();
    std::thread::sleep(Duration::from_secs(3));
    broker.up();
    // Every message arrives: distinct control ids stored = produced.
    let stored_now = |server: &Server| {
        let http = reqwest::blocking::Client::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut offset = 0;
        loop {
            let page: serde_json::Value = http
                .get(server.url("/messages"))
                .query(&[("limit", "1000"), ("offset", &offset.to_string())])
                .send()
                .unwrap()
                .json()
                .unwrap();
            let items = page["items"].as_array().unwrap();
            if items.is_empty() {
                return seen;
            }
            offset += items.len();
            for m in items {
                *seen
                    .entry(m["control_id"].as_str().unwrap().to_string())
                    .or_default() += 1;
            }
        }
    };
    let mut seen;
    loop {
        seen = stored_now(&server);
        if seen.len() >= total_messages {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {} of {total_messages} messages stored\n{}",
            seen.len(),
            logs(&store, &broker)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let secs = started.elapsed().as_secs_f64();
    let missing: Vec<_> = (0..total_messages)
        .map(|i| format!("S-{i}"))
        .filter(|id| !seen.contains_key(id))
        .collect();
    assert!(
        missing.is_empty(),
        "{} messages never stored",
        missing.len()
    );
    let twice = seen.values().filter(|n| **n > 1).count();
    let duplicates = total(&server, Some("duplicate"));
    // A message read twice (consumed, not yet committed at the kill) is stored as a duplicate, never as new.
    assert_eq!(
        total(&server, None),
        total_messages as u64 + duplicates,
        "a message read twice was not recognised as a duplicate"
    );
    eprintln!(
        "kafka source: {total_messages} messages in {secs:.1} s; thoth killed once, broker restarted after \
         {before_outage} stored; 0 missing, {twice} read twice (stored as duplicates: {duplicates})"
    );
    drop(server);
}
