//! Reading RF2 release packages: finding the files in a directory tree or zip archive, classifying them by
//! name, and splitting their rows into typed fields.

use crate::error::ImportError;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// What an RF2 file holds, from its file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileKind {
    Concept,
    Description,
    Relationship,
    ConcreteValues,
    /// Alternate identifiers of components (`sct2_Identifier`): scheme, identifier, referenced component.
    Identifier,
    /// A refset file; `pattern` holds the field types of the additional columns (`c`, `i`, `s`).
    Refset {
        pattern: String,
        language: bool,
    },
}

/// Snapshot, Full or Delta, from the file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum ReleaseType {
    Snapshot,
    Full,
    Delta,
}

/// Where a file lives.
#[derive(Debug, Clone)]
pub(crate) enum Location {
    File(PathBuf),
    Zip { archive: PathBuf, entry: String },
}

/// One importable RF2 file of a package.
#[derive(Debug, Clone)]
pub(crate) struct Rf2File {
    pub name: String,
    pub kind: FileKind,
    pub release: ReleaseType,
    pub location: Location,
    pub len: u64,
}

/// Lists the RF2 files of one package (a directory tree or a zip file), keeping only one release type:
/// Snapshot when the package has any, else Full, else Delta.
pub(crate) fn list_package(path: &Path) -> Result<Vec<Rf2File>, ImportError> {
    let mut files = Vec::new();
    if path.is_dir() {
        walk_dir(path, &mut files)?;
    } else if path.is_file() {
        let f = File::open(path).map_err(|e| ImportError::io(path, e))?;
        let mut zip = zip::ZipArchive::new(f).map_err(|e| ImportError::Zip {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        for i in 0..zip.len() {
            let entry = zip.by_index(i).map_err(|e| ImportError::Zip {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
            if entry.is_dir() || entry.name().contains("__MACOSX") {
                continue;
            }
            let name = entry
                .name()
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_string();
            if let Some((kind, release)) = classify(&name) {
                files.push(Rf2File {
                    name,
                    kind,
                    release,
                    location: Location::Zip {
                        archive: path.to_path_buf(),
                        entry: entry.name().to_string(),
                    },
                    len: entry.size(),
                });
            }
        }
    } else {
        return Err(ImportError::NotFound(path.to_path_buf()));
    }
    let Some(chosen) = files.iter().map(|f| f.release).min() else {
        return Ok(files);
    };
    files.retain(|f| f.release == chosen);
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

fn walk_dir(dir: &Path, out: &mut Vec<Rf2File>) -> Result<(), ImportError> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| ImportError::io(dir, e))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            walk_dir(&path, out)?;
            continue;
        }
        let name = entry.file_name().to_string_lossy().to_string();
        if let Some((kind, release)) = classify(&name) {
            let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
            out.push(Rf2File {
                name,
                kind,
                release,
                location: Location::File(path),
                len,
            });
        }
    }
    Ok(())
}

/// Classifies an RF2 file by its name, e.g. `sct2_Concept_Snapshot_INT_20180731.txt` or
/// `der2_iisssccRefset_ExtendedMapSnapshot_INT_20180731.txt`. Other files give `None`.
pub(crate) fn classify(name: &str) -> Option<(FileKind, ReleaseType)> {
    let stem = name.strip_suffix(".txt")?;
    let mut parts = stem.split('_');
    let prefix = parts.next()?;
    let content = parts.next()?;
    let subtype = parts.next()?;
    let release = if subtype.contains("Snapshot") {
        ReleaseType::Snapshot
    } else if subtype.contains("Full") {
        ReleaseType::Full
    } else if subtype.contains("Delta") {
        ReleaseType::Delta
    } else {
        return None;
    };
    let kind = match (prefix, content) {
        ("sct2", "Concept") => FileKind::Concept,
        ("sct2", "Description" | "TextDefinition") => FileKind::Description,
        ("sct2", "Relationship" | "StatedRelationship") => FileKind::Relationship,
        ("sct2", "RelationshipConcreteValues") => FileKind::ConcreteValues,
        ("sct2", "Identifier") => FileKind::Identifier,
        ("sct2" | "der2", c) if c.ends_with("Refset") => {
            let pattern = c.strip_suffix("Refset").unwrap_or_default();
            if !pattern.bytes().all(|b| matches!(b, b'c' | b'i' | b's')) {
                return None;
            }
            FileKind::Refset {
                pattern: pattern.to_string(),
                language: subtype.starts_with("Language"),
            }
        }
        _ => return None,
    };
    Some((kind, release))
}

/// Opens a file of a package for buffered reading.
pub(crate) fn open(file: &Rf2File) -> Result<Box<dyn BufRead>, ImportError> {
    match &file.location {
        Location::File(path) => {
            let f = File::open(path).map_err(|e| ImportError::io(path, e))?;
            Ok(Box::new(BufReader::with_capacity(1 << 20, f)))
        }
        Location::Zip { archive, entry } => {
            // Decompress the entry into memory: zip entries borrow their archive, and release files are read
            // once, front to back.
            let f = File::open(archive).map_err(|e| ImportError::io(archive, e))?;
            let zip_err = |e: zip::result::ZipError| ImportError::Zip {
                path: archive.clone(),
                message: e.to_string(),
            };
            let mut zip = zip::ZipArchive::new(f).map_err(zip_err)?;
            let mut entry = zip.by_name(entry).map_err(zip_err)?;
            // The declared size is only a hint (a damaged or crafted archive may claim terabytes): pre-allocate at
            // most `MAX_ZIP_PREALLOC` and let the buffer grow with the bytes that really decompress.
            let mut bytes = Vec::with_capacity(zip_prealloc(entry.size()));
            entry
                .read_to_end(&mut bytes)
                .map_err(|e| ImportError::io(archive, e))?;
            Ok(Box::new(std::io::Cursor::new(bytes)))
        }
    }
}

/// The most memory reserved up front for a zip entry, whatever size it declares.
const MAX_ZIP_PREALLOC: u64 = 64 << 20;

fn zip_prealloc(declared: u64) -> usize {
    usize::try_from(declared.min(MAX_ZIP_PREALLOC)).unwrap_or(0)
}

/// Fields of one row, borrowed from the line buffer, with the file name and line number for errors.
pub(crate) struct Row<'a> {
    pub fields: Vec<&'a str>,
    pub file: &'a str,
    pub line: u64,
}

impl<'a> Row<'a> {
    pub fn str(&self, i: usize) -> Result<&'a str, ImportError> {
        self.fields
            .get(i)
            .copied()
            .ok_or_else(|| self.err(format!("missing column {}", i + 1)))
    }

    pub fn u64(&self, i: usize) -> Result<u64, ImportError> {
        let s = self.str(i)?;
        s.parse()
            .map_err(|_| self.err(format!("column {}: '{s}' is not a number", i + 1)))
    }

    pub fn date(&self, i: usize) -> Result<u32, ImportError> {
        let s = self.str(i)?;
        match s.parse::<u32>() {
            Ok(d) if s.len() == 8 => Ok(d),
            _ => Err(self.err(format!("column {}: '{s}' is not a date YYYYMMDD", i + 1))),
        }
    }

    pub fn flag(&self, i: usize) -> Result<bool, ImportError> {
        match self.str(i)? {
            "1" => Ok(true),
            "0" => Ok(false),
            s => Err(self.err(format!("column {}: '{s}' is not 0 or 1", i + 1))),
        }
    }

    pub fn uuid(&self, i: usize) -> Result<[u8; 16], ImportError> {
        let s = self.str(i)?;
        parse_uuid(s).ok_or_else(|| self.err(format!("column {}: '{s}' is not a UUID", i + 1)))
    }

    pub fn err(&self, message: String) -> ImportError {
        ImportError::Row {
            file: self.file.to_string(),
            line: self.line,
            message,
        }
    }
}

/// Reads every data row of `reader` (after the header), calling `f` with each; `header` receives the column names.
pub(crate) fn for_each_row(
    file: &Rf2File,
    mut reader: Box<dyn BufRead>,
    mut on_bytes: impl FnMut(u64),
    mut header: impl FnMut(&[&str]) -> Result<(), ImportError>,
    mut f: impl FnMut(&Row<'_>) -> Result<(), ImportError>,
) -> Result<u64, ImportError> {
    let mut buf = Vec::with_capacity(4096);
    let mut line_no = 0u64;
    let mut rows = 0u64;
    let mut since_report = 0u64;
    let mut header_seen = false;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| ImportError::Row {
                file: file.name.clone(),
                line: line_no + 1,
                message: e.to_string(),
            })?;
        if n == 0 {
            break;
        }
        line_no += 1;
        since_report += n as u64;
        if since_report > 1 << 20 {
            on_bytes(since_report);
            since_report = 0;
        }
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        // Blank lines and `#` comment lines (SNOMED International's own test fixtures carry some) hold no rows;
        // the header is the first other line.
        if buf.is_empty() || buf[0] == b'#' {
            continue;
        }
        let text = std::str::from_utf8(&buf).map_err(|_| ImportError::Row {
            file: file.name.clone(),
            line: line_no,
            message: "not UTF-8".into(),
        })?;
        let fields: Vec<&str> = text.split('\t').collect();
        if !header_seen {
            header_seen = true;
            header(&fields)?;
            continue;
        }
        rows += 1;
        f(&Row {
            fields,
            file: &file.name,
            line: line_no,
        })?;
    }
    on_bytes(since_report);
    Ok(rows)
}

/// Parses `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
pub(crate) fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    let b = s.as_bytes();
    if b.len() != 36 {
        return None;
    }
    let mut out = [0u8; 16];
    let mut nibbles = 0usize;
    for (i, &c) in b.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if c != b'-' {
                return None;
            }
            continue;
        }
        let v = (c as char).to_digit(16)? as u8;
        out[nibbles / 2] |= if nibbles.is_multiple_of(2) { v << 4 } else { v };
        nibbles += 1;
    }
    Some(out)
}

/// Formats a UUID in its canonical hyphenated lower-case form.
pub fn format_uuid(u: &[u8; 16]) -> String {
    let mut s = String::with_capacity(36);
    for (i, b) in u.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push_str(&format!("{b:02x}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_release_file_names() {
        assert_eq!(
            classify("sct2_Concept_Snapshot_INT_20180731.txt"),
            Some((FileKind::Concept, ReleaseType::Snapshot))
        );
        assert_eq!(
            classify("der2_cRefset_LanguageFull-en_INT_20180731.txt"),
            Some((
                FileKind::Refset {
                    pattern: "c".into(),
                    language: true
                },
                ReleaseType::Full
            ))
        );
        assert_eq!(
            classify("der2_iisssccRefset_ExtendedMapDelta_INT_20180731.txt").map(|x| x.1),
            Some(ReleaseType::Delta)
        );
        assert_eq!(classify("Readme.txt"), None);
        assert_eq!(
            classify("sct2_Identifier_Snapshot_INT_1.txt"),
            Some((FileKind::Identifier, ReleaseType::Snapshot))
        );
    }

    #[test]
    fn uuids_round_trip() {
        let s = "57433204-2371-5c6f-855f-94ff9dad7ba6";
        assert_eq!(format_uuid(&parse_uuid(s).unwrap()), s);
        assert_eq!(parse_uuid("57433204x2371-5c6f-855f-94ff9dad7ba6"), None);
    }
}
