//! The expansion cache over the two FHIR packages in ../shared: answers served from it equal answers computed
//! without it, pages of a cached evaluation equal slices of the whole expansion, and a request that brings
//! its own content is never answered from it.

use serde_json::{Value, json};
use std::sync::OnceLock;
use terminology::{Config, Operation, Params, Terminology};

struct Services {
    cached: Terminology,
    uncached: Terminology,
}

fn services() -> &'static Services {
    static S: OnceLock<Services> = OnceLock::new();
    S.get_or_init(|| {
        let registry = crate::both_packages();
        let uncached = Terminology::new(
            registry.clone(),
            Config {
                expansion_cache_entries: 0,
                ..Config::default()
            },
        );
        Services {
            cached: Terminology::new(registry, Config::default()),
            uncached,
        }
    })
}

fn expand(tx: &Terminology, params: &[Value]) -> Result<Value, terminology::TxError> {
    tx.run(
        Operation::Expand,
        &Params::from_json(&json!({"resourceType": "Parameters", "parameter": params})),
        None,
    )
}

/// The answer without what differs on every request (its identifier and timestamp).
fn stable(mut v: Value) -> Value {
    if let Some(e) = v["expansion"].as_object_mut() {
        e.remove("identifier");
        e.remove("timestamp");
    }
    v
}

fn url(u: &str) -> Value {
    json!({"name": "url", "valueUri": u})
}

#[test]
fn cached_answers_equal_uncached_ones() {
    let s = services();
    let cases: Vec<Vec<Value>> = vec![
        vec![url("http://hl7.org/fhir/ValueSet/observation-status")],
        vec![
            url("http://hl7.org/fhir/ValueSet/observation-status"),
            json!({"name": "filter", "valueString": "amen"}),
        ],
        vec![
            url("http://hl7.org/fhir/ValueSet/administrative-gender"),
            json!({"name": "displayLanguage", "valueCode": "de"}),
        ],
        vec![
            url("http://hl7.org/fhir/ValueSet/languages"),
            json!({"name": "count", "valueInteger": 5}),
        ],
        vec![
            url("http://terminology.hl7.org/ValueSet/v3-ActCode"),
            json!({"name": "count", "valueInteger": 20}),
            json!({"name": "offset", "valueInteger": 7}),
        ],
        vec![
            url("http://terminology.hl7.org/ValueSet/v3-ActCode"),
            json!({"name": "activeOnly", "valueBoolean": true}),
            json!({"name": "count", "valueInteger": 3}),
        ],
        vec![url("http://terminology.hl7.org/ValueSet/v3-ActCode")],
        vec![url("http://hl7.org/fhir/ValueSet/no-such-value-set")],
    ];
    let mut answered = 0;
    for params in &cases {
        let uncached = expand(&s.uncached, params);
        answered += usize::from(uncached.is_ok());
        assert_eq!(s.uncached.expansion_cache_usage().0, 0);
        for round in 0..3 {
            let cached = expand(&s.cached, params);
            match (&uncached, cached) {
                (Ok(u), Ok(c)) => {
                    assert_eq!(stable(c), stable(u.clone()), "{params:?} round {round}")
                }
                (Err(u), Err(c)) => assert_eq!(format!("{c:?}"), format!("{u:?}"), "{params:?}"),
                (u, c) => panic!("{params:?} round {round}: uncached {u:?}, cached {c:?}"),
            }
        }
    }
    // The answers above came from the cache (failed evaluations leave nothing in it).
    let usage = s.cached.expansion_cache_usage();
    assert!(answered >= 5 && usage.0 >= answered, "{answered} {usage:?}");
}

#[test]
fn pages_of_a_cached_evaluation_are_slices_of_the_whole_expansion() {
    let s = services();
    let vs = "http://terminology.hl7.org/ValueSet/v3-ActCode";
    let count = json!({"name": "count", "valueInteger": 100_000});
    let whole = expand(&s.uncached, &[url(vs), count]).unwrap();
    let all = whole["expansion"]["contains"].as_array().unwrap().clone();
    let total = whole["expansion"]["total"].as_u64().unwrap() as usize;
    assert!(total > 100, "a sizeable value set: {total}");
    for (offset, n) in [(0, 10), (10, 10), (total - 3, 10), (total + 1, 5), (0, 0)] {
        let page = expand(
            &s.cached,
            &[
                url(vs),
                json!({"name": "count", "valueInteger": n}),
                json!({"name": "offset", "valueInteger": offset}),
            ],
        )
        .unwrap();
        assert_eq!(page["expansion"]["total"], total);
        let want: Vec<Value> = all.iter().skip(offset).take(n).cloned().collect();
        let got = page["expansion"]["contains"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(got, want, "offset {offset} count {n}");
    }
}

#[test]
fn a_request_with_its_own_resources_is_never_answered_from_the_cache() {
    let s = services();
    let vs_url = "http://hl7.org/fhir/ValueSet/observation-status";
    let base = expand(&s.cached, &[url(vs_url)]).unwrap();
    assert_eq!(base["expansion"]["total"], 8);
    // The same URL, redefined by the request: two codes.
    let own = json!({"resourceType": "ValueSet", "url": vs_url, "version": "4.0.1", "status": "active",
        "compose": {"include": [{"system": "http://hl7.org/fhir/observation-status",
            "concept": [{"code": "final"}, {"code": "amended"}]}]}});
    let with_own = expand(
        &s.cached,
        &[
            url(vs_url),
            json!({"name": "tx-resource", "resource": own.clone()}),
        ],
    )
    .unwrap();
    assert_eq!(with_own["expansion"]["total"], 2);
    let inline = expand(&s.cached, &[json!({"name": "valueSet", "resource": own})]).unwrap();
    assert_eq!(inline["expansion"]["total"], 2);
    // And the request's resources did not leak into the cache.
    let again = expand(&s.cached, &[url(vs_url)]).unwrap();
    assert_eq!(stable(again), stable(base));
}
