//! Code system versions: a coding's version against the value set's, version rules of the request, and
//! value sets holding several versions of one code system (the `version` and `overload` suites' resources).

use crate::tx_test_file;
use serde_json::{Value, json};
use terminology::{Config, Operation, Params, Registry, Terminology};

const SETUP: &[&str] = &[
    "simple/codesystem-simple.json",
    "simple/valueset-all.json",
    "version/codesystem-version-1.json",
    "version/codesystem-version-2.json",
    "version/valueset-version-1.json",
    "version/valueset-version-2.json",
    "version/valueset-version-n.json",
    "version/valueset-version-w.json",
    "overload/codesystem-overload-1.json",
    "overload/codesystem-overload-2.json",
    "overload/valueset-overload-all.json",
    "overload/valueset-overload-all-merged.json",
];

const VERSION_CS: &str = "http://hl7.org/fhir/test/CodeSystem/version";

fn run(op: Operation, params: Value) -> Value {
    let mut p = Params::from_json(&params);
    for f in SETUP {
        p.push(json!({"name": "tx-resource", "resource": tx_test_file(f)}));
    }
    Terminology::new(Registry::new(), Config::default())
        .run(op, &p, None)
        .unwrap_or_else(|e| panic!("{op:?} failed: {e}"))
}

fn param<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    v["parameter"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)
}

fn issues(v: &Value) -> Vec<(String, String, String)> {
    param(v, "issues")
        .map(|p| p["resource"]["issue"].as_array().unwrap().clone())
        .unwrap_or_default()
        .iter()
        .map(|i| {
            (
                i["severity"].as_str().unwrap().to_string(),
                i["details"]["coding"][0]["code"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                i["details"]["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn coding(version: Option<&str>, code: &str) -> Value {
    let mut c = json!({"system": VERSION_CS, "code": code});
    if let Some(v) = version {
        c["version"] = json!(v);
    }
    c
}

#[test]
fn coding_version_differing_from_the_pinned_value_set_is_invalid_in_the_value_sets_version() {
    let r = run(
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/version"},
            {"name": "valueSetVersion", "valueString": "1.2.0"},
            {"name": "coding", "valueCoding": coding(Some("1.0.0"), "code1")}
        ]}),
    );
    assert_eq!(param(&r, "result").unwrap()["valueBoolean"], false);
    assert_eq!(
        param(&r, "display").unwrap()["valueString"],
        "Display 1 (1.2)"
    );
    assert_eq!(param(&r, "version").unwrap()["valueString"], "1.2.0");
    assert_eq!(
        issues(&r),
        [(
            "error".into(),
            "vs-invalid".into(),
            format!(
                "The code system '{VERSION_CS}' version '1.2.0' in the ValueSet include is different to the one in the value ('1.0.0')"
            )
        )]
    );
}

#[test]
fn coding_version_inside_the_include_pattern_is_valid_in_its_own_version() {
    let r = run(
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/version-w"},
            {"name": "coding", "valueCoding": coding(Some("1.0.0"), "code1")}
        ]}),
    );
    assert_eq!(param(&r, "result").unwrap()["valueBoolean"], true);
    assert_eq!(
        param(&r, "display").unwrap()["valueString"],
        "Display 1 (1.0)"
    );
    assert!(param(&r, "issues").is_none(), "{r}");
}

#[test]
fn unknown_coding_version_against_a_versionless_include_names_the_cause() {
    let r = run(
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/version-n"},
            {"name": "coding", "valueCoding": coding(Some("2.4.0"), "code1")}
        ]}),
    );
    assert_eq!(param(&r, "result").unwrap()["valueBoolean"], false);
    assert_eq!(
        param(&r, "x-caused-by-unknown-system").unwrap()["valueCanonical"],
        format!("{VERSION_CS}|2.4.0")
    );
    let found = issues(&r);
    assert_eq!(found[0].1, "not-found");
    assert_eq!(
        found[1],
        (
            "warning".into(),
            "vs-invalid".into(),
            format!(
                "The code system '{VERSION_CS}' version '1.2.0' for the versionless include in the ValueSet include is different to the one in the value ('2.4.0')"
            )
        )
    );
    // The message carries the error, not the version note.
    assert!(
        !param(&r, "message").unwrap()["valueString"]
            .as_str()
            .unwrap()
            .contains("versionless")
    );
}

#[test]
fn check_system_version_refuses_the_version_a_pattern_include_resolves_to() {
    let r = run(
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/version-w"},
            {"name": "check-system-version", "valueCanonical": format!("{VERSION_CS}|1.0.x")},
            {"name": "coding", "valueCoding": coding(None, "code1")}
        ]}),
    );
    assert_eq!(param(&r, "result").unwrap()["valueBoolean"], false);
    assert_eq!(
        issues(&r),
        [(
            "error".into(),
            "version-error".into(),
            format!(
                "The version '1.2.0' is not allowed for system '{VERSION_CS}': required to be '1.0.x' by a version-check parameter"
            )
        )]
    );
}

#[test]
fn default_version_for_an_unversioned_include_is_echoed_by_expand() {
    let vs = run(
        Operation::Expand,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/version-n"},
            {"name": "system-version", "valueCanonical": format!("{VERSION_CS}|1.0.0")}
        ]}),
    );
    let params: Vec<(String, String)> = vs["expansion"]["parameter"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["valueUri"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        params,
        [
            ("system-version".into(), format!("{VERSION_CS}|1.0.0")),
            ("used-codesystem".into(), format!("{VERSION_CS}|1.0.0")),
        ]
    );
    assert_eq!(vs["expansion"]["total"], 2, "version 1.0.0 has two codes");
}

fn versioned_codes(vs: &Value) -> Vec<(String, String)> {
    vs["expansion"]["contains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["code"].as_str().unwrap().to_string(),
                c["version"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_value_set_over_two_versions_holds_each_versions_codes() {
    let vs = run(
        Operation::Expand,
        json!({"parameter": [{"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/overload-all"}]}),
    );
    let got = versioned_codes(&vs);
    let want: Vec<(String, String)> = [
        ("code1", "2.0.0"),
        ("code1", "1.0.0"),
        ("code2", "2.0.0"),
        ("code2", "1.0.0"),
        ("code3", "1.0.0"),
        ("code4", "2.0.0"),
    ]
    .iter()
    .map(|(c, v)| (c.to_string(), v.to_string()))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn versions_match_merges_codes_of_two_versions() {
    let vs = run(
        Operation::Expand,
        json!({"parameter": [{"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/overload-all-merged"}]}),
    );
    let got = versioned_codes(&vs);
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(got[0], ("code1".to_string(), "2.0.0".to_string()));
    assert_eq!(got[2], ("code3".to_string(), "1.0.0".to_string()));
}

#[test]
fn validation_in_a_two_version_value_set_uses_the_codings_version() {
    let r = run(
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/overload-all"},
            {"name": "coding", "valueCoding": {"system": "http://hl7.org/fhir/test/CodeSystem/overload", "version": "1.0.0", "code": "code4"}}
        ]}),
    );
    // code4 exists only in 2.0.0.
    assert_eq!(param(&r, "result").unwrap()["valueBoolean"], false);
    let codes: Vec<String> = issues(&r).into_iter().map(|i| i.1).collect();
    assert_eq!(codes, ["not-in-vs", "invalid-code"]);
}
