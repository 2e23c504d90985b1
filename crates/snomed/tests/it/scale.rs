//! Full-scale run (ignored by default): generate, import and open an International-sized synthetic release.
//!
//! `THOTH_SCALE_CONCEPTS=370000 cargo test --release -p snomed --test it -- --ignored full_scale --nocapture`

use std::time::Instant;

#[test]
#[ignore = "minutes of work at full scale; run with --release --ignored"]
fn full_scale_generate_import_open() {
    let concepts: usize = std::env::var("THOTH_SCALE_CONCEPTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(370_000);
    let tmp = tempfile::tempdir().unwrap();
    let rf2 = tmp.path().join("rf2");
    let t = Instant::now();
    let s =
        snomed::synth::generate(&snomed::synth::SynthConfig { concepts, seed: 1 }, &rf2).unwrap();
    println!("generate: {:.1} s, {s:?}", t.elapsed().as_secs_f64());
    let root = tmp.path().join("snomed");
    let t = Instant::now();
    let summary = snomed::import(&[rf2], &root, &snomed::NoProgress).unwrap();
    println!(
        "import + index: {:.1} s, store {:.0} MiB",
        t.elapsed().as_secs_f64(),
        summary.store_bytes as f64 / 1048576.0
    );
    let t = Instant::now();
    let store = snomed::Store::open(&root).unwrap();
    println!("open: {:.1} ms", t.elapsed().as_secs_f64() * 1000.0);
    let m = store.manifest();
    let active: Vec<snomed::ConceptIdx> = (0..store.concept_count())
        .map(snomed::ConceptIdx)
        .filter(|&c| store.is_active(c))
        .collect();
    let n = active.len() as f64;
    let anc = active
        .iter()
        .map(|&c| store.ancestors(c).len())
        .sum::<usize>() as f64
        / n;
    let multi = active
        .iter()
        .filter(|&&c| store.parents(c).len() > 1)
        .count() as f64
        / n;
    let max_fan = active
        .iter()
        .map(|&c| store.children(c).len())
        .max()
        .unwrap_or(0);
    println!(
        "shape: {} concept rows, {} active, {} descriptions, {} relationships, mean ancestors {anc:.1}, multi-parent {:.0}%, max fan-out {max_fan}",
        m.concepts,
        m.active_concepts,
        m.descriptions,
        m.relationships,
        multi * 100.0
    );
}
