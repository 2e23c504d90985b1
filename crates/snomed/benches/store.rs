//! In-process benchmarks of the store's hot paths.
//!
//! Uses the store at `$THOTH_BENCH_SNOMED` (a store root, e.g. `<data>/snomed` after importing the full-scale
//! synthetic release), or generates and imports a 50,000-concept release into a temporary directory.
//!
//! ```sh
//! cargo run --release -p thoth -- dev gen-snomed --concepts 370000 --seed 1 --out /tmp/sct370k
//! cargo run --release -p thoth -- --data /tmp/thoth370k import snomed /tmp/sct370k
//! THOTH_BENCH_SNOMED=/tmp/thoth370k/snomed cargo bench -p snomed --bench store
//! ```

use criterion::{Criterion, criterion_group, criterion_main};
use snomed::{ConceptIdx, SctId, SearchRequest, consts};
use std::hint::black_box;

mod common;
use common::open;

fn benches(c: &mut Criterion) {
    let (_tmp, store) = open();
    let n = store.concept_count();
    // Rotate over active concepts spread across the id space, as a client would.
    let sample: Vec<ConceptIdx> = (0..n)
        .step_by((n / 4096).max(1) as usize)
        .map(ConceptIdx)
        .filter(|&c| store.is_active(c))
        .collect();
    let ids: Vec<SctId> = sample.iter().map(|&c| store.id_of(c)).collect();
    let refsets = [consts::US_ENGLISH];

    let mut i = 0usize;
    c.bench_function("lookup concept by id", |b| {
        b.iter(|| {
            i = (i + 1) % ids.len();
            let c = store.concept_by_id(black_box(ids[i])).unwrap();
            black_box(c.active)
        })
    });
    c.bench_function("preferred term (en-US)", |b| {
        b.iter(|| {
            i = (i + 1) % sample.len();
            black_box(
                store
                    .preferred_synonym(sample[i], &refsets)
                    .unwrap()
                    .term
                    .len(),
            )
        })
    });
    c.bench_function("all descriptions of a concept", |b| {
        b.iter(|| {
            i = (i + 1) % sample.len();
            black_box(
                store
                    .descriptions(sample[i])
                    .map(|d| d.term.len())
                    .sum::<usize>(),
            )
        })
    });
    let pairs: Vec<(SctId, SctId)> = sample
        .iter()
        .enumerate()
        .map(|(k, &c)| {
            let anc = store.ancestors(c);
            let other = if k % 2 == 0 && !anc.is_empty() {
                anc[anc.len() / 2]
            } else {
                sample[(k * 7) % sample.len()]
            };
            (store.id_of(c), store.id_of(other))
        })
        .collect();
    c.bench_function("subsumption test by ids", |b| {
        b.iter(|| {
            i = (i + 1) % pairs.len();
            black_box(store.subsumed_by(pairs[i].0, pairs[i].1).unwrap())
        })
    });
    c.bench_function("all ancestors as bitmap", |b| {
        b.iter(|| {
            i = (i + 1) % sample.len();
            black_box(store.ancestors_bitmap(sample[i], false).len())
        })
    });
    let finding = store.index_of(SctId::parse("404684003").unwrap()).unwrap();
    let large = store.descendants(finding).len();
    assert!(large > 1000, "clinical finding has {large} descendants");
    c.bench_function("all descendants of clinical finding as bitmap", |b| {
        b.iter(|| black_box(store.descendants_bitmap(black_box(finding), true).len()))
    });
    // Prefixes of 3 to 6 letters taken from real terms.
    let prefixes: Vec<String> = sample
        .iter()
        .take(512)
        .enumerate()
        .filter_map(|(k, &c)| {
            let term = store.preferred_synonym(c, &refsets)?.term.to_lowercase();
            let word = term.split(' ').find(|w| w.len() >= 6)?.to_string();
            Some(word.chars().take(3 + k % 4).collect())
        })
        .collect();
    for p in prefixes.iter().take(20) {
        assert!(
            !store.search(&SearchRequest::new(p)).unwrap().is_empty(),
            "{p}"
        );
    }
    c.bench_function("search 3-6 letter prefix, 10 hits", |b| {
        b.iter(|| {
            i = (i + 1) % prefixes.len();
            let hits = store.search(&SearchRequest::new(&prefixes[i])).unwrap();
            black_box(hits.len())
        })
    });
    let two_words: Vec<String> = prefixes
        .chunks(2)
        .filter(|p| p.len() == 2)
        .map(|p| format!("{} {}", p[0], p[1]))
        .collect();
    c.bench_function("search two prefixes, 10 hits", |b| {
        b.iter(|| {
            i = (i + 1) % two_words.len();
            black_box(
                store
                    .search(&SearchRequest::new(&two_words[i]))
                    .unwrap()
                    .len(),
            )
        })
    });
}

criterion_group!(store, benches);
criterion_main!(store);
