//! In-process benchmarks of `ValueSet/$expand` and search as the HTTP handlers run them, over a data directory
//! as `thoth serve` loads it (SNOMED CT, the FHIR packages): the general path (`Terminology::run` and the
//! writing of its value), the fast path (`Terminology::run_fast`, the text written directly), and the costs
//! an expansion is made of (the page of a cached include, the page's displays, the instance's identifier and
//! timestamp, the request's parameters), so that `bench/terminology/run.sh`'s rows can be explained.
//!
//! ```sh
//! THOTH_BENCH_DATA=/tmp/thoth-terminology-bench/data-370000 cargo bench -p terminology --bench expansion
//! ```
//!
//! Without `THOTH_BENCH_DATA` it skips (the packages and a full-scale SNOMED CT store are needed to say
//! anything about the bench's rows).

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use terminology::{
    Detail, Kind, LoincProvider, Operation, PageRequest, Params, Registry, SnomedProvider,
    Terminology,
};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SCT: &str = "http://snomed.info/sct";
/// The body structure with the most descendants in the synthetic release (seed 1), as in the HTTP bench.
const SITE: &str = "10177576004";

/// A GET query's pairs.
type Query = Vec<(String, String)>;

fn query(pairs: &[(&str, &str)]) -> Query {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn benches(c: &mut Criterion) {
    let Ok(data) = std::env::var("THOTH_BENCH_DATA") else {
        eprintln!("THOTH_BENCH_DATA is not set: nothing to measure");
        return;
    };
    let data = Path::new(&data);
    let mut registry = Registry::new();
    for (path, result) in terminology::load_data_dir(data, &mut registry) {
        result.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    let store = Arc::new(snomed::Store::open(&data.join("snomed")).unwrap());
    let sct = SnomedProvider::new(store.clone());
    let mut tx =
        Terminology::new(registry, terminology::Config::default()).with_provider(sct.clone());
    let loinc_path = data.join("terminology/loinc.store");
    if loinc_path.exists() {
        tx = tx.with_provider(LoincProvider::open(&loinc_path).unwrap());
    }
    // The same content without the service's caches of evaluated value sets and of answers (the provider's
    // cache of evaluated includes stays): what an expansion costs the first time it is asked for.
    let mut registry = Registry::new();
    for (_, result) in terminology::load_data_dir(data, &mut registry) {
        result.unwrap();
    }
    let uncached = Terminology::new(
        registry,
        terminology::Config {
            expansion_cache_entries: 0,
            ..Default::default()
        },
    )
    .with_provider(sct.clone());
    let enc = |s: &str| s.to_string();
    let isa = enc(&format!("{SCT}?fhir_vs=isa/404684003"));
    let ecl = enc(&format!(
        "{SCT}?fhir_vs=ecl/<< 404684003 : 363698007 = << {SITE}"
    ));
    let all = format!("{SCT}?fhir_vs");
    // Prefixes of the first words of displays, as the HTTP bench's pool (3-6 letters).
    let mut prefixes: Vec<String> = Vec::new();
    let n = store.concept_count();
    for (k, i) in (0..n).step_by((n / 400).max(1) as usize).enumerate() {
        let id = store.id_of(snomed::ConceptIdx(i)).to_string();
        let q = query(&[("system", SCT), ("code", &id)]);
        let Some(answer) = tx.run_fast(Operation::Lookup, &q, None) else {
            continue;
        };
        let v: Value = serde_json::from_slice(&answer).unwrap();
        let display = v["parameter"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "display")
            .and_then(|p| p["valueString"].as_str())
            .unwrap_or_default()
            .to_lowercase();
        let word = display.split(' ').next().unwrap_or_default();
        let len = 3 + k % 4;
        if word.len() >= len && word.chars().all(|c| c.is_ascii_lowercase()) {
            prefixes.push(word[..len].to_string());
        }
    }
    let observation_status = "http://hl7.org/fhir/ValueSet/observation-status";
    let extensional = "http://hl7.org/fhir/ValueSet/iso3166-1-2";
    let shapes: Vec<(&str, Vec<Query>)> = vec![
        (
            "isa/404684003 count 10",
            vec![query(&[("url", &isa), ("count", "10")])],
        ),
        (
            "ecl refinement count 10",
            vec![query(&[("url", &ecl), ("count", "10")])],
        ),
        (
            "fhir_vs text filter count 10",
            prefixes
                .iter()
                .map(|p| query(&[("url", &all), ("count", "10"), ("filter", p)]))
                .collect(),
        ),
        (
            "package observation-status",
            vec![query(&[("url", observation_status)])],
        ),
        (
            "extensional iso3166-1-2 (249 codes)",
            vec![query(&[("url", extensional)])],
        ),
    ];
    for (name, queries) in &shapes {
        // Warm: every include evaluated and cached, as after the HTTP bench's warm-up.
        for q in queries {
            tx.run(Operation::Expand, &Params::from_query(q), None)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                tx.run_fast(Operation::Expand, q, None).is_some(),
                "{name}: the fast path declines {q:?}"
            );
        }
        let mut i = 0usize;
        c.bench_function(&format!("$expand {name}, general path"), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                let params = Params::from_query(&queries[i]);
                let v = tx.run(Operation::Expand, black_box(&params), None).unwrap();
                black_box(serde_json::to_vec(&v).unwrap().len())
            })
        });
        let mut i = 0usize;
        c.bench_function(
            &format!("$expand {name}, fast path without answer caches"),
            |b| {
                b.iter(|| {
                    i = (i + 1) % queries.len();
                    black_box(
                        uncached
                            .run_fast(Operation::Expand, black_box(&queries[i]), None)
                            .map(|a| a.len()),
                    )
                })
            },
        );
        let mut i = 0usize;
        c.bench_function(&format!("$expand {name}, fast path"), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                black_box(
                    tx.run_fast(Operation::Expand, black_box(&queries[i]), None)
                        .map(|a| a.len()),
                )
            })
        });
    }

    // What an implicit value set's page is made of.
    let filters: Vec<Value> =
        serde_json::from_str(r#"[{"property":"concept","op":"is-a","value":"404684003"}]"#)
            .unwrap();
    use terminology::CodeSystemProvider;
    let req = PageRequest {
        text: None,
        active_only: false,
        languages: None,
        offset: 0,
        count: 10,
    };
    let page = sct.expand_page(&filters, &req, "x").unwrap().unwrap();
    c.bench_function(
        "part: SNOMED CT page of a cached is-a include (10 codes)",
        |b| b.iter(|| black_box(sct.expand_page(black_box(&filters), &req, "x"))),
    );
    let codes: Vec<&str> = page.codes.iter().map(String::as_str).collect();
    c.bench_function("part: compile the page's 10 concepts (displays)", |b| {
        b.iter(|| black_box(sct.compile(black_box(&codes), None, Detail::Display)))
    });
    c.bench_function("part: a random uuid (the expansion's identifier)", |b| {
        b.iter(|| black_box(uuid::Uuid::new_v4()))
    });
    let q = query(&[("url", &isa), ("count", "10")]);
    c.bench_function("part: Params of the query", |b| {
        b.iter(|| black_box(Params::from_query(black_box(&q))))
    });

    // Search by canonical URL and the catalogue browse.
    let searches: [(&str, Query); 2] = [
        (
            "search ValueSet by url",
            query(&[("url", "http://hl7.org/fhir/ValueSet/observation-status")]),
        ),
        (
            "browse ValueSet _count=10&_summary=true",
            query(&[("_count", "10"), ("_summary", "true")]),
        ),
    ];
    for (name, q) in &searches {
        c.bench_function(&format!("{name}, value"), |b| {
            b.iter(|| {
                black_box(
                    serde_json::to_vec(&tx.search(Kind::ValueSet, black_box(q), "/fhir"))
                        .unwrap()
                        .len(),
                )
            })
        });
        c.bench_function(&format!("{name}, text"), |b| {
            b.iter(|| black_box(tx.search_text(Kind::ValueSet, black_box(q), "/fhir").len()))
        });
    }
}

criterion_group!(expansion, benches);
criterion_main!(expansion);
