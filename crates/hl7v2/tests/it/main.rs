//! Integration tests of the hl7v2 crate, on the real corpora in ../shared and on hand-written cases.

mod ack;
mod bad_inputs;
mod batch;
mod corpus;
mod definitions;
mod differential;
mod edit;
mod json;
mod paths;
mod properties;
mod reports;
mod structure;
mod support;
mod validation;
