//! `cargo xtask tx-conformance [--modes general,snomed] [--min-pass N] [--debug] [-- runner options]`: runs the
//! official HL7 terminology conformance tests against a freshly built Thoth.
//!
//! It prepares a data directory with the content the suites rely on (the FHIR packages in
//! `../shared/data/fhir/packages`, the LOINC subset in `../shared/tx-ecosystem/tx-source/loinc`; for the `snomed`
//! mode the SNOMED CT subset of `../shared/tx-ecosystem/tx-source/snomed`, imported as the unpublished release it
//! is; the pinned data of the built-in code systems, fetched once by `thoth import builtin-data`), builds `thoth`, starts `thoth serve` on a free port, runs
//! `../shared/tools/tx-runner/run-tx-tests.sh`, prints the runner's summary and stops the server. With
//! `--min-pass N` it fails when fewer than N tests pass (the CI gate). `--debug` serves a debug build, which CI
//! has already compiled for `cargo test` (a release build would cost minutes; the suites take about a minute
//! either way).

use anyhow::{Context, bail};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs the task with the arguments after `tx-conformance`.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let mut modes = "general,snomed".to_string();
    let mut min_pass: Option<usize> = None;
    let mut release = true;
    let mut runner_args = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--modes" => modes = it.next().context("--modes needs a value")?.clone(),
            "--min-pass" => {
                min_pass = Some(it.next().context("--min-pass needs a value")?.parse()?)
            }
            "--debug" => release = false,
            "--" => runner_args.extend(it.by_ref().cloned()),
            other => bail!("unknown option {other}"),
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("xtask has no parent directory")?
        .to_path_buf();
    let shared = root.join("../shared");
    let runner = shared.join("tools/tx-runner/run-tx-tests.sh");
    if !runner.exists() {
        bail!(
            "{} is missing: the conformance runner lives in ../shared beside this checkout",
            runner.display()
        );
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let data = target.join("tx-conformance/data");
    prepare_data(&shared, &data)?;

    eprintln!("building thoth ...");
    let mut build = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    build.args(["build", "-p", "thoth"]).current_dir(&root);
    if release {
        build.arg("--release");
    }
    if !build.status()?.success() {
        bail!("cargo build failed");
    }
    let exe = target
        .join(if release { "release" } else { "debug" })
        .join("thoth");
    import_loinc(&exe, &shared, &data)?;
    fetch_builtin_data(&exe, &data);
    if modes.contains("snomed") {
        import_snomed(&exe, &shared, &data)?;
    }
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let log = std::fs::File::create(target.join("tx-conformance/server.log"))?;
    let mut server = Command::new(&exe)
        .args(["--data"])
        .arg(&data)
        // MLLP on a port of the OS's choosing: the default 2575 may be taken by another server on the machine.
        .args(["serve", "--offline", "--http", &format!("127.0.0.1:{port}")])
        .args(["--mllp", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let result = (|| {
        wait_ready(port, Duration::from_secs(120))?;
        let out_dir = target.join("tx-conformance/out");
        let _ = std::fs::remove_dir_all(&out_dir);
        let started = Instant::now();
        let mut child = Command::new(&runner)
            .arg(format!("http://127.0.0.1:{port}/fhir"))
            .arg(&modes)
            .arg(&out_dir)
            .args(&runner_args)
            .stdout(Stdio::piped())
            .spawn()?;
        let mut summary = String::new();
        let stdout = child.stdout.take().context("runner has no stdout")?;
        for line in BufReader::new(stdout).lines() {
            let line = line?;
            if line.contains(": Fail") || line.starts_with("txTests:") || line.contains("Exception")
            {
                println!("{line}");
            }
            if line.starts_with("txTests:") {
                summary = line;
            }
        }
        child.wait()?;
        println!(
            "runner output: {} ({:.0} s)",
            out_dir.display(),
            started.elapsed().as_secs_f64()
        );
        anyhow::Ok(summary)
    })();
    let _ = server.kill();
    let _ = server.wait();
    let summary = result?;
    let passed: usize = summary
        .strip_prefix("txTests: ")
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("no summary line from the runner (got {summary:?})"))?;
    println!("{summary}");
    if let Some(min) = min_pass.filter(|&min| passed < min) {
        bail!("{passed} tests passed, fewer than the recorded {min}");
    }
    Ok(())
}

/// Puts the FHIR packages the suites use into `<data>/packages`.
pub(crate) fn prepare_data(shared: &Path, data: &Path) -> anyhow::Result<()> {
    let packages = data.join("packages");
    std::fs::create_dir_all(&packages)?;
    let source = shared.join("data/fhir/packages");
    for entry in std::fs::read_dir(&source).with_context(|| source.display().to_string())? {
        let p = entry?.path();
        if p.extension().is_some_and(|e| e == "tgz") {
            let to = packages.join(p.file_name().context("no file name")?);
            if !to.exists() {
                std::fs::copy(&p, &to)?;
            }
        }
    }
    Ok(())
}

/// Imports the LOINC subset of `../shared/tx-ecosystem/tx-source/loinc` as LOINC 2.82, the release it was cut
/// from (the version the tx.fhir.org suite's answers name).
pub(crate) fn import_loinc(exe: &Path, shared: &Path, data: &Path) -> anyhow::Result<()> {
    let source = shared.join("tx-ecosystem/tx-source/loinc");
    let status = Command::new(exe)
        .arg("--data")
        .arg(data)
        .args(["import", "loinc"])
        .arg(&source)
        .args(["--loinc-version", "2.82"])
        .stdout(Stdio::null())
        .status()
        .with_context(|| format!("starting {}", exe.display()))?;
    if !status.success() {
        bail!("thoth import loinc {} failed", source.display());
    }
    Ok(())
}

/// Fetches the pinned data of the built-in code systems (the IANA Language Subtag Registry, for BCP-47
/// displays: the `langcodes` suite) into the data directory, once; the server then runs `--offline`. Without
/// network the suites run without it (no test of modes `general` and `snomed` depends on it).
fn fetch_builtin_data(exe: &Path, data: &Path) {
    let status = Command::new(exe)
        .arg("--data")
        .arg(data)
        .args(["import", "builtin-data"])
        .stdout(Stdio::null())
        .status();
    if !matches!(status, Ok(s) if s.success()) {
        eprintln!(
            "warning: the built-in code systems' data could not be fetched; BCP-47 tags get no IANA registry displays"
        );
    }
}

/// Imports the suites' SNOMED CT subset as the unpublished release it is, so that it is served as
/// `http://snomed.info/xsct/31000003106/version/20250909` (a few seconds; redone every run so the store always
/// matches the build under test).
pub(crate) fn import_snomed(exe: &Path, shared: &Path, data: &Path) -> anyhow::Result<()> {
    let subset = shared.join("tx-ecosystem/tx-source/snomed");
    eprintln!("importing the SNOMED CT subset {} ...", subset.display());
    let out = Command::new(exe)
        .arg("--data")
        .arg(data)
        .args(["import", "snomed", "--unpublished"])
        .arg(&subset)
        .stdout(Stdio::null())
        .output()
        .with_context(|| format!("running {}", exe.display()))?;
    if !out.status.success() {
        bail!(
            "importing the SNOMED CT subset failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// Waits until `thoth serve` on `port` is ready: `/readyz` answers 200 once its stores are open (`/healthz`
/// answers as soon as it listens, before the load).
pub(crate) fn wait_ready(port: u16, limit: Duration) -> anyhow::Result<()> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.write_all(b"GET /readyz HTTP/1.0\r\n\r\n");
            let mut buf = String::new();
            let _ = s.read_to_string(&mut buf);
            if buf.starts_with("HTTP/1.0 200") || buf.starts_with("HTTP/1.1 200") {
                return Ok(());
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    bail!("thoth was not ready (/readyz) on port {port} within {limit:?}")
}
