//! kill -9 during a load: every acknowledged message must be in the store after the restart and delivered
//! downstream. `THOTH_CRASH_MESSAGES` sets the load (CI: 2,000; bench/mllp runs 100,000 in release mode).

use crate::{Server, free_port, sample, with_control_id};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Counts what the downstream receiver got, per control ID.
#[derive(Default)]
struct Downstream {
    seen: Mutex<HashMap<String, usize>>,
}

impl mllp::Handler for Downstream {
    async fn handle(&self, inbound: mllp::Inbound, _peer: &mllp::Peer) -> mllp::Reply {
        let mllp::Inbound::Message(raw) = inbound else {
            return mllp::Reply::default();
        };
        let msg = hl7v2::Message::parse(&raw);
        let id = msg.get("MSH-10").unwrap_or_default().into_owned();
        *self.seen.lock().unwrap().entry(id).or_default() += 1;
        mllp::Reply {
            payload: Some(msg.ack(hl7v2::AckCode::AA).build().into()),
            committed: true,
        }
    }
}

/// Every stored message's (control ID, status), through the HTTP API.
fn stored(server: &Server) -> Vec<(String, String)> {
    let http = reqwest::blocking::Client::new();
    let mut out = Vec::new();
    loop {
        let page: serde_json::Value = http
            .get(server.url("/messages"))
            .query(&[("limit", "1000"), ("offset", &out.len().to_string())])
            .send()
            .unwrap()
            .json()
            .unwrap();
        let items = page["items"].as_array().unwrap();
        if items.is_empty() {
            return out;
        }
        for m in items {
            out.push((
                m["control_id"].as_str().unwrap().to_string(),
                m["status"].as_str().unwrap().to_string(),
            ));
        }
    }
}

fn pending(server: &Server) -> u64 {
    let page: serde_json::Value = reqwest::blocking::Client::new()
        .get(server.url("/messages"))
        .query(&[("limit", "0"), ("status", "pending")])
        .send()
        .unwrap()
        .json()
        .unwrap();
    page["total"].as_u64().unwrap()
}

#[test]
fn kill_9_during_load_loses_no_acknowledged_message() {
    let total: usize = std::env::var("THOTH_CRASH_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let connections = 4;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let data = tempfile::tempdir().unwrap();

    // The downstream system, in this process.
    let downstream = Arc::new(Downstream::default());
    let down_addr = runtime.block_on(async {
        let l = mllp::Listener::bind("127.0.0.1:0".parse().unwrap(), Default::default())
            .await
            .unwrap();
        let addr = l.local_addr();
        tokio::spawn(l.serve(downstream.clone(), std::future::pending()));
        addr
    });
    let config = data.path().join("thoth.toml");
    std::fs::write(
        &config,
        format!(
            "[delivery]\ninitial_backoff_ms = 20\nmax_backoff_ms = 200\nmax_attempts = 100000\n\
             [[route]]\nname = \"downstream\"\nmllp = \"{down_addr}\"\n"
        ),
    )
    .unwrap();

    let (http, mllp_port) = (free_port(), free_port());
    let mut server = Server::start(data.path(), http, mllp_port, Some(&config));
    let template = sample("ADT-A01-01.hl7");
    let acked: Arc<Mutex<HashSet<String>>> = Arc::default();
    let acked_count = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let addr = format!("127.0.0.1:{mllp_port}");
    let deadline = Instant::now() + Duration::from_secs(600);

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
                let mut resent = 0usize;
                for i in (c..total).step_by(connections) {
                    let id = format!("CRASH-{i}");
                    let msg = with_control_id(&template, &id);
                    let mut first = true;
                    loop {
                        assert!(Instant::now() < deadline, "load did not finish in time");
                        if client.is_none() {
                            match mllp::Client::connect(&addr, Default::default()).await {
                                Ok(cl) => client = Some(cl),
                                Err(_) => {
                                    tokio::time::sleep(Duration::from_millis(20)).await;
                                    continue;
                                }
                            }
                        }
                        if !first {
                            resent += 1;
                        }
                        first = false;
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
                resent
            })
        })
        .collect();

    // Kill in the middle of the load.
    while acked_count.load(Ordering::SeqCst) < total / 2 {
        std::thread::sleep(Duration::from_millis(2));
    }
    server.kill9();
    let acked_before_kill: HashSet<String> = acked.lock().unwrap().clone();
    let server = Server::start(data.path(), http, mllp_port, Some(&config));
    let after_restart: HashSet<String> = stored(&server).into_iter().map(|(id, _)| id).collect();
    let lost: Vec<_> = acked_before_kill.difference(&after_restart).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged messages lost in the crash, e.g. {:?}",
        lost.len(),
        lost.iter().take(5).collect::<Vec<_>>()
    );

    let resent: usize = senders
        .into_iter()
        .map(|s| runtime.block_on(s).unwrap())
        .sum();
    done.store(true, Ordering::SeqCst);
    assert_eq!(acked_count.load(Ordering::SeqCst), total);

    // Every message reaches the downstream system.
    let wait_until = Instant::now() + Duration::from_secs(300);
    while pending(&server) > 0 {
        assert!(
            Instant::now() < wait_until,
            "deliveries still pending after 300 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let all = stored(&server);
    let seen = downstream.seen.lock().unwrap().clone();
    let missing: Vec<_> = (0..total)
        .map(|i| format!("CRASH-{i}"))
        .filter(|id| !seen.contains_key(id))
        .collect();
    assert!(
        missing.is_empty(),
        "{} messages never delivered downstream, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    let stored_dups = all.iter().filter(|(_, s)| s == "duplicate").count();
    let downstream_dups: usize = seen.values().map(|n| n - 1).sum();
    assert!(
        all.iter()
            .all(|(_, s)| s == "delivered" || s == "duplicate"),
        "unexpected statuses"
    );
    eprintln!(
        "crash test: {total} messages over {connections} connections, killed after {} ACKs; 0 lost; \
         {resent} resent after the kill, {stored_dups} stored as duplicates (not forwarded), \
         {downstream_dups} delivered downstream twice",
        acked_before_kill.len()
    );
    drop(server);
}
