//! UCUM, served by every service without content: unit expressions validated by the UCUM grammar, `$lookup`,
//! the `canonical` filter, and the expansions of the conformance suite `ucum` (tx.fhir.org's answers).

use crate::{shared, tx_test_file};
use serde_json::{Value, json};
use std::sync::OnceLock;
use terminology::{Config, Operation, Params, Registry, Terminology, load_package};

/// A service over the R4 package (its `ucum-common` is what an expansion of all of UCUM lists).
fn tx() -> &'static Terminology {
    static TX: OnceLock<Terminology> = OnceLock::new();
    TX.get_or_init(|| {
        let mut registry = Registry::new();
        load_package(
            &shared().join("data/fhir/packages/hl7.fhir.r4.examples-4.0.1.tgz"),
            &mut registry,
        )
        .unwrap();
        for f in [
            "ucum/valueset-ucum-all.json",
            "ucum/valueset-ucum-canonical.json",
        ] {
            registry.add(tx_test_file(f));
        }
        Terminology::new(registry, Config::default())
    })
}

fn run(op: Operation, params: &[Value]) -> Value {
    tx().run(op, &Params::from_json(&json!({"parameter": params})), None)
        .unwrap()
}

fn param<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    v["parameter"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)
}

fn designations(v: &Value) -> Vec<String> {
    v["parameter"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "designation")
        .filter_map(|d| {
            d["part"]
                .as_array()?
                .iter()
                .find(|p| p["name"] == "value")
                .and_then(|p| p["valueString"].as_str())
                .map(str::to_string)
        })
        .collect()
}

fn lookup(code: &str) -> Value {
    run(
        Operation::Lookup,
        &[
            json!({"name": "system", "valueUri": "http://unitsofmeasure.org"}),
            json!({"name": "code", "valueCode": code}),
        ],
    )
}

fn validate(vs: &str, code: &str) -> Value {
    run(
        Operation::ValidateVs,
        &[
            json!({"name": "url", "valueUri": format!("http://hl7.org/fhir/test/ValueSet/{vs}")}),
            json!({"name": "system", "valueUri": "http://unitsofmeasure.org"}),
            json!({"name": "code", "valueCode": code}),
        ],
    )
}

fn codes(expansion: &Value) -> Vec<String> {
    expansion["expansion"]["contains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["code"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn lookup_gives_the_code_as_display_and_the_unit_names() {
    let v = lookup("mg/dL");
    assert_eq!(param(&v, "display").unwrap()["valueString"], "mg/dL");
    assert_eq!(param(&v, "version").unwrap()["valueString"], "2.2");
    assert_eq!(
        designations(&v),
        [
            "mg/dL",
            "(milligram) / (deciliter)",
            "milligram per deciliter"
        ]
    );
}

#[test]
fn an_annotation_with_spaces_is_accepted_as_tx_fhir_org_does() {
    let v = lookup("mg/dL{milligram per deciliter}");
    assert_eq!(
        designations(&v),
        [
            "mg/dL{milligram per deciliter}",
            "(milligram) / (deciliter) * 1"
        ]
    );
}

#[test]
fn an_unknown_unit_is_refused_with_the_parser_s_reason() {
    let good = validate("ucum-all", "kg");
    assert_eq!(param(&good, "result").unwrap()["valueBoolean"], true);
    assert_eq!(param(&good, "display").unwrap()["valueString"], "kg");
    let bad = validate("ucum-all", "kgXX");
    assert_eq!(param(&bad, "result").unwrap()["valueBoolean"], false);
    let texts: Vec<&str> = param(&bad, "issues").unwrap()["resource"]["issue"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["details"]["text"].as_str().unwrap())
        .collect();
    assert!(
        texts.contains(&"Error processing unit 'kgXX': The unit 'kgXX' is unknown at character 1"),
        "{texts:?}"
    );
}

#[test]
fn the_canonical_filter_keeps_units_of_mass() {
    assert_eq!(
        param(&validate("ucum-canonical", "kg"), "result").unwrap()["valueBoolean"],
        true
    );
    let ml = validate("ucum-canonical", "mL");
    assert_eq!(param(&ml, "result").unwrap()["valueBoolean"], false);
    // The message says why, as tx.fhir.org does.
    assert_eq!(
        param(&ml, "message").unwrap()["valueString"],
        "Code mL has canonical form m3, not g as required; The provided code 'http://unitsofmeasure.org#mL' was not found in the value set 'http://hl7.org/fhir/test/ValueSet/ucum-canonical'"
    );
}

/// The expansions list the common units (all, or those of mass), unclosed, as tx.fhir.org does.
#[test]
fn expansions_list_the_common_units_as_tx_fhir_org_does() {
    for (vs, expected) in [
        ("ucum-all", "ucum/expand-ucum-all-4-response.json"),
        ("ucum-canonical", "ucum/expand-ucum-canonical-response.json"),
    ] {
        let v = run(
            Operation::Expand,
            &[
                json!({"name": "url", "valueUri": format!("http://hl7.org/fhir/test/ValueSet/{vs}")}),
            ],
        );
        assert_eq!(codes(&v), codes(&tx_test_file(expected)), "{vs}");
        assert_eq!(
            v["expansion"]["extension"][0]["url"],
            "http://hl7.org/fhir/StructureDefinition/valueset-unclosed"
        );
    }
}
