//! The read side: a memory-mapped, immutable store and its typed accessors.

use crate::error::OpenError;
use crate::format::*;
use crate::huge_table::HugeTable;
use crate::id::{ConceptIdx, SctId};
use crate::id_index::IdIndex;
use crate::{consts, search};
use bytemuck::Pod;
use memmap2::Mmap;
use roaring::RoaringBitmap;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

pub(crate) const CURRENT_FILE: &str = "CURRENT";
pub(crate) const STORE_FILE: &str = "store.bin";
pub(crate) const MANIFEST_FILE: &str = "manifest.json";
pub(crate) const SEARCH_DIR: &str = "search";
/// The concept cards and the id index, written at import beside `store.bin` (see [`TablesHeader`]).
pub(crate) const TABLES_FILE: &str = "tables.bin";

/// What a store holds: format version, the releases imported and counts. Written as `manifest.json`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct Manifest {
    /// The store format version ([`crate::FORMAT_VERSION`] when written).
    pub format_version: u32,
    /// The packages imported, in layering order.
    pub releases: Vec<String>,
    /// Concept count per module id.
    pub modules: BTreeMap<String, u64>,
    /// Concepts (active and inactive), after layering.
    pub concepts: u64,
    /// Active concepts.
    pub active_concepts: u64,
    /// Descriptions and text definitions.
    pub descriptions: u64,
    /// Active descriptions and text definitions.
    pub active_descriptions: u64,
    /// Relationships (inferred, stated, additional).
    pub relationships: u64,
    /// Active relationships.
    pub active_relationships: u64,
    /// Relationships with concrete values.
    pub concrete_values: u64,
    /// Language refset members, active and inactive.
    pub language_members: u64,
    /// Members of all other refsets.
    pub refset_members: u64,
    /// Members per refset (other than language refsets).
    pub refsets: BTreeMap<String, u64>,
    /// Rows of the IS-A transitive closure (concept, proper ancestor).
    pub is_a_closure_rows: u64,
    /// Descriptions dropped because their concept is not in any package.
    pub dropped_descriptions: u64,
    /// Relationships dropped because their source concept is not in any package.
    pub dropped_relationships: u64,
    /// True when the hierarchy came from stated relationships (the release had no inferred IS-A).
    pub hierarchy_from_stated: bool,
    /// Concept ids with a wrong Verhoeff check digit or partition (kept; the API refuses them as malformed).
    pub invalid_concept_ids: u64,
    /// Active alternate identifiers of concepts (from `sct2_Identifier` files).
    #[serde(default)]
    pub alternate_identifiers: u64,
    /// The release was imported as unpublished (a test or pre-release subset): its URIs use the `xsct`
    /// scheme of the SNOMED CT URI standard. Absent in manifests written before this field existed.
    #[serde(default)]
    pub unpublished: bool,
}

/// A concept's own attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Concept {
    /// Its identifier.
    pub id: SctId,
    /// Its dense index in this store.
    pub idx: ConceptIdx,
    /// Whether it is active.
    pub active: bool,
    /// The module that owns its latest row.
    pub module: SctId,
    /// Primitive or defined.
    pub definition_status: SctId,
    /// Effective time as `YYYYMMDD`.
    pub effective_time: u32,
}

/// The dense index of a description in a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DescriptionIdx(pub u32);

/// What kind of description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DescriptionKind {
    /// Fully specified name.
    Fsn,
    /// Synonym.
    Synonym,
    /// Text definition.
    Definition,
    /// Another description type.
    Other,
}

/// A description (or text definition), borrowing its term from the store.
#[derive(Debug, Clone, Copy)]
pub struct Description<'a> {
    /// Its dense index.
    pub idx: DescriptionIdx,
    /// Its identifier.
    pub id: SctId,
    /// The concept it describes.
    pub concept: ConceptIdx,
    /// The concept's identifier.
    pub concept_id: SctId,
    /// Whether it is active.
    pub active: bool,
    /// Its module.
    pub module: SctId,
    /// FSN, synonym, definition (from `type_id`).
    pub kind: DescriptionKind,
    /// The description type id.
    pub type_id: SctId,
    /// Case significance id.
    pub case_significance: SctId,
    /// Two-letter language code.
    pub language: &'a str,
    /// The term.
    pub term: &'a str,
    /// Effective time as `YYYYMMDD`.
    pub effective_time: u32,
}

/// A description's acceptability in one language refset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acceptability {
    /// The language refset.
    pub refset: SctId,
    /// Preferred (true) or acceptable (false).
    pub preferred: bool,
}

/// A relationship, by source or by destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Relationship {
    /// Its identifier.
    pub id: SctId,
    /// Whether it is active.
    pub active: bool,
    /// Its module.
    pub module: SctId,
    /// Effective time as `YYYYMMDD`.
    pub effective_time: u32,
    /// The source concept.
    pub source: ConceptIdx,
    /// The attribute type.
    pub type_id: SctId,
    /// The type's index, when the type concept is in the store.
    pub type_idx: Option<ConceptIdx>,
    /// The destination (target) concept id.
    pub destination_id: SctId,
    /// The destination's index, when it is in the store.
    pub destination: Option<ConceptIdx>,
    /// The relationship group (0 = ungrouped).
    pub group: u32,
    /// Inferred, stated or additional.
    pub characteristic: SctId,
    /// Existential or universal.
    pub modifier: SctId,
}

impl Relationship {
    /// True for active inferred or additional relationships (the ones ECL and the hierarchy use).
    pub fn is_inferred_active(&self) -> bool {
        self.active && self.characteristic != consts::STATED_RELATIONSHIP
    }
}

/// A relationship to a concrete value (`#5`, `#0.5`, `"text"` as in RF2).
#[derive(Debug, Clone, Copy)]
pub struct ConcreteValue<'a> {
    /// Its identifier.
    pub id: SctId,
    /// Whether it is active.
    pub active: bool,
    /// Its module.
    pub module: SctId,
    /// Effective time as `YYYYMMDD`.
    pub effective_time: u32,
    /// The source concept.
    pub source: ConceptIdx,
    /// The attribute type.
    pub type_id: SctId,
    /// The relationship group.
    pub group: u32,
    /// Inferred or stated.
    pub characteristic: SctId,
    /// The value as written in RF2: `#` then a number, or a quoted string.
    pub raw: &'a str,
}

/// A concrete value, parsed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// An integer (`#5`).
    Integer(i64),
    /// A decimal (`#0.5`).
    Decimal(f64),
    /// A string (`"text"`, quotes removed).
    String(&'a str),
}

impl<'a> ConcreteValue<'a> {
    /// The parsed value; a number that does not parse is returned as a string.
    pub fn value(&self) -> Value<'a> {
        if let Some(num) = self.raw.strip_prefix('#') {
            if let Ok(i) = num.parse::<i64>() {
                return Value::Integer(i);
            }
            if let Ok(f) = num.parse::<f64>() {
                return Value::Decimal(f);
            }
            return Value::String(num);
        }
        Value::String(
            self.raw
                .strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .unwrap_or(self.raw),
        )
    }
}

/// A reference set member (any refset but a language refset), borrowing its fields from the store.
#[derive(Debug, Clone, Copy)]
pub struct RefsetMember<'a> {
    /// Its UUID.
    pub uuid: [u8; 16],
    /// Whether it is active.
    pub active: bool,
    /// Its module.
    pub module: SctId,
    /// Effective time as `YYYYMMDD`.
    pub effective_time: u32,
    /// The refset.
    pub refset: SctId,
    /// The referenced component (a concept, description or relationship id).
    pub referenced_component: u64,
    /// Additional fields, tab-separated, in the order of [`RefsetFields::names`].
    pub raw_fields: &'a str,
}

impl<'a> RefsetMember<'a> {
    /// The additional field values, in order.
    pub fn fields(&self) -> impl Iterator<Item = &'a str> + 'a {
        let raw = self.raw_fields;
        raw.split('\t').filter(move |_| !raw.is_empty())
    }

    /// The value of the additional field at `index`.
    pub fn field(&self, index: usize) -> Option<&'a str> {
        self.fields().nth(index)
    }

    /// The UUID as text.
    pub fn uuid_string(&self) -> String {
        crate::rf2::format_uuid(&self.uuid)
    }
}

/// The additional fields of a refset: names (from the release file's header) and RF2 types.
#[derive(Debug, Clone)]
pub struct RefsetFields<'a> {
    /// One letter per field: `c` component id, `i` integer, `s` string.
    pub pattern: &'a str,
    /// Field names, e.g. `mapGroup`, `mapTarget`, `targetComponentId`.
    pub names: Vec<&'a str>,
}

/// An open, read-only SNOMED CT store. Cheap to share between threads (`Arc<Store>`); several processes may open
/// the same files, the operating system shares their pages.
pub struct Store {
    dir: PathBuf,
    mmap: Mmap,
    sections: [(usize, usize); 32],
    manifest: Manifest,
    index: search::SearchIndex,
    historical_refsets: Vec<u64>,
    /// Concept row by id (see [`IdIndex`]), built at open (a few milliseconds; 16 bytes a slot, at least one
    /// and a half slots a concept).
    by_id: IdIndex,
    /// The installed language refsets in the default order (see [`Store::default_refsets`]).
    default_refsets: Vec<SctId>,
    /// Each concept's card (see [`ConceptCard`]), by dense index.
    cards: HugeTable<ConceptCard>,
}

/// What an answer needs to name a concept, in one cache line: its id and its preferred synonym in the default
/// language refsets, the display a request without a language gets. Displays are asked for every concept a
/// lookup, validation or expansion answer names, and finding one walks the concept's descriptions and their
/// language-refset rows. Kept at open, the id, the row and (when it fits, for most terms) the text itself are
/// read with one cache miss, where the concept table, the description table and the string heap would each cost
/// one: a `$lookup` names a dozen or more concepts scattered over the store.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
struct ConceptCard {
    id: u64,
    /// The description row of the display; `u32::MAX` when the concept has no synonym.
    row: u32,
    /// Where the display is in the string heap.
    term_off: u32,
    term_len: u32,
    /// The display itself when it is at most this long (`term_len` bytes).
    inline: [u8; CARD_INLINE],
}

/// The head of `tables.bin`: the concept cards (from byte 64, one per concept row) and then the id index's slots,
/// both derived from `store.bin` at import. They used to be built at open in each process's own memory (~46 MiB
/// at 370,000 concepts); in a file, the processes that open one store share their pages like the rest of it.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct TablesHeader {
    magic: [u8; 8],
    version: u32,
    _pad: u32,
    /// Rows of the concept table (and so cards).
    concepts: u64,
    /// Slots of the id index (a power of two).
    slots: u64,
    /// The length of the `store.bin` they were derived from: a tables file beside another store is refused.
    store_len: u64,
    _reserved: [u64; 3],
}

const TABLES_MAGIC: [u8; 8] = *b"THOTHTBL";
const TABLES_VERSION: u32 = 1;

/// The room left for a display in a 64-byte [`ConceptCard`]: enough for most preferred terms (in the conformance
/// tests' International Edition subset the median active synonym has 25 bytes, and 85% have at most 44).
const CARD_INLINE: usize = 64 - 20;

impl ConceptCard {
    fn new(id: u64, display: Option<(DescriptionIdx, &DescRec, &str)>) -> ConceptCard {
        let mut card = ConceptCard {
            id,
            row: u32::MAX,
            term_off: 0,
            term_len: 0,
            inline: [0; CARD_INLINE],
        };
        if let Some((idx, rec, term)) = display {
            card.row = idx.0;
            card.term_off = rec.term_off;
            // The term as read (`heap_str` reads a damaged row as ""), so that both readings agree.
            card.term_len = term.len() as u32;
            if let Some(room) = card.inline.get_mut(..term.len()) {
                room.copy_from_slice(term.as_bytes());
            }
        }
        card
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dir", &self.dir)
            .field("concepts", &self.manifest.concepts)
            .finish()
    }
}

impl Store {
    /// Opens the current store under `root` (a directory written by [`crate::import`], holding `CURRENT`), or a
    /// store directory itself.
    pub fn open(root: &Path) -> Result<Store, OpenError> {
        let dir = match std::fs::read_to_string(root.join(CURRENT_FILE)) {
            Ok(name) => root.join(name.trim()),
            Err(_) if root.join(STORE_FILE).exists() => root.to_path_buf(),
            Err(_) => return Err(OpenError::Missing(root.to_path_buf())),
        };
        let path = dir.join(STORE_FILE);
        let io = |e| OpenError::Io {
            path: path.clone(),
            source: e,
        };
        let file = File::open(&path).map_err(io)?;
        // SAFETY: the store is immutable once written (imports write a new directory and never modify an
        // existing one), so the mapped bytes do not change under us.
        let mmap = unsafe { Mmap::map(&file) }.map_err(io)?;
        // Huge pages for the mapping when the kernel reads the file in (see `huge_table`): most requests read a
        // few rows scattered over hundreds of megabytes. Only advice; refused, the store works the same.
        #[cfg(target_os = "linux")]
        let _ = mmap.advise(memmap2::Advice::HugePage);
        let corrupt = |m: &str| OpenError::Corrupt {
            path: path.clone(),
            message: m.to_string(),
        };
        if cfg!(target_endian = "big") {
            return Err(corrupt(
                "stores are little-endian; this machine is big-endian",
            ));
        }
        let header_len = size_of::<Header>();
        if mmap.len() < header_len {
            return Err(corrupt("shorter than its header"));
        }
        let header: Header = bytemuck::pod_read_unaligned(&mmap[..header_len]);
        if header.magic != MAGIC {
            return Err(corrupt("not a Thoth SNOMED CT store (bad magic)"));
        }
        if header.version != FORMAT_VERSION {
            return Err(OpenError::IncompatibleFormat {
                path: path.clone(),
                found: header.version,
                expected: FORMAT_VERSION,
            });
        }
        if header.file_len != mmap.len() as u64 {
            return Err(corrupt("truncated"));
        }
        // Every field of the header and the section table is checked here, so that a damaged file is an error
        // naming it, never a panic when a section is later viewed as a typed slice.
        let table_len = (header.section_count as usize)
            .checked_mul(size_of::<SectionEntry>())
            .ok_or_else(|| corrupt("section table out of bounds"))?;
        let table_end = header_len
            .checked_add(table_len)
            .ok_or_else(|| corrupt("section table out of bounds"))?;
        let table_bytes = mmap
            .get(header_len..table_end)
            .ok_or_else(|| corrupt("section table out of bounds"))?;
        let mut sections = [(0usize, 0usize); 32];
        let mut seen = [false; 32];
        for (i, raw) in table_bytes
            .chunks_exact(size_of::<SectionEntry>())
            .enumerate()
        {
            let e: SectionEntry = bytemuck::pod_read_unaligned(raw);
            let end = e
                .offset
                .checked_add(e.len)
                .ok_or_else(|| corrupt(&format!("section table entry {i}: length overflows")))?;
            if e.offset < table_end as u64 || end > mmap.len() as u64 || !e.offset.is_multiple_of(8)
            {
                return Err(corrupt(&format!(
                    "section table entry {i} (id {}): out of bounds",
                    e.id
                )));
            }
            let Some(s) = ALL_SECTIONS.into_iter().find(|s| *s as u32 == e.id) else {
                // A section this version does not know: bounds-checked above, otherwise ignored.
                continue;
            };
            let size = s.elem_size();
            if e.elem_size as usize != size {
                return Err(corrupt(&format!(
                    "section {s:?}: element size {} (expected {size})",
                    e.elem_size
                )));
            }
            if !e.len.is_multiple_of(size as u64) {
                return Err(corrupt(&format!(
                    "section {s:?}: length {} is not a multiple of its element size {size}",
                    e.len
                )));
            }
            if std::mem::replace(&mut seen[s as usize], true) {
                return Err(corrupt(&format!("section {s:?} appears twice")));
            }
            sections[s as usize] = (e.offset as usize, e.len as usize);
        }
        for s in ALL_SECTIONS {
            if !seen[s as usize] {
                return Err(corrupt(&format!("missing section {s:?}")));
            }
        }
        let manifest_path = dir.join(MANIFEST_FILE);
        let manifest_text = std::fs::read(&manifest_path).map_err(|e| OpenError::Io {
            path: manifest_path.clone(),
            source: e,
        })?;
        let manifest: Manifest =
            serde_json::from_slice(&manifest_text).map_err(|e| OpenError::Corrupt {
                path: manifest_path.clone(),
                message: e.to_string(),
            })?;
        let index = search::SearchIndex::open(&dir.join(SEARCH_DIR))?;
        let mut store = Store {
            dir,
            mmap,
            sections,
            manifest,
            index,
            historical_refsets: Vec::new(),
            by_id: IdIndex::build(&[]).map_err(io)?,
            default_refsets: Vec::new(),
            cards: HugeTable::from_slice(&[]).map_err(io)?,
        };
        store.validate().map_err(|m| corrupt(&m))?;
        store.historical_refsets = store.find_historical_refsets();
        store.default_refsets = store.sorted_default_refsets();
        let ids: Vec<u64> = store.concepts().iter().map(|c| c.id).collect();
        let tables_path = store.dir.join(TABLES_FILE);
        match File::open(&tables_path) {
            Ok(file) => {
                let (cards, by_id) =
                    store
                        .map_tables(&file, &ids)
                        .ok_or_else(|| OpenError::Corrupt {
                            path: tables_path.clone(),
                            message: "the concept cards or the id index disagree with store.bin"
                                .to_string(),
                        })?;
                store.cards = cards;
                store.by_id = by_id;
            }
            // A store imported before the tables were written at import: built here, in this process's memory.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                store.by_id = IdIndex::build(&ids).map_err(io)?;
                store.cards = HugeTable::from_slice(&store.build_cards()).map_err(io)?;
            }
            Err(e) => {
                return Err(OpenError::Io {
                    path: tables_path,
                    source: e,
                });
            }
        }
        Ok(store)
    }

    /// Each concept's card, computed from the store.
    fn build_cards(&self) -> Vec<ConceptCard> {
        (0..self.concepts().len() as u32)
            .map(|i| {
                let found = self.find_preferred_synonym(ConceptIdx(i), &self.default_refsets);
                ConceptCard::new(
                    self.concepts()[i as usize].id,
                    found.map(|d| (d.idx, &self.descs()[d.idx.0 as usize], d.term)),
                )
            })
            .collect()
    }

    /// The cards and the id index of `tables.bin`, mapped, after checking every row against the store: the
    /// cards' inline texts are read as UTF-8 without a check later (see `card_term`), and an index that
    /// disagreed with the concept table would answer for the wrong concept. `None` when anything disagrees.
    fn map_tables(&self, file: &File, ids: &[u64]) -> Option<(HugeTable<ConceptCard>, IdIndex)> {
        // SAFETY: as for `store.bin`, written once at import and never modified.
        let map = std::sync::Arc::new(unsafe { Mmap::map(file) }.ok()?);
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        let header: TablesHeader =
            bytemuck::try_pod_read_unaligned(map.get(..size_of::<TablesHeader>())?).ok()?;
        let n = ids.len();
        let cards_start = size_of::<TablesHeader>();
        let slots_start = cards_start.checked_add(n.checked_mul(size_of::<ConceptCard>())?)?;
        let slots = usize::try_from(header.slots).ok()?;
        let expected_len =
            slots_start.checked_add(slots.checked_mul(size_of::<crate::id_index::Slot>())?)?;
        if header.magic != TABLES_MAGIC
            || header.version != TABLES_VERSION
            || header.concepts != n as u64
            || header.store_len != self.mmap.len() as u64
            || map.len() != expected_len
        {
            return None;
        }
        let cards = HugeTable::<ConceptCard>::in_file(map.clone(), cards_start, n)?;
        let descs = self.descs().len();
        let cards_agree = cards.rows().iter().zip(ids).all(|(card, &id)| {
            card.id == id
                && (card.row == u32::MAX
                    || (card.row as usize) < descs
                        && card
                            .inline
                            .get(..card.term_len as usize)
                            .is_none_or(|text| std::str::from_utf8(text).is_ok()))
        });
        if !cards_agree {
            return None;
        }
        let by_id = IdIndex::from_slots(HugeTable::in_file(map, slots_start, slots)?, ids)?;
        Some((cards, by_id))
    }

    /// Writes `tables.bin` (see [`TablesHeader`]) into this store's directory, from the tables this process
    /// holds; done once by the import, before the store becomes visible.
    pub(crate) fn write_tables(&self) -> std::io::Result<()> {
        use std::io::Write;
        let header = TablesHeader {
            magic: TABLES_MAGIC,
            version: TABLES_VERSION,
            _pad: 0,
            concepts: self.cards.rows().len() as u64,
            slots: self.by_id.slots().len() as u64,
            store_len: self.mmap.len() as u64,
            _reserved: [0; 3],
        };
        let path = self.dir.join(TABLES_FILE);
        let file = File::create(&path)?;
        let mut out = std::io::BufWriter::new(&file);
        out.write_all(bytemuck::bytes_of(&header))?;
        out.write_all(bytemuck::cast_slice(self.cards.rows()))?;
        out.write_all(bytemuck::cast_slice(self.by_id.slots()))?;
        out.flush()?;
        drop(out);
        file.sync_all()
    }

    /// Checks that the CSR arrays agree with their tables, so that accessors cannot index out of bounds.
    fn validate(&self) -> Result<(), String> {
        // Once here, so that reading a term is a bounds check, not a UTF-8 scan (see `heap_str`).
        std::str::from_utf8(self.sec::<u8>(Section::Strings))
            .map_err(|e| format!("the string heap is not UTF-8: {e}"))?;
        let n = self.concepts().len();
        let check = |name: &str, off: &[u32], rows: usize, len: usize| {
            if off.len() != rows + 1 || off.last().copied().unwrap_or(0) as usize != len {
                return Err(format!("{name} offsets disagree with their table"));
            }
            if off.windows(2).any(|w| w[0] > w[1]) {
                return Err(format!("{name} offsets are not monotonic"));
            }
            Ok(())
        };
        check(
            "parents",
            self.sec(Section::ParentsOff),
            n,
            self.sec::<u32>(Section::Parents).len(),
        )?;
        check(
            "children",
            self.sec(Section::ChildrenOff),
            n,
            self.sec::<u32>(Section::Children).len(),
        )?;
        check(
            "ancestors",
            self.sec(Section::AncestorsOff),
            n,
            self.sec::<u32>(Section::Ancestors).len(),
        )?;
        check(
            "descendants",
            self.sec(Section::DescendantsOff),
            n,
            self.sec::<u32>(Section::Descendants).len(),
        )?;
        check(
            "relationships",
            self.sec(Section::RelBySourceOff),
            n,
            self.rels().len(),
        )?;
        check(
            "relationships by destination",
            self.sec(Section::RelByDestOff),
            n,
            self.sec::<u32>(Section::RelByDest).len(),
        )?;
        check(
            "relationships by type",
            self.sec(Section::EdgesByTypeOff),
            n,
            self.sec::<crate::ecl_eval::TypedEdge>(Section::EdgesByType)
                .len(),
        )?;
        check(
            "descriptions",
            self.sec(Section::DescByConceptOff),
            n,
            self.descs().len(),
        )?;
        check(
            "language",
            self.sec(Section::LangOff),
            self.descs().len(),
            self.sec::<LangRec>(Section::Lang).len(),
        )?;
        check(
            "concrete",
            self.sec(Section::ConcreteOff),
            n,
            self.sec::<ConcreteRec>(Section::Concrete).len(),
        )?;
        // Records themselves are not scanned here: that would page the whole file in and defeat the lazy
        // memory map. Accessors index with bounds checks, so a damaged record panics instead of reading wild.
        Ok(())
    }

    fn sec<T: Pod>(&self, s: Section) -> &[T] {
        let (off, len) = self.sections[s as usize];
        bytemuck::cast_slice(&self.mmap[off..off + len])
    }

    fn concepts(&self) -> &[ConceptRec] {
        self.sec(Section::Concepts)
    }
    fn rels(&self) -> &[RelRec] {
        self.sec(Section::Relationships)
    }
    pub(crate) fn descs(&self) -> &[DescRec] {
        self.sec(Section::Descriptions)
    }
    fn members(&self) -> &[MemberRec] {
        self.sec(Section::Members)
    }

    fn heap_str(&self, off: u32, len: u32) -> &str {
        let bytes = self.sec::<u8>(Section::Strings);
        // SAFETY: `validate` checked at open that the whole section is UTF-8, and the mapping never changes
        // (see `open`); `str::get` below keeps every slice on character boundaries, so each is UTF-8 too.
        let heap = unsafe { std::str::from_utf8_unchecked(bytes) };
        // A damaged offset shows as an empty string rather than a panic.
        let start = off as usize;
        heap.get(start..start.saturating_add(len as usize))
            .unwrap_or("")
    }

    fn csr(&self, off: Section, data: Section, i: u32) -> &[ConceptIdx] {
        let off: &[u32] = self.sec(off);
        let data: &[ConceptIdx] = self.sec(data);
        &data[off[i as usize] as usize..off[i as usize + 1] as usize]
    }

    /// Reads every page of the store file through its map, so that the first requests find it resident instead of
    /// faulting it in from disk one scattered row at a time; returns the bytes touched. The pages are the file's
    /// page cache: processes that map the same store share them, so a preload in each of N replicas costs the
    /// memory once (the search index's files are not touched).
    pub fn preload(&self) -> usize {
        #[cfg(target_os = "linux")]
        let _ = self.mmap.advise(memmap2::Advice::WillNeed);
        let bytes: &[u8] = &self.mmap;
        let mut sum = 0u8;
        for page in bytes.chunks(4096) {
            // A read the compiler cannot drop: the point is the page fault, not the value.
            sum = sum.wrapping_add(std::hint::black_box(page[0]));
        }
        std::hint::black_box(sum);
        bytes.len()
    }

    /// The directory of this store.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The manifest: format version, releases, counts.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Number of concepts (dense indexes are `0..concept_count()`).
    pub fn concept_count(&self) -> u32 {
        self.concepts().len() as u32
    }

    /// The dense index of a concept id, if the store has it.
    pub fn index_of(&self, id: SctId) -> Option<ConceptIdx> {
        self.by_id.get(id.get()).map(ConceptIdx)
    }

    /// The id of a dense index. Panics if `idx` is not from this store.
    pub fn id_of(&self, idx: ConceptIdx) -> SctId {
        SctId::new_unchecked(self.concepts()[idx.0 as usize].id)
    }

    /// Asks the processor to start loading what an answer about `idx` reads next: its concept row and card,
    /// its descriptions, its relationships, its parents and children. These sit in different tables, and each
    /// is a cache miss in a large store; read one after the other, each waits for the last. Issued together
    /// here, they arrive together. Costs a few nanoseconds when they are cached already.
    pub fn prefetch_concept(&self, idx: ConceptIdx) {
        let i = idx.0 as usize;
        let range = |off: Section| {
            let off: &[u32] = self.sec(off);
            match (off.get(i), off.get(i + 1)) {
                (Some(&a), Some(&b)) => a as usize..b as usize,
                _ => 0..0,
            }
        };
        // The four offset pairs are independent loads: the processor has them in flight together.
        let (descs, rels, parents, children) = (
            range(Section::DescByConceptOff),
            range(Section::RelBySourceOff),
            range(Section::ParentsOff),
            range(Section::ChildrenOff),
        );
        prefetch(self.concepts().get(i..i + 1));
        prefetch(self.cards.rows().get(i..i + 1));
        prefetch(self.descs().get(descs));
        prefetch(self.rels().get(rels));
        prefetch(self.sec::<ConceptIdx>(Section::Parents).get(parents));
        prefetch(self.sec::<ConceptIdx>(Section::Children).get(children));
    }

    /// A concept's attributes.
    pub fn concept(&self, idx: ConceptIdx) -> Concept {
        let c = &self.concepts()[idx.0 as usize];
        Concept {
            id: SctId::new_unchecked(c.id),
            idx,
            active: c.active == 1,
            module: SctId::new_unchecked(c.module),
            definition_status: SctId::new_unchecked(c.definition_status),
            effective_time: c.effective,
        }
    }

    /// A concept by id.
    pub fn concept_by_id(&self, id: SctId) -> Option<Concept> {
        self.index_of(id).map(|i| self.concept(i))
    }

    /// Whether the concept is active.
    pub fn is_active(&self, idx: ConceptIdx) -> bool {
        self.concepts()[idx.0 as usize].active == 1
    }

    /// Direct IS-A parents (active inferred relationships), sorted.
    pub fn parents(&self, idx: ConceptIdx) -> &[ConceptIdx] {
        self.csr(Section::ParentsOff, Section::Parents, idx.0)
    }

    /// Direct IS-A children, sorted.
    pub fn children(&self, idx: ConceptIdx) -> &[ConceptIdx] {
        self.csr(Section::ChildrenOff, Section::Children, idx.0)
    }

    /// All proper ancestors (transitive IS-A, excluding the concept itself), sorted.
    pub fn ancestors(&self, idx: ConceptIdx) -> &[ConceptIdx] {
        self.csr(Section::AncestorsOff, Section::Ancestors, idx.0)
    }

    /// All proper descendants (excluding the concept itself), sorted.
    pub fn descendants(&self, idx: ConceptIdx) -> &[ConceptIdx] {
        self.csr(Section::DescendantsOff, Section::Descendants, idx.0)
    }

    /// True when `concept` is `ancestor` or one of its descendants (`concept << ancestor`).
    pub fn is_a(&self, concept: ConceptIdx, ancestor: ConceptIdx) -> bool {
        concept == ancestor || self.ancestors(concept).binary_search(&ancestor).is_ok()
    }

    /// [`Store::is_a`] by ids; `None` when either is not in the store.
    pub fn subsumed_by(&self, concept: SctId, ancestor: SctId) -> Option<bool> {
        Some(self.is_a(self.index_of(concept)?, self.index_of(ancestor)?))
    }

    /// Ancestors as a bitmap, optionally with the concept itself (`>` / `>>` in ECL).
    pub fn ancestors_bitmap(&self, idx: ConceptIdx, include_self: bool) -> RoaringBitmap {
        let mut b = bitmap_of(self.ancestors(idx));
        if include_self {
            b.insert(idx.0);
        }
        b
    }

    /// Descendants as a bitmap, optionally with the concept itself (`<` / `<<` in ECL).
    pub fn descendants_bitmap(&self, idx: ConceptIdx, include_self: bool) -> RoaringBitmap {
        let mut b = bitmap_of(self.descendants(idx));
        if include_self {
            b.insert(idx.0);
        }
        b
    }

    /// Every concept (`*` in ECL includes inactive ones only if asked; this is all of them).
    pub fn all_concepts(&self) -> RoaringBitmap {
        RoaringBitmap::from_sorted_iter(0..self.concept_count()).unwrap_or_default()
    }

    /// Every active concept.
    pub fn active_concepts(&self) -> RoaringBitmap {
        RoaringBitmap::from_sorted_iter(
            self.concepts()
                .iter()
                .enumerate()
                .filter(|(_, c)| c.active == 1)
                .map(|(i, _)| i as u32),
        )
        .unwrap_or_default()
    }

    /// Relationships whose source is `idx` (all characteristic types, active and inactive), sorted by
    /// (group, type, destination).
    pub fn relationships(&self, idx: ConceptIdx) -> impl Iterator<Item = Relationship> + '_ {
        let off: &[u32] = self.sec(Section::RelBySourceOff);
        let rels = &self.rels()[off[idx.0 as usize] as usize..off[idx.0 as usize + 1] as usize];
        rels.iter().map(rel)
    }

    /// Relationships whose destination is `idx`, sorted by (type, source).
    pub fn relationships_to(&self, idx: ConceptIdx) -> impl Iterator<Item = Relationship> + '_ {
        let off: &[u32] = self.sec(Section::RelByDestOff);
        let ids: &[u32] = self.sec(Section::RelByDest);
        let rels = self.rels();
        ids[off[idx.0 as usize] as usize..off[idx.0 as usize + 1] as usize]
            .iter()
            .map(move |&i| rel(&rels[i as usize]))
    }

    /// Relationships of type `type_id` whose destination is `idx` (a binary search in [`Store::relationships_to`]).
    pub fn relationships_to_of_type(
        &self,
        idx: ConceptIdx,
        type_id: SctId,
    ) -> impl Iterator<Item = Relationship> + '_ {
        let off: &[u32] = self.sec(Section::RelByDestOff);
        let ids: &[u32] = self.sec(Section::RelByDest);
        let rels = self.rels();
        let slice = &ids[off[idx.0 as usize] as usize..off[idx.0 as usize + 1] as usize];
        let start = slice.partition_point(|&i| rels[i as usize].type_id < type_id.get());
        let end = slice.partition_point(|&i| rels[i as usize].type_id <= type_id.get());
        slice[start..end]
            .iter()
            .map(move |&i| rel(&rels[i as usize]))
    }

    /// Identifier schemes that have at least one active alternate identifier (concept ids, ascending).
    pub fn identifier_schemes(&self) -> Vec<SctId> {
        let mut schemes: Vec<SctId> = Vec::new();
        for r in self.sec::<AltIdRec>(Section::AltIds) {
            if schemes.last().map(|s| s.get()) != Some(r.scheme) {
                schemes.push(SctId::new_unchecked(r.scheme));
            }
        }
        schemes
    }

    /// The concepts whose active alternate identifier in `scheme` is `code` (usually one).
    pub fn concepts_with_alternate_identifier(&self, scheme: SctId, code: &str) -> Vec<ConceptIdx> {
        let rows: &[AltIdRec] = self.sec(Section::AltIds);
        let key = |r: &AltIdRec| (r.scheme, self.heap_str(r.value_off, r.value_len));
        let wanted = (scheme.get(), code);
        let start = rows.partition_point(|r| key(r) < wanted);
        rows[start..]
            .iter()
            .take_while(|r| key(r) == wanted)
            .map(|r| ConceptIdx(r.concept))
            .collect()
    }

    /// Active defining (inferred or additional) relationships of attribute type `type_idx`, sorted by
    /// (destination, source, group): the index ECL refinements merge with a sorted value set.
    pub(crate) fn edges_of_type(&self, type_idx: ConceptIdx) -> &[crate::ecl_eval::TypedEdge] {
        let off: &[u32] = self.sec(Section::EdgesByTypeOff);
        let edges = self.sec(Section::EdgesByType);
        &edges[off[type_idx.0 as usize] as usize..off[type_idx.0 as usize + 1] as usize]
    }

    /// Relationships with concrete values whose source is `idx`.
    pub fn concrete_values(&self, idx: ConceptIdx) -> impl Iterator<Item = ConcreteValue<'_>> + '_ {
        let off: &[u32] = self.sec(Section::ConcreteOff);
        let rows: &[ConcreteRec] = self.sec(Section::Concrete);
        rows[off[idx.0 as usize] as usize..off[idx.0 as usize + 1] as usize]
            .iter()
            .map(move |r| ConcreteValue {
                id: SctId::new_unchecked(r.id),
                active: r.active == 1,
                module: SctId::new_unchecked(r.module),
                effective_time: r.effective,
                source: ConceptIdx(r.source),
                type_id: SctId::new_unchecked(r.type_id),
                group: r.group,
                characteristic: SctId::new_unchecked(r.characteristic),
                raw: self.heap_str(r.value_off, r.value_len),
            })
    }

    /// Number of descriptions (dense description indexes are `0..description_count()`).
    pub fn description_count(&self) -> u32 {
        self.descs().len() as u32
    }

    /// A description's term alone (cheaper than [`Self::description`] when only the text is read).
    pub fn description_term(&self, idx: DescriptionIdx) -> &str {
        let d = &self.descs()[idx.0 as usize];
        self.heap_str(d.term_off, d.term_len)
    }

    /// A description by dense index.
    pub fn description(&self, idx: DescriptionIdx) -> Description<'_> {
        let d = &self.descs()[idx.0 as usize];
        Description {
            idx,
            id: SctId::new_unchecked(d.id),
            concept: ConceptIdx(d.concept),
            concept_id: SctId::new_unchecked(self.concepts()[d.concept as usize].id),
            active: d.active == 1,
            module: SctId::new_unchecked(d.module),
            kind: match d.kind {
                0 => DescriptionKind::Fsn,
                1 => DescriptionKind::Synonym,
                2 => DescriptionKind::Definition,
                _ => DescriptionKind::Other,
            },
            type_id: SctId::new_unchecked(d.type_id),
            case_significance: SctId::new_unchecked(d.case_significance),
            language: std::str::from_utf8(&d.lang).unwrap_or("").trim_end(),
            term: self.heap_str(d.term_off, d.term_len),
            effective_time: d.effective,
        }
    }

    /// A description by id.
    pub fn description_by_id(&self, id: SctId) -> Option<Description<'_>> {
        let by_id: &[u32] = self.sec(Section::DescById);
        let descs = self.descs();
        by_id
            .binary_search_by_key(&id.get(), |&i| descs[i as usize].id)
            .ok()
            .map(|p| self.description(DescriptionIdx(by_id[p])))
    }

    /// All descriptions and text definitions of a concept: FSNs first, then synonyms, then definitions.
    pub fn descriptions(&self, idx: ConceptIdx) -> impl Iterator<Item = Description<'_>> + '_ {
        let off: &[u32] = self.sec(Section::DescByConceptOff);
        (off[idx.0 as usize]..off[idx.0 as usize + 1])
            .map(move |i| self.description(DescriptionIdx(i)))
    }

    /// A description's active language refset memberships.
    pub fn acceptability(&self, idx: DescriptionIdx) -> impl Iterator<Item = Acceptability> + '_ {
        let off: &[u32] = self.sec(Section::LangOff);
        let rows: &[LangRec] = self.sec(Section::Lang);
        let refsets: &[LangRefsetRec] = self.sec(Section::LangRefsets);
        rows[off[idx.0 as usize] as usize..off[idx.0 as usize + 1] as usize]
            .iter()
            .map(move |l| Acceptability {
                refset: SctId::new_unchecked(refsets[l.refset_slot as usize].refset),
                preferred: l.acceptability == 1,
            })
    }

    /// The language refsets installed, each with the language code of its descriptions.
    pub fn language_refsets(&self) -> Vec<(SctId, String)> {
        self.sec::<LangRefsetRec>(Section::LangRefsets)
            .iter()
            .map(|r| {
                (
                    SctId::new_unchecked(r.refset),
                    String::from_utf8_lossy(&r.lang).trim_end().to_string(),
                )
            })
            .collect()
    }

    /// The preferred description of the given kind for the first of `refsets` that has one.
    fn preferred_of_kind(
        &self,
        idx: ConceptIdx,
        kind: DescriptionKind,
        refsets: &[SctId],
    ) -> Option<Description<'_>> {
        let slots: &[LangRefsetRec] = self.sec(Section::LangRefsets);
        let lang_off: &[u32] = self.sec(Section::LangOff);
        let lang: &[LangRec] = self.sec(Section::Lang);
        let off: &[u32] = self.sec(Section::DescByConceptOff);
        let range = off[idx.0 as usize]..off[idx.0 as usize + 1];
        let descs = self.descs();
        // The record's kind byte, as `description` reads it.
        let kind: u8 = match kind {
            DescriptionKind::Fsn => 0,
            DescriptionKind::Synonym => 1,
            DescriptionKind::Definition => 2,
            DescriptionKind::Other => 3,
        };
        for refset in refsets {
            let Some(slot) = slots.iter().position(|s| s.refset == refset.get()) else {
                continue;
            };
            // Tested on the raw records: only the description found has its term decoded (text filters of
            // expansions ask this of every candidate concept).
            let found = range.clone().find(|&d| {
                let r = &descs[d as usize];
                r.active == 1
                    && r.kind == kind
                    && lang[lang_off[d as usize] as usize..lang_off[d as usize + 1] as usize]
                        .iter()
                        .any(|l| l.refset_slot as usize == slot && l.acceptability == 1)
            });
            if let Some(d) = found {
                return Some(self.description(DescriptionIdx(d)));
            }
        }
        None
    }

    /// The preferred synonym (preferred term) for the first of `refsets` (language refsets, in order of
    /// preference) that has one; falls back to any active synonym, then to the FSN.
    pub fn preferred_synonym(&self, idx: ConceptIdx, refsets: &[SctId]) -> Option<Description<'_>> {
        if refsets == self.default_refsets.as_slice() {
            let row = self.cards.rows().get(idx.0 as usize)?.row;
            return (row != u32::MAX).then(|| self.description(DescriptionIdx(row)));
        }
        self.find_preferred_synonym(idx, refsets)
    }

    /// [`Store::preferred_synonym`] found by walking the concept's descriptions.
    fn find_preferred_synonym(
        &self,
        idx: ConceptIdx,
        refsets: &[SctId],
    ) -> Option<Description<'_>> {
        self.preferred_of_kind(idx, DescriptionKind::Synonym, refsets)
            .or_else(|| {
                self.preferred_of_kind(idx, DescriptionKind::Synonym, &self.default_refsets)
            })
            .or_else(|| {
                self.descriptions(idx)
                    .find(|d| d.active && d.kind == DescriptionKind::Synonym)
            })
            .or_else(|| self.descriptions(idx).find(|d| d.active))
    }

    /// The term of [`Store::preferred_synonym`], without reading the rest of the description.
    pub fn preferred_term(&self, idx: ConceptIdx, refsets: &[SctId]) -> Option<&str> {
        if refsets == self.default_refsets.as_slice() {
            return self.default_term(idx);
        }
        self.find_preferred_synonym(idx, refsets).map(|d| d.term)
    }

    /// [`Store::preferred_term`] in the default language refsets ([`Store::default_refsets`]): the display a
    /// request without a language gets, kept per concept at open.
    pub fn default_term(&self, idx: ConceptIdx) -> Option<&str> {
        self.card_term(self.cards.rows().get(idx.0 as usize)?)
    }

    fn card_term<'s>(&'s self, card: &'s ConceptCard) -> Option<&'s str> {
        if card.row == u32::MAX {
            return None;
        }
        Some(match card.inline.get(..card.term_len as usize) {
            // SAFETY: `ConceptCard::new` copies a whole term (a `&str` of the heap) when it fits, and `term_len`
            // is that term's length: these are the bytes of a `str`. (Checking again would cost as much as the
            // rest of reading a display.)
            Some(text) => unsafe { std::str::from_utf8_unchecked(text) },
            None => self.heap_str(card.term_off, card.term_len),
        })
    }

    /// [`Store::preferred_term`] of many concepts of this store at once, in the order of `idxs`.
    pub fn preferred_terms(&self, idxs: &[ConceptIdx], refsets: &[SctId]) -> Vec<Option<&str>> {
        if refsets != self.default_refsets.as_slice() {
            return idxs
                .iter()
                .map(|&i| self.preferred_term(i, refsets))
                .collect();
        }
        self.ids_and_default_terms(idxs)
            .into_iter()
            .map(|(_, term)| term)
            .collect()
    }

    /// The id and [`Store::default_term`] of each concept of `idxs` (of this store), in their order: one cache
    /// line each (see [`ConceptCard`]), all read before any is used, so that the processor has the reads of
    /// all of them in flight together. Panics if an index is not from this store.
    pub fn ids_and_default_terms(&self, idxs: &[ConceptIdx]) -> Vec<(SctId, Option<&str>)> {
        let found: Vec<(SctId, Option<&str>)> = idxs
            .iter()
            .map(|i| {
                let card = &self.cards.rows()[i.0 as usize];
                (SctId::new_unchecked(card.id), self.card_term(card))
            })
            .collect();
        // The displays too long for their card are in the string heap: started now, they are read by the time
        // the caller writes them.
        for (_, term) in &found {
            if let Some(t) = term.filter(|t| t.len() > CARD_INLINE) {
                prefetch(Some(t.as_bytes()));
            }
        }
        found
    }

    /// The preferred fully specified name for the first of `refsets`; falls back to any active FSN.
    pub fn fully_specified_name(
        &self,
        idx: ConceptIdx,
        refsets: &[SctId],
    ) -> Option<Description<'_>> {
        self.preferred_of_kind(idx, DescriptionKind::Fsn, refsets)
            .or_else(|| {
                self.descriptions(idx)
                    .find(|d| d.active && d.kind == DescriptionKind::Fsn)
            })
    }

    /// The semantic tag of a concept: the text in the last parentheses of its fully specified name (in the
    /// default language refsets), as in `Appendicitis (disorder)`; None when it has no FSN or the FSN no tag.
    pub fn semantic_tag(&self, idx: ConceptIdx) -> Option<&str> {
        let fsn = self.fully_specified_name(idx, &self.default_refsets)?.term;
        let inner = fsn.trim_end().strip_suffix(')')?;
        let open = inner.rfind('(')?;
        inner.get(open + 1..).filter(|tag| !tag.is_empty())
    }

    /// Installed language refsets in the default order: en-US, en-GB, then the others.
    pub fn default_refsets(&self) -> Vec<SctId> {
        self.default_refsets.clone()
    }

    fn sorted_default_refsets(&self) -> Vec<SctId> {
        let mut v: Vec<SctId> = self
            .language_refsets()
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        v.sort_by_key(|r| match *r {
            consts::US_ENGLISH => (0, r.get()),
            consts::GB_ENGLISH => (1, r.get()),
            _ => (2, r.get()),
        });
        v
    }

    fn member(&self, m: &MemberRec) -> RefsetMember<'_> {
        RefsetMember {
            uuid: m.uuid,
            active: m.active == 1,
            module: SctId::new_unchecked(m.module),
            effective_time: m.effective,
            refset: SctId::new_unchecked(m.refset),
            referenced_component: m.referenced,
            raw_fields: self.heap_str(m.fields_off, m.fields_len),
        }
    }

    fn refset_info(&self, refset: SctId) -> Option<&RefsetInfoRec> {
        let infos: &[RefsetInfoRec] = self.sec(Section::RefsetInfo);
        infos
            .binary_search_by_key(&refset.get(), |r| r.refset)
            .ok()
            .map(|i| &infos[i])
    }

    /// The refsets with members in this store (other than language refsets), ascending.
    pub fn refsets(&self) -> impl Iterator<Item = SctId> + '_ {
        self.sec::<RefsetInfoRec>(Section::RefsetInfo)
            .iter()
            .map(|r| SctId::new_unchecked(r.refset))
    }

    /// The names and types of a refset's additional fields.
    pub fn refset_fields(&self, refset: SctId) -> Option<RefsetFields<'_>> {
        let info = self.refset_info(refset)?;
        let desc = self.heap_str(info.desc_off, info.desc_len);
        let mut parts = desc.split('\t');
        let pattern = parts.next().unwrap_or("");
        Some(RefsetFields {
            pattern,
            names: parts.collect(),
        })
    }

    /// All members of a refset (active and inactive), sorted by referenced component.
    pub fn refset_members(&self, refset: SctId) -> impl Iterator<Item = RefsetMember<'_>> + '_ {
        let range = self
            .refset_info(refset)
            .map(|i| i.first as usize..(i.first + i.count) as usize)
            .unwrap_or(0..0);
        self.members()[range].iter().map(|m| self.member(m))
    }

    /// Members of `refset` whose referenced component is `component` (binary search).
    pub fn refset_members_for(
        &self,
        refset: SctId,
        component: u64,
    ) -> impl Iterator<Item = RefsetMember<'_>> + '_ {
        let range = self
            .refset_info(refset)
            .map(|i| i.first as usize..(i.first + i.count) as usize)
            .unwrap_or(0..0);
        let slice = &self.members()[range];
        let start = slice.partition_point(|m| m.referenced < component);
        let end = slice.partition_point(|m| m.referenced <= component);
        slice[start..end].iter().map(|m| self.member(m))
    }

    /// Every member (of any refset but language refsets) that references `component`, sorted by refset.
    pub fn members_of_component(
        &self,
        component: u64,
    ) -> impl Iterator<Item = RefsetMember<'_>> + '_ {
        let by: &[u32] = self.sec(Section::MembersByComponent);
        let members = self.members();
        let start = by.partition_point(|&i| members[i as usize].referenced < component);
        let end = by.partition_point(|&i| members[i as usize].referenced <= component);
        by[start..end]
            .iter()
            .map(move |&i| self.member(&members[i as usize]))
    }

    /// The concepts referenced by active members of `refset` (`^ refset` in ECL).
    pub fn refset_concepts(&self, refset: SctId) -> RoaringBitmap {
        let mut b = RoaringBitmap::new();
        let concepts = self.concepts();
        let mut last = None;
        for m in self.refset_members(refset) {
            if m.active && last != Some(m.referenced_component) {
                last = Some(m.referenced_component);
                if let Ok(i) = concepts.binary_search_by_key(&m.referenced_component, |c| c.id) {
                    b.insert(i as u32);
                }
            }
        }
        b
    }

    /// The active refsets a concept belongs to (other than language refsets), ascending.
    pub fn refsets_of_concept(&self, id: SctId) -> Vec<SctId> {
        let mut v: Vec<SctId> = self
            .members_of_component(id.get())
            .filter(|m| m.active)
            .map(|m| m.refset)
            .collect();
        v.dedup();
        v
    }

    /// The historical association refsets installed (descendants of |Historical association| or known by id).
    pub fn historical_refsets(&self) -> impl Iterator<Item = SctId> + '_ {
        self.historical_refsets
            .iter()
            .map(|&r| SctId::new_unchecked(r))
    }

    fn find_historical_refsets(&self) -> Vec<u64> {
        let parent = self.index_of(consts::HISTORICAL_ASSOCIATION);
        self.refsets()
            .filter(|r| {
                consts::HISTORICAL_ASSOCIATIONS.contains(r)
                    || match (parent, self.index_of(*r)) {
                        (Some(p), Some(i)) => i != p && self.is_a(i, p),
                        _ => false,
                    }
            })
            .map(|r| r.get())
            .collect()
    }

    /// Active historical association members whose referenced component is `id` (what replaced it), by refset.
    pub fn historical_associations(&self, id: SctId) -> Vec<RefsetMember<'_>> {
        self.members_of_component(id.get())
            .filter(|m| m.active && self.historical_refsets.contains(&m.refset.get()))
            .collect()
    }

    /// The text search index.
    pub fn search_index(&self) -> &search::SearchIndex {
        &self.index
    }
}

fn rel(r: &RelRec) -> Relationship {
    let opt = |i: u32| (i != u32::MAX).then_some(ConceptIdx(i));
    Relationship {
        id: SctId::new_unchecked(r.id),
        active: r.active == 1,
        module: SctId::new_unchecked(r.module),
        effective_time: r.effective,
        source: ConceptIdx(r.source),
        type_id: SctId::new_unchecked(r.type_id),
        type_idx: opt(r.type_idx),
        destination_id: SctId::new_unchecked(r.dest_id),
        destination: opt(r.dest),
        group: r.group,
        characteristic: SctId::new_unchecked(r.characteristic),
        modifier: SctId::new_unchecked(r.modifier),
    }
}

fn bitmap_of(s: &[ConceptIdx]) -> RoaringBitmap {
    RoaringBitmap::from_sorted_iter(s.iter().map(|c| c.0)).unwrap_or_default()
}

/// Asks the processor to load the cache lines of `rows` (at most the first 32: a concept with thousands of
/// children needs its first lines soonest, and the hardware prefetcher follows a sequential read).
fn prefetch<T>(rows: Option<&[T]>) {
    let Some(rows) = rows else { return };
    let start = rows.as_ptr().cast::<u8>();
    let len = std::mem::size_of_val(rows).min(32 * 64);
    let mut at = 0;
    while at < len {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE is part of every x86_64 target. A prefetch is a hint: it never faults, whatever the
        // address, and changes nothing the program can observe; these addresses are inside `rows` anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                start.wrapping_add(at).cast::<i8>(),
            );
        }
        at += 64;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = start;
}

/// Formats an effective time `YYYYMMDD` as an ISO date `YYYY-MM-DD`.
pub fn format_date(t: u32) -> String {
    format!("{:04}-{:02}-{:02}", t / 10000, t / 100 % 100, t % 100)
}
