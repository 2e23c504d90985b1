//! Code systems that other content depends on, served by every [`crate::Terminology`] without any content to
//! import: UCUM unit expressions ([`UcumProvider`]), BCP-47 language tags ([`Bcp47Provider`]) and MIME media
//! types ([`MimeProvider`]), defined by a grammar, and ISO 3166-1 country codes ([`Iso3166Provider`]), a closed list. Their tables come from crates
//! (`ucum-units`, `language-tags`, `isocountry`) or, for what no crate carries (the IANA registry's
//! descriptions), from pinned data files ([`BuiltinData`]).

mod bcp47;
mod data;
mod iso3166;
mod mime;
mod ucum;

pub use bcp47::{BCP47_URL, Bcp47Provider};
pub use data::{
    BuiltinData, SUBTAG_REGISTRY_PACKAGE, SUBTAG_REGISTRY_VERSION, SubtagKind, SubtagRegistry,
    builtin_data_path, load_builtin_data,
};
pub use iso3166::{ISO3166_URL, Iso3166Provider};
pub use mime::{MIME_URL, MimeProvider, valid_media_type};
pub use ucum::{UCUM_URL, UcumProvider};

use crate::provider::CodeSystemProvider;
use crate::registry::Registry;
use std::sync::Arc;

/// The built-in providers, given the loaded content (UCUM lists the common units of the newest
/// `ucum-common` value set in its expansions, BCP-47 the `Languages` value set's, as tx.fhir.org does) and the
/// data read from files (`data`).
pub fn builtin_providers(
    registry: &Registry,
    data: &BuiltinData,
) -> Vec<Arc<dyn CodeSystemProvider>> {
    vec![
        UcumProvider::new(registry) as Arc<dyn CodeSystemProvider>,
        Bcp47Provider::new(registry, data.subtags.clone()) as Arc<dyn CodeSystemProvider>,
        Iso3166Provider::new(registry) as Arc<dyn CodeSystemProvider>,
        MimeProvider::new() as Arc<dyn CodeSystemProvider>,
    ]
}
