//! Data the built-in code systems read from files rather than embed: the IANA Language Subtag Registry
//! (descriptions of language, script, region and variant subtags), from the npm package
//! `language-subtag-registry`, which the binary fetches pinned into `<data>/registries`. Without it the
//! providers still answer, with fewer displays.

use serde_json::Value;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The npm package carrying the IANA Language Subtag Registry as JSON.
pub const SUBTAG_REGISTRY_PACKAGE: &str = "language-subtag-registry";
/// Its pinned version (registry File-Date 2025-08-25).
pub const SUBTAG_REGISTRY_VERSION: &str = "0.4.2";

/// Where the data package `name@version` is kept under a data directory.
pub fn builtin_data_path(data_dir: &Path, name: &str, version: &str) -> PathBuf {
    data_dir
        .join("registries")
        .join(format!("{name}-{version}.tgz"))
}

/// The data the built-in code systems use, as far as it is present.
#[derive(Debug, Clone, Default)]
pub struct BuiltinData {
    /// The IANA Language Subtag Registry (BCP-47 displays).
    pub subtags: Option<Arc<SubtagRegistry>>,
}

impl BuiltinData {
    /// One line saying what is present, for logs and `thoth import builtin-data`.
    pub fn summary(&self) -> String {
        match &self.subtags {
            Some(r) => format!(
                "IANA Language Subtag Registry {} ({} subtags with descriptions)",
                r.file_date,
                r.len()
            ),
            None => {
                "IANA Language Subtag Registry: not present (BCP-47 tags have no registry displays)"
                    .to_string()
            }
        }
    }
}

/// Reads the built-in code systems' data under `data_dir`; the second value says what is missing or
/// unreadable (each a sentence naming the file and the command that fetches it).
pub fn load_builtin_data(data_dir: &Path) -> (BuiltinData, Vec<String>) {
    let mut problems = Vec::new();
    let path = builtin_data_path(data_dir, SUBTAG_REGISTRY_PACKAGE, SUBTAG_REGISTRY_VERSION);
    let subtags = if path.exists() {
        match SubtagRegistry::from_package(&path) {
            Ok(r) => Some(Arc::new(r)),
            Err(e) => {
                problems.push(format!("{}: {e}", path.display()));
                None
            }
        }
    } else {
        problems.push(format!(
            "{} is missing: BCP-47 language tags are validated but get no displays from the IANA registry (`thoth import builtin-data` fetches it)",
            path.display()
        ));
        None
    };
    (BuiltinData { subtags }, problems)
}

/// The kind of a subtag (the registry's `Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubtagKind {
    /// A primary language subtag (`en`).
    Language,
    /// An extended language subtag (`yue` in `zh-yue`).
    Extlang,
    /// A script subtag (`Latn`).
    Script,
    /// A region subtag (`US`, `419`).
    Region,
    /// A variant subtag (`1901`).
    Variant,
}

/// The descriptions of the IANA Language Subtag Registry: subtags by kind, and whole tags (grandfathered and
/// redundant), each with its descriptions in the registry's order (the first is the name used as display).
#[derive(Debug, Default)]
pub struct SubtagRegistry {
    /// The registry's `File-Date`.
    pub file_date: String,
    subtags: HashMap<(SubtagKind, String), Vec<String>>,
    tags: HashMap<String, Vec<String>>,
}

impl SubtagRegistry {
    /// Reads `package/data/json/registry.json` (and `meta.json`) of the npm package at `path` (`.tgz`).
    pub fn from_package(path: &Path) -> Result<SubtagRegistry, String> {
        let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
        let mut registry = None;
        let mut meta = None;
        for entry in archive.entries().map_err(|e| e.to_string())? {
            let mut entry = entry.map_err(|e| e.to_string())?;
            let name = entry
                .path()
                .map_err(|e| e.to_string())?
                .to_string_lossy()
                .to_string();
            let slot = match name.as_str() {
                "package/data/json/registry.json" => &mut registry,
                "package/data/json/meta.json" => &mut meta,
                _ => continue,
            };
            let mut bytes = Vec::new();
            entry
                .read_to_end(&mut bytes)
                .map_err(|e| format!("{name}: {e}"))?;
            *slot = Some(bytes);
        }
        let registry = registry.ok_or("no package/data/json/registry.json in the package")?;
        let mut out = SubtagRegistry::from_json(&registry)?;
        if let Some(meta) = meta
            && let Ok(v) = serde_json::from_slice::<Value>(&meta)
        {
            out.file_date = v["File-Date"].as_str().unwrap_or_default().to_string();
        }
        Ok(out)
    }

    /// Reads the package's `registry.json`: an array of records with `Type`, `Subtag` or `Tag`, and
    /// `Description` (an array).
    pub fn from_json(bytes: &[u8]) -> Result<SubtagRegistry, String> {
        let records: Vec<Value> =
            serde_json::from_slice(bytes).map_err(|e| format!("registry.json: {e}"))?;
        let mut out = SubtagRegistry::default();
        for r in &records {
            let descriptions: Vec<String> = r["Description"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|d| d.as_str().map(str::to_string))
                .collect();
            if descriptions.is_empty() {
                continue;
            }
            let kind = match r["Type"].as_str() {
                Some("language") => SubtagKind::Language,
                Some("extlang") => SubtagKind::Extlang,
                Some("script") => SubtagKind::Script,
                Some("region") => SubtagKind::Region,
                Some("variant") => SubtagKind::Variant,
                Some("grandfathered" | "redundant") => {
                    if let Some(tag) = r["Tag"].as_str() {
                        out.tags.insert(tag.to_ascii_lowercase(), descriptions);
                    }
                    continue;
                }
                _ => continue,
            };
            // Ranges (`qaa..qtz`) are private use: no subtag of them has a name of its own.
            if let Some(subtag) = r["Subtag"].as_str().filter(|s| !s.contains("..")) {
                out.subtags
                    .insert((kind, subtag.to_ascii_lowercase()), descriptions);
            }
        }
        if out.subtags.is_empty() {
            return Err("registry.json holds no subtags".to_string());
        }
        Ok(out)
    }

    /// Subtags and tags with descriptions.
    pub fn len(&self) -> usize {
        self.subtags.len() + self.tags.len()
    }

    /// Whether the registry is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The descriptions of a subtag (any case).
    pub fn descriptions(&self, kind: SubtagKind, subtag: &str) -> &[String] {
        self.subtags
            .get(&(kind, subtag.to_ascii_lowercase()))
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The descriptions of a whole registered tag (grandfathered or redundant, e.g. `zh-Hant`).
    pub fn tag_descriptions(&self, tag: &str) -> &[String] {
        self.tags
            .get(&tag.to_ascii_lowercase())
            .map(Vec::as_slice)
            .unwrap_or_default()
    }
}
