//! `thoth import fhir-package|loinc|icd10cm` and `thoth serve` fetching its open content, against a package
//! registry served from ../shared/data/fhir/packages on a local socket (the tests never use the internet).

use crate::{Server, free_port};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn shared() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    assert!(
        p.join("data/fhir/packages").is_dir(),
        "../shared/data/fhir/packages is missing beside the repository: {}",
        p.display()
    );
    p
}

fn thoth(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_thoth"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A minimal npm-style registry: `GET /<name>/<version>` answers metadata whose `dist.tarball` points back here,
/// `GET /-/<name>-<version>.tgz` the bytes `tarball(name)` gives (None: 404). Counts tarball downloads.
struct Registry {
    url: String,
    downloads: Arc<AtomicUsize>,
}

impl Registry {
    fn start(tarball: fn(&str) -> Option<Vec<u8>>) -> Registry {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let downloads = Arc::new(AtomicUsize::new(0));
        let (base, count) = (url.clone(), downloads.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut line = String::new();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                // Drain the headers.
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).unwrap_or(0) <= 2 {
                        break;
                    }
                }
                let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                let (status, body, kind) = if let Some(file) = path.strip_prefix("/-/") {
                    let name = file.rsplit_once('-').map(|(n, _)| n).unwrap_or("");
                    count.fetch_add(1, Ordering::SeqCst);
                    match tarball(name) {
                        Some(b) => ("200 OK", b, "application/octet-stream"),
                        None => ("404 Not Found", Vec::new(), "text/plain"),
                    }
                } else {
                    let mut parts = path.trim_start_matches('/').splitn(2, '/');
                    let (name, version) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                    match tarball(name) {
                        Some(b) => {
                            let meta = serde_json::json!({"name": name, "version": version, "dist": {
                                "tarball": format!("{base}/-/{name}-{version}.tgz"),
                                "integrity": format!("sha512-of-{}-bytes", b.len()),
                            }});
                            ("200 OK", meta.to_string().into_bytes(), "application/json")
                        }
                        None => ("404 Not Found", Vec::new(), "text/plain"),
                    }
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body);
            }
        });
        Registry { url, downloads }
    }
}

fn package_file(name: &str) -> Option<Vec<u8>> {
    let file = match name {
        "hl7.terminology.r4" => "hl7.terminology.r4-7.0.1.tgz",
        _ => return None,
    };
    Some(std::fs::read(shared().join("data/fhir/packages").join(file)).unwrap())
}

/// Serves the R4 examples package's bytes under the terminology package's name: a tampered download.
fn wrong_file(name: &str) -> Option<Vec<u8>> {
    (name == "hl7.terminology.r4").then(|| {
        let mut b = package_file(name).unwrap();
        let last = b.len() - 1;
        b[last] ^= 1;
        b
    })
}

#[test]
fn fhir_package_is_downloaded_checked_against_its_pin_and_cached() {
    let registry = Registry::start(package_file);
    let data = tempfile::tempdir().unwrap();
    let d = data.path().to_str().unwrap();
    let (ok, stdout, stderr) = thoth(&[
        "--data",
        d,
        "import",
        "fhir-package",
        "hl7.terminology.r4@7.0.1",
        "--registry",
        &registry.url,
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("imported"), "{stdout}");
    let cached = data.path().join("packages/hl7.terminology.r4-7.0.1.tgz");
    assert_eq!(
        std::fs::read(&cached).unwrap(),
        package_file("hl7.terminology.r4").unwrap()
    );
    assert_eq!(registry.downloads.load(Ordering::SeqCst), 1);

    // Again: served from the cache, the registry is not asked for the tarball.
    let (ok, stdout, stderr) = thoth(&[
        "--data",
        d,
        "import",
        "fhir-package",
        "hl7.terminology.r4@7.0.1",
        "--registry",
        &registry.url,
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("already cached"), "{stdout}");
    assert_eq!(registry.downloads.load(Ordering::SeqCst), 1);
}

#[test]
fn a_download_that_does_not_match_the_pinned_checksum_is_refused() {
    let registry = Registry::start(wrong_file);
    let data = tempfile::tempdir().unwrap();
    let d = data.path().to_str().unwrap();
    let (ok, _, stderr) = thoth(&[
        "--data",
        d,
        "import",
        "fhir-package",
        "hl7.terminology.r4@7.0.1",
        "--registry",
        &registry.url,
    ]);
    assert!(!ok);
    assert!(stderr.contains("does not match its checksum"), "{stderr}");
    assert_eq!(registry.downloads.load(Ordering::SeqCst), 1);
    let packages = data.path().join("packages");
    let left: Vec<_> = std::fs::read_dir(&packages)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "nothing is cached: {left:?}");
}

#[test]
fn serve_fetches_open_content_and_starts_without_what_it_cannot_get() {
    // The registry has the terminology package but not the R4 one: serve fetches one, says the other is
    // missing, and answers with what it has.
    let registry = Registry::start(package_file);
    let data = tempfile::tempdir().unwrap();
    let (http, mllp) = (free_port(), free_port());
    let log = std::fs::File::create(data.path().join("serve.log")).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_thoth"))
        .arg("--data")
        .arg(data.path())
        .args([
            "serve",
            "--http",
            &format!("127.0.0.1:{http}"),
            "--mllp",
            &format!("127.0.0.1:{mllp}"),
        ])
        .args(["--package-registry", &registry.url])
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let server = Server::adopt(child, data.path(), http, mllp);
    let answer: serde_json::Value = reqwest::blocking::get(server.url(
        "/fhir/CodeSystem/$lookup?system=http://terminology.hl7.org/CodeSystem/v3-ActCode&code=AMB",
    ))
    .unwrap()
    .json()
    .unwrap();
    assert!(answer.to_string().contains("ambulatory"), "{answer}");
    let log = std::fs::read_to_string(data.path().join("serve.log")).unwrap();
    assert!(
        log.contains("hl7.fhir.r4.examples@4.0.1 is missing"),
        "the log names what is missing: {log}"
    );
    // The built-in code systems' data is not there either: BCP-47 tags are validated without its displays.
    assert!(
        log.contains("language-subtag-registry@0.4.2 is missing and could not be fetched"),
        "the log names the missing registry data: {log}"
    );
    let answer: serde_json::Value = reqwest::blocking::get(
        server.url("/fhir/CodeSystem/$validate-code?url=urn:ietf:bcp:47&code=de-CH"),
    )
    .unwrap()
    .json()
    .unwrap();
    assert!(
        answer.to_string().contains(r#""valueBoolean":true"#),
        "{answer}"
    );
    assert!(
        data.path()
            .join("packages/hl7.terminology.r4-7.0.1.tgz")
            .exists()
    );
}

#[test]
fn imported_loinc_and_icd10cm_are_served_after_a_restart() {
    let data = tempfile::tempdir().unwrap();
    let d = data.path().to_str().unwrap();
    let loinc = shared().join("tx-ecosystem/tx-source/loinc");
    let (ok, stdout, stderr) = thoth(&["--data", d, "import", "loinc", loinc.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("322 terms"), "{stdout}");
    assert!(data.path().join("terminology/loinc.store").exists());
    let icd = shared().join("data/icd10cm/icd10c-tabular-April-1-2026.xml.gz");
    let (ok, stdout, stderr) = thoth(&["--data", d, "import", "icd10cm", icd.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("ICD-10-CM 2026"), "{stdout}");

    let server = Server::start(data.path(), free_port(), free_port(), None);
    let get = |path: &str| -> serde_json::Value {
        reqwest::blocking::get(server.url(path))
            .unwrap()
            .json()
            .unwrap()
    };
    let a = get("/fhir/CodeSystem/$validate-code?url=http://loinc.org&code=14394-1");
    assert!(
        a.to_string()
            .contains("Urea nitrogen [Mass/volume] in Pleural fluid"),
        "{a}"
    );
    let a = get("/fhir/CodeSystem/$lookup?system=http://hl7.org/fhir/sid/icd-10-cm&code=S00.00XA");
    assert!(a.to_string().contains("initial encounter"), "{a}");
    let a = get(
        "/fhir/ValueSet/$validate-code?url=http://hl7.org/fhir/sid/icd-10-cm/vs&system=http://hl7.org/fhir/sid/icd-10-cm&code=E11.9",
    );
    assert_eq!(
        a["parameter"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "result")
            .unwrap()["valueBoolean"],
        true,
        "{a}"
    );
    let a = get("/fhir/ValueSet/$expand?url=http://loinc.org/vs/LL744-4");
    assert_eq!(a["expansion"]["total"], 2, "{a}");
    let a = get("/fhir/CodeSystem/$lookup?system=http://loinc.org&code=14394-1&property=COMPONENT");
    assert!(a.to_string().contains("LP"), "the axis as a part: {a}");
    let a = get("/fhir/CodeSystem/loinc");
    assert_eq!(a["url"], "http://loinc.org", "{a}");
    assert!(
        a.get("concept").is_none(),
        "read gives the metadata, not the store"
    );
}

#[test]
fn importing_loinc_again_replaces_the_json_form_of_earlier_versions() {
    let data = tempfile::tempdir().unwrap();
    let d = data.path().to_str().unwrap();
    let loinc = shared().join("tx-ecosystem/tx-source/loinc");
    let old = data.path().join("terminology/loinc.json");
    let import = terminology::import_loinc(&loinc, None).unwrap();
    terminology::write_bundle(&old, import.resources).unwrap();
    let (ok, stdout, stderr) = thoth(&["--data", d, "import", "loinc", loinc.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("removed the JSON form of LOINC"),
        "{stdout}"
    );
    assert!(!old.exists());
    assert!(data.path().join("terminology/loinc.store").exists());
}

#[test]
fn a_missing_loinc_directory_is_an_error_not_a_crash() {
    let data = tempfile::tempdir().unwrap();
    let (ok, _, stderr) = thoth(&[
        "--data",
        data.path().to_str().unwrap(),
        "import",
        "loinc",
        "/nonexistent",
    ]);
    assert!(!ok);
    assert!(stderr.contains("not a LOINC release directory"), "{stderr}");
}
