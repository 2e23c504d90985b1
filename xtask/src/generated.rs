//! What both generators share: writing generated files (or, with `--check`, failing when they are stale) and
//! the SHA-256 that pins their sources.

use anyhow::{Result, ensure};
use std::fmt::Write as _;
use std::path::Path;

/// Writes each `(file name, text)` under `out` when it differs from what is there; with `check`, writes nothing
/// and fails naming the stale files. `label` names the generator in the "up to date" line.
pub fn write_or_check<S: AsRef<str>>(
    out: &Path,
    files: &[(S, String)],
    check: bool,
    label: &str,
) -> Result<()> {
    let mut stale = Vec::new();
    for (name, text) in files {
        let path = out.join(name.as_ref());
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current != *text {
            if check {
                stale.push(path.display().to_string());
            } else {
                std::fs::create_dir_all(out)?;
                std::fs::write(&path, text)?;
                println!("wrote {}", path.display());
            }
        }
    }
    ensure!(
        stale.is_empty(),
        "generated files are stale, run `cargo xtask codegen`: {}",
        stale.join(", ")
    );
    if check {
        println!("{label} codegen: up to date");
    }
    Ok(())
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}
