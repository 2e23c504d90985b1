//! ECL evaluation on a SNOMED-shaped release (the issue's targets: descendants of a top-level hierarchy ≤ 2 ms,
//! a refinement ≤ 5 ms, `^ refset` ≤ 1 ms).
//!
//! Uses the store at `$THOTH_BENCH_SNOMED` (a store root, e.g. after importing the full-scale synthetic release),
//! or generates and imports a synthetic release of `$THOTH_BENCH_CONCEPTS` concepts (default 50,000) into a
//! temporary directory. Full scale, in one command:
//!
//! ```sh
//! THOTH_BENCH_CONCEPTS=370000 cargo bench -p snomed --bench ecl
//! ```

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use snomed::ecl_eval::{Limits, evaluate, evaluate_str};
use snomed::{ConceptIdx, SctId, Store};

mod common;
use common::open;

/// A body structure two levels down with the most descendants: the `<< 39057004` of the refinement benchmark.
fn body_site(store: &Store) -> u64 {
    let body = store.index_of(SctId::new(123037004).unwrap()).unwrap();
    let mut best = (0, 0);
    for &child in store.children(body) {
        for &grandchild in store.children(child) {
            let n = store.descendants(grandchild).len();
            if n > best.0 {
                best = (n, grandchild.0);
            }
        }
    }
    store.id_of(ConceptIdx(best.1)).get()
}

fn benches(c: &mut Criterion) {
    let (_tmp, store) = open();
    let limits = Limits::default();
    let site = body_site(&store);
    let refset = snomed::synth::simple_refset_id().get();
    let cases = [
        (
            "descendants of a top-level hierarchy",
            "<< 404684003".to_owned(),
        ),
        (
            "refinement",
            format!("<< 404684003 : 363698007 = << {site}"),
        ),
        ("member of", format!("^ {refset}")),
        (
            "grouped refinement",
            format!("<< 404684003 : {{ 363698007 = << {site}, 116676008 = * }}"),
        ),
        ("exclusion", "<< 404684003 MINUS << 64572001".to_owned()),
        (
            "dotted",
            format!("(<< 404684003 : 363698007 = << {site}) . 116676008"),
        ),
        (
            "concept filter",
            "<< 71388002 {{ C definitionStatus = defined }}".to_owned(),
        ),
        (
            "description filter",
            "<< 71388002 {{ D term = \"car\" }}".to_owned(),
        ),
    ];
    for (name, ecl) in &cases {
        let tree = ecl::parse(ecl).unwrap();
        let n = evaluate(&store, &tree, &limits).unwrap().len();
        assert!(n > 0, "{ecl} selects nothing on this release");
        eprintln!("{name}: {ecl} -> {n} concepts");
        c.bench_function(&format!("ecl {name}"), |b| {
            b.iter(|| evaluate(&store, black_box(&tree), &limits).unwrap().len())
        });
    }
    c.bench_function("ecl parse + evaluate <<", |b| {
        b.iter(|| {
            evaluate_str(
                &store,
                black_box("<< 404684003 |Clinical finding|"),
                &limits,
            )
            .unwrap()
            .len()
        })
    });
}

criterion_group!(ecl_benches, benches);
criterion_main!(ecl_benches);
