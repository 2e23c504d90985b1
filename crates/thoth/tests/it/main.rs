//! End-to-end tests of the `thoth` binary: real processes, real sockets.
#![allow(missing_docs)]

mod config_docs;
mod crash;
mod data_option;
mod fhir_cli;
mod fhir_protoc;
mod hl7_cli;
mod hl7apy_verdicts;
mod kafka;
mod mcp;
mod replicas;
mod serve;
mod terminology;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free loopback port (bound and released; good enough on a test machine).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `thoth serve` on `data` with the given ports and configuration; stderr goes to `data/serve.log`.
pub struct Server {
    pub child: Child,
    pub http: u16,
    pub mllp: u16,
}

impl Server {
    pub fn start(data: &Path, http: u16, mllp: u16, config: Option<&Path>) -> Server {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(data.join("serve.log"))
            .unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_thoth"));
        cmd.arg("--data")
            .arg(data)
            .arg("serve")
            .arg("--http")
            .arg(format!("127.0.0.1:{http}"))
            .arg("--mllp")
            .arg(format!("127.0.0.1:{mllp}"))
            .env("RUST_LOG", "warn")
            .env("THOTH_OFFLINE", "true")
            .stdout(Stdio::null())
            .stderr(log);
        if let Some(c) = config {
            cmd.arg("--config").arg(c);
        }
        let child = cmd.spawn().expect("spawn thoth serve");
        Server::adopt(child, data, http, mllp)
    }

    /// A `thoth serve` started by the caller (logging to `data/serve.log`), once it listens.
    pub fn adopt(child: Child, data: &Path, http: u16, mllp: u16) -> Server {
        let server = Server { child, http, mllp };
        server.wait_ready(data);
        server
    }

    fn wait_ready(&self, data: &Path) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            let up = |p: u16| std::net::TcpStream::connect(("127.0.0.1", p)).is_ok();
            if up(self.mllp) && up(self.http) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let log = std::fs::read_to_string(data.join("serve.log")).unwrap_or_default();
        panic!("thoth serve did not start listening within 120 s; its log:\n{log}");
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.http)
    }

    /// The JSON answer to `GET path`.
    pub fn get_json(&self, path: &str) -> serde_json::Value {
        reqwest::blocking::get(self.url(path))
            .unwrap()
            .json()
            .unwrap()
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM and wait for a clean exit.
    pub fn terminate(&mut self) {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let status = self.child.wait().unwrap();
        assert!(
            status.success(),
            "thoth serve exited with {status} after SIGTERM"
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `shared/data/hl7v2/fhir-converter/<name>` with CR line ends.
pub fn sample(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/hl7v2/fhir-converter")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "test data {} is missing ({e}): the tests need ../shared beside the checkout",
            path.display()
        )
    });
    let text = String::from_utf8_lossy(&bytes)
        .replace("\r\n", "\r")
        .replace('\n', "\r");
    format!("{}\r", text.trim_end_matches('\r')).into_bytes()
}

/// `raw` with MSH-10 set to `id`.
pub fn with_control_id(raw: &[u8], id: &str) -> Vec<u8> {
    let mut buf = hl7v2::MessageBuf::from(&hl7v2::Message::parse(raw)).into_owned();
    buf.set("MSH-10", id).unwrap();
    buf.encode()
}

/// Runs the `thoth` binary with `args`: whether it succeeded, its stdout and its stderr.
pub fn thoth(args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_thoth"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
