//! The operations over the `simple` suite's code system and value sets, supplied as tx-resources the way
//! the conformance runner sends them.

use crate::tx_test_file;
use serde_json::{Value, json};
use terminology::{Config, ErrorKind, Operation, Params, Registry, Terminology};

const SETUP: &[&str] = &[
    "simple/codesystem-simple.json",
    "simple/valueset-all.json",
    "simple/valueset-filter-isa.json",
    "simple/valueset-enumerated-bad.json",
    "simple/valueset-filter-regex.json",
    "big/codesystem-big.json",
    "big/valueset-big.json",
];

fn run(op: Operation, params: Value) -> Result<Value, terminology::TxError> {
    let mut p = Params::from_json(&params);
    for f in SETUP {
        p.push(json!({"name": "tx-resource", "resource": tx_test_file(f)}));
    }
    Terminology::new(Registry::new(), Config::default()).run(op, &p, None)
}

fn param<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    v["parameter"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)
}

fn codes(contains: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for c in contains.as_array().into_iter().flatten() {
        out.push(c["code"].as_str().unwrap().to_string());
        out.extend(codes(&c["contains"]));
    }
    out
}

#[test]
fn expand_whole_code_system_flat() {
    let vs = run(
        Operation::Expand,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/simple-all"},
            {"name": "excludeNested", "valueBoolean": true}
        ]}),
    )
    .unwrap();
    assert_eq!(vs["expansion"]["total"], 7);
    assert_eq!(
        codes(&vs["expansion"]["contains"]),
        [
            "code1", "code2", "code2a", "code2aI", "code2aII", "code2b", "code3"
        ]
    );
    let code2 = &vs["expansion"]["contains"][1];
    assert_eq!(code2["abstract"], true, "notSelectable = true");
    assert_eq!(code2["inactive"], true, "status = retired");
}

#[test]
fn expand_is_a_keeps_the_hierarchy() {
    let vs = run(
        Operation::Expand,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/simple-filter-isa"},
            {"name": "excludeNested", "valueBoolean": false}
        ]}),
    )
    .unwrap();
    let contains = &vs["expansion"]["contains"];
    assert_eq!(contains.as_array().unwrap().len(), 1);
    assert_eq!(contains[0]["code"], "code2");
    assert_eq!(
        contains[0]["contains"][0]["contains"][1]["code"],
        "code2aII"
    );
    assert_eq!(vs["expansion"]["total"], 5);
}

#[test]
fn enumerated_codes_missing_from_a_complete_system_are_dropped() {
    let vs = run(
        Operation::Expand,
        json!({"parameter": [{"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/simple-enumerated-bad"}]}),
    )
    .unwrap();
    assert!(!codes(&vs["expansion"]["contains"]).contains(&"codeX".to_string()));
    assert_eq!(vs["expansion"]["total"], 5);
}

#[test]
fn too_big_expansion_is_refused_but_paging_works() {
    let err = run(
        Operation::Expand,
        json!({"parameter": [{"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/big"}]}),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::TooCostly);
    assert!(
        err.issues[0].text.contains("too many codes"),
        "{}",
        err.issues[0].text
    );
    let vs = run(
        Operation::Expand,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/big"},
            {"name": "count", "valueInteger": 50},
            {"name": "offset", "valueInteger": 50}
        ]}),
    )
    .unwrap();
    assert_eq!(vs["expansion"]["total"], 2000);
    assert_eq!(vs["expansion"]["contains"].as_array().unwrap().len(), 50);
}

#[test]
fn validate_unknown_code_explains_both_failures() {
    let r = run(
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/simple-all"},
            {"name": "code", "valueCode": "code1x"},
            {"name": "system", "valueUri": "http://hl7.org/fhir/test/CodeSystem/simple"}
        ]}),
    )
    .unwrap();
    assert_eq!(param(&r, "result").unwrap()["valueBoolean"], false);
    let issues = &param(&r, "issues").unwrap()["resource"]["issue"];
    let tx: Vec<&str> = issues
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["details"]["coding"][0]["code"].as_str().unwrap())
        .collect();
    assert_eq!(tx, ["not-in-vs", "invalid-code"]);
    assert_eq!(
        param(&r, "message").unwrap()["valueString"],
        "The provided code 'http://hl7.org/fhir/test/CodeSystem/simple#code1x' was not found in the value set 'http://hl7.org/fhir/test/ValueSet/simple-all|5.0.0'; Unknown code 'code1x' in the CodeSystem 'http://hl7.org/fhir/test/CodeSystem/simple' version '0.1.0'"
    );
}

#[test]
fn validate_wrong_display_fails_with_the_valid_one() {
    let r = run(
        Operation::ValidateCs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/CodeSystem/simple"},
            {"name": "code", "valueCode": "code1"},
            {"name": "display", "valueString": "xx"}
        ]}),
    )
    .unwrap();
    assert_eq!(param(&r, "result").unwrap()["valueBoolean"], false);
    assert_eq!(param(&r, "display").unwrap()["valueString"], "Display 1");
    assert!(
        param(&r, "message").unwrap()["valueString"]
            .as_str()
            .unwrap()
            .starts_with("Wrong Display Name 'xx' for http://hl7.org/fhir/test/CodeSystem/simple#code1. Valid display is 'Display 1' (en)")
    );
}

#[test]
fn lookup_reports_hierarchy_and_properties() {
    let r = run(
        Operation::Lookup,
        json!({"parameter": [
            {"name": "system", "valueUri": "http://hl7.org/fhir/test/CodeSystem/simple"},
            {"name": "code", "valueCode": "code2a"}
        ]}),
    )
    .unwrap();
    assert_eq!(param(&r, "display").unwrap()["valueString"], "Display 2a");
    let props: Vec<(String, String)> = r["parameter"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "property")
        .map(|p| {
            let part = p["part"].as_array().unwrap();
            let value = part.iter().find(|x| x["name"] == "value").unwrap();
            (
                part[0]["valueCode"].as_str().unwrap().to_string(),
                value
                    .as_object()
                    .unwrap()
                    .iter()
                    .find(|(k, _)| k.starts_with("value"))
                    .unwrap()
                    .1
                    .to_string(),
            )
        })
        .collect();
    assert!(
        props.contains(&("parent".into(), "\"code2\"".into())),
        "{props:?}"
    );
    assert!(
        props.contains(&("child".into(), "\"code2aII\"".into())),
        "{props:?}"
    );
    assert!(
        props.contains(&("prop".into(), "\"new\"".into())),
        "{props:?}"
    );
}

#[test]
fn subsumes_follows_nested_concepts() {
    let r = run(
        Operation::Subsumes,
        json!({"parameter": [
            {"name": "system", "valueUri": "http://hl7.org/fhir/test/CodeSystem/simple"},
            {"name": "codeA", "valueCode": "code2"},
            {"name": "codeB", "valueCode": "code2aI"}
        ]}),
    )
    .unwrap();
    assert_eq!(param(&r, "outcome").unwrap()["valueCode"], "subsumes");
}

/// The message id of the issue on an unknown code system (or an unknown version of a known one).
fn unknown_system_issue_id(system: &str, version: Option<&str>) -> (String, String) {
    let mut params = vec![
        json!({"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/simple-all"}),
        json!({"name": "code", "valueCode": "code1"}),
        json!({"name": "system", "valueUri": system}),
    ];
    if let Some(v) = version {
        params.push(json!({"name": "systemVersion", "valueString": v}));
    }
    let r = run(Operation::ValidateVs, json!({ "parameter": params })).unwrap();
    assert_eq!(param(&r, "result").unwrap()["valueBoolean"], false);
    let issues = &param(&r, "issues").unwrap()["resource"]["issue"];
    let issue = issues
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["details"]["coding"][0]["code"] == "not-found")
        .unwrap_or_else(|| panic!("no not-found issue in {issues}"));
    let ext = &issue["extension"][0];
    assert_eq!(
        ext["url"],
        "http://hl7.org/fhir/StructureDefinition/operationoutcome-message-id"
    );
    (
        ext["valueString"].as_str().unwrap().to_string(),
        issue["details"]["text"].as_str().unwrap().to_string(),
    )
}

#[test]
fn validate_unknown_code_system_carries_the_message_id() {
    let (id, text) = unknown_system_issue_id("http://hl7.org/fhir/test/CodeSystem/simpleX", None);
    assert_eq!(id, "UNKNOWN_CODESYSTEM", "{text}");
    let (id, text) = unknown_system_issue_id(
        "http://hl7.org/fhir/test/CodeSystem/simpleX",
        Some("1.0.4234"),
    );
    assert_eq!(id, "UNKNOWN_CODESYSTEM_VERSION_NONE", "{text}");
    let (id, text) =
        unknown_system_issue_id("http://hl7.org/fhir/test/CodeSystem/simple", Some("9.9.9"));
    assert_eq!(id, "UNKNOWN_CODESYSTEM_VERSION", "{text}");
    assert!(text.ends_with("Valid versions: 0.1.0"), "{text}");
}

#[test]
fn validate_coding_without_system_is_not_inferred() {
    // A bare `code` takes its system from the value set ...
    let r = run(
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/simple-all"},
            {"name": "code", "valueCode": "code1"}
        ]}),
    )
    .unwrap();
    assert_eq!(param(&r, "result").unwrap()["valueBoolean"], true);
    // ... a Coding without a system has no meaning and is not in the value set.
    let r = run(
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/simple-all"},
            {"name": "coding", "valueCoding": {"code": "code1"}}
        ]}),
    )
    .unwrap();
    assert_eq!(param(&r, "result").unwrap()["valueBoolean"], false);
    let issues = param(&r, "issues").unwrap()["resource"]["issue"]
        .as_array()
        .unwrap()
        .clone();
    let summary: Vec<(&str, &str, &str)> = issues
        .iter()
        .map(|i| {
            (
                i["severity"].as_str().unwrap(),
                i["details"]["coding"][0]["code"].as_str().unwrap(),
                i["expression"][0].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("error", "not-in-vs", "Coding.code"),
            ("warning", "invalid-data", "Coding")
        ]
    );
    assert_eq!(
        param(&r, "message").unwrap()["valueString"],
        "Coding has no system. A code with no system has no defined meaning, and it cannot be validated. A system should be provided; The provided code '#code1' was not found in the value set 'http://hl7.org/fhir/test/ValueSet/simple-all|5.0.0'"
    );
}

#[test]
fn expand_does_not_list_a_contained_value_set_as_used() {
    let vs = run(
        Operation::Expand,
        json!({"parameter": [{"name": "valueSet", "resource": {
            "resourceType": "ValueSet",
            "status": "active",
            "contained": [{
                "resourceType": "ValueSet",
                "id": "vs1",
                "url": "http://example.org/fhir/ValueSet/relevant-codes",
                "status": "active",
                "compose": {"include": [{
                    "system": "http://hl7.org/fhir/test/CodeSystem/simple",
                    "concept": [{"code": "code1"}]
                }]}
            }],
            "compose": {"include": [{"valueSet": [
                "#vs1",
                "http://hl7.org/fhir/test/ValueSet/simple-filter-isa"
            ]}]}
        }}]}),
    )
    .unwrap();
    let used: Vec<&str> = vs["expansion"]["parameter"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "used-valueset")
        .map(|p| p["valueUri"].as_str().unwrap())
        .collect();
    assert_eq!(
        used,
        ["http://hl7.org/fhir/test/ValueSet/simple-filter-isa|5.0.0"]
    );
}
