use crate::{Harness, downstream, msa, sample, with_control_id};
use interface::{DeliveryStatus, Status};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

#[tokio::test]
async fn mllp_route_delivers_and_matches_the_ack_on_msa2() {
    let (addr, down, _j) = downstream("127.0.0.1:0").await;
    let h = Harness::start(&format!(
        "[delivery]\ninitial_backoff_ms = 10\n[[route]]\nname = \"ris\"\ntypes = [\"ADT\"]\nmllp = \"{addr}\"\n"
    ))
    .await;
    let mut c = h.client().await;
    let adt = with_control_id(&sample("ADT-A01-01.hl7"), "R-ADT-1");
    let oru = with_control_id(&sample("ORU-R01-01.hl7"), "R-ORU-1");
    c.send(&adt).await.unwrap();
    c.send(&oru).await.unwrap();
    let m = h.wait_status(h.id_of("R-ADT-1"), Status::Delivered).await;
    assert_eq!(m.deliveries.len(), 1);
    assert_eq!(m.deliveries[0].route, "ris");
    assert_eq!(m.deliveries[0].history.last().unwrap().detail, "AA");
    // The ORU matched no route.
    assert_eq!(
        h.engine
            .get(h.id_of("R-ORU-1"))
            .unwrap()
            .unwrap()
            .summary
            .status,
        Status::Stored
    );
    assert_eq!(*down.received.lock().unwrap(), vec![adt]);
}

#[tokio::test]
async fn failures_are_retried_then_dead_lettered_and_replay_requeues() {
    let (addr, down, _j) = downstream("127.0.0.1:0").await;
    down.fail_first.store(2, Ordering::SeqCst);
    let h = Harness::start(&format!(
        "[delivery]\nmax_attempts = 3\ninitial_backoff_ms = 10\n[[route]]\nname = \"ris\"\nmllp = \"{addr}\"\n"
    ))
    .await;
    let mut c = h.client().await;
    c.send(&with_control_id(&sample("ADT-A08-01.hl7"), "RETRY-1"))
        .await
        .unwrap();
    let m = h.wait_status(h.id_of("RETRY-1"), Status::Delivered).await;
    let d = &m.deliveries[0];
    assert_eq!(d.attempts, 3);
    assert_eq!(d.history.iter().filter(|a| !a.ok).count(), 2);
    assert!(d.history[0].detail.contains("AE"), "{:?}", d.history);

    // An ACK naming another message is a failure too; after max_attempts the delivery is dead.
    down.wrong_msa2.store(true, Ordering::SeqCst);
    c.send(&with_control_id(&sample("ADT-A08-01.hl7"), "DEAD-1"))
        .await
        .unwrap();
    let id = h.id_of("DEAD-1");
    let m = h.wait_status(id, Status::Dead).await;
    assert_eq!(m.deliveries[0].status, DeliveryStatus::Dead);
    assert!(
        m.deliveries[0].history[0].detail.contains("MSA-2"),
        "{:?}",
        m.deliveries[0].history
    );
    assert_eq!(h.engine.stats().dead, 1);

    // Replay after the receiver is fixed.
    down.wrong_msa2.store(false, Ordering::SeqCst);
    assert_eq!(h.engine.replay(id).await.unwrap(), vec!["ris".to_string()]);
    h.wait_status(id, Status::Delivered).await;
    assert_eq!(down.received.lock().unwrap().len(), 2);

    // The counters /metrics exports. The last delivery's record is committed without the delivery task waiting
    // for it: give the writer a moment to count it.
    for _ in 0..200 {
        if h.engine.stats().committed_ops >= 10 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let s = h.engine.stats();
    assert_eq!((s.received, s.acked, s.rejected), (2, 2, 0));
    assert_eq!(s.routed, 3, "two messages and one replay");
    assert_eq!(s.failed_attempts, 2 + 3);
    assert_eq!((s.delivered, s.dead), (2, 1));
    assert_eq!(s.store_latency.count, 2);
    assert!(s.durable_commits >= 1 && s.commits >= s.durable_commits);
    assert_eq!(
        s.committed_ops,
        2 + 7 + 1,
        "2 messages, 7 attempts, 1 replay"
    );
}

#[tokio::test]
async fn http_route_posts_the_raw_message() {
    type Posts = Mutex<Vec<(String, Vec<u8>)>>;
    let got: Arc<Posts> = Arc::default();
    let sink = got.clone();
    let app = axum::Router::new().route(
        "/in",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let sink = sink.clone();
                async move {
                    let ct = headers
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_string();
                    let mut all = sink.lock().unwrap();
                    all.push((ct, body.to_vec()));
                    // The first POST fails: the engine must retry.
                    if all.len() == 1 {
                        axum::http::StatusCode::SERVICE_UNAVAILABLE
                    } else {
                        axum::http::StatusCode::OK
                    }
                }
            },
        ),
    );
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = tcp.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(tcp, app).await.unwrap() });
    let h = Harness::start(&format!(
        "[delivery]\ninitial_backoff_ms = 10\n[[route]]\nname = \"web\"\nhttp = \"http://127.0.0.1:{port}/in\"\n"
    ))
    .await;
    let raw = with_control_id(&sample("ORU-R01-01.hl7"), "HTTP-1");
    let mut c = h.client().await;
    // This sample asks for enhanced-mode acknowledgements (MSH-15/16).
    assert_eq!(msa(&c.send(&raw).await.unwrap()).0, "CA");
    let m = h.wait_status(h.id_of("HTTP-1"), Status::Delivered).await;
    assert_eq!(m.deliveries[0].attempts, 2);
    assert!(m.deliveries[0].history[0].detail.contains("503"));
    let got = got.lock().unwrap();
    assert_eq!(got[1].0, "x-application/hl7-v2+er7");
    assert_eq!(got[1].1, raw);
}

#[tokio::test]
async fn dir_route_writes_exact_bytes_filtered_by_sender_and_trigger() {
    let out = tempfile::tempdir().unwrap();
    let raw = sample("ADT-A01-01.hl7");
    let sender = hl7v2::Message::parse(&raw)
        .get("MSH-3-1")
        .unwrap()
        .into_owned();
    let h = Harness::start(&format!(
        "[[route]]\nname = \"a01\"\ntriggers = [\"A01\"]\nsenders = [{sender:?}]\ndir = {:?}\n",
        out.path()
    ))
    .await;
    let mut c = h.client().await;
    c.send(&with_control_id(&raw, "DIR-1")).await.unwrap();
    let mut other_sender = crate::edit(&raw);
    other_sender.set("MSH-3", "NOBODY").unwrap();
    other_sender.set("MSH-10", "DIR-2").unwrap();
    c.send(&other_sender.encode()).await.unwrap();
    c.send(&with_control_id(&sample("ADT-A02-01.hl7"), "DIR-3"))
        .await
        .unwrap();
    let id = h.id_of("DIR-1");
    h.wait_status(id, Status::Delivered).await;
    let files: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        files[0].file_name().unwrap().to_str().unwrap(),
        format!("{:012}-DIR-1.hl7", id.0)
    );
    assert_eq!(
        std::fs::read(&files[0]).unwrap(),
        with_control_id(&raw, "DIR-1")
    );
    assert_eq!(
        h.engine
            .get(h.id_of("DIR-2"))
            .unwrap()
            .unwrap()
            .summary
            .status,
        Status::Stored
    );
    assert_eq!(
        h.engine
            .get(h.id_of("DIR-3"))
            .unwrap()
            .unwrap()
            .summary
            .status,
        Status::Stored
    );
}

#[tokio::test]
async fn fhir_route_posts_the_bundle_as_a_transaction_and_dir_routes_write_bundles() {
    type Posts = Mutex<Vec<(String, String, Vec<u8>)>>;
    let got: Arc<Posts> = Arc::default();
    let sink = got.clone();
    let app = axum::Router::new().route(
        "/fhir",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, uri: axum::http::Uri, body: axum::body::Bytes| {
                let sink = sink.clone();
                async move {
                    let ct = headers
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_string();
                    sink.lock()
                        .unwrap()
                        .push((ct, uri.path().to_string(), body.to_vec()));
                    axum::http::StatusCode::OK
                }
            },
        ),
    );
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = tcp.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(tcp, app).await.unwrap() });
    let out = tempfile::tempdir().unwrap();
    let h = Harness::start(&format!(
        "[[route]]\nname = \"fhir\"\nfhir = \"http://127.0.0.1:{port}/fhir/\"\n[[route]]\nname = \"bundles\"\ndir = {:?}\nformat = \"fhir-json\"\n",
        out.path()
    ))
    .await;
    let raw = with_control_id(&sample("ORU-R01-01.hl7"), "FHIR-1");
    let mut c = h.client().await;
    c.send(&raw).await.unwrap();
    let id = h.id_of("FHIR-1");
    let m = h.wait_status(id, Status::Delivered).await;
    assert_eq!(m.deliveries.len(), 2);

    // The FHIR server got one transaction Bundle at its base URL.
    let posts = got.lock().unwrap().clone();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].0, "application/fhir+json");
    assert_eq!(posts[0].1, "/fhir");
    let bundle: serde_json::Value = serde_json::from_slice(&posts[0].2).unwrap();
    assert_eq!(bundle["type"], "transaction");
    let entries = bundle["entry"].as_array().unwrap();
    assert!(entries.iter().all(|e| e["request"]["method"] == "POST"));
    assert!(
        entries
            .iter()
            .any(|e| e["resource"]["resourceType"] == "Observation")
    );

    // The directory got the message Bundle, as JSON, named like the message files.
    let files: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        files[0].file_name().unwrap().to_str().unwrap(),
        format!("{:012}-FHIR-1.json", id.0)
    );
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    assert_eq!(written["type"], "message");
    assert_eq!(
        written["entry"][0]["resource"]["resourceType"],
        "MessageHeader"
    );
    // The same resources, with the same ids, whatever the Bundle's type: converting is deterministic.
    let ids = |b: &serde_json::Value| {
        let mut v: Vec<String> = b["entry"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["fullUrl"].as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids(&written), ids(&bundle));
}

#[tokio::test]
async fn routes_that_convert_read_times_without_an_offset_in_the_configured_zone() {
    let out = tempfile::tempdir().unwrap();
    let h = Harness::start(&format!(
        "[to_fhir]\ntime_zone = \"America/Denver\"\n[[route]]\nname = \"bundles\"\ndir = {:?}\nformat = \"fhir-json\"\n",
        out.path()
    ))
    .await;
    // MSH-7 and OBX-14 without an offset: Denver is on MDT (-06:00) in July and MST (-07:00) in January.
    let raw = "MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240715143000||ORU^R01^ORU_R01|TZ-1|P|2.5\r\
               PID|1||12345^^^HOSP^MR||DOE^JANE||19800315|F\r\
               OBR|1|ORD1|FIL1|24331-1^Lipid panel^LN\r\
               OBX|1|NM|2093-3^Cholesterol^LN||182|mg/dL|||||F|||20240115083000\r";
    let mut c = h.client().await;
    c.send(raw.as_bytes()).await.unwrap();
    let id = h.id_of("TZ-1");
    h.wait_status(id, Status::Delivered).await;
    let path = out.path().join(format!("{:012}-TZ-1.json", id.0));
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(written["timestamp"], "2024-07-15T14:30:00-06:00");
    let observation = written["entry"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["resource"])
        .find(|r| r["resourceType"] == "Observation")
        .expect("an Observation");
    assert_eq!(
        observation["effectiveDateTime"],
        "2024-01-15T08:30:00-07:00"
    );
}

#[test]
fn bad_route_configurations_are_clear_errors() {
    let format_on_mllp = "[[route]]\nname = \"x\"\nmllp = \"h:1\"\nformat = \"fhir-json\"\n";
    let err = interface::EngineConfig::from_toml(format_on_mllp)
        .unwrap_err()
        .to_string();
    assert!(err.contains("dir"), "{err}");
    let bad_format = "[[route]]\nname = \"x\"\ndir = \"/a\"\nformat = \"xml\"\n";
    let err = interface::EngineConfig::from_toml(bad_format)
        .unwrap_err()
        .to_string();
    assert!(err.contains("fhir-json"), "{err}");
    let two = "[[route]]\nname = \"x\"\ndir = \"/a\"\nmllp = \"h:1\"\n";
    let err = interface::EngineConfig::from_toml(two)
        .unwrap_err()
        .to_string();
    assert!(err.contains("exactly one"), "{err}");
    let dup = "[[route]]\nname = \"x\"\ndir = \"/a\"\n[[route]]\nname = \"x\"\ndir = \"/b\"\n";
    assert!(
        interface::EngineConfig::from_toml(dup)
            .unwrap_err()
            .to_string()
            .contains("two routes")
    );
    let unknown = "[ack]\ntimming = \"on-receipt\"\n";
    assert!(
        interface::EngineConfig::from_toml(unknown)
            .unwrap_err()
            .to_string()
            .contains("timming")
    );
    let _ = msa;
}

#[test]
fn mllp_limits_come_from_the_configuration() {
    // Defaults: the listener's own (a dripping frame is cut after a minute, 1,024 connections).
    let defaults = interface::EngineConfig::from_toml("")
        .unwrap()
        .listener_config()
        .unwrap();
    assert_eq!(
        defaults.frame_deadline,
        Some(std::time::Duration::from_secs(60))
    );
    assert_eq!(defaults.max_connections, 1024);
    let c = interface::EngineConfig::from_toml(
        "[mllp]\nframe_deadline_secs = 5\nmax_connections = 3\njunk_log_interval_secs = 10\n",
    )
    .unwrap()
    .listener_config()
    .unwrap();
    assert_eq!(c.frame_deadline, Some(std::time::Duration::from_secs(5)));
    assert_eq!(c.max_connections, 3);
    assert_eq!(c.junk_log_interval, std::time::Duration::from_secs(10));
    let off = interface::EngineConfig::from_toml("[mllp]\nframe_deadline_secs = 0\n")
        .unwrap()
        .listener_config()
        .unwrap();
    assert_eq!(off.frame_deadline, None);
}

#[test]
fn kafka_configurations_are_checked_before_any_delivery() {
    let ok = "[[route]]\nname = \"k\"\nkafka = { brokers = \"127.0.0.1:9092\", topic = \"hl7.adt\", \
              key = \"message_id\", value = \"fhir\" }\n\
              [[kafka_source]]\nbrokers = \"127.0.0.1:9092\"\ntopic = \"hl7.in\"\ngroup = \"thoth\"\n";
    let parsed = interface::EngineConfig::from_toml(ok);
    if !cfg!(feature = "kafka") {
        let err = parsed.unwrap_err().to_string();
        assert!(err.contains("no Kafka support"), "{err}");
        return;
    }
    let config = parsed.unwrap();
    assert!(config.uses_kafka());
    let k = config.routes[0].kafka.as_ref().unwrap();
    assert_eq!(
        (k.key, k.value),
        (interface::KafkaKey::MessageId, interface::KafkaValue::Fhir)
    );
    assert_eq!(config.kafka_sources[0].group, "thoth");
    let cases = [
        // Not a Kafka topic name.
        (
            "[[route]]\nname = \"k\"\nkafka = { brokers = \"b:1\", topic = \"hl7 adt\" }\n",
            "not a Kafka topic name",
        ),
        // The delivery guarantee is not a property to turn off.
        (
            "[[route]]\nname = \"k\"\nkafka = { brokers = \"b:1\", topic = \"t\", properties = { acks = \"1\" } }\n",
            "\"acks\" is set by Thoth",
        ),
        (
            "[[route]]\nname = \"k\"\nkafka = { brokers = \"\", topic = \"t\" }\n",
            "`brokers` is empty",
        ),
        (
            "[[route]]\nname = \"k\"\nkafka = { brokers = \"b:1\", topic = \"t\", key = \"msh10\" }\n",
            "unknown variant",
        ),
        (
            "[[route]]\nname = \"k\"\ndir = \"/a\"\nkafka = { brokers = \"b:1\", topic = \"t\" }\n",
            "exactly one",
        ),
        (
            "[[kafka_source]]\nbrokers = \"b:1\"\ntopic = \"t\"\ngroup = \" \"\n",
            "`group` is empty",
        ),
        (
            "[[kafka_source]]\nbrokers = \"b:1\"\ntopic = \"t\"\ngroup = \"g\"\n\
             properties = { \"enable.auto.offset.store\" = \"true\" }\n",
            "set by Thoth",
        ),
    ];
    for (toml, expected) in cases {
        let err = interface::EngineConfig::from_toml(toml)
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "{toml}: {err}");
    }
}
