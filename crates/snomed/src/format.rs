//! The on-disk layout of `store.bin` (described for humans in `docs/snomed-store-format.md`).
//!
//! The file is a 64-byte header, a section table, then sections, each 8-byte aligned. Every section is a flat
//! little-endian array of one of the `#[repr(C)]` records below (or bytes), so that a read-only memory map can be
//! viewed as typed slices without copying or parsing.

use bytemuck::{Pod, Zeroable};

/// The magic bytes that open `store.bin`.
pub(crate) const MAGIC: [u8; 8] = *b"THOTHSCT";

/// Bumped on any change of the byte layout; a store of another version is refused with
/// [`crate::OpenError::IncompatibleFormat`] and must be re-imported.
pub const FORMAT_VERSION: u32 = 2;

/// The fixed-size file header.
#[derive(Clone, Copy, Pod, Zeroable)]
#[repr(C)]
pub(crate) struct Header {
    pub magic: [u8; 8],
    pub version: u32,
    pub section_count: u32,
    pub file_len: u64,
    pub reserved: [u64; 5],
}

/// One row of the section table: which section, where and how long (in bytes).
#[derive(Clone, Copy, Pod, Zeroable)]
#[repr(C)]
pub(crate) struct SectionEntry {
    pub id: u32,
    pub elem_size: u32,
    pub offset: u64,
    pub len: u64,
}

/// Identifies each section. Numbers are part of the format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Section {
    Concepts = 1,
    ParentsOff = 2,
    Parents = 3,
    ChildrenOff = 4,
    Children = 5,
    AncestorsOff = 6,
    Ancestors = 7,
    DescendantsOff = 8,
    Descendants = 9,
    Descriptions = 10,
    DescByConceptOff = 11,
    DescById = 12,
    LangOff = 13,
    Lang = 14,
    LangRefsets = 15,
    Relationships = 16,
    RelBySourceOff = 17,
    RelByDest = 18,
    RelByDestOff = 19,
    Concrete = 20,
    ConcreteOff = 21,
    Members = 22,
    MembersByComponent = 23,
    RefsetInfo = 24,
    Strings = 25,
    EdgesByType = 26,
    EdgesByTypeOff = 27,
    AltIds = 28,
}

pub(crate) const ALL_SECTIONS: [Section; 28] = [
    Section::Concepts,
    Section::ParentsOff,
    Section::Parents,
    Section::ChildrenOff,
    Section::Children,
    Section::AncestorsOff,
    Section::Ancestors,
    Section::DescendantsOff,
    Section::Descendants,
    Section::Descriptions,
    Section::DescByConceptOff,
    Section::DescById,
    Section::LangOff,
    Section::Lang,
    Section::LangRefsets,
    Section::Relationships,
    Section::RelBySourceOff,
    Section::RelByDest,
    Section::RelByDestOff,
    Section::Concrete,
    Section::ConcreteOff,
    Section::Members,
    Section::MembersByComponent,
    Section::RefsetInfo,
    Section::Strings,
    Section::EdgesByType,
    Section::EdgesByTypeOff,
    Section::AltIds,
];

impl Section {
    /// The size in bytes of one element of this section, as written in the section table's `elem_size`.
    pub(crate) fn elem_size(self) -> usize {
        use Section as S;
        match self {
            S::Concepts => size_of::<ConceptRec>(),
            S::Descriptions => size_of::<DescRec>(),
            S::Lang => size_of::<LangRec>(),
            S::LangRefsets => size_of::<LangRefsetRec>(),
            S::Relationships => size_of::<RelRec>(),
            S::Concrete => size_of::<ConcreteRec>(),
            S::Members => size_of::<MemberRec>(),
            S::RefsetInfo => size_of::<RefsetInfoRec>(),
            S::Strings => 1,
            S::EdgesByType => size_of::<crate::ecl_eval::TypedEdge>(),
            S::AltIds => size_of::<AltIdRec>(),
            S::ParentsOff
            | S::Parents
            | S::ChildrenOff
            | S::Children
            | S::AncestorsOff
            | S::Ancestors
            | S::DescendantsOff
            | S::Descendants
            | S::DescByConceptOff
            | S::DescById
            | S::LangOff
            | S::RelBySourceOff
            | S::RelByDest
            | S::RelByDestOff
            | S::ConcreteOff
            | S::MembersByComponent
            | S::EdgesByTypeOff => size_of::<u32>(),
        }
    }
}

/// A concept row, sorted by `id`; its position is the concept's dense index.
#[derive(Clone, Copy, Pod, Zeroable, Debug)]
#[repr(C)]
pub(crate) struct ConceptRec {
    pub id: u64,
    pub module: u64,
    pub definition_status: u64,
    pub effective: u32,
    pub active: u32,
}

/// A description or text definition, sorted by (concept, kind, id).
#[derive(Clone, Copy, Pod, Zeroable, Debug)]
#[repr(C)]
pub(crate) struct DescRec {
    pub id: u64,
    pub module: u64,
    pub type_id: u64,
    pub case_significance: u64,
    pub concept: u32,
    pub effective: u32,
    pub term_off: u32,
    pub term_len: u32,
    pub lang: [u8; 2],
    pub active: u8,
    pub kind: u8,
    pub _pad: u32,
}

/// An active language refset member of one description: which language refset (a slot in `LangRefsets`)
/// and whether the description is preferred (1) or acceptable (2) in it.
#[derive(Clone, Copy, Pod, Zeroable, Debug)]
#[repr(C)]
pub(crate) struct LangRec {
    pub refset_slot: u16,
    pub acceptability: u16,
}

/// A language refset known to the store and the language of its descriptions.
#[derive(Clone, Copy, Pod, Zeroable, Debug)]
#[repr(C)]
pub(crate) struct LangRefsetRec {
    pub refset: u64,
    pub lang: [u8; 2],
    pub _pad: [u8; 6],
}

/// A relationship, sorted by (source, group, type, destination).
#[derive(Clone, Copy, Pod, Zeroable, Debug)]
#[repr(C)]
pub(crate) struct RelRec {
    pub id: u64,
    pub module: u64,
    pub characteristic: u64,
    pub type_id: u64,
    pub dest_id: u64,
    pub modifier: u64,
    pub source: u32,
    /// Dense index of the destination, or `u32::MAX` when the destination is not in the store.
    pub dest: u32,
    /// Dense index of the type, or `u32::MAX`.
    pub type_idx: u32,
    pub effective: u32,
    pub group: u32,
    pub active: u32,
}

/// An active alternate identifier of a concept, sorted by (scheme, code) where code is the `value` bytes in
/// Strings.
#[derive(Clone, Copy, Pod, Zeroable, Debug)]
#[repr(C)]
pub(crate) struct AltIdRec {
    pub scheme: u64,
    pub concept: u32,
    pub value_off: u32,
    pub value_len: u32,
    pub _pad: u32,
}

/// A relationship with a concrete value, sorted by (source, group, type).
#[derive(Clone, Copy, Pod, Zeroable, Debug)]
#[repr(C)]
pub(crate) struct ConcreteRec {
    pub id: u64,
    pub module: u64,
    pub characteristic: u64,
    pub type_id: u64,
    pub source: u32,
    pub effective: u32,
    pub group: u32,
    pub active: u32,
    pub value_off: u32,
    pub value_len: u32,
}

/// A reference set member of any refset other than a language refset, sorted by (refset, referenced component).
/// Additional fields are stored tab-separated in the string heap; their names are in `RefsetInfo`.
#[derive(Clone, Copy, Pod, Zeroable, Debug)]
#[repr(C)]
pub(crate) struct MemberRec {
    pub uuid: [u8; 16],
    pub module: u64,
    pub refset: u64,
    pub referenced: u64,
    pub effective: u32,
    pub active: u32,
    pub fields_off: u32,
    pub fields_len: u32,
}

/// A refset with members in `Members`: its id, where its members are, and its field names and types
/// (a string `pattern\tname1\tname2...` in the heap, pattern as in RF2 file names: `c`, `i`, `s` per field).
#[derive(Clone, Copy, Pod, Zeroable, Debug)]
#[repr(C)]
pub(crate) struct RefsetInfoRec {
    pub refset: u64,
    pub first: u32,
    pub count: u32,
    pub desc_off: u32,
    pub desc_len: u32,
}
