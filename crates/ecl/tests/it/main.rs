//! Integration tests for the `ecl` crate: the official examples, golden files and robustness properties.

mod concept_ids;
mod examples;
mod golden;
mod robustness;
