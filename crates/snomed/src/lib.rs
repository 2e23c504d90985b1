//! SNOMED CT: RF2 import, the memory-mapped store, text search and ECL evaluation.
//!
//! [`import`] reads RF2 release packages (zip files or directories, Snapshot or Full, several layered) and
//! builds an immutable store directory; [`Store::open`] memory-maps it. Concepts have dense indexes
//! ([`ConceptIdx`], `0..n` in SCTID order) so that sets of concepts are `roaring::RoaringBitmap`s and the
//! hierarchy is a few flat arrays: parents, children, and the full IS-A closure both ways.
//!
//! ```no_run
//! use snomed::{Store, SctId, consts};
//! let store = Store::open(std::path::Path::new("data/snomed")).unwrap();
//! let ms = store.index_of(SctId::parse("24700007").unwrap()).unwrap();
//! let disease = store.index_of(SctId::parse("64572001").unwrap()).unwrap();
//! assert!(store.is_a(ms, disease));
//! let term = store.preferred_synonym(ms, &[consts::GB_ENGLISH]).unwrap().term;
//! let hits = store.search(&snomed::SearchRequest::new("mult scl")).unwrap();
//! # let _ = (term, hits);
//! ```
//!
//! The byte layout of a store is described in `docs/snomed-store-format.md`; its version is
//! [`FORMAT_VERSION`], and a store of another version is refused with [`OpenError::IncompatibleFormat`].

mod build;
pub mod consts;
pub mod ecl_eval;
mod error;
mod format;
mod huge_table;
mod id;
mod id_index;
mod import;
mod lang;
mod query;
mod rf2;
mod search;
mod store;
pub mod synth;

pub use error::{ImportError, OpenError, SearchError};
pub use format::FORMAT_VERSION;
pub use id::{ConceptIdx, IdError, Partition, SctId};
pub use import::{ImportOptions, ImportProgress, ImportSummary, NoProgress, import, import_with};
pub use lang::parse_accept_language;
pub use query::{SearchHit, SearchRequest};
pub use rf2::format_uuid;
pub use search::{
    MAX_PREFIX, MAX_SEARCH_WORD_CHARS, MAX_SEARCH_WORDS, SearchIndex, check_search_words,
};
pub use store::{
    Acceptability, Concept, ConcreteValue, Description, DescriptionIdx, DescriptionKind, Manifest,
    RefsetFields, RefsetMember, Relationship, Store, Value, format_date,
};
