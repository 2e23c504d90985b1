//! `thoth serve` with MLLP and the message API, and the `thoth mllp` / `thoth messages` commands against it.

use crate::{Server, free_port, sample, thoth, with_control_id};
use std::process::Command;

#[test]
fn send_list_show_replay_and_bench_end_to_end() {
    let data = tempfile::tempdir().unwrap();
    let out = data.path().join("out");
    let config = data.path().join("thoth.toml");
    std::fs::write(
        &config,
        format!("[[route]]\nname = \"files\"\ntypes = [\"ADT\"]\ndir = {out:?}\n"),
    )
    .unwrap();
    let mut server = Server::start(data.path(), free_port(), free_port(), Some(&config));
    let mllp = format!("127.0.0.1:{}", server.mllp);
    let url = server.url("");

    // `thoth mllp send` with a file holding two messages (LF line ends, as files usually have).
    let file = data.path().join("two.hl7");
    let a = with_control_id(&sample("ADT-A01-01.hl7"), "E2E-1");
    let b = with_control_id(&sample("ORU-R01-01.hl7"), "E2E-2");
    let mut text = [a.clone(), b].concat();
    text.iter_mut().for_each(|c| {
        if *c == b'\r' {
            *c = b'\n'
        }
    });
    std::fs::write(&file, &text).unwrap();
    let (ok, stdout, stderr) = thoth(&["mllp", "send", &mllp, file.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("MSA|AA|E2E-1"), "{stdout}");
    assert!(stdout.contains("MSA|CA|E2E-2"), "{stdout}");

    // The HTTP API: filters and the total.
    let http = reqwest::blocking::Client::new();
    let page: serde_json::Value = http
        .get(format!("{url}/messages?type=ADT"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(page["total"], 1);
    let id = page["items"][0]["id"].as_u64().unwrap();
    let one: serde_json::Value = http
        .get(format!("{url}/messages/{id}"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(one["control_id"], "E2E-1");
    assert_eq!(one["message"]["segments"][0]["id"], "MSH");
    assert_eq!(
        http.get(format!("{url}/messages/{id}/raw"))
            .send()
            .unwrap()
            .bytes()
            .unwrap()
            .to_vec(),
        a
    );
    let bad = http
        .get(format!("{url}/messages?status=lost"))
        .send()
        .unwrap();
    assert_eq!(bad.status(), 400);
    let body: serde_json::Value = bad.json().unwrap();
    assert_eq!(body["resourceType"], "OperationOutcome");
    assert_eq!(
        http.get(format!("{url}/messages/424242"))
            .send()
            .unwrap()
            .status(),
        404
    );
    assert_eq!(
        http.get(format!("{url}/messages/abc"))
            .send()
            .unwrap()
            .status(),
        400
    );

    // The CLI over the same API.
    let (ok, stdout, stderr) = thoth(&["messages", "--server", &url, "list", "--type", "ADT"]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("E2E-1") && stdout.contains("1 shown of 1 matching"),
        "{stdout}"
    );
    for _ in 0..200 {
        if std::fs::read_dir(&out).map(|d| d.count()).unwrap_or(0) == 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (ok, stdout, stderr) = thoth(&["messages", "--server", &url, "show", &id.to_string()]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("route files: delivered"), "{stdout}");
    let (ok, stdout, stderr) = thoth(&["messages", "--server", &url, "replay", &id.to_string()]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("queued again on: files"), "{stdout}");
    let (ok, _, stderr) = thoth(&["messages", "--server", &url, "show", "999999"]);
    assert!(!ok && stderr.contains("404"), "{stderr}");

    // `thoth mllp bench` reports rate and percentiles.
    let one_file = data.path().join("one.hl7");
    std::fs::write(&one_file, &a).unwrap();
    let (ok, stdout, stderr) = thoth(&[
        "mllp",
        "bench",
        &mllp,
        "--connections",
        "2",
        "--messages",
        "200",
        "--warmup",
        "5",
        "--file",
        one_file.to_str().unwrap(),
        "--json",
    ]);
    assert!(ok, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["messages"], 200);
    assert_eq!(report["errors"], 0);
    assert!(report["p99_ms"].as_f64().unwrap() >= report["p50_ms"].as_f64().unwrap());

    // SIGTERM stops both listeners cleanly.
    server.terminate();
}

#[test]
fn messages_cli_sends_its_token_to_a_server_started_with_auth() {
    let data = tempfile::tempdir().unwrap();
    let auth = data.path().join("auth.toml");
    // The SHA-256 of "test": the file holds no secret.
    std::fs::write(
        &auth,
        "[auth]\n[[auth.tokens]]\nname = \"cli\"\nsha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"\nscopes = [\"messages:read\"]\n",
    )
    .unwrap();
    let (http, mllp) = (free_port(), free_port());
    let log = std::fs::File::create(data.path().join("serve.log")).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_thoth"))
        .arg("--data")
        .arg(data.path())
        .args(["serve", "--http", &format!("127.0.0.1:{http}")])
        .args(["--mllp", &format!("127.0.0.1:{mllp}")])
        .arg("--auth")
        .arg(&auth)
        .env("RUST_LOG", "warn")
        .env("THOTH_OFFLINE", "true")
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let server = Server::adopt(child, data.path(), http, mllp);
    let url = server.url("");
    let run = |token: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_thoth"));
        cmd.args(["messages", "--server", &url, "list"])
            .env_remove("THOTH_TOKEN");
        if let Some(t) = token {
            cmd.env("THOTH_TOKEN", t);
        }
        let out = cmd.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, stderr) = run(None);
    assert!(!ok && stderr.contains("401"), "without a token: {stderr}");
    let (ok, stderr) = run(Some("wrong"));
    assert!(!ok && stderr.contains("401"), "a wrong token: {stderr}");
    let (ok, stderr) = run(Some("test"));
    assert!(ok, "the configured token: {stderr}");
    drop(server);
}

#[test]
fn serve_on_a_network_address_needs_access_control_or_an_explicit_opt_out() {
    let data = tempfile::tempdir().unwrap();
    let http = format!("0.0.0.0:{}", free_port());
    let out = Command::new(env!("CARGO_BIN_EXE_thoth"))
        .arg("--data")
        .arg(data.path())
        .args([
            "serve",
            "--http",
            &http,
            "--mllp",
            &format!("127.0.0.1:{}", free_port()),
        ])
        .env("THOTH_OFFLINE", "true")
        .env_remove("THOTH_AUTH")
        .env_remove("THOTH_INSECURE_OPEN_MESSAGES")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "started without access control on {http}"
    );
    assert!(
        stderr.contains("refusing to listen on")
            && stderr.contains("--auth")
            && stderr.contains("--insecure-open-messages"),
        "{stderr}"
    );
}

#[test]
fn mllp_send_honours_msh15_and_reads_each_ack_as_its_own() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(data.path(), free_port(), free_port(), None);
    let mllp = format!("127.0.0.1:{}", server.mllp);
    // MSH-15 `NE`: the receiver sends no accept acknowledgement, so the sender must not wait for one.
    let mut none =
        hl7v2::MessageBuf::from(&hl7v2::Message::parse(&sample("ADT-A01-01.hl7"))).into_owned();
    none.set("MSH-10", "SEND-NE").unwrap();
    none.set("MSH-15", "NE").unwrap();
    // A control id longer than the list's default column, to see the columns stay lined up.
    let after = with_control_id(
        &sample("ADT-A01-01.hl7"),
        "SEND-AFTER-WITH-A-LONG-CONTROL-ID",
    );
    let first = data.path().join("first.hl7");
    let second = data.path().join("second.hl7");
    std::fs::write(&first, none.encode()).unwrap();
    std::fs::write(&second, &after).unwrap();
    let started = std::time::Instant::now();
    let (ok, stdout, stderr) = thoth(&[
        "mllp",
        "send",
        &mllp,
        first.to_str().unwrap(),
        second.to_str().unwrap(),
        "--timeout",
        "20",
    ]);
    assert!(ok, "{stderr}");
    assert!(
        started.elapsed().as_secs() < 15,
        "waited for an ACK that MSH-15 said would not come"
    );
    assert!(
        stdout.contains("SEND-NE") && stdout.contains("no acknowledgement"),
        "{stdout}"
    );
    assert!(stdout.contains("MSA|AA|SEND-AFTER"), "{stdout}");
    assert!(
        stderr.contains("2 sent")
            && stderr.contains("1 accepted")
            && stderr.contains("1 not waited for"),
        "{stderr}"
    );
    // Both were stored by the engine.
    let page: serde_json::Value = reqwest::blocking::get(server.url("/messages"))
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(page["total"], 2, "{page}");
    // `messages list` lines its columns up whatever the widths of the values (a long control id here).
    let (ok, stdout, stderr) = thoth(&["messages", "--server", &server.url(""), "list"]);
    assert!(ok, "{stderr}");
    let rows: Vec<&str> = stdout.lines().take(3).collect();
    // The status is the last column and a single word: it starts after the last space of each row.
    let status_at = |row: &str| row.rfind(' ').map(|i| i + 1);
    assert!(rows.len() == 3 && rows[0].ends_with("status"), "{stdout}");
    assert!(
        rows.iter().all(|r| status_at(r) == status_at(rows[0])),
        "{stdout}"
    );
    // An address that reads as a file is a file: no address given means `thoth serve`'s default, and a
    // missing file is reported by name.
    let (ok, _, stderr) = thoth(&["mllp", "send", "no-such-file.hl7"]);
    assert!(!ok && stderr.contains("no-such-file.hl7"), "{stderr}");
}
