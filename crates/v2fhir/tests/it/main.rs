//! Integration tests of the v2-to-FHIR converter, on the shared corpora.

mod corpus;
mod digest;
mod fhir_converter;
mod golden;
mod hapi_fhir;
mod properties;
mod support;
