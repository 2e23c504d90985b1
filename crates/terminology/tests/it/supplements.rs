//! Supplements and concept extensions, over the `extensions` suite's code system, supplement and value sets
//! (sent as tx-resources, the way the conformance runner sends them).

use crate::tx_test_file;
use serde_json::{Value, json};
use terminology::{Config, Operation, Params, Registry, Terminology};

const SETUP: &[&str] = &[
    "extensions/codesystem-extensions.json",
    "extensions/codesystem-supplement.json",
    "extensions/valueset-extensions-all.json",
    "extensions/valueset-extensions-all-ns.json",
    "extensions/valueset-extensions-enumerated.json",
];

const CS: &str = "http://hl7.org/fhir/test/CodeSystem/extensions";
const SUPPLEMENT: &str = "http://hl7.org/fhir/test/CodeSystem/supplement";

fn run_with(op: Operation, params: Value, extra: &[Value]) -> Result<Value, terminology::TxError> {
    let mut p = Params::from_json(&params);
    for f in SETUP {
        p.push(json!({"name": "tx-resource", "resource": tx_test_file(f)}));
    }
    for r in extra {
        p.push(json!({"name": "tx-resource", "resource": r}));
    }
    Terminology::new(Registry::new(), Config::default()).run(op, &p, None)
}

fn run(op: Operation, params: Value) -> Value {
    run_with(op, params, &[]).unwrap()
}

fn params_named<'a>(v: &'a Value, name: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    v["parameter"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |p| p["name"] == name)
}

/// `(language, source, value)` of each designation of a `$lookup` answer.
fn lookup_designations(v: &Value) -> Vec<(String, String, String)> {
    params_named(v, "designation")
        .map(|d| {
            let part = |n: &str| {
                d["part"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|p| p["name"] == n)
                    .map(|p| {
                        ["valueCode", "valueCanonical", "valueString"]
                            .iter()
                            .find_map(|k| p[*k].as_str())
                            .unwrap_or_default()
                            .to_string()
                    })
                    .unwrap_or_default()
            };
            (part("language"), part("source"), part("value"))
        })
        .collect()
}

#[test]
fn a_supplement_in_the_request_applies_only_when_named() {
    let lookup = |extra: Option<&str>| {
        let mut p = vec![
            json!({"name": "system", "valueUri": CS}),
            json!({"name": "code", "valueCode": "code1"}),
        ];
        if let Some(s) = extra {
            p.push(json!({"name": "useSupplement", "valueCanonical": s}));
        }
        run(Operation::Lookup, json!({"parameter": p}))
    };
    let plain = lookup(None);
    let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    // The code system's own designation, then its display as the preferred one of its language.
    assert_eq!(
        lookup_designations(&plain),
        [s("de", "", "Mein erster Code"), s("en", "", "Display 1")]
    );
    assert_eq!(params_named(&plain, "used-supplement").count(), 0);

    let with = lookup(Some(SUPPLEMENT));
    assert_eq!(
        lookup_designations(&with),
        [
            s("de", "", "Mein erster Code"),
            s("en", "", "Display 1"),
            s(
                "nl",
                "http://hl7.org/fhir/test/CodeSystem/supplement|0.1.1",
                "ectenoot"
            ),
        ]
    );
    let used: Vec<&Value> = params_named(&with, "used-supplement").collect();
    assert_eq!(used.len(), 1);
    assert_eq!(used[0]["valueCanonical"], format!("{SUPPLEMENT}|0.1.1"));

    // Validation sees the supplement's display only when it is asked for.
    let validate = |extra: Option<&str>| {
        let mut p = vec![
            json!({"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/extensions-all-ns"}),
            json!({"name": "coding", "valueCoding": {"system": CS, "code": "code1", "display": "ectenoot"}}),
        ];
        if let Some(s) = extra {
            p.push(json!({"name": "useSupplement", "valueCanonical": s}));
        }
        run(Operation::ValidateVs, json!({"parameter": p}))
    };
    let result = |v: &Value| params_named(v, "result").next().unwrap()["valueBoolean"].clone();
    let without = validate(None);
    assert_eq!(result(&without), false);
    assert!(
        params_named(&without, "message").next().unwrap()["valueString"]
            .as_str()
            .unwrap()
            .contains(
                "Valid display is one of 2 choices: 'Display 1' (en) or 'Mein erster Code' (de)"
            )
    );
    assert_eq!(result(&validate(Some(SUPPLEMENT))), true);
}

#[test]
fn a_language_pack_in_the_request_applies_unnamed() {
    let mut pack = tx_test_file("extensions/codesystem-supplement.json");
    pack["url"] = json!("http://hl7.org/fhir/test/CodeSystem/lang-pack");
    pack["extension"] = json!([{
        "url": "http://hl7.org/fhir/StructureDefinition/codesystem-supplement-type",
        "valueCode": "lang-pack"
    }]);
    let v = run_with(
        Operation::Lookup,
        json!({"parameter": [
            {"name": "system", "valueUri": CS},
            {"name": "code", "valueCode": "code1"}
        ]}),
        &[pack],
    )
    .unwrap();
    assert!(
        lookup_designations(&v)
            .iter()
            .any(|(l, s, d)| l == "nl" && d == "ectenoot" && s.contains("lang-pack"))
    );
    // Applied on its own, it is not echoed as a supplement the answer used (tx.fhir.org lists none).
    assert!(
        !v["parameter"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "used-supplement"),
        "{v}"
    );
}

/// The `contains.property` of an expansion entry as `(code, value)`, read back from R5's cross-version
/// extension.
fn contains_properties(c: &Value) -> Vec<(String, Value)> {
    c["extension"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| {
            e["url"]
                == "http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.expansion.contains.property"
        })
        .map(|e| {
            let parts = e["extension"].as_array().unwrap();
            let code = parts.iter().find(|p| p["url"] == "code").unwrap()["valueCode"]
                .as_str()
                .unwrap()
                .to_string();
            let value = parts.iter().find(|p| p["url"] == "value").unwrap();
            let (_, v) = value
                .as_object()
                .unwrap()
                .iter()
                .find(|(k, _)| k.starts_with("value"))
                .unwrap();
            (code, v.clone())
        })
        .collect()
}

fn plain_extensions(c: &Value) -> Vec<String> {
    c["extension"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["url"].as_str())
        .filter(|u| !u.starts_with("http://hl7.org/fhir/5.0/"))
        .map(str::to_string)
        .collect()
}

fn declared_properties(vs: &Value) -> Vec<String> {
    vs["expansion"]["extension"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| {
            e["url"]
                == "http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.expansion.property"
        })
        .map(|e| {
            e["extension"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["url"] == "code")
                .unwrap()["valueCode"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn expansion_carries_concept_extensions_as_properties() {
    // The value set names the supplement: its label, weight and extensions join the code system's.
    let vs = run(
        Operation::Expand,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/extensions-all"},
            {"name": "includeDesignations", "valueBoolean": true}
        ]}),
    );
    let params: Vec<(String, String)> = vs["expansion"]["parameter"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                terminology::Params::from_json(&json!({"parameter": [p]}))
                    .str(p["name"].as_str().unwrap())
                    .unwrap_or_default(),
            )
        })
        .collect();
    assert!(params.contains(&("used-supplement".into(), format!("{SUPPLEMENT}|0.1.1"))));
    assert_eq!(
        declared_properties(&vs),
        ["weight", "label", "order", "status"]
    );
    let contains = vs["expansion"]["contains"].as_array().unwrap();
    // Sorted by code; the order is the code system's conceptOrder as a decimal.
    assert_eq!(
        contains_properties(&contains[0]),
        [
            ("label".to_string(), json!("a.")),
            ("order".to_string(), json!(6)),
            ("weight".to_string(), json!(1.2)),
        ]
    );
    // A concept deprecated by its standards-status extension shows that status.
    assert!(
        contains_properties(&contains[4]).contains(&("status".to_string(), json!("deprecated")))
    );
    // Rendering extensions are carried (the supplement's for code2); unknown ones and the conceptOrder,
    // label and weight extensions (now properties) are not.
    assert_eq!(
        plain_extensions(&contains[1]),
        [
            "http://hl7.org/fhir/StructureDefinition/rendering-style",
            "http://hl7.org/fhir/StructureDefinition/rendering-xhtml"
        ]
    );
    assert!(
        contains[1]["extension"][0]["valueString"]
            .as_str()
            .unwrap()
            .contains("underline")
    );
    assert!(plain_extensions(&contains[0]).is_empty());
    // Designations keep the extensions an expansion knows; the supplement's designation follows the code
    // system's own.
    let d = &contains[0]["designation"];
    assert_eq!(d[0]["value"], "Mein erster Code");
    assert_eq!(
        d[0]["extension"][0]["url"],
        "http://hl7.org/fhir/StructureDefinition/coding-sctdescid"
    );
    assert_eq!(d[1]["value"], "ectenoot");

    // Without the supplement: no used-supplement, no label or weight.
    let vs = run(
        Operation::Expand,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/extensions-all-ns"}
        ]}),
    );
    assert!(
        !vs["expansion"]["parameter"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "used-supplement")
    );
    assert_eq!(declared_properties(&vs), ["order", "status"]);
}

#[test]
fn value_set_concept_extensions_win_over_the_code_system_ones() {
    let vs = run(
        Operation::Expand,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/extensions-enumerated"},
            {"name": "includeDesignations", "valueBoolean": true},
            {"name": "includeDefinition", "valueBoolean": true},
            {"name": "property", "valueString": "definition"}
        ]}),
    );
    assert_eq!(
        declared_properties(&vs),
        ["definition", "weight", "label", "order", "status"]
    );
    let contains = vs["expansion"]["contains"].as_array().unwrap();
    // The value set's conceptOrder (0) and label replace the code system's; the supplement's weight stays.
    assert_eq!(
        contains_properties(&contains[0]),
        [
            ("definition".to_string(), json!("My first code")),
            ("label".to_string(), json!("a.")),
            ("order".to_string(), json!(0)),
            ("weight".to_string(), json!(1.2)),
        ]
    );
    // valueset-deprecated travels as an extension; the unknown one does not.
    assert_eq!(
        plain_extensions(&contains[0]),
        ["http://hl7.org/fhir/StructureDefinition/valueset-deprecated"]
    );
    // The code system's designations first, then the value set's (without its unknown extension).
    let d = contains[1]["designation"].as_array().unwrap();
    assert_eq!(d[0]["value"], "2nd Code");
    assert_eq!(d[1]["value"], "Mein zweiter Code");
    assert_eq!(d[1]["extension"].as_array().unwrap().len(), 1);
    // includeDefinition keeps the value set's definition.
    assert!(vs["compose"]["include"].is_array());
    assert!(vs["extension"].is_array());
}

#[test]
fn a_supplement_is_not_a_coding_system() {
    let v = run(
        Operation::ValidateCs,
        json!({"parameter": [
            {"name": "coding", "valueCoding": {"system": SUPPLEMENT, "code": "code1"}}
        ]}),
    );
    let issue = &params_named(&v, "issues").next().unwrap()["resource"]["issue"][0];
    assert_eq!(issue["code"], "invalid");
    assert_eq!(issue["details"]["coding"][0]["code"], "invalid-data");
    assert_eq!(
        issue["details"]["text"],
        "CodeSystem http://hl7.org/fhir/test/CodeSystem/supplement|0.1.1 is a supplement, so can't be used as a value in Coding.system"
    );
    assert_eq!(
        params_named(&v, "result").next().unwrap()["valueBoolean"],
        false
    );
}

#[test]
fn a_retired_designation_is_an_inactive_display() {
    // "2nd Code" is code2's German designation, withdrawn by a standards-status extension.
    let v = run(
        Operation::ValidateCs,
        json!({"parameter": [
            {"name": "url", "valueUri": CS},
            {"name": "code", "valueCode": "code2"},
            {"name": "display", "valueString": "2nd Code"}
        ]}),
    );
    assert_eq!(
        params_named(&v, "result").next().unwrap()["valueBoolean"],
        true
    );
    let issue = &params_named(&v, "issues").next().unwrap()["resource"]["issue"][0];
    assert_eq!(issue["severity"], "warning");
    assert_eq!(
        issue["details"]["text"],
        "'2nd Code' is no longer considered a correct display for code 'code2' (status = deprecated). The correct display is one of \"Display 2\"."
    );
}

#[test]
fn a_deprecated_concept_reports_its_status() {
    let v = run(
        Operation::ValidateCs,
        json!({"parameter": [
            {"name": "url", "valueUri": CS},
            {"name": "code", "valueCode": "code5"}
        ]}),
    );
    assert_eq!(
        params_named(&v, "status").next().unwrap()["valueCode"],
        "deprecated"
    );
    let issue = &params_named(&v, "issues").next().unwrap()["resource"]["issue"][0];
    assert_eq!(
        issue["extension"][0]["valueString"],
        "DEPRECATED_CONCEPT_FOUND"
    );
}
