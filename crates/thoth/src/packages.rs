//! FHIR packages from an npm-style registry: resolve `name@version`, download the tarball with a progress bar,
//! check it against a pinned (or the registry's) sha512 `dist.integrity`, and cache it as
//! `<data>/packages/<name>-<version>.tgz`, where `thoth serve` loads it. The data the built-in code systems
//! read (the IANA Language Subtag Registry) is fetched the same way into `<data>/registries`, and so is
//! ICD-10-CM, from PyPI, pinned by SHA-256 ([`ICD10CM_WHEEL`]).

use anyhow::{Context, bail};
use sha2::{Digest, Sha256, Sha512};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The default package registry (the registry FHIR packages are published to besides packages.fhir.org).
pub const DEFAULT_REGISTRY: &str = "https://registry.npmjs.org";

/// A package version pinned by the npm registry's `dist.integrity` (sha512 of the tarball, base64) and
/// `dist.shasum` (sha1, hex; recorded for reference, the sha512 is what we check).
#[derive(Debug, Clone, Copy)]
pub struct Pinned {
    /// Package name.
    pub name: &'static str,
    /// Version.
    pub version: &'static str,
    /// `dist.integrity`.
    pub integrity: &'static str,
    /// `dist.shasum`.
    pub shasum: &'static str,
}

/// The open content `thoth serve` fetches on a fresh data directory. The FHIR R4 core definitions come as
/// `hl7.fhir.r4.examples` 4.0.1: `hl7.fhir.r4.core` is published only on packages.fhir.org, not on the npm
/// registry, and the examples package carries the same CodeSystems, ValueSets and ConceptMaps (in its
/// definition bundles). Values from `https://registry.npmjs.org/<name>/<version>` (`dist`).
pub const OPEN_CONTENT: &[Pinned] = &[
    Pinned {
        name: "hl7.fhir.r4.examples",
        version: "4.0.1",
        integrity: "sha512-DXBdIZOeQaSKIgCU7w6HOC7sw/6BzylmipLkBW4f//pT+Bc94x+8LImwTdvaNThPJoOzpBzvxAzNqjeu3X/zLw==",
        shasum: "537ea7db3f3c7b3575fe2eaa7808bad21261cca3",
    },
    Pinned {
        name: "hl7.terminology.r4",
        version: "7.0.1",
        integrity: "sha512-UamZUcARk/TEaJb7X0hDyANmC7bCv0Jof0u0uGIOB2O9VQX0uV45Vf4EyONHM6Sejv6q7sXEAzKAQsgw1Cld3A==",
        shasum: "821279c60ef8564f7bd61403738de1a3dd26afda",
    },
];

/// Data of the built-in code systems, published as npm packages: fetched like [`OPEN_CONTENT`] into
/// `<data>/registries` (not `packages`, which holds FHIR packages only) and read by
/// `terminology::load_builtin_data`. The IANA Language Subtag Registry as JSON gives BCP-47 tags their displays.
pub const BUILTIN_DATA: &[Pinned] = &[Pinned {
    name: terminology::SUBTAG_REGISTRY_PACKAGE,
    version: terminology::SUBTAG_REGISTRY_VERSION,
    integrity: "sha512-d0zcIgHLTw18Z8GB3f3isK8Z6mM5bE0JmGEbzORsC7keOwe5Ex5ifAUBlHey7P7yEVFDyxQHN5+I/oCKKHAJag==",
    shasum: "e6b943e7ef813550e1d585d15aec28e101de70b0",
}];

/// Where `name@version` is cached.
pub fn cache_path(data_dir: &Path, name: &str, version: &str) -> PathBuf {
    data_dir
        .join("packages")
        .join(format!("{name}-{version}.tgz"))
}

/// What [`fetch`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    /// The package was already in the cache (and, when pinned, matched its checksum).
    Cached(PathBuf),
    /// Downloaded and verified.
    Downloaded(PathBuf),
}

/// Makes sure `name@version` is in the cache, downloading it from `registry` when missing. The tarball must
/// match `pinned` when given, else the registry's own `dist.integrity`; a mismatch is refused and nothing is
/// written. `progress` shows a download bar on a terminal.
pub fn fetch(
    data_dir: &Path,
    registry: &str,
    name: &str,
    version: &str,
    pinned: Option<&str>,
    progress: bool,
) -> anyhow::Result<Fetched> {
    fetch_to(
        cache_path(data_dir, name, version),
        registry,
        name,
        version,
        pinned,
        progress,
    )
}

/// As [`fetch`], into the file `target`.
pub fn fetch_to(
    target: PathBuf,
    registry: &str,
    name: &str,
    version: &str,
    pinned: Option<&str>,
    progress: bool,
) -> anyhow::Result<Fetched> {
    if target.exists() {
        match pinned {
            Some(want) if integrity_of(&std::fs::read(&target)?) != want => {
                tracing::warn!(
                    "{} does not match the pinned checksum; downloading it again",
                    target.display()
                );
            }
            _ => return Ok(Fetched::Cached(target)),
        }
    }
    let client = http_client()?;
    let meta_url = format!("{}/{name}/{version}", registry.trim_end_matches('/'));
    let meta: serde_json::Value = client
        .get(&meta_url)
        .send()
        .and_then(|r| r.error_for_status())
        .with_context(|| format!("cannot reach the package registry at {meta_url}"))?
        .json()
        .with_context(|| format!("{meta_url} did not answer package metadata"))?;
    let tarball = meta["dist"]["tarball"]
        .as_str()
        .with_context(|| format!("{meta_url}: no dist.tarball"))?;
    let expected = match (pinned, meta["dist"]["integrity"].as_str()) {
        (Some(p), _) => p.to_string(),
        (None, Some(i)) if i.starts_with("sha512-") => i.to_string(),
        _ => bail!("{meta_url}: no sha512 dist.integrity to check the download against"),
    };
    let bytes = download(&client, tarball, &format!("{name}@{version}"), progress)?;
    let got = integrity_of(&bytes);
    if got != expected {
        bail!(
            "{name}@{version} from {tarball} does not match its checksum (expected {expected}, got {got}): refused"
        );
    }
    write_atomically(&target, &bytes)?;
    Ok(Fetched::Downloaded(target))
}

/// A file pinned by its address and SHA-256, fetched once into `<data>/registries` (for content published
/// on a registry other than npm's).
#[derive(Debug, Clone, Copy)]
pub struct PinnedFile {
    /// The file name in the cache.
    pub file_name: &'static str,
    /// Where it is downloaded from.
    pub url: &'static str,
    /// SHA-256 of the file, hex.
    pub sha256: &'static str,
    /// What it is, for messages.
    pub what: &'static str,
}

/// ICD-10-CM, April 2026 release: CDC publishes the tabular XML only on its own site, which is not a package
/// registry; the PyPI package `simple-icd-10-cm` 1.5.0 carries that file unchanged
/// (`simple_icd_10_cm/data/icd10c-tabular-April-1-2026.xml`, the same SHA-256 as CDC's), so the wheel is
/// fetched from PyPI, pinned by the checksum PyPI publishes for it, and the XML read out of it. ICD-10-CM is
/// in the public domain; the package's code (MIT) is not used.
pub const ICD10CM_WHEEL: PinnedFile = PinnedFile {
    file_name: "simple_icd_10_cm-1.5.0-py3-none-any.whl",
    url: "https://files.pythonhosted.org/packages/64/a5/588ca7abe3afff6f7374604e36a230819a68f5a6546b0037322f41f1fd54/simple_icd_10_cm-1.5.0-py3-none-any.whl",
    sha256: "6d461d71dc26aedc530ae65f02cfb578a154e49507c32e8241e75f701d4b7e42",
    what: "ICD-10-CM April 2026 (CDC's tabular XML, in the PyPI package simple-icd-10-cm 1.5.0)",
};

/// Makes sure `file` is cached in `<data>/registries`, downloading it from `url` (default: `file.url`) when
/// missing or when the cached copy does not match `sha256` (default: `file.sha256`). A download that does not
/// match is refused and nothing is written.
pub fn fetch_file(
    data_dir: &Path,
    file: &PinnedFile,
    url: Option<&str>,
    sha256: Option<&str>,
    progress: bool,
) -> anyhow::Result<Fetched> {
    let target = data_dir.join("registries").join(file.file_name);
    let expected = sha256.unwrap_or(file.sha256).to_ascii_lowercase();
    if target.exists() {
        if sha256_hex(&std::fs::read(&target)?) == expected {
            return Ok(Fetched::Cached(target));
        }
        tracing::warn!(
            "{} does not match its pinned checksum; downloading it again",
            target.display()
        );
    }
    let url = url.unwrap_or(file.url);
    let bytes = download(&http_client()?, url, file.file_name, progress)?;
    let got = sha256_hex(&bytes);
    if got != expected {
        bail!(
            "{} from {url} does not match its checksum (expected sha256 {expected}, got {got}): refused",
            file.file_name
        );
    }
    write_atomically(&target, &bytes)?;
    Ok(Fetched::Downloaded(target))
}

fn http_client() -> anyhow::Result<reqwest::blocking::Client> {
    Ok(reqwest::blocking::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(600))
        .user_agent(concat!("thoth/", env!("CARGO_PKG_VERSION")))
        .build()?)
}

/// The body of `url`, with a progress bar named `label` when `progress` is set.
fn download(
    client: &reqwest::blocking::Client,
    url: &str,
    label: &str,
    progress: bool,
) -> anyhow::Result<Vec<u8>> {
    let mut response = client
        .get(url)
        .send()
        .and_then(|r| r.error_for_status())
        .with_context(|| format!("downloading {url}"))?;
    let bar = if progress {
        let bar = indicatif::ProgressBar::new(response.content_length().unwrap_or(0));
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg:40!} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_message(label.to_string());
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut bytes = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = response
            .read(&mut buf)
            .with_context(|| format!("downloading {url}"))?;
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&buf[..n]);
        bar.set_position(bytes.len() as u64);
    }
    bar.finish_and_clear();
    Ok(bytes)
}

/// Writes `bytes` to `target` through a synced temporary file and a rename, so that a cache entry is whole
/// or absent.
fn write_atomically(target: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = target.parent().context("cache path has no parent")?;
    std::fs::create_dir_all(dir)?;
    let mut tmp = target.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, target)?;
    Ok(())
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Fetches every [`BUILTIN_DATA`] package that is not cached yet. A failure is logged with what the built-in
/// code systems lack without it; the server starts with what it has.
pub fn ensure_builtin_data(data_dir: &Path, registry: &str) -> anyhow::Result<()> {
    let mut failed = Vec::new();
    for p in BUILTIN_DATA {
        let target = terminology::builtin_data_path(data_dir, p.name, p.version);
        match fetch_to(target, registry, p.name, p.version, Some(p.integrity), true) {
            Ok(Fetched::Cached(_)) => {}
            Ok(Fetched::Downloaded(path)) => {
                tracing::info!(package = %format!("{}@{}", p.name, p.version), sha1 = p.shasum, path = %path.display(), "built-in code system data downloaded")
            }
            Err(e) => {
                tracing::warn!(
                    "{}@{} is missing and could not be fetched ({e:#}): BCP-47 language tags are validated, but have no displays from the IANA registry",
                    p.name,
                    p.version
                );
                failed.push(format!("{}@{}", p.name, p.version));
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        bail!("not fetched: {}", failed.join(", "))
    }
}

/// Fetches every [`OPEN_CONTENT`] package that is not cached yet. Failures (offline, checksum mismatch) are
/// logged with what is missing and how to add it; the server starts with what it has.
pub fn ensure_open_content(data_dir: &Path, registry: &str) {
    // Failures are logged inside; the server starts without the data.
    let _ = ensure_builtin_data(data_dir, registry);
    for p in OPEN_CONTENT {
        match fetch(
            data_dir,
            registry,
            p.name,
            p.version,
            Some(p.integrity),
            true,
        ) {
            Ok(Fetched::Cached(_)) => {}
            Ok(Fetched::Downloaded(path)) => {
                tracing::info!(package = %format!("{}@{}", p.name, p.version), sha1 = p.shasum, path = %path.display(), "FHIR package downloaded")
            }
            Err(e) => tracing::warn!(
                "FHIR package {}@{} is missing and could not be fetched ({e:#}); serving without it. Retry with `thoth import fhir-package {}@{}` or a local .tgz",
                p.name,
                p.version,
                p.name,
                p.version
            ),
        }
    }
}

/// The pinned checksum of `name@version`, if it is one of [`OPEN_CONTENT`].
pub fn pinned_integrity(name: &str, version: &str) -> Option<&'static str> {
    OPEN_CONTENT
        .iter()
        .find(|p| p.name == name && p.version == version)
        .map(|p| p.integrity)
}

/// npm's `dist.integrity` form: `sha512-` and the base64 of the digest.
pub fn integrity_of(bytes: &[u8]) -> String {
    format!("sha512-{}", base64(&Sha512::digest(bytes)))
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (input, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes()), want);
        }
    }
}
