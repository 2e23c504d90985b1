//! The store every SNOMED CT bench runs on: `$THOTH_BENCH_SNOMED` (an imported store) if set, else a synthetic
//! release of `$THOTH_BENCH_CONCEPTS` concepts (default 50,000) generated and imported into a temporary directory.

use snomed::Store;

/// Opens the bench store; keep the returned temporary directory alive as long as the store.
pub fn open() -> (Option<tempfile::TempDir>, Store) {
    if let Ok(root) = std::env::var("THOTH_BENCH_SNOMED") {
        return (
            None,
            Store::open(std::path::Path::new(&root)).expect("THOTH_BENCH_SNOMED store"),
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let rf2 = tmp.path().join("rf2");
    let concepts = std::env::var("THOTH_BENCH_CONCEPTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(50_000);
    snomed::synth::generate(&snomed::synth::SynthConfig { concepts, seed: 1 }, &rf2).unwrap();
    let root = tmp.path().join("snomed");
    snomed::import(&[rf2], &root, &snomed::NoProgress).unwrap();
    let store = Store::open(&root).unwrap();
    (Some(tmp), store)
}
