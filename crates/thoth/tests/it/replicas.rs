//! Terminology replicas and orchestration: `/readyz`, the drain on SIGTERM, `thoth serve --read-only` over a
//! shared data directory, and a new SNOMED CT import picked up by running servers.

use crate::{free_port, thoth};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// `thoth --data DATA serve ARGS...` on `http`, logging to `DATA/../<name>.log`.
fn spawn_serve(data: &Path, http: u16, args: &[&str], log_name: &str) -> Child {
    std::fs::create_dir_all(data).unwrap();
    let log = std::fs::File::create(data.parent().unwrap().join(log_name)).unwrap();
    Command::new(env!("CARGO_BIN_EXE_thoth"))
        .arg("--data")
        .arg(data)
        .arg("serve")
        .arg("--http")
        .arg(format!("127.0.0.1:{http}"))
        .args(args)
        .env("RUST_LOG", "info")
        .env("THOTH_OFFLINE", "true")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("spawn thoth serve")
}

/// Status line code and body of a plain HTTP/1.1 GET on a new connection (`None`: the connection was refused).
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).ok()?;
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        tcp,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).ok()?;
    parse_answer(&answer)
}

fn parse_answer(answer: &str) -> Option<(u16, String)> {
    let status = answer.split(' ').nth(1)?.parse().ok()?;
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((status, body))
}

/// Waits until `GET /readyz` answers 200; panics with the log after `within`.
fn wait_ready(port: u16, log: &Path, within: Duration) {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if get(port, "/readyz").is_some_and(|(s, _)| s == 200) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "not ready within {within:?}; log:\n{}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

fn terminate(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits for the process to exit, at most `within`.
fn wait_exit(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn adt() -> Vec<u8> {
    crate::sample("ADT-A01-01.hl7")
}

#[test]
fn sigterm_drains_the_request_in_flight_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let (http, mllp) = (free_port(), free_port());
    let mut child = spawn_serve(
        &data,
        http,
        &[
            "--mllp",
            &format!("127.0.0.1:{mllp}"),
            "--drain-delay",
            "1.5",
            "--drain-timeout",
            "30",
        ],
        "serve.log",
    );
    wait_ready(http, &log, Duration::from_secs(120));
    assert_eq!(get(http, "/healthz").unwrap(), (200, "ok\n".into()));
    assert!(TcpStream::connect(("127.0.0.1", mllp)).is_ok());

    // A slow request: its headers and half its body now, the rest after the signal.
    let body = adt();
    let (first, rest) = body.split_at(body.len() / 2);
    let mut slow = TcpStream::connect(("127.0.0.1", http)).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write!(
        slow,
        "POST /hl7/validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    slow.write_all(first).unwrap();
    slow.flush().unwrap();
    std::thread::sleep(Duration::from_millis(300));

    terminate(&child);
    // During the drain delay: still accepting, not ready (an OperationOutcome), alive.
    std::thread::sleep(Duration::from_millis(300));
    let (status, outcome) = get(http, "/readyz").expect("still accepting during --drain-delay");
    assert_eq!(status, 503, "{outcome}");
    let outcome: serde_json::Value = serde_json::from_str(&outcome).unwrap();
    assert_eq!(outcome["resourceType"], "OperationOutcome");
    assert_eq!(outcome["issue"][0]["code"], "transient");
    assert!(
        outcome["issue"][0]["diagnostics"]
            .as_str()
            .unwrap()
            .contains("draining"),
        "{outcome}"
    );
    assert_eq!(get(http, "/healthz").unwrap().0, 200);

    // After it: no new HTTP or MLLP connection, while the slow request keeps the process alive.
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", http)).is_ok() {
        assert!(
            Instant::now() < deadline,
            "still accepting HTTP after the drain delay"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        TcpStream::connect(("127.0.0.1", mllp)).is_err(),
        "still accepting MLLP"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "exited with a request in flight"
    );

    slow.write_all(rest).unwrap();
    let mut answer = String::new();
    slow.read_to_string(&mut answer).unwrap();
    let (status, report) = parse_answer(&answer).expect("an HTTP answer");
    assert_eq!(status, 200, "{answer}");
    assert!(report.contains("\"valid\""), "{report}");

    let status = wait_exit(&mut child, Duration::from_secs(20)).expect("exits after the drain");
    assert!(status.success(), "exit status {status}");
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.contains("stopped"), "{log}");
}

#[test]
fn the_drain_timeout_bounds_a_request_that_never_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("serve.log");
    let http = free_port();
    let mut child = spawn_serve(
        &data,
        http,
        &["--read-only", "--drain-timeout", "1", "--http-threads", "1"],
        "serve.log",
    );
    wait_ready(http, &log, Duration::from_secs(120));
    let mut stuck = TcpStream::connect(("127.0.0.1", http)).unwrap();
    write!(
        stuck,
        "POST /hl7/validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\nMSH|"
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let signalled = Instant::now();
    terminate(&child);
    let status = wait_exit(&mut child, Duration::from_secs(15)).expect("exits at the deadline");
    assert!(status.success(), "exit status {status}");
    let took = signalled.elapsed();
    assert!(
        took >= Duration::from_millis(900),
        "did not wait for the request: {took:?}"
    );
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(log.contains("drain deadline"), "{log}");
}

/// Every file under `dir` but those under `except`, with its length and modification time.
fn snapshot(dir: &Path, except: &Path) -> BTreeMap<PathBuf, (u64, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.starts_with(except) {
                continue;
            }
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(path.clone());
            }
            out.insert(path, (meta.len(), meta.modified().unwrap()));
        }
    }
    out
}

/// Concept ids of a generated release: the active ones, or all.
fn concepts(rf2: &Path, active_only: bool) -> Vec<String> {
    let dir = rf2.join("Snapshot/Terminology");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("sct2_Concept_Snapshot")
        })
        .unwrap();
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<_> = l.split('\t').collect();
            (f[2] == "1" || !active_only).then(|| f[0].to_string())
        })
        .collect()
}

fn generate(dir: &Path, concepts: &str, seed: &str) -> PathBuf {
    let out = dir.join(format!("rf2-{concepts}-{seed}"));
    let (ok, _, stderr) = thoth(&[
        "dev",
        "gen-snomed",
        "--concepts",
        concepts,
        "--seed",
        seed,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    out
}

fn import(data: &Path, rf2: &Path) {
    let (ok, _, stderr) = thoth(&[
        "--data",
        data.to_str().unwrap(),
        "import",
        "snomed",
        rf2.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
}

#[test]
fn read_only_replicas_share_a_data_directory_write_nothing_and_follow_a_new_import() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let old = generate(dir.path(), "2000", "1");
    let new = generate(dir.path(), "3000", "1");
    let old_ids = concepts(&old, false);
    let new_ids = concepts(&new, true);
    let both = concepts(&old, true)
        .into_iter()
        .find(|id| new_ids.contains(id))
        .expect("a concept in both releases");
    let only_new = new_ids
        .iter()
        .find(|id| !old_ids.contains(id))
        .expect("a concept only in the new release")
        .clone();
    import(&data, &old);

    let before = snapshot(&data, &data.join("snomed"));
    let snomed_before = snapshot(&data.join("snomed"), Path::new("/nonexistent"));
    let ports = [free_port(), free_port()];
    let mut replicas: Vec<Child> = ports
        .iter()
        .enumerate()
        .map(|(i, port)| {
            // One of them reads each store in before serving it.
            let preload: &[&str] = if i == 0 { &["--preload"] } else { &[] };
            spawn_serve(
                &data,
                *port,
                &[&["--read-only", "--store-check", "0.2"], preload].concat(),
                &format!("replica-{i}.log"),
            )
        })
        .collect();
    for (i, port) in ports.iter().enumerate() {
        wait_ready(
            *port,
            &dir.path().join(format!("replica-{i}.log")),
            Duration::from_secs(120),
        );
    }
    let concept = |port: u16, id: &str| get(port, &format!("/v1/snomed/concepts/{id}")).unwrap();
    for port in ports {
        assert_eq!(concept(port, &both).0, 200);
        assert_eq!(concept(port, &only_new).0, 404);
        // No message store, no writes: the message routes refuse with an OperationOutcome.
        let (status, body) = get(port, "/messages").unwrap();
        assert_eq!(status, 403, "{body}");
        assert!(body.contains("read-only"), "{body}");
        let lookup = get(
            port,
            &format!("/fhir/CodeSystem/$lookup?system=http://snomed.info/sct&code={both}"),
        )
        .unwrap();
        assert_eq!(lookup.0, 200, "{}", lookup.1);
    }
    let replay = reqwest::blocking::Client::new()
        .post(format!("http://127.0.0.1:{}/messages/1/replay", ports[0]))
        .send()
        .unwrap();
    assert_eq!(replay.status(), 403);

    // Readers hammer a concept present in both stores through the import: every answer is whole.
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicU64::new(0));
    let hammers: Vec<_> = ports
        .iter()
        .map(|&port| {
            let (stop, answered, both) = (stop.clone(), answered.clone(), both.clone());
            std::thread::spawn(move || {
                let client = reqwest::blocking::Client::new();
                let url = format!(
                    "http://127.0.0.1:{port}/fhir/CodeSystem/$lookup?system=http://snomed.info/sct&code={both}"
                );
                while !stop.load(Ordering::Relaxed) {
                    let r = client.get(&url).send().unwrap();
                    let status = r.status();
                    let body: serde_json::Value = r.json().unwrap();
                    assert_eq!(status, 200, "{body}");
                    assert_eq!(body["resourceType"], "Parameters", "{body}");
                    answered.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    import(&data, &new);
    let deadline = Instant::now() + Duration::from_secs(60);
    for port in ports {
        while concept(port, &only_new).0 != 200 {
            assert!(
                Instant::now() < deadline,
                "replica on {port} did not pick up the new import"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    for h in hammers {
        h.join().expect("every answer during the swap was whole");
    }
    assert!(answered.load(Ordering::Relaxed) > 10);

    // Nothing outside the store was written; the store is the import's alone.
    assert_eq!(snapshot(&data, &data.join("snomed")), before);
    assert!(!data.join("messages").exists() && !data.join("audit.log").exists());
    assert_ne!(
        snapshot(&data.join("snomed"), Path::new("/nonexistent")),
        snomed_before
    );
    for (i, child) in replicas.iter_mut().enumerate() {
        terminate(child);
        let status = wait_exit(child, Duration::from_secs(30)).expect("replica exits");
        assert!(status.success(), "replica {i}: {status}");
        let log = std::fs::read_to_string(dir.path().join(format!("replica-{i}.log"))).unwrap();
        assert!(log.contains("serving the new import"), "{log}");
        let preloads = log.matches("store read in (--preload)").count();
        assert_eq!(preloads, if i == 0 { 2 } else { 0 }, "{log}");
    }
}
