//! Integration tests of the `fhir` crate over the official R4 examples, Synthea bundles and edge cases.

mod bad_input;
mod binary;
mod common;
mod edge_cases;
mod ndjson;
mod package;
mod primitives;
mod synthea;
