//! In-process benchmarks of the single-code operations as the HTTP handlers run them (`Terminology::run_fast`,
//! the GET query pairs in, the JSON answer out), over SNOMED CT: the cost of an operation without the HTTP
//! stack, which `bench/terminology/run.sh` measures end to end.
//!
//! Runs on the store at `$THOTH_BENCH_SNOMED` (an imported store root such as `<data>/snomed`) or on a synthetic
//! release generated and imported into a temporary directory, like the store benches of the `snomed` crate:
//!
//! ```sh
//! THOTH_BENCH_SNOMED=/tmp/thoth-terminology-bench/data-370000/snomed cargo bench -p terminology --bench single_code
//! ```

use criterion::{Criterion, criterion_group, criterion_main};
use snomed::ConceptIdx;
use std::hint::black_box;
use std::sync::Arc;
use terminology::{Operation, SnomedProvider, Terminology};

// The server's allocator (see `thoth`'s main.rs): with it the store's tables built at open sit on huge pages as
// they do in the server, which changes what a cache miss costs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../../snomed/benches/common/mod.rs"]
mod common;

const SCT: &str = "http://snomed.info/sct";

fn query(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn benches(c: &mut Criterion) {
    let (_tmp, store) = common::open();
    let store = Arc::new(store);
    let n = store.concept_count();
    let sample: Vec<ConceptIdx> = (0..n)
        .step_by((n / 2048).max(1) as usize)
        .map(ConceptIdx)
        .filter(|&c| store.is_active(c))
        .collect();
    let codes: Vec<String> = sample.iter().map(|&c| store.id_of(c).to_string()).collect();
    let pairs: Vec<(String, String)> = sample
        .iter()
        .filter_map(|&c| {
            let parent = *store.parents(c).first()?;
            Some((store.id_of(parent).to_string(), store.id_of(c).to_string()))
        })
        .collect();
    let tx = Terminology::default().with_provider(SnomedProvider::new(store.clone()));
    let finding_vs = format!("{SCT}?fhir_vs=isa/404684003");

    let mut run = |name: &str, op: Operation, queries: Vec<Vec<(String, String)>>| {
        // Every query must be one the fast path answers, or the bench would time the refusal.
        for q in &queries {
            assert!(tx.run_fast(op, q, None).is_some(), "{name}: {q:?}");
        }
        let mut i = 0usize;
        c.bench_function(name, |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                black_box(
                    tx.run_fast(op, black_box(&queries[i]), None)
                        .map(|a| a.len()),
                )
            })
        });
    };
    let lookups: Vec<Vec<(String, String)>> = codes
        .iter()
        .map(|c| query(&[("system", SCT), ("code", c)]))
        .collect();
    run("$lookup", Operation::Lookup, lookups.clone());
    run(
        "$subsumes",
        Operation::Subsumes,
        pairs
            .iter()
            .map(|(a, b)| query(&[("system", SCT), ("codeA", a), ("codeB", b)]))
            .collect(),
    );
    run(
        "CodeSystem/$validate-code",
        Operation::ValidateCs,
        codes
            .iter()
            .map(|c| query(&[("url", SCT), ("code", c)]))
            .collect(),
    );
    run(
        "ValueSet/$validate-code isa/clinical finding",
        Operation::ValidateVs,
        codes
            .iter()
            .map(|c| query(&[("url", &finding_vs), ("system", SCT), ("code", c)]))
            .collect(),
    );
    // The same lookups with the caches a server sees: between two requests its network stack and HTTP code
    // run over other memory. Writing over a buffer the size of this core's L2 cache between calls (outside the
    // timing) leaves the store's rows to come from L3 or memory, as they do under `bench/terminology/run.sh`.
    let mut other = vec![0u8; 2 << 20];
    let mut i = 0usize;
    c.bench_function("$lookup, cold caches", |b| {
        b.iter_custom(|iters| {
            let mut spent = std::time::Duration::ZERO;
            for _ in 0..iters {
                for line in other.chunks_mut(64) {
                    line[0] = line[0].wrapping_add(1);
                }
                i = (i + 1) % lookups.len();
                let start = std::time::Instant::now();
                black_box(tx.run_fast(Operation::Lookup, black_box(&lookups[i]), None));
                spent += start.elapsed();
            }
            spent
        })
    });
}

criterion_group!(single_code, benches);
criterion_main!(single_code);
