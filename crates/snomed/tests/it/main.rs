//! Integration tests of the SNOMED CT engine on real RF2 fixtures and generated releases.

mod concept_model;
mod ecl;
mod fixtures;
mod hierarchy;
mod naive;
mod scale;
mod search;
mod store_files;

use std::path::{Path, PathBuf};

/// `../shared` beside the repository, where the RF2 fixtures live.
pub fn shared() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    assert!(
        p.join("data/snomed").is_dir(),
        "test corpora missing: expected ../shared/data/snomed beside the repository (at {})",
        p.display()
    );
    p
}

/// Imports `paths` into a fresh temporary root and opens the store.
pub fn import(paths: &[PathBuf]) -> (tempfile::TempDir, snomed::Store, snomed::ImportSummary) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("snomed");
    let summary = snomed::import(paths, &root, &snomed::NoProgress).unwrap();
    let store = snomed::Store::open(&root).unwrap();
    (tmp, store, summary)
}

/// A small generated release, imported.
pub fn synthetic(concepts: usize, seed: u64) -> (tempfile::TempDir, snomed::Store, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let rf2 = tmp.path().join("rf2");
    snomed::synth::generate(&snomed::synth::SynthConfig { concepts, seed }, &rf2).unwrap();
    let root = tmp.path().join("snomed");
    snomed::import(std::slice::from_ref(&rf2), &root, &snomed::NoProgress).unwrap();
    let store = snomed::Store::open(&root).unwrap();
    (tmp, store, rf2)
}
