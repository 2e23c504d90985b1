//! `cargo xtask console-test [--perf-only --data DIR]`: the console in a real browser.
//!
//! Prepares a data directory as `tx-conformance` does (the FHIR packages, the LOINC subset, the SNOMED CT subset
//! of `../shared/tx-ecosystem`) plus CDC's ICD-10-CM (`../shared/data/icd10cm`), builds the debug `thoth`, starts `thoth serve` on free ports and runs
//! `crates/server/tests/console/test_console.py` (Playwright for Python driving Debian's headless Chromium;
//! `scripts/test.sh` installs both). Screenshots go to `target/console-test/screenshots` (not committed).
//!
//! `--perf-only --data DIR` serves an existing data directory instead (the full-scale synthetic release, say) and
//! only measures: first load, time to interactive, search keystroke to results. `--release` builds and serves the
//! release `thoth` (what the speed targets are about); `--read-only` serves DIR as a read-only replica, so that a
//! directory someone else owns is opened without a byte written to it (no message store, no MLLP listener).

use crate::tx_conformance::{import_loinc, import_snomed, prepare_data, wait_ready};
use anyhow::{Context, bail};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Runs the task with the arguments after `console-test`.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let mut perf_only = false;
    let mut data: Option<PathBuf> = None;
    let mut words: Option<String> = None;
    let mut release = false;
    let mut read_only = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--perf-only" => perf_only = true,
            "--data" => data = Some(it.next().context("--data needs a directory")?.into()),
            "--words" => words = Some(it.next().context("--words needs a list")?.clone()),
            "--release" => release = true,
            "--read-only" => read_only = true,
            other => bail!("unknown option {other}"),
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("xtask has no parent directory")?
        .to_path_buf();
    let shared = root.join("../shared");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let work = target.join("console-test");

    if read_only && !(perf_only && data.is_some()) {
        bail!("--read-only goes with --perf-only --data DIR (the walk writes messages)");
    }
    let profile = if release { "release" } else { "debug" };
    eprintln!("building thoth ({profile}) ...");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build.args(["build", "-p", "thoth"]);
    if release {
        build.arg("--release");
    }
    if !build.current_dir(&root).status()?.success() {
        bail!("cargo build failed");
    }
    let exe = target.join(profile).join("thoth");
    let data = match data {
        Some(d) => d,
        None => {
            if !shared.join("tx-ecosystem/tx-source/snomed").is_dir() {
                bail!("../shared/tx-ecosystem is missing beside this checkout");
            }
            let d = work.join("data");
            // A fresh directory each run: the message store starts empty and the store matches the build.
            let _ = std::fs::remove_dir_all(&d);
            prepare_data(&shared, &d)?;
            import_loinc(&exe, &shared, &d)?;
            import_icd10cm(&exe, &shared, &d)?;
            import_snomed(&exe, &shared, &d)?;
            d
        }
    };
    let free_port =
        || -> anyhow::Result<u16> { Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port()) };
    let (http, mllp) = (free_port()?, free_port()?);
    std::fs::create_dir_all(&work)?;
    let log = std::fs::File::create(work.join("server.log"))?;
    let mut serve = Command::new(&exe);
    serve
        .arg("--data")
        .arg(&data)
        .args(["serve", "--offline"])
        .args(["--http", &format!("127.0.0.1:{http}")]);
    if read_only {
        serve.arg("--read-only");
    } else {
        serve.args(["--mllp", &format!("127.0.0.1:{mllp}")]);
    }
    let mut server = serve
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    // A second server, with `--auth`, on an empty data directory: the console's token form against real access
    // control (only its message routes are used).
    let auth_token = format!("console-test-{}", std::process::id());
    let auth_dir = work.join("auth");
    let _ = std::fs::remove_dir_all(&auth_dir);
    std::fs::create_dir_all(auth_dir.join("data"))?;
    let hash: String = {
        use sha2::Digest as _;
        sha2::Sha256::digest(auth_token.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    std::fs::write(
        auth_dir.join("auth.toml"),
        format!(
            "[auth]\n[[auth.tokens]]\nname = \"console-test\"\nsha256 = \"{hash}\"\nscopes = [\"admin\"]\n"
        ),
    )?;
    let (auth_http, auth_mllp) = (free_port()?, free_port()?);
    let mut auth_server = Command::new(&exe)
        .arg("--data")
        .arg(auth_dir.join("data"))
        .args(["serve", "--offline", "--auth"])
        .arg(auth_dir.join("auth.toml"))
        .args(["--http", &format!("127.0.0.1:{auth_http}")])
        .args(["--mllp", &format!("127.0.0.1:{auth_mllp}")])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(work.join("auth-server.log"))?)
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let result = (|| {
        wait_ready(http, Duration::from_secs(300))?;
        wait_ready(auth_http, Duration::from_secs(300))?;
        let mut test = Command::new("python3");
        test.arg(root.join("crates/server/tests/console/test_console.py"))
            .args(["--url", &format!("http://127.0.0.1:{http}")])
            .args(["--mllp", &format!("127.0.0.1:{mllp}")])
            .arg("--screenshots")
            .arg(work.join("screenshots"))
            .arg("--shared")
            .arg(&shared);
        if perf_only {
            test.arg("--perf-only");
        } else {
            test.args(["--auth-url", &format!("http://127.0.0.1:{auth_http}")])
                .args(["--auth-mllp", &format!("127.0.0.1:{auth_mllp}")])
                .args(["--auth-token", &auth_token]);
        }
        if let Some(w) = &words {
            test.args(["--words", w]);
        }
        let status = test.status().context("running python3")?;
        if !status.success() {
            bail!(
                "the console test failed (server log: {}, screenshots: {})",
                work.join("server.log").display(),
                work.join("screenshots").display()
            );
        }
        anyhow::Ok(())
    })();
    for s in [&mut server, &mut auth_server] {
        let _ = s.kill();
        let _ = s.wait();
    }
    result
}

/// The ICD-10-CM release in `../shared` (CDC's tabular XML, April 2026), for the browser's chapters → blocks →
/// codes walk; the test reads the same file for what it expects.
fn import_icd10cm(exe: &Path, shared: &Path, data: &Path) -> anyhow::Result<()> {
    let file = shared.join("data/icd10cm/icd10c-tabular-April-1-2026.xml.gz");
    if !file.is_file() {
        bail!("{} is missing beside this checkout", file.display());
    }
    eprintln!("importing ICD-10-CM {} ...", file.display());
    let status = Command::new(exe)
        .arg("--data")
        .arg(data)
        .args(["import", "icd10cm"])
        .arg(&file)
        .stdout(Stdio::null())
        .status()
        .with_context(|| format!("starting {}", exe.display()))?;
    if !status.success() {
        bail!("thoth import icd10cm {} failed", file.display());
    }
    Ok(())
}
