//! `$translate` read as R4 defines its parameters (`targetsystem`, `target` as a value set, `reverse`) as well as
//! R5's (`targetSystem`, `targetCode`), over the translate suite's two concept maps: `full` declares the value
//! sets it maps between, `novs` declares none.

use crate::tx_test_file;
use serde_json::{Value, json};
use terminology::{Config, Operation, Params, Registry, Terminology};

const SOURCE: &str = "http://hl7.org/fhir/test/CodeSystem/source";
const TARGET: &str = "http://hl7.org/fhir/test/CodeSystem/target";

fn translate(pairs: Value) -> Value {
    let mut p = Params::from_json(&json!({"resourceType": "Parameters", "parameter": pairs}));
    for f in [
        "translate/ConceptMap-full.json",
        "translate/ConceptMap-novs.json",
    ] {
        p.push(json!({"name": "tx-resource", "resource": tx_test_file(f)}));
    }
    Terminology::new(Registry::new(), Config::default())
        .run(Operation::Translate, &p, None)
        .expect("translate answers")
}

/// (code, originMap) of every match, sorted.
fn matches(answer: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = answer["parameter"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "match")
        .map(|m| {
            let part = |n: &str| {
                m["part"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|p| p["name"] == n)
                    .cloned()
            };
            let coding = part("source").or_else(|| part("concept")).unwrap()["valueCoding"].clone();
            let origin = part("originMap").unwrap()["valueCanonical"]
                .as_str()
                .unwrap()
                .to_string();
            (coding["code"].as_str().unwrap().to_string(), origin)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn r4_targetsystem_filters_by_the_target_code_system() {
    let hit = translate(json!([
        {"name": "system", "valueUri": SOURCE},
        {"name": "code", "valueCode": "code-1"},
        {"name": "targetsystem", "valueUri": TARGET},
    ]));
    assert_eq!(
        matches(&hit),
        [(
            "code1".to_string(),
            "http://hl7.org/fhir/test/ConceptMap/full|0.1.0".to_string()
        )]
    );
    let miss = translate(json!([
        {"name": "system", "valueUri": SOURCE},
        {"name": "code", "valueCode": "code-1"},
        {"name": "targetsystem", "valueUri": "http://example.org/other"},
    ]));
    assert!(matches(&miss).is_empty(), "{miss:#}");
    assert_eq!(miss["parameter"][0]["valueBoolean"], false);
}

#[test]
fn r4_target_is_a_value_set_not_a_code_system() {
    // `full` translates into ValueSet/target: asking for that value set finds its match.
    let in_scope = translate(json!([
        {"name": "system", "valueUri": SOURCE},
        {"name": "code", "valueCode": "code-2"},
        {"name": "target", "valueUri": "http://hl7.org/fhir/test/ValueSet/target"},
    ]));
    assert_eq!(matches(&in_scope).len(), 1, "{in_scope:#}");
    // Another value set excludes `full`; the code system's URL is not a value set either.
    for other in ["http://hl7.org/fhir/test/ValueSet/source", TARGET] {
        let out_of_scope = translate(json!([
            {"name": "system", "valueUri": SOURCE},
            {"name": "code", "valueCode": "code-2"},
            {"name": "target", "valueUri": other},
        ]));
        assert!(
            matches(&out_of_scope).is_empty(),
            "{other}: {out_of_scope:#}"
        );
    }
}

#[test]
fn r4_reverse_finds_the_sources_of_a_target_code() {
    let r4 = translate(json!([
        {"name": "system", "valueUri": TARGET},
        {"name": "code", "valueCode": "code1"},
        {"name": "reverse", "valueBoolean": true},
    ]));
    let r5 = translate(json!([
        {"name": "targetSystem", "valueUri": TARGET},
        {"name": "targetCode", "valueCode": "code1"},
    ]));
    assert_eq!(
        matches(&r4),
        [(
            "code-1".to_string(),
            "http://hl7.org/fhir/test/ConceptMap/full|0.1.0".to_string()
        )]
    );
    assert_eq!(matches(&r4), matches(&r5));
}
