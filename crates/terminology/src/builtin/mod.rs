//! Code systems defined by a grammar rather than a list of concepts, served by every [`crate::Terminology`]
//! without any content to load: UCUM unit expressions ([`UcumProvider`]) and BCP-47 language tags
//! ([`Bcp47Provider`]).

mod bcp47;
mod ucum;

pub use bcp47::{BCP47_URL, Bcp47Provider};
pub use ucum::{UCUM_URL, UcumProvider};

use crate::provider::CodeSystemProvider;
use crate::registry::Registry;
use std::sync::Arc;

/// The built-in providers, given the loaded content (UCUM lists the common units of the newest
/// `ucum-common` value set in its expansions, BCP-47 the `Languages` value set's, as tx.fhir.org does).
pub fn builtin_providers(registry: &Registry) -> Vec<Arc<dyn CodeSystemProvider>> {
    vec![
        UcumProvider::new(registry) as Arc<dyn CodeSystemProvider>,
        Bcp47Provider::new(registry) as Arc<dyn CodeSystemProvider>,
    ]
}
