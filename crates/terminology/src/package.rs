//! FHIR packages (npm format): a `.tgz` holding `package/*.json`, or an unpacked directory. We take the
//! CodeSystem, ValueSet and ConceptMap resources and ignore everything else.

use crate::error::LoadError;
use crate::registry::Registry;
use serde_json::Value;
use std::io::Read;
use std::path::Path;

/// What loading a package added.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LoadStats {
    /// Terminology resources added.
    pub resources: usize,
    /// JSON files skipped (other resource types, unreadable JSON).
    pub skipped: usize,
}

/// Loads the terminology resources of the package at `path` (`.tgz` or directory) into `registry`.
pub fn load_package(path: &Path, registry: &mut Registry) -> Result<LoadStats, LoadError> {
    let io = |source| LoadError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut stats = LoadStats::default();
    if path.is_dir() {
        let dir = if path.join("package").is_dir() {
            path.join("package")
        } else {
            path.to_path_buf()
        };
        for entry in std::fs::read_dir(&dir).map_err(io)? {
            let p = entry.map_err(io)?.path();
            if p.extension().is_some_and(|e| e == "json") {
                let bytes = std::fs::read(&p).map_err(|source| LoadError::Io {
                    path: p.display().to_string(),
                    source,
                })?;
                add_json(&bytes, registry, &mut stats);
            }
        }
        return Ok(stats);
    }
    let file = std::fs::File::open(path).map_err(io)?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    for entry in archive.entries().map_err(io)? {
        let mut entry = entry.map_err(io)?;
        let name = entry.path().map_err(io)?.to_string_lossy().to_string();
        // Only the package's own top-level resources; examples and other folders are not content.
        let top = name.strip_prefix("package/").unwrap_or(&name);
        if !top.ends_with(".json")
            || top.contains('/')
            || top == "package.json"
            || top.starts_with('.')
        {
            continue;
        }
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).map_err(io)?;
        add_json(&bytes, registry, &mut stats);
    }
    if stats.resources == 0 && stats.skipped == 0 {
        return Err(LoadError::Format {
            path: path.display().to_string(),
            message: "no package/*.json files found: not an npm-format FHIR package".into(),
        });
    }
    Ok(stats)
}

fn add_json(bytes: &[u8], registry: &mut Registry, stats: &mut LoadStats) {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    // Cheap pre-check: most package files are other resource types, not worth a full parse.
    let head = &bytes[..bytes.len().min(400)];
    let interesting = [&b"CodeSystem"[..], b"ValueSet", b"ConceptMap", b"Bundle"]
        .iter()
        .any(|k| memfind(head, k));
    if !interesting {
        stats.skipped += 1;
        return;
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(mut v) if v["resourceType"] == "Bundle" => {
            // Taken, not cloned: an imported LOINC bundle is hundreds of megabytes.
            for e in v["entry"].as_array_mut().into_iter().flatten() {
                if registry.add(e["resource"].take()) {
                    stats.resources += 1;
                }
            }
        }
        Ok(v) => {
            if registry.add(v) {
                stats.resources += 1;
            } else {
                stats.skipped += 1;
            }
        }
        Err(_) => stats.skipped += 1,
    }
}

fn memfind(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Loads everything under a data directory: every package in `<data>/packages` (`.tgz` or directory) and
/// every JSON resource or Bundle in `<data>/terminology` (written by the LOINC and ICD-10-CM importers).
/// Returns each source with what it added or why it failed; a bad file never stops the others.
pub fn load_data_dir(
    data_dir: &Path,
    registry: &mut Registry,
) -> Vec<(std::path::PathBuf, Result<LoadStats, LoadError>)> {
    let mut report = Vec::new();
    let mut sources: Vec<std::path::PathBuf> = Vec::new();
    for sub in ["packages", "terminology"] {
        if let Ok(rd) = std::fs::read_dir(data_dir.join(sub)) {
            sources.extend(rd.filter_map(|e| e.ok().map(|e| e.path())));
        }
    }
    sources.sort();
    for p in sources {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        let result = if name.ends_with(".tgz") || p.is_dir() {
            load_package(&p, registry)
        } else if name.ends_with(".json") {
            std::fs::read(&p)
                .map_err(|source| LoadError::Io {
                    path: p.display().to_string(),
                    source,
                })
                .map(|bytes| {
                    let mut stats = LoadStats::default();
                    add_json(&bytes, registry, &mut stats);
                    stats
                })
        } else {
            continue;
        };
        report.push((p, result));
    }
    report
}
