//! The LOINC store: one memory-mapped file of string tables and per-concept index ranges, written by
//! [`super::build`] and read by the [`super::provider::LoincProvider`].
//!
//! Layout (format 2, all integers little-endian): an 8-byte magic `THOTHLNC`, the format number (u32), the
//! number of sections (u32), then per section its byte offset and length (u64 each); each section starts on
//! an 8-byte boundary. Sections, in order:
//!
//! | # | section | content |
//! |---|---|---|
//! | 0 | meta | JSON: the CodeSystem resource without concepts (`shell`), the import counts (`stats`), the string id of each property code (`property_ids`) |
//! | 1 | string starts | u32 per string: its start in section 2 (a string ends where the next starts) |
//! | 2 | string bytes | UTF-8 |
//! | 3 | concepts | per concept, sorted by code: code, display, definition (string ids, `u32::MAX` = none) |
//! | 4, 5 | designation starts, designations | n+1 starts; per designation language, use, value |
//! | 6, 7 | property starts, properties | n+1 starts; per property code, kind, value, Coding display |
//! | 8, 9 | parent starts, parents | n+1 starts; concept indices |
//! | 10, 11 | child starts, children | n+1 starts; concept indices |
//! | 12 | lowercase order | concept indices sorted by lowercased code (case-insensitive lookup) |
//! | 13, 14, 15 | answer lists, member starts, members | per list its code and title; starts; member codes |
//!
//! A file of another format or a truncated one is refused when opened ([`LoadError::Format`]); reads past a
//! section of a damaged file give "no value" instead of panicking.

use super::LoincStats;
use super::build::Interner;
use crate::error::LoadError;
use memmap2::Mmap;
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;

/// "No string" (or no value) in a u32 slot.
pub const NONE: u32 = u32::MAX;
const MAGIC: &[u8; 8] = b"THOTHLNC";
/// The store format written and read; another number is refused with a message to import again.
pub const FORMAT: u32 = 2;
const SECTIONS: usize = 16;
const HEADER: usize = 16 + SECTIONS * 16;

#[derive(Clone, Copy)]
#[repr(usize)]
enum Sec {
    Meta = 0,
    StrStarts,
    StrBytes,
    Concepts,
    DesigStarts,
    Desigs,
    PropStarts,
    Props,
    ParentStarts,
    Parents,
    ChildStarts,
    Children,
    Lower,
    Lists,
    ListStarts,
    ListMembers,
}

/// The FHIR type of a property value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum PropKind {
    /// `valueString`.
    String = 0,
    /// `valueBoolean` (the value slot holds 0 or 1).
    Boolean = 1,
    /// `valueCoding` to a LOINC code (the display slot may hold its display).
    Coding = 2,
    /// `valueCode`.
    Code = 3,
}

impl PropKind {
    fn from_u32(v: u32) -> Option<PropKind> {
        Some(match v {
            0 => PropKind::String,
            1 => PropKind::Boolean,
            2 => PropKind::Coding,
            3 => PropKind::Code,
            _ => return None,
        })
    }

    /// The type named in the CodeSystem's property declaration.
    pub fn fhir_type(self) -> &'static str {
        match self {
            PropKind::String => "string",
            PropKind::Boolean => "boolean",
            PropKind::Coding => "Coding",
            PropKind::Code => "code",
        }
    }
}

/// One concept as handed to [`write`].
pub(super) struct ConceptParts<'a> {
    pub code: u32,
    pub display: u32,
    pub definition: u32,
    pub designations: &'a [[u32; 3]],
    pub properties: &'a [[u32; 4]],
}

/// Everything [`write`] writes.
pub(super) struct Parts<'a> {
    pub shell: &'a Value,
    pub property_ids: &'a serde_json::Map<String, Value>,
    pub stats: &'a LoincStats,
    pub strings: &'a Interner,
    pub concepts: Vec<ConceptParts<'a>>,
    pub parents: &'a [Vec<u32>],
    pub children: &'a [Vec<u32>],
    pub lower: &'a [u32],
    /// (code, title, members).
    pub lists: &'a [(u32, u32, Vec<u32>)],
}

/// Writes the store to `target` through `target.tmp`, renamed when complete.
pub(super) fn write(target: &Path, p: &Parts<'_>) -> Result<(), LoadError> {
    let io = |source| LoadError::Io {
        path: target.display().to_string(),
        source,
    };
    let s = p.stats;
    let meta = json!({
        "shell": p.shell,
        "property_ids": p.property_ids,
        "stats": {
            "version": s.version, "terms": s.terms, "parts": s.parts, "answer_lists": s.answer_lists,
            "answers": s.answers, "designations": s.designations, "missing_files": s.missing_files,
        },
    });
    let mut sections: Vec<Vec<u8>> = vec![Vec::new(); SECTIONS];
    sections[Sec::Meta as usize] = serde_json::to_vec(&meta).unwrap_or_default();
    sections[Sec::StrStarts as usize] = le(&p.strings.starts);
    sections[Sec::StrBytes as usize] = p.strings.bytes.clone();
    let (mut concepts, mut dstarts, mut desigs, mut pstarts, mut props) =
        (Vec::new(), vec![0u32], Vec::new(), vec![0u32], Vec::new());
    for c in &p.concepts {
        concepts.extend([c.code, c.display, c.definition]);
        desigs.extend(c.designations.iter().flatten());
        dstarts.push((desigs.len() / 3) as u32);
        props.extend(c.properties.iter().flatten());
        pstarts.push((props.len() / 4) as u32);
    }
    sections[Sec::Concepts as usize] = le(&concepts);
    sections[Sec::DesigStarts as usize] = le(&dstarts);
    sections[Sec::Desigs as usize] = le(&desigs);
    sections[Sec::PropStarts as usize] = le(&pstarts);
    sections[Sec::Props as usize] = le(&props);
    let ranges = |lists: &[Vec<u32>]| {
        let mut starts = vec![0u32];
        let mut flat = Vec::new();
        for l in lists {
            flat.extend_from_slice(l);
            starts.push(flat.len() as u32);
        }
        (le(&starts), le(&flat))
    };
    (
        sections[Sec::ParentStarts as usize],
        sections[Sec::Parents as usize],
    ) = ranges(p.parents);
    (
        sections[Sec::ChildStarts as usize],
        sections[Sec::Children as usize],
    ) = ranges(p.children);
    sections[Sec::Lower as usize] = le(p.lower);
    let heads: Vec<u32> = p.lists.iter().flat_map(|l| [l.0, l.1]).collect();
    sections[Sec::Lists as usize] = le(&heads);
    let members: Vec<Vec<u32>> = p.lists.iter().map(|l| l.2.clone()).collect();
    (
        sections[Sec::ListStarts as usize],
        sections[Sec::ListMembers as usize],
    ) = ranges(&members);

    let tmp = target.with_extension("tmp");
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let file = std::fs::File::create(&tmp).map_err(io)?;
    let mut w = std::io::BufWriter::new(file);
    let mut header = Vec::with_capacity(HEADER);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&FORMAT.to_le_bytes());
    header.extend_from_slice(&(SECTIONS as u32).to_le_bytes());
    let mut offset = HEADER as u64;
    for s in &sections {
        offset = offset.div_ceil(8) * 8;
        header.extend_from_slice(&offset.to_le_bytes());
        header.extend_from_slice(&(s.len() as u64).to_le_bytes());
        offset += s.len() as u64;
    }
    w.write_all(&header).map_err(io)?;
    let mut written = HEADER as u64;
    for s in &sections {
        let aligned = written.div_ceil(8) * 8;
        w.write_all(&vec![0u8; (aligned - written) as usize])
            .map_err(io)?;
        w.write_all(s).map_err(io)?;
        written = aligned + s.len() as u64;
    }
    let file = w.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    drop(file);
    std::fs::rename(&tmp, target).map_err(io)
}

fn le(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The store, open: every read is a few loads from the mapped file.
pub struct LoincStore {
    mmap: Mmap,
    sections: [(usize, usize); SECTIONS],
    shell: Value,
    stats: LoincStats,
    len: usize,
    property_ids: std::collections::HashMap<String, u32>,
    /// The string ids of the `inactive` and `status` property codes ([`NONE`] when no concept has one), found
    /// once: [`LoincStore::status_flags`] reads them for every code a terminology check asks about.
    inactive_id: u32,
    status_id: u32,
}

impl std::fmt::Debug for LoincStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoincStore")
            .field("version", &self.stats.version)
            .field("concepts", &self.len)
            .finish()
    }
}

/// A designation as stored.
pub struct StoredDesignation<'a> {
    pub language: Option<&'a str>,
    pub use_: &'a str,
    pub value: &'a str,
}

/// A property value as stored.
pub struct StoredProperty<'a> {
    pub code: &'a str,
    pub kind: PropKind,
    /// The string, code or Coding's code (for a boolean: "true" or "false").
    pub value: &'a str,
    /// A Coding's display.
    pub display: Option<&'a str>,
}

impl LoincStore {
    /// Opens the store at `path`.
    pub fn open(path: &Path) -> Result<LoincStore, LoadError> {
        let format = |message: String| LoadError::Format {
            path: path.display().to_string(),
            message,
        };
        let file = std::fs::File::open(path).map_err(|source| LoadError::Io {
            path: path.display().to_string(),
            source,
        })?;
        // SAFETY: the file is opened read-only and the store is never written in place (imports write a
        // new file and rename it over the old one), so the mapped bytes do not change under us.
        let mmap = unsafe { Mmap::map(&file) }.map_err(|source| LoadError::Io {
            path: path.display().to_string(),
            source,
        })?;
        if mmap.len() < HEADER || &mmap[..8] != MAGIC {
            return Err(format("not a LOINC store".into()));
        }
        let u32_at =
            |o: usize| u32::from_le_bytes([mmap[o], mmap[o + 1], mmap[o + 2], mmap[o + 3]]);
        let found = u32_at(8);
        if found != FORMAT {
            return Err(format(format!(
                "LOINC store format {found}, this build reads format {FORMAT}: run `thoth import loinc` again"
            )));
        }
        if u32_at(12) as usize != SECTIONS {
            return Err(format(
                "LOINC store with an unexpected section count".into(),
            ));
        }
        let mut sections = [(0usize, 0usize); SECTIONS];
        for (i, s) in sections.iter_mut().enumerate() {
            let o = 16 + i * 16;
            let mut b = [0u8; 8];
            b.copy_from_slice(&mmap[o..o + 8]);
            let off = u64::from_le_bytes(b) as usize;
            b.copy_from_slice(&mmap[o + 8..o + 16]);
            let len = u64::from_le_bytes(b) as usize;
            if off.checked_add(len).is_none_or(|end| end > mmap.len()) {
                return Err(format(
                    "truncated LOINC store: run `thoth import loinc` again".into(),
                ));
            }
            *s = (off, len);
        }
        // Once here, so that reading a string is a bounds check, not a UTF-8 scan (see `str`).
        let (so, sl) = sections[Sec::StrBytes as usize];
        std::str::from_utf8(&mmap[so..so + sl])
            .map_err(|e| format(format!("the LOINC store's strings are not UTF-8: {e}")))?;
        let (mo, ml) = sections[Sec::Meta as usize];
        let meta: Value = serde_json::from_slice(&mmap[mo..mo + ml])
            .map_err(|e| format(format!("LOINC store metadata: {e}")))?;
        let st = &meta["stats"];
        let n = |k: &str| st[k].as_u64().unwrap_or(0) as usize;
        let stats = LoincStats {
            version: st["version"].as_str().unwrap_or_default().to_string(),
            terms: n("terms"),
            parts: n("parts"),
            answer_lists: n("answer_lists"),
            answers: n("answers"),
            designations: n("designations"),
            missing_files: st["missing_files"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect(),
        };
        let len = sections[Sec::Concepts as usize].1 / 12;
        let property_ids: std::collections::HashMap<String, u32> = meta["property_ids"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), u32::try_from(v.as_u64()?).ok()?)))
            .collect();
        let id_of = |code: &str| property_ids.get(code).copied().unwrap_or(NONE);
        Ok(LoincStore {
            inactive_id: id_of("inactive"),
            status_id: id_of("status"),
            property_ids,
            shell: meta["shell"].clone(),
            stats,
            len,
            sections,
            mmap,
        })
    }

    /// The CodeSystem resource without concepts.
    pub fn shell(&self) -> &Value {
        &self.shell
    }

    /// The counts of the import that wrote the store.
    pub fn stats(&self) -> &LoincStats {
        &self.stats
    }

    /// Number of concepts.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the store has no concepts.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn word(&self, s: Sec, i: usize) -> u32 {
        let (off, len) = self.sections[s as usize];
        let o = i.saturating_mul(4);
        if o.saturating_add(4) > len {
            return NONE;
        }
        let b = &self.mmap[off + o..off + o + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    fn words(&self, s: Sec) -> usize {
        self.sections[s as usize].1 / 4
    }

    /// String `id`, None for [`NONE`] or an id past the table.
    pub fn str(&self, id: u32) -> Option<&str> {
        if id == NONE {
            return None;
        }
        let i = id as usize;
        let count = self.words(Sec::StrStarts);
        if i >= count {
            return None;
        }
        let (off, len) = self.sections[Sec::StrBytes as usize];
        let start = self.word(Sec::StrStarts, i) as usize;
        let end = if i + 1 < count {
            self.word(Sec::StrStarts, i + 1) as usize
        } else {
            len
        };
        // SAFETY: `open` checked that the whole section is UTF-8, and the mapping never changes (see
        // `open`); `str::get` keeps the slice on character boundaries, so it is UTF-8 too.
        let strings = unsafe { std::str::from_utf8_unchecked(&self.mmap[off..off + len]) };
        strings.get(start..end.min(len))
    }

    /// The code of concept `i`.
    pub fn code(&self, i: u32) -> &str {
        self.str(self.word(Sec::Concepts, i as usize * 3))
            .unwrap_or_default()
    }

    /// The display of concept `i`.
    pub fn display(&self, i: u32) -> Option<&str> {
        self.str(self.word(Sec::Concepts, i as usize * 3 + 1))
    }

    /// The definition of concept `i`.
    pub fn definition(&self, i: u32) -> Option<&str> {
        self.str(self.word(Sec::Concepts, i as usize * 3 + 2))
    }

    /// The concept with exactly this code.
    pub fn find_exact(&self, code: &str) -> Option<u32> {
        let (mut lo, mut hi) = (0usize, self.len);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.code(mid as u32).cmp(code) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid as u32),
            }
        }
        None
    }

    /// The first concept (in code order) whose code equals `code` ignoring case.
    pub fn find_any_case(&self, code: &str) -> Option<u32> {
        use std::cmp::Ordering;
        let want = code.to_lowercase();
        let n = self.words(Sec::Lower).min(self.len);
        // The stored code's lowercase against `want`. A code in ASCII (every LOINC code) is lowered byte by byte
        // as it is compared, not copied at each step of the search (an unknown code is searched for so).
        let cmp = |k: usize| -> Ordering {
            let stored = self.code(self.word(Sec::Lower, k));
            if stored.is_ascii() {
                (stored.bytes().map(|b| b.to_ascii_lowercase())).cmp(want.bytes())
            } else {
                stored.to_lowercase().as_str().cmp(want.as_str())
            }
        };
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if cmp(mid) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (lo < n && cmp(lo) == Ordering::Equal).then(|| self.word(Sec::Lower, lo))
    }

    /// The concept `code`: exact, else ignoring case (LOINC is case-insensitive).
    pub fn find(&self, code: &str) -> Option<u32> {
        self.find_exact(code).or_else(|| self.find_any_case(code))
    }

    fn range(&self, starts: Sec, i: u32) -> std::ops::Range<usize> {
        let a = self.word(starts, i as usize);
        let b = self.word(starts, i as usize + 1);
        if a == NONE || b == NONE || a > b {
            return 0..0;
        }
        a as usize..b as usize
    }

    /// The designations of concept `i`, in import order.
    pub fn designations(&self, i: u32) -> impl Iterator<Item = StoredDesignation<'_>> {
        self.range(Sec::DesigStarts, i)
            .map(move |d| StoredDesignation {
                language: self.str(self.word(Sec::Desigs, d * 3)),
                use_: self
                    .str(self.word(Sec::Desigs, d * 3 + 1))
                    .unwrap_or_default(),
                value: self
                    .str(self.word(Sec::Desigs, d * 3 + 2))
                    .unwrap_or_default(),
            })
    }

    /// The properties of concept `i`, in import order.
    pub fn properties(&self, i: u32) -> impl Iterator<Item = StoredProperty<'_>> {
        self.range(Sec::PropStarts, i)
            .filter_map(move |p| self.property_at(p))
    }

    /// The values of property `code` of concept `i` (a Coding's code, or the text): the property code is
    /// compared by string id, so other properties are not decoded.
    pub fn property_values(&self, i: u32, code: &str) -> impl Iterator<Item = StoredProperty<'_>> {
        let id = self.property_ids.get(code).copied().unwrap_or(NONE);
        self.range(Sec::PropStarts, i)
            .filter(move |&p| id != NONE && self.word(Sec::Props, p * 4) == id)
            .filter_map(move |p| self.property_at(p))
    }

    /// Whether concept `i` is inactive and whether it is deprecated, as `Concept::is_inactive` and
    /// `Concept::is_deprecated` read a concept's properties (the first `inactive`, else the first `status`
    /// retired or inactive; the first `status` deprecated), in one walk of them that decodes only those two.
    pub fn status_flags(&self, i: u32) -> (bool, bool) {
        let (mut inactive, mut status) = (None, None);
        for p in self.range(Sec::PropStarts, i) {
            let code = self.word(Sec::Props, p * 4);
            if code == NONE {
                continue;
            }
            if code == self.inactive_id && inactive.is_none() {
                inactive = self
                    .property_value_at(p)
                    .map(|(kind, value)| kind == PropKind::Boolean && value == "true");
            } else if code == self.status_id && status.is_none() {
                status = self.property_value_at(p).map(|(_, value)| value);
            }
            if inactive.is_some() && status.is_some() {
                break;
            }
        }
        let inactive = inactive.unwrap_or(matches!(status, Some("retired" | "inactive")));
        (inactive, status == Some("deprecated"))
    }

    /// The kind and value of stored property `p` (its code and display not decoded).
    fn property_value_at(&self, p: usize) -> Option<(PropKind, &str)> {
        let kind = PropKind::from_u32(self.word(Sec::Props, p * 4 + 1))?;
        let raw = self.word(Sec::Props, p * 4 + 2);
        let value = match kind {
            PropKind::Boolean => {
                if raw == 1 {
                    "true"
                } else {
                    "false"
                }
            }
            _ => self.str(raw).unwrap_or_default(),
        };
        Some((kind, value))
    }

    fn property_at(&self, p: usize) -> Option<StoredProperty<'_>> {
        let (kind, value) = self.property_value_at(p)?;
        Some(StoredProperty {
            code: self.str(self.word(Sec::Props, p * 4)).unwrap_or_default(),
            kind,
            value,
            display: self.str(self.word(Sec::Props, p * 4 + 3)),
        })
    }

    /// The parents of concept `i` in the component hierarchy.
    pub fn parents(&self, i: u32) -> impl Iterator<Item = u32> + '_ {
        self.range(Sec::ParentStarts, i)
            .map(move |k| self.word(Sec::Parents, k))
            .filter(|&p| (p as usize) < self.len)
    }

    /// The children of concept `i` in the component hierarchy.
    pub fn children(&self, i: u32) -> impl Iterator<Item = u32> + '_ {
        self.range(Sec::ChildStarts, i)
            .map(move |k| self.word(Sec::Children, k))
            .filter(|&c| (c as usize) < self.len)
    }

    /// The answer lists: code, title (the list's display), member codes.
    pub fn answer_lists(&self) -> impl Iterator<Item = (&str, Option<&str>, Vec<&str>)> + '_ {
        let n = self.words(Sec::Lists) / 2;
        (0..n).map(move |l| {
            let members = self
                .range(Sec::ListStarts, l as u32)
                .filter_map(|m| self.str(self.word(Sec::ListMembers, m)))
                .collect();
            (
                self.str(self.word(Sec::Lists, l * 2)).unwrap_or_default(),
                self.str(self.word(Sec::Lists, l * 2 + 1)),
                members,
            )
        })
    }
}
