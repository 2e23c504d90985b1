//! Integration tests of the terminology crate, over the HL7 conformance suites' own resources in ../shared.

mod bcp47;
mod expansion_cache;
mod fast;
mod icd10cm;
mod languages;
mod loinc;
mod operations;
mod packages;
mod sct;
mod supplements;
mod ucum;
mod value_set_rules;
mod versions;

use serde_json::Value;
use std::path::PathBuf;

/// `../shared` beside the repository.
pub fn shared() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    assert!(
        p.join("tx-ecosystem/tests/test-cases.json").exists(),
        "../shared/tx-ecosystem is missing beside the repository: {}",
        p.display()
    );
    p
}

/// A JSON file of the conformance tests (`simple/codesystem-simple.json`).
pub fn tx_test_file(rel: &str) -> Value {
    let path = shared().join("tx-ecosystem/tests").join(rel);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
