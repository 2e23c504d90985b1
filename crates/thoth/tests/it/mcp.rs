//! The MCP server (`thoth mcp` on stdio, `POST /mcp` on `thoth serve`) driven by the official MCP Python SDK
//! (`mcp_client.py`, PyPI `mcp`, installed by scripts/test.sh): every tool on the conformance SNOMED CT subset, the
//! LOINC subset, ICD-10-CM and a shared v2 message, each answer compared with the HTTP API's, for clients of the
//! current (stateless) revision and of the earlier ones (the initialize handshake); then the message tools under
//! `--auth`: only a caller with the messages:read scope gets message data.

use crate::{Server, free_port, sample};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn shared() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    assert!(
        p.join("tx-ecosystem/tx-source/snomed").is_dir(),
        "../shared (the conformance SNOMED CT subset) is missing beside the repository: {}",
        p.display()
    );
    p
}

fn thoth(data: &Path, args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_thoth"))
        .arg("--data")
        .arg(data)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "thoth {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The Python client against `url`, with extra arguments; panics with its output when it fails.
fn client(data: &Path, url: &str, message: &Path, extra: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/mcp_client.py");
    let out = Command::new("python3")
        .arg(script)
        .args(["--thoth", env!("CARGO_BIN_EXE_thoth")])
        .arg("--data")
        .arg(data)
        .args(["--url", url])
        .arg("--message")
        .arg(message)
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .expect(
            "python3 runs the MCP client (scripts/test.sh installs python3 and the `mcp` package)",
        );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the MCP Python client failed:\n{stderr}"
    );
    eprintln!("{stderr}");
}

#[test]
fn the_official_python_sdk_gets_the_http_apis_answers_over_stdio_and_http() {
    let data = tempfile::tempdir().unwrap();
    let d = data.path();
    let shared = shared();
    let path = |p: &str| shared.join(p).to_str().unwrap().to_string();
    thoth(
        d,
        &["import", "snomed", &path("tx-ecosystem/tx-source/snomed")],
    );
    thoth(
        d,
        &["import", "loinc", &path("tx-ecosystem/tx-source/loinc")],
    );
    thoth(
        d,
        &[
            "import",
            "icd10cm",
            &path("data/icd10cm/icd10c-tabular-April-1-2026.xml.gz"),
        ],
    );
    let message = d.join("adt.hl7");
    std::fs::write(&message, sample("ADT-A01-01.hl7")).unwrap();

    // The engine receives the message over MLLP, so that the message tools have something to find.
    let mut server = Server::start(d, free_port(), free_port(), None);
    let out = Command::new(env!("CARGO_BIN_EXE_thoth"))
        .args(["mllp", "send", &format!("127.0.0.1:{}", server.mllp)])
        .arg(&message)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    client(d, &server.url(""), &message, &[]);
    server.terminate();

    // The same data behind --auth: the token "reader" (SHA-256 below) may read messages, "other" may only replay.
    let auth = d.join("auth.toml");
    std::fs::write(
        &auth,
        "[auth]\n\
         [[auth.tokens]]\nname = \"reader\"\nsha256 = \"3d0941964aa3ebdcb00ccef58b1bb399f9f898465e9886d5aec7f31090a0fb30\"\nscopes = [\"messages:read\"]\n\
         [[auth.tokens]]\nname = \"other\"\nsha256 = \"d9298a10d1b0735837dc4bd85dac641b0f3cef27a47e5d53a54f2f3f5b2fcffa\"\nscopes = [\"messages:replay\"]\n",
    )
    .unwrap();
    let (http, mllp) = (free_port(), free_port());
    let log = std::fs::File::create(d.join("serve-auth.log")).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_thoth"))
        .arg("--data")
        .arg(d)
        .args(["serve", "--http", &format!("127.0.0.1:{http}")])
        .args(["--mllp", &format!("127.0.0.1:{mllp}")])
        .arg("--auth")
        .arg(&auth)
        .env("RUST_LOG", "warn")
        .env("THOTH_OFFLINE", "true")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let server = Server::adopt(child, d, http, mllp);
    client(
        d,
        &server.url(""),
        &message,
        &["--reader-token", "reader", "--other-token", "other"],
    );
    drop(server);
}
