//! Import: reads RF2 packages into memory, layers them (newest effectiveTime wins per component, a later package
//! wins a tie), then hands the rows to the store builder and swaps the new store in.

use crate::build;
use crate::error::ImportError;
use crate::rf2::{self, FileKind, Row};
use crate::store::{CURRENT_FILE, Manifest};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Receives progress reports from an import (the command line draws progress bars with them).
pub trait ImportProgress: Sync {
    /// A file of `len` bytes starts.
    fn file_started(&self, _name: &str, _len: u64) {}
    /// `bytes` more bytes of the current file were read.
    fn file_advanced(&self, _bytes: u64) {}
    /// The current file is done after `rows` rows.
    fn file_finished(&self, _name: &str, _rows: u64) {}
    /// A build stage (sorting, closure, index...) starts.
    fn stage(&self, _name: &str) {}
}

/// Progress that reports nothing.
pub struct NoProgress;
impl ImportProgress for NoProgress {}

/// What an import did.
#[derive(Debug, Clone)]
pub struct ImportSummary {
    /// The directory of the new store.
    pub store_dir: PathBuf,
    /// The new store's manifest (counts, releases, modules).
    pub manifest: Manifest,
    /// Wall time of the whole import.
    pub seconds: f64,
    /// Total size of the store on disk, in bytes.
    pub store_bytes: u64,
}

/// Imports RF2 packages (`paths`: zip files or directories, layered in order) into a new store under `root`
/// (e.g. `<data>/snomed`) and makes it current. A server that has the old store open keeps reading it; the old
/// store's files are removed (their memory maps stay valid until closed).
pub fn import(
    paths: &[PathBuf],
    root: &Path,
    progress: &dyn ImportProgress,
) -> Result<ImportSummary, ImportError> {
    import_with(paths, root, progress, &ImportOptions::default())
}

/// How an import labels what it builds.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ImportOptions {
    /// The packages are an unpublished release (a test subset, a pre-release): recorded in the manifest, so
    /// that the release is named with the `xsct` URI scheme.
    pub unpublished: bool,
}

impl ImportOptions {
    /// Options for an unpublished release.
    pub fn unpublished() -> ImportOptions {
        ImportOptions { unpublished: true }
    }
}

/// [`import`] with options.
pub fn import_with(
    paths: &[PathBuf],
    root: &Path,
    progress: &dyn ImportProgress,
    options: &ImportOptions,
) -> Result<ImportSummary, ImportError> {
    let started = Instant::now();
    let mut rows = Rows::default();
    let mut releases = Vec::new();
    for path in paths {
        let files = rf2::list_package(path)?;
        releases.push(path.display().to_string());
        for file in &files {
            read_file(file, &mut rows, progress)?;
        }
    }
    if rows.concepts.is_empty() {
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(ImportError::Empty(names.join(", ")));
    }
    std::fs::create_dir_all(root).map_err(|e| ImportError::io(root, e))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let name = format!("store-{stamp}");
    let tmp = root.join(format!(".{name}.tmp"));
    let dir = root.join(&name);
    let result = build::build(rows, releases, &tmp, progress);
    let manifest = match result
        .and_then(|m| label(m, &tmp, options))
        .and_then(|m| write_tables(&tmp).map(|()| m))
    {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    std::fs::rename(&tmp, &dir).map_err(|e| ImportError::io(&dir, e))?;
    swap_current(root, &name)?;
    let store_bytes = dir_size(&dir);
    Ok(ImportSummary {
        store_dir: dir,
        manifest,
        seconds: started.elapsed().as_secs_f64(),
        store_bytes,
    })
}

/// Opens the store built in `dir` and writes its concept cards and id index beside it (`tables.bin`), so that
/// every process that opens it maps them instead of building them.
fn write_tables(dir: &Path) -> Result<(), ImportError> {
    let store = crate::Store::open(dir)
        .map_err(|e| ImportError::Index(format!("reopening the store: {e}")))?;
    store
        .write_tables()
        .map_err(|e| ImportError::io(&dir.join(crate::store::TABLES_FILE), e))
}

/// Records the options in the manifest of the store being built (before it becomes visible).
fn label(
    mut manifest: Manifest,
    dir: &Path,
    options: &ImportOptions,
) -> Result<Manifest, ImportError> {
    if options.unpublished {
        manifest.unpublished = true;
        let path = dir.join(crate::store::MANIFEST_FILE);
        let json = serde_json::to_vec_pretty(&manifest)
            .map_err(|e| ImportError::Index(format!("manifest: {e}")))?;
        std::fs::write(&path, json).map_err(|e| ImportError::io(&path, e))?;
    }
    Ok(manifest)
}

/// Points `root/CURRENT` at `name` atomically (write a temporary file, rename over), then removes older stores.
fn swap_current(root: &Path, name: &str) -> Result<(), ImportError> {
    let current = root.join(CURRENT_FILE);
    let tmp = root.join(format!(".{CURRENT_FILE}.tmp"));
    std::fs::write(&tmp, format!("{name}\n")).map_err(|e| ImportError::io(&tmp, e))?;
    std::fs::rename(&tmp, &current).map_err(|e| ImportError::io(&current, e))?;
    if let Ok(entries) = std::fs::read_dir(root) {
        for entry in entries.flatten() {
            let n = entry.file_name().to_string_lossy().to_string();
            if n.starts_with("store-") && n != name {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    Ok(())
}

fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            total += if p.is_dir() {
                dir_size(&p)
            } else {
                e.metadata().map(|m| m.len()).unwrap_or(0)
            };
        }
    }
    total
}

/// Rows gathered from every package, before layering.
#[derive(Default)]
pub(crate) struct Rows {
    pub concepts: Vec<ConceptRow>,
    pub descriptions: Vec<DescRow>,
    pub relationships: Vec<RelRow>,
    pub concrete: Vec<ConcreteRow>,
    pub lang: Vec<LangRow>,
    pub members: Vec<MemberRow>,
    pub identifiers: Vec<IdentifierRow>,
    /// Per refset: the pattern and names of its additional fields, from its file.
    pub refset_fields: HashMap<u64, (String, Vec<String>)>,
    /// Concept ids whose check digit or partition is wrong.
    pub invalid_ids: u64,
}

/// A row of the Identifier file: `alternate` is the code in scheme `scheme` of component `referenced`.
pub(crate) struct IdentifierRow {
    pub alternate: Box<str>,
    pub effective: u32,
    pub active: bool,
    pub scheme: u64,
    pub referenced: u64,
}

pub(crate) struct ConceptRow {
    pub id: u64,
    pub effective: u32,
    pub active: bool,
    pub module: u64,
    pub definition_status: u64,
}

pub(crate) struct DescRow {
    pub id: u64,
    pub effective: u32,
    pub active: bool,
    pub module: u64,
    pub concept: u64,
    pub lang: [u8; 2],
    pub type_id: u64,
    pub term: Box<str>,
    pub case_significance: u64,
}

pub(crate) struct RelRow {
    pub id: u64,
    pub effective: u32,
    pub active: bool,
    pub module: u64,
    pub source: u64,
    pub dest: u64,
    pub group: u32,
    pub type_id: u64,
    pub characteristic: u64,
    pub modifier: u64,
}

pub(crate) struct ConcreteRow {
    pub id: u64,
    pub effective: u32,
    pub active: bool,
    pub module: u64,
    pub source: u64,
    pub value: Box<str>,
    pub group: u32,
    pub type_id: u64,
    pub characteristic: u64,
}

pub(crate) struct LangRow {
    pub uuid: [u8; 16],
    pub effective: u32,
    pub active: bool,
    pub refset: u64,
    pub description: u64,
    pub acceptability: u64,
}

pub(crate) struct MemberRow {
    pub uuid: [u8; 16],
    pub effective: u32,
    pub active: bool,
    pub module: u64,
    pub refset: u64,
    pub referenced: u64,
    pub fields: Box<str>,
}

fn read_file(
    file: &rf2::Rf2File,
    rows: &mut Rows,
    progress: &dyn ImportProgress,
) -> Result<(), ImportError> {
    progress.file_started(&file.name, file.len);
    let reader = rf2::open(file)?;
    let on_bytes = |n| progress.file_advanced(n);
    let mut header_names: Vec<String> = Vec::new();
    let header = |h: &[&str]| {
        header_names = h.iter().map(|s| s.to_string()).collect();
        Ok(())
    };
    let count = match &file.kind {
        FileKind::Concept => rf2::for_each_row(file, reader, on_bytes, header, |r| {
            let id = r.u64(0)?;
            // Kept even with a bad check digit (SNOMED International's own fixtures have such ids), but counted
            // in the manifest: the API refuses such ids as malformed.
            if crate::SctId::new(id).is_err() {
                rows.invalid_ids += 1;
            }
            rows.concepts.push(ConceptRow {
                id,
                effective: r.date(1)?,
                active: r.flag(2)?,
                module: r.u64(3)?,
                definition_status: r.u64(4)?,
            });
            Ok(())
        })?,
        FileKind::Description => rf2::for_each_row(file, reader, on_bytes, header, |r| {
            let lang = r.str(5)?.as_bytes();
            rows.descriptions.push(DescRow {
                id: r.u64(0)?,
                effective: r.date(1)?,
                active: r.flag(2)?,
                module: r.u64(3)?,
                concept: r.u64(4)?,
                lang: [
                    lang.first().copied().unwrap_or(b' '),
                    lang.get(1).copied().unwrap_or(b' '),
                ],
                type_id: r.u64(6)?,
                term: r.str(7)?.into(),
                case_significance: r.u64(8)?,
            });
            Ok(())
        })?,
        FileKind::Relationship => rf2::for_each_row(file, reader, on_bytes, header, |r| {
            rows.relationships.push(RelRow {
                id: r.u64(0)?,
                effective: r.date(1)?,
                active: r.flag(2)?,
                module: r.u64(3)?,
                source: r.u64(4)?,
                dest: r.u64(5)?,
                group: group(r, 6)?,
                type_id: r.u64(7)?,
                characteristic: r.u64(8)?,
                modifier: r.u64(9)?,
            });
            Ok(())
        })?,
        FileKind::ConcreteValues => rf2::for_each_row(file, reader, on_bytes, header, |r| {
            rows.concrete.push(ConcreteRow {
                id: r.u64(0)?,
                effective: r.date(1)?,
                active: r.flag(2)?,
                module: r.u64(3)?,
                source: r.u64(4)?,
                value: r.str(5)?.into(),
                group: group(r, 6)?,
                type_id: r.u64(7)?,
                characteristic: r.u64(8)?,
            });
            Ok(())
        })?,
        FileKind::Identifier => rf2::for_each_row(file, reader, on_bytes, header, |r| {
            // alternateIdentifier, effectiveTime, active, moduleId, identifierSchemeId, referencedComponentId
            rows.identifiers.push(IdentifierRow {
                alternate: r.str(0)?.into(),
                effective: r.date(1)?,
                active: r.flag(2)?,
                scheme: r.u64(4)?,
                referenced: r.u64(5)?,
            });
            Ok(())
        })?,
        FileKind::Refset {
            language: true,
            pattern,
        } if pattern == "c" => rf2::for_each_row(file, reader, on_bytes, header, |r| {
            rows.lang.push(LangRow {
                uuid: r.uuid(0)?,
                effective: r.date(1)?,
                active: r.flag(2)?,
                refset: r.u64(4)?,
                description: r.u64(5)?,
                acceptability: r.u64(6)?,
            });
            Ok(())
        })?,
        FileKind::Refset { pattern, .. } => {
            let extra = pattern.len();
            let mut seen_refsets: Vec<u64> = Vec::new();
            let n = rf2::for_each_row(file, reader, on_bytes, header, |r| {
                if r.fields.len() < 6 + extra {
                    return Err(r.err(format!(
                        "expected {} columns for a {pattern}Refset, found {}",
                        6 + extra,
                        r.fields.len()
                    )));
                }
                let refset = r.u64(4)?;
                if seen_refsets.last() != Some(&refset) && !seen_refsets.contains(&refset) {
                    seen_refsets.push(refset);
                }
                rows.members.push(MemberRow {
                    uuid: r.uuid(0)?,
                    effective: r.date(1)?,
                    active: r.flag(2)?,
                    module: r.u64(3)?,
                    refset,
                    referenced: r.u64(5)?,
                    fields: r.fields[6..6 + extra].join("\t").into(),
                });
                Ok(())
            })?;
            let names: Vec<String> = header_names.iter().skip(6).take(extra).cloned().collect();
            for refset in seen_refsets {
                rows.refset_fields
                    .insert(refset, (pattern.clone(), names.clone()));
            }
            n
        }
    };
    progress.file_finished(&file.name, count);
    Ok(())
}

fn group(r: &Row<'_>, i: usize) -> Result<u32, ImportError> {
    let g = r.u64(i)?;
    u32::try_from(g).map_err(|_| r.err(format!("relationship group {g} out of range")))
}

/// Keeps, per key, the row with the newest effectiveTime; among equal times the one read last wins (later
/// packages layer over earlier ones). Leaves the rows sorted by key.
pub(crate) fn keep_latest<T, K: Ord + Copy>(
    rows: &mut Vec<T>,
    key: impl Fn(&T) -> K,
    effective: impl Fn(&T) -> u32,
) {
    // Stable sort keeps reading order among equal (key, time), so "last wins" below picks the later package.
    rows.sort_by(|a, b| key(a).cmp(&key(b)).then(effective(a).cmp(&effective(b))));
    let mut write = 0usize;
    for read in 0..rows.len() {
        let last_of_key = read + 1 == rows.len() || key(&rows[read + 1]) != key(&rows[read]);
        if last_of_key {
            rows.swap(write, read);
            write += 1;
        }
    }
    rows.truncate(write);
}
