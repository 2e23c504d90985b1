//! Code systems, value sets and concept maps: lookup, validate, subsume, expand, translate.
//!
//! [`Terminology`] is the facade: it holds a [`Registry`] of FHIR CodeSystem, ValueSet and ConceptMap
//! resources (from FHIR packages, LOINC, ICD-10-CM, or supplied with a request as `tx-resource`) and answers
//! the FHIR terminology operations. Inputs are FHIR `Parameters` ([`Params`]); answers are FHIR JSON, and
//! failures are [`TxError`]s whose issues carry the tx-issue-type codes of the HL7 conformance tests.
//!
//! ```
//! use terminology::{Config, Operation, Params, Registry, Terminology};
//! use serde_json::json;
//!
//! let mut registry = Registry::new();
//! registry.add(json!({
//!     "resourceType": "CodeSystem", "url": "http://example.org/cs", "version": "1",
//!     "content": "complete", "concept": [{"code": "a", "display": "Alpha"}]
//! }));
//! let tx = Terminology::new(registry, Config::default());
//! let params = Params::from_json(&json!({"resourceType": "Parameters", "parameter": [
//!     {"name": "url", "valueUri": "http://example.org/cs"},
//!     {"name": "code", "valueCode": "a"}
//! ]}));
//! let answer = tx.run(Operation::ValidateCs, &params, None).unwrap();
//! assert_eq!(answer["parameter"].as_array().unwrap().last().unwrap()["valueBoolean"], true);
//! ```

mod builtin;
mod bundle;
mod cache;
mod codesystem;
mod context;
mod csv;
mod error;
mod expand;
mod expansion;
mod fast;
mod filter;
mod icd10cm;
mod loinc;
mod lookup;
mod package;
mod params;
mod provider;
mod registry;
mod sct;
mod search;
mod service;
mod time;
mod translate;
mod validate;

pub use builtin::{
    BCP47_URL, Bcp47Provider, BuiltinData, ISO3166_URL, Iso3166Provider, MIME_URL, MimeProvider,
    SUBTAG_REGISTRY_PACKAGE, SUBTAG_REGISTRY_VERSION, SubtagKind, SubtagRegistry, UCUM_URL,
    UcumProvider, builtin_data_path, load_builtin_data, valid_media_type,
};
pub use bundle::write_bundle;
pub use codesystem::{CodeSystem, Concept, Content};
pub use error::{ErrorKind, Issue, LoadError, Severity, TX_ISSUE_TYPE, TxError, operation_outcome};
pub use fast::CodeVerdict;
pub use icd10cm::{
    ICD10CM_ALL_VS, ICD10CM_SOURCE, ICD10CM_URL, Icd10cmStats, icd10cm_all_value_set,
    import_icd10cm,
};
pub use loinc::{
    LOINC_STORE_FORMAT, LOINC_URL, LoincImport, LoincProvider, LoincStats, LoincStore,
    import_loinc, import_loinc_store,
};
pub use package::{LoadStats, load_data_dir, load_package};
pub use params::Params;
pub use provider::{CodeSystemProvider, Detail, MapTarget, Page, PageRequest, Selection};
pub use registry::{Kind, Registry};
pub use sct::SnomedProvider;
pub use service::{Config, Operation, Terminology};
