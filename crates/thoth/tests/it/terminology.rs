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
/// `GET /-/<name>-<version>.tgz` the bytes `tarball(name)` gives (None: 404), and `GET /files/<file>` (a plain
/// file server, as PyPI's) the bytes `tarball(file)` gives. Counts tarball and file downloads.
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
                let (status, body, kind) = if let Some(file) = path.strip_prefix("/files/") {
                    count.fetch_add(1, Ordering::SeqCst);
                    match tarball(file) {
                        Some(b) => ("200 OK", b, "application/octet-stream"),
                        None => ("404 Not Found", Vec::new(), "text/plain"),
                    }
                } else if let Some(file) = path.strip_prefix("/-/") {
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
        "icd10cm.whl" => return Some(icd10cm_wheel().to_vec()),
        _ => return None,
    };
    Some(std::fs::read(shared().join("data/fhir/packages").join(file)).unwrap())
}

/// A zip laid out as the PyPI wheel that carries CDC's tabular XML, made from ../shared's copy of that XML.
fn icd10cm_wheel() -> &'static [u8] {
    static WHEEL: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    WHEEL.get_or_init(|| {
        let gz = std::fs::read(shared().join("data/icd10cm/icd10c-tabular-April-1-2026.xml.gz"))
            .unwrap();
        let mut xml = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut xml).unwrap();
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("simple_icd_10_cm/__init__.py", options)
            .unwrap();
        zip.start_file(
            "simple_icd_10_cm/data/icd10c-tabular-April-1-2026.xml",
            options,
        )
        .unwrap();
        zip.write_all(&xml).unwrap();
        zip.finish().unwrap().into_inner()
    })
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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

/// `thoth serve` on `data`, fetching missing open content from `registry` and ICD-10-CM from `icd10cm_url`,
/// its log (at info) to `log`.
fn serve_with_sources(
    data: &std::path::Path,
    registry: &str,
    icd10cm_url: &str,
    log: std::process::Stdio,
) -> Server {
    let (http, mllp) = (free_port(), free_port());
    let child = Command::new(env!("CARGO_BIN_EXE_thoth"))
        .arg("--data")
        .arg(data)
        .args(["serve", "--http", &format!("127.0.0.1:{http}")])
        .args(["--mllp", &format!("127.0.0.1:{mllp}")])
        .args(["--package-registry", registry, "--icd10cm-url", icd10cm_url])
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    Server::adopt(child, data, http, mllp)
}

#[test]
fn serve_fetches_open_content_and_starts_without_what_it_cannot_get() {
    // The registry has the terminology package but not the R4 one: serve fetches one, says the other is
    // missing, and answers with what it has.
    let registry = Registry::start(package_file);
    let data = tempfile::tempdir().unwrap();
    let log = std::fs::File::create(data.path().join("serve.log")).unwrap();
    let server = serve_with_sources(
        data.path(),
        &registry.url,
        &format!("{}/files/missing.whl", registry.url),
        log.into(),
    );
    let answer = server.get_json(
        "/fhir/CodeSystem/$lookup?system=http://terminology.hl7.org/CodeSystem/v3-ActCode&code=AMB",
    );
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
    assert!(
        log.contains("ICD-10-CM is missing and could not be fetched"),
        "the log names ICD-10-CM as missing: {log}"
    );
    let answer = server.get_json("/fhir/CodeSystem/$validate-code?url=urn:ietf:bcp:47&code=de-CH");
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
    let (ok, stdout, stderr) = thoth(&["import", "icd10cm", "--data", d, icd.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("ICD-10-CM 2026"), "{stdout}");

    let server = Server::start(data.path(), free_port(), free_port(), None);
    let get = |path: &str| server.get_json(path);
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

#[test]
fn icd10cm_is_downloaded_checked_against_its_checksum_and_imported_once() {
    let registry = Registry::start(package_file);
    let data = tempfile::tempdir().unwrap();
    let d = data.path().to_str().unwrap();
    let url = format!("{}/files/icd10cm.whl", registry.url);
    let cached = data
        .path()
        .join("registries/simple_icd_10_cm-1.5.0-py3-none-any.whl");

    // The served file is not the pinned one: refused, nothing cached or imported.
    let (ok, _, stderr) = thoth(&["--data", d, "import", "icd10cm", "--icd10cm-url", &url]);
    assert!(!ok);
    assert!(stderr.contains("does not match its checksum"), "{stderr}");
    assert!(!cached.exists());
    assert!(!data.path().join("terminology/icd10cm.json").exists());

    // Pinned to the served file's checksum: downloaded, cached, imported.
    let sha = sha256_hex(icd10cm_wheel());
    let args = [
        "--data",
        d,
        "import",
        "icd10cm",
        "--icd10cm-url",
        &url,
        "--icd10cm-sha256",
        &sha,
    ];
    let (ok, stdout, stderr) = thoth(&args);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("imported ICD-10-CM 2026"), "{stdout}");
    assert_eq!(std::fs::read(&cached).unwrap(), icd10cm_wheel());
    assert_eq!(registry.downloads.load(Ordering::SeqCst), 2);
    // Again: the cached file is used.
    let (ok, _, stderr) = thoth(&args);
    assert!(ok, "{stderr}");
    assert_eq!(registry.downloads.load(Ordering::SeqCst), 2);

    // serve finds ICD-10-CM imported and does not ask for it again.
    let icd_source = Registry::start(package_file);
    let server = serve_with_sources(
        data.path(),
        &registry.url,
        &format!("{}/files/icd10cm.whl", icd_source.url),
        std::process::Stdio::null(),
    );
    let a = server
        .get_json("/fhir/CodeSystem/$lookup?system=http://hl7.org/fhir/sid/icd-10-cm&code=E11.9");
    assert!(
        a.to_string()
            .contains("Type 2 diabetes mellitus without complications"),
        "{a}"
    );
    assert_eq!(icd_source.downloads.load(Ordering::SeqCst), 0);
}

#[test]
fn an_unpacked_package_directory_imports_as_its_tgz_does() {
    let tgz = shared().join("data/fhir/packages/hl7.terminology.r4-7.0.1.tgz");
    let unpacked = tempfile::tempdir().unwrap();
    tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(&tgz).unwrap(),
    ))
    .unpack(unpacked.path())
    .unwrap();
    let resources = |stdout: &str| -> usize {
        let n = stdout
            .split("imported ")
            .nth(1)
            .and_then(|r| r.split(' ').next());
        n.and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{stdout}"))
    };
    let data = tempfile::tempdir().unwrap();
    let d = data.path().to_str().unwrap();
    let (ok, from_tgz, stderr) =
        thoth(&["--data", d, "import", "fhir-package", tgz.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    let other = tempfile::tempdir().unwrap();
    let o = other.path().to_str().unwrap();
    let dir = unpacked.path().to_str().unwrap();
    let (ok, from_dir, stderr) = thoth(&["--data", o, "import", "fhir-package", dir]);
    assert!(ok, "{stderr}");
    assert!(resources(&from_tgz) > 1000, "{from_tgz}");
    assert_eq!(resources(&from_dir), resources(&from_tgz));
    assert!(
        other
            .path()
            .join("packages/hl7.terminology.r4-7.0.1/package/package.json")
            .is_file()
    );
    // A directory that is not a package is refused, and nothing is left behind.
    let empty = tempfile::tempdir().unwrap();
    let (ok, _, stderr) = thoth(&[
        "--data",
        o,
        "import",
        "fhir-package",
        empty.path().to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(stderr.contains("not a FHIR package directory"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(other.path().join("packages"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
}
