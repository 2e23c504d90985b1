//! Value set rules of the general-mode conformance suites (fragments, deprecation inside value sets, imports
//! pinned by `default-valueset-version`), each over the suite's own resources sent as tx-resources.

use crate::tx_test_file;
use serde_json::{Value, json};
use terminology::{Config, Operation, Params, Registry, Terminology, TxError};

fn run(setup: &[&str], op: Operation, params: Value) -> Result<Value, TxError> {
    let mut p = Params::from_json(&params);
    for f in setup {
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

fn names(v: &Value) -> Vec<&str> {
    v["parameter"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect()
}

fn issues(v: &Value) -> Vec<Value> {
    param(v, "issues").map_or_else(Vec::new, |p| {
        p["resource"]["issue"].as_array().unwrap().clone()
    })
}

fn message_id(issue: &Value) -> Option<&str> {
    issue["extension"].as_array()?.iter().find_map(|e| {
        (e["url"] == "http://hl7.org/fhir/StructureDefinition/operationoutcome-message-id")
            .then(|| e["valueString"].as_str())
            .flatten()
    })
}

/// The `code`/value pairs of the R5 property extensions on an expansion (or one of its contains).
fn r5_properties(v: &Value, element: &str) -> Vec<(String, Value)> {
    let url = format!(
        "http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.expansion.{element}"
    );
    v["extension"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["url"] == url.as_str())
        .map(|e| {
            let parts = e["extension"].as_array().unwrap();
            let code = parts.iter().find(|p| p["url"] == "code").unwrap()["valueCode"]
                .as_str()
                .unwrap()
                .to_string();
            let value = parts
                .iter()
                .find(|p| p["url"] != "code")
                .cloned()
                .unwrap_or(Value::Null);
            (code, value)
        })
        .collect()
}

const FRAGMENT: &[&str] = &[
    "fragment/codesystem-fragment.json",
    "fragment/valueset-fragment.json",
];

#[test]
fn fragment_expansion_is_unclosed_and_names_the_fragment() {
    let vs = run(
        FRAGMENT,
        Operation::Expand,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/fragment"},
            {"name": "excludeNested", "valueBoolean": true}
        ]}),
    )
    .unwrap();
    let exp = &vs["expansion"];
    let fragment = "http://hl7.org/fhir/test/CodeSystem/fragment|0.1.0";
    assert!(
        exp["parameter"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "used-fragment", "valueUri": fragment}))
    );
    let ext = exp["extension"].as_array().unwrap();
    assert!(ext.contains(&json!({
        "url": "http://hl7.org/fhir/StructureDefinition/valueset-unclosed", "valueBoolean": true
    })));
    assert!(ext.contains(&json!({
        "url": "http://hl7.org/fhir/StructureDefinition/valueset-unclosed-reason",
        "valueString": "This extension is based on a fragment of the code system http://hl7.org/fhir/test/CodeSystem/fragment"
    })));
}

#[test]
fn retired_concepts_show_their_status_unasked() {
    let vs = run(
        FRAGMENT,
        Operation::Expand,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/fragment"},
            {"name": "excludeNested", "valueBoolean": true}
        ]}),
    )
    .unwrap();
    let exp = &vs["expansion"];
    assert_eq!(
        r5_properties(exp, "property"),
        [(
            "status".to_string(),
            json!({"url": "uri", "valueUri": "http://hl7.org/fhir/concept-properties#status"})
        )]
    );
    let contains = exp["contains"].as_array().unwrap();
    let code2 = contains.iter().find(|c| c["code"] == "code2").unwrap();
    assert_eq!(
        r5_properties(code2, "contains.property"),
        [(
            "status".to_string(),
            json!({"url": "value", "valueCode": "retired"})
        )]
    );
    // Active concepts carry no status.
    let code1 = contains.iter().find(|c| c["code"] == "code1").unwrap();
    assert!(r5_properties(code1, "contains.property").is_empty());
}

#[test]
fn unknown_code_of_a_fragment_is_valid_with_a_warning() {
    let out = run(
        FRAGMENT,
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/fragment"},
            {"name": "coding", "valueCoding": {
                "system": "http://hl7.org/fhir/test/CodeSystem/fragment", "code": "code1x"}}
        ]}),
    )
    .unwrap();
    assert_eq!(param(&out, "result").unwrap()["valueBoolean"], true);
    let issues = issues(&out);
    assert_eq!(issues.len(), 1, "{issues:?}");
    assert_eq!(issues[0]["severity"], "warning");
    assert_eq!(message_id(&issues[0]), Some("UNKNOWN_CODE_IN_FRAGMENT"));
    // A doubt, not a finding: no message.
    assert!(param(&out, "message").is_none());
}

const DEPRECATED: &[&str] = &[
    "deprecated/codesystem-deprecated.json",
    "deprecated/valueset-withdrawn.json",
    "deprecated/valueset-not-withdrawn.json",
    "deprecated/codesystem-draft.json",
    "deprecated/valueset-deprecating.json",
];

fn validate_deprecating(code: &str) -> Value {
    run(
        DEPRECATED,
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/deprecating"},
            {"name": "coding", "valueCoding": {
                "system": "http://hl7.org/fhir/test/CodeSystem/draft", "code": code}}
        ]}),
    )
    .unwrap()
}

#[test]
fn a_value_set_can_deprecate_a_concept() {
    // code2 through `valueset-deprecated`, code3 through a standards status of deprecated.
    for code in ["code2", "code3"] {
        let out = validate_deprecating(code);
        assert_eq!(param(&out, "result").unwrap()["valueBoolean"], true);
        let issue = issues(&out)
            .into_iter()
            .find(|i| message_id(i) == Some("CONCEPT_DEPRECATED_IN_VALUESET"))
            .unwrap_or_else(|| panic!("{code}: no deprecation warning in {out}"));
        assert_eq!(issue["severity"], "warning");
        assert_eq!(
            issue["details"]["text"],
            format!(
                "The presence of the concept '{code}' in the system 'http://hl7.org/fhir/test/CodeSystem/draft' in the value set http://hl7.org/fhir/test/ValueSet/deprecating|5.0.0 is marked with a status of deprecated and its use should be reviewed"
            )
        );
        assert!(param(&out, "message").is_none());
    }
    let out = validate_deprecating("code1");
    assert!(
        issues(&out)
            .iter()
            .all(|i| message_id(i) != Some("CONCEPT_DEPRECATED_IN_VALUESET"))
    );
}

#[test]
fn an_imported_withdrawn_value_set_is_noted_and_its_codes_are_flat() {
    let out = run(
        DEPRECATED,
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/not-withdrawn"},
            {"name": "coding", "valueCoding": {
                "system": "http://hl7.org/fhir/test/CodeSystem/deprecated", "code": "code1"}}
        ]}),
    )
    .unwrap();
    let texts: Vec<String> = issues(&out)
        .iter()
        .map(|i| i["details"]["text"].as_str().unwrap().to_string())
        .collect();
    assert!(
        texts.contains(
            &"Reference to withdrawn ValueSet http://hl7.org/fhir/test/ValueSet/withdrawn|5.0.0"
                .to_string()
        ),
        "{texts:?}"
    );
    let vs = run(
        DEPRECATED,
        Operation::Expand,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/not-withdrawn"}
        ]}),
    )
    .unwrap();
    let contains = vs["expansion"]["contains"].as_array().unwrap();
    assert_eq!(contains.len(), 7);
    assert!(contains.iter().all(|c| c.get("contains").is_none()));
}

const VS_VERSION: &[&str] = &[
    "valueset-version/codesystem-vs-version.json",
    "valueset-version/valueset-vs-version-a1.json",
    "valueset-version/valueset-vs-version-a2.json",
    "valueset-version/valueset-vs-version-b0.json",
    "valueset-version/valueset-vs-version-b1.json",
    "valueset-version/valueset-vs-version-b2.json",
];

#[test]
fn default_valueset_version_pins_imports() {
    let pin = |v: &str| {
        json!({"name": "default-valueset-version",
               "valueCanonical": format!("http://hl7.org/fhir/test/ValueSet/vs-version|{v}")})
    };
    let url = json!({"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/vs-version-b0"});
    let vs = run(
        VS_VERSION,
        Operation::Expand,
        json!({"parameter": [url, pin("1.0.0")]}),
    )
    .unwrap();
    assert_eq!(
        vs["expansion"]["parameter"][0],
        json!({"name": "default-valueset-version",
               "valueUri": "http://hl7.org/fhir/test/ValueSet/vs-version|1.0.0"}),
        "echoed as a uri"
    );
    let err = run(
        VS_VERSION,
        Operation::Expand,
        json!({"parameter": [url, pin("3.0.0")]}),
    )
    .unwrap_err();
    assert_eq!(
        err.issues[0].text,
        "Unable to find included value set 'http://hl7.org/fhir/test/ValueSet/vs-version' version '3.0.0'"
    );
    let out = run(
        VS_VERSION,
        Operation::ValidateVs,
        json!({"parameter": [url, pin("3.0.0"), {"name": "coding", "valueCoding": {
            "system": "http://hl7.org/fhir/test/CodeSystem/vs-version", "code": "code2"}}]}),
    )
    .unwrap();
    assert_eq!(param(&out, "result").unwrap()["valueBoolean"], false);
    assert_eq!(
        param(&out, "message").unwrap()["valueString"],
        "A definition for the value Set 'http://hl7.org/fhir/test/ValueSet/vs-version|3.0.0' could not be found"
    );
}

#[test]
fn codeable_concept_against_a_value_set_with_a_missing_import_is_echoed_alone() {
    let out = run(
        &[
            "simple/codesystem-simple.json",
            "simple/valueset-import-bad.json",
        ],
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/simple-import-bad"},
            {"name": "codeableConcept", "valueCodeableConcept": {"coding": [
                {"system": "http://hl7.org/fhir/test/CodeSystem/simple", "code": "code1"}]}}
        ]}),
    )
    .unwrap();
    let mut names = names(&out);
    names.sort_unstable();
    assert_eq!(names, ["codeableConcept", "issues", "message", "result"]);
    assert_eq!(param(&out, "result").unwrap()["valueBoolean"], false);
}

const OVERLOAD: &[&str] = &[
    "overload/codesystem-overload-1.json",
    "overload/codesystem-overload-2.json",
    "overload/valueset-overload-all.json",
];

fn validate_overload(codings: Value) -> Value {
    run(
        OVERLOAD,
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/overload-all"},
            {"name": "codeableConcept", "valueCodeableConcept": {"coding": codings}}
        ]}),
    )
    .unwrap()
}

#[test]
fn an_unversioned_coding_is_valid_in_any_version_the_value_set_includes() {
    let system = "http://hl7.org/fhir/test/CodeSystem/overload";
    // code3 exists in version 1.0.0 only; "Display 2" is code2's display in 1.0.0, "Display #2" in 2.0.0.
    let out = validate_overload(json!([{"system": system, "code": "code3"}]));
    assert_eq!(
        param(&out, "result").unwrap()["valueBoolean"],
        true,
        "{out}"
    );
    assert_eq!(param(&out, "version").unwrap()["valueString"], "1.0.0");
    let out = validate_overload(json!([
        {"system": system, "code": "code2", "display": "Display #2"},
        {"system": system, "code": "code2", "display": "Display 2"}
    ]));
    assert_eq!(
        param(&out, "result").unwrap()["valueBoolean"],
        true,
        "{out}"
    );
    assert!(param(&out, "issues").is_none(), "{out}");
    assert_eq!(param(&out, "version").unwrap()["valueString"], "2.0.0");
    // A display of neither version is still wrong, reported against the newest.
    let out = validate_overload(json!([{"system": system, "code": "code2", "display": "Two"}]));
    assert_eq!(param(&out, "result").unwrap()["valueBoolean"], false);
    assert_eq!(param(&out, "version").unwrap()["valueString"], "2.0.0");
    // A code of neither version is not in the value set.
    let out = validate_overload(json!([{"system": system, "code": "code9"}]));
    assert_eq!(param(&out, "result").unwrap()["valueBoolean"], false);
}

fn issue_ids(out: &Value) -> Vec<String> {
    issues(out)
        .iter()
        .map(|i| message_id(i).unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_value_set_without_inactive_codes_says_why_an_inactive_code_is_not_in_it() {
    let out = run(
        &[
            "inactive/codesystem-inactive.json",
            "inactive/valueset-all-active.json",
        ],
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/inactive-all-active"},
            {"name": "coding", "valueCoding": {
                "system": "http://hl7.org/fhir/test/CodeSystem/inactive", "code": "codeInactive"}}
        ]}),
    )
    .unwrap();
    assert_eq!(param(&out, "result").unwrap()["valueBoolean"], false);
    assert_eq!(
        issue_ids(&out),
        [
            "STATUS_CODE_WARNING_CODE",
            "None_of_the_provided_codes_are_in_the_value_set_one",
            "INACTIVE_CONCEPT_FOUND"
        ]
    );
}

#[test]
fn abstract_false_refuses_a_not_selectable_code() {
    let validate = |allowed: bool| {
        run(
            &[
                "notSelectable/codesystem-notSelectable-prop.json",
                "notSelectable/valueset-notSelectable-prop-true.json",
            ],
            Operation::ValidateVs,
            json!({"parameter": [
                {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/notSelectable-prop-true"},
                {"name": "coding", "valueCoding": {
                    "system": "http://hl7.org/fhir/test/CodeSystem/notSelectable-prop", "code": "codeNS"}},
                {"name": "abstract", "valueBoolean": allowed}
            ]}),
        )
        .unwrap()
    };
    let out = validate(false);
    assert_eq!(param(&out, "result").unwrap()["valueBoolean"], false);
    assert_eq!(
        issue_ids(&out),
        [
            "ABSTRACT_CODE_NOT_ALLOWED",
            "None_of_the_provided_codes_are_in_the_value_set_one"
        ]
    );
    let out = validate(true);
    assert_eq!(param(&out, "result").unwrap()["valueBoolean"], true);
    assert!(param(&out, "issues").is_none());
}

#[test]
fn membership_only_reports_membership_alone() {
    let out = run(
        &[
            "simple/codesystem-simple.json",
            "simple/valueset-all.json",
            "version/codesystem-version-1.json",
        ],
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/simple-all"},
            {"name": "valueset-membership-only", "valueBoolean": true},
            {"name": "codeableConcept", "valueCodeableConcept": {"coding": [
                {"system": "http://hl7.org/fhir/test/CodeSystem/version", "version": "1.0.0",
                 "code": "code1", "display": "xxxxx"},
                {"system": "http://hl7.org/fhir/test/CodeSystem/simple", "code": "xxxx"}]}}
        ]}),
    )
    .unwrap();
    assert_eq!(param(&out, "result").unwrap()["valueBoolean"], false);
    // Neither the unknown code nor the wrong display is reported, only that no coding is in the value set.
    let codes: Vec<String> = issues(&out)
        .iter()
        .map(|i| {
            i["details"]["coding"][0]["code"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        codes,
        ["not-in-vs", "this-code-not-in-vs", "this-code-not-in-vs"]
    );
    assert!(param(&out, "display").is_none());
}

/// `valueSetMode`, as the HL7 FHIR validator sends it: `NO_MEMBERSHIP_CHECK` checks the code in its code system
/// alone (the answer `CodeSystem/$validate-code` gives), `CHECK_MEMERSHIP_ONLY` (the validator's spelling) is
/// `valueset-membership-only`.
#[test]
fn value_set_mode_leaves_out_membership_or_all_but_membership() {
    let setup = [
        "simple/codesystem-simple.json",
        "simple/valueset-enumerated.json",
    ];
    let system = "http://hl7.org/fhir/test/CodeSystem/simple";
    let validate_vs = |code: &str, display: &str, mode: Option<&str>| {
        let mut p = vec![
            json!({"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/simple-enumerated"}),
            json!({"name": "coding", "valueCoding": {"system": system, "code": code, "display": display}}),
        ];
        if let Some(m) = mode {
            p.push(json!({"name": "valueSetMode", "valueString": m}));
        }
        run(&setup, Operation::ValidateVs, json!({ "parameter": p })).unwrap()
    };
    let validate_cs = |code: &str, display: &str| {
        run(
            &setup,
            Operation::ValidateCs,
            json!({"parameter": [
                {"name": "coding", "valueCoding": {"system": system, "code": code, "display": display}}
            ]}),
        )
        .unwrap()
    };
    let result = |v: &Value| param(v, "result").unwrap()["valueBoolean"].clone();

    // code2aI is in the code system, not in the value set.
    assert_eq!(result(&validate_vs("code2aI", "Display 2aI", None)), false);
    let out = validate_vs("code2aI", "Display 2aI", Some("NO_MEMBERSHIP_CHECK"));
    assert_eq!(result(&out), true, "{out}");
    assert_eq!(out, validate_cs("code2aI", "Display 2aI"));
    // Unknown codes and wrong displays are still found.
    for (code, display) in [("code9", "Display 9"), ("code1", "Display 2")] {
        let out = validate_vs(code, display, Some("NO_MEMBERSHIP_CHECK"));
        assert_eq!(result(&out), false, "{out}");
        assert_eq!(out, validate_cs(code, display));
    }

    // Membership only: a wrong display of a member is not reported; a code outside still fails.
    let plain = validate_vs("code1", "Display 2", None);
    assert_eq!(result(&plain), false, "{plain}");
    for mode in ["CHECK_MEMERSHIP_ONLY", "CHECK_MEMBERSHIP_ONLY"] {
        let out = validate_vs("code1", "Display 2", Some(mode));
        assert_eq!(result(&out), true, "{mode}: {out}");
        assert!(param(&out, "issues").is_none(), "{mode}: {out}");
        assert_eq!(
            result(&validate_vs("code2aI", "Display 2aI", Some(mode))),
            false
        );
    }
    // Any other mode is the default (all checks).
    assert_eq!(validate_vs("code1", "Display 2", Some("ALL_CHECKS")), plain);
}

#[test]
fn a_batch_item_overrides_the_batch_parameters() {
    let out = run(
        &["simple/codesystem-simple.json", "simple/valueset-all.json"],
        Operation::BatchValidate,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/simple-all"},
            {"name": "lenient-display-validation", "valueBoolean": true},
            {"name": "validation", "resource": {"resourceType": "Parameters", "parameter": [
                {"name": "coding", "valueCoding": {
                    "system": "http://hl7.org/fhir/test/CodeSystem/simple", "code": "code1", "display": "xx"}},
                {"name": "lenient-display-validation", "valueBoolean": false}]}},
            {"name": "validation", "resource": {"resourceType": "Parameters", "parameter": [
                {"name": "coding", "valueCoding": {
                    "system": "http://hl7.org/fhir/test/CodeSystem/simple", "code": "code1", "display": "xx"}}]}},
            {"name": "validation", "resource": {"resourceType": "Parameters", "parameter": [
                {"name": "codingX", "valueCoding": {
                    "system": "http://hl7.org/fhir/test/CodeSystem/simple", "code": "code1"}}]}}
        ]}),
    )
    .unwrap();
    let results: Vec<&Value> = out["parameter"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["resource"])
        .collect();
    assert_eq!(param(results[0], "result").unwrap()["valueBoolean"], false);
    assert_eq!(param(results[1], "result").unwrap()["valueBoolean"], true);
    assert_eq!(results[2]["resourceType"], "OperationOutcome");
}

#[test]
fn a_relative_system_is_reported_as_such() {
    let out = run(
        &["simple/codesystem-simple.json", "simple/valueset-all.json"],
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/simple-all"},
            {"name": "coding", "valueCoding": {"system": "Location1", "code": "code1"}}
        ]}),
    )
    .unwrap();
    assert_eq!(
        issue_ids(&out),
        [
            "None_of_the_provided_codes_are_in_the_value_set_one",
            "Terminology_TX_System_Relative",
            "UNKNOWN_CODESYSTEM"
        ]
    );
}

#[test]
fn a_value_set_without_url_is_unidentified() {
    let out = run(
        &["simple/codesystem-simple.json"],
        Operation::ValidateVs,
        json!({"parameter": [
            {"name": "coding", "valueCoding": {
                "system": "http://hl7.org/fhir/test/CodeSystem/simple", "code": "code1"}},
            {"name": "valueSet", "resource": {"resourceType": "ValueSet", "status": "active",
                "compose": {"include": [{"system": "http://hl7.org/fhir/test/CodeSystem/simple",
                                         "concept": [{"code": "code2"}]}]}}}
        ]}),
    )
    .unwrap();
    assert_eq!(
        param(&out, "message").unwrap()["valueString"],
        "The provided code 'http://hl7.org/fhir/test/CodeSystem/simple#code1' was not found in the value set '(unidentified)'"
    );
}

#[test]
fn versions_of_different_schemes_are_ordered_by_date() {
    // The R4 package's copy of a v3 code system is versioned by date; terminology.hl7.org's by release number.
    let cs = |version: &str, date: &str, display: &str| {
        json!({"resourceType": "CodeSystem", "url": "http://example.org/cs", "version": version,
               "date": date, "status": "active", "content": "complete",
               "concept": [{"code": "a", "display": display}]})
    };
    let lookup = |resources: Vec<Value>| {
        let mut registry = Registry::new();
        for r in resources {
            registry.add(r);
        }
        let out = Terminology::new(registry, Config::default())
            .run(
                Operation::Lookup,
                &Params::from_json(&json!({"parameter": [
                    {"name": "system", "valueUri": "http://example.org/cs"},
                    {"name": "code", "valueCode": "a"}
                ]})),
                None,
            )
            .unwrap();
        param(&out, "version").unwrap()["valueString"].clone()
    };
    let old = cs("2018-08-12", "2018-08-12T00:00:00+10:00", "Old");
    let new = cs("3.1.0", "2024-02-28", "New");
    assert_eq!(lookup(vec![old.clone(), new.clone()]), "3.1.0");
    assert_eq!(lookup(vec![new, old]), "3.1.0");
    // Versions of one scheme keep their own order, whatever the dates say.
    let a = cs("1.0.0", "2024-01-01", "A");
    let b = cs("2.0.0", "2020-01-01", "B");
    assert_eq!(lookup(vec![a, b]), "2.0.0");
}

#[test]
fn a_compose_with_excludes_expands_flat() {
    let mut params = tx_test_file("tho/expand-vs-act-exclusion-request.json");
    params["parameter"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "tx-resource", "resource": tx_test_file("tho/cs-act-reason.json")}));
    let vs = Terminology::new(Registry::new(), Config::default())
        .run(Operation::Expand, &Params::from_json(&params), None)
        .unwrap();
    let contains = vs["expansion"]["contains"].as_array().unwrap();
    assert_eq!(vs["expansion"]["total"], 251);
    assert_eq!(contains.len(), 251, "every code at the top level");
    assert!(contains.iter().all(|c| c.get("contains").is_none()));
    // Without the exclude, the same code system keeps its hierarchy.
    let whole = &mut params["parameter"][0]["resource"]["compose"];
    whole.as_object_mut().unwrap().remove("exclude");
    let vs = Terminology::new(Registry::new(), Config::default())
        .run(Operation::Expand, &Params::from_json(&params), None)
        .unwrap();
    let contains = vs["expansion"]["contains"].as_array().unwrap();
    assert!(contains.iter().any(|c| c.get("contains").is_some()));
}

const SEARCH: &[&str] = &[
    "search/codesystem-search.json",
    "search/valueset-search-all.json",
    "search/valueset-search-filter.json",
];

/// `(code, child codes)` of the top level of an expansion.
fn tree(vs: &Value) -> Vec<(String, Vec<String>)> {
    let code = |c: &Value| c["code"].as_str().unwrap().to_string();
    vs["expansion"]["contains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let children = c["contains"].as_array().into_iter().flatten();
            (code(c), children.map(code).collect())
        })
        .collect()
}

fn search(url: &str, filter: Option<&str>) -> Value {
    let mut parameter = vec![json!({"name": "url", "valueUri": url})];
    if let Some(f) = filter {
        parameter.push(json!({"name": "filter", "valueString": f}));
    }
    run(SEARCH, Operation::Expand, json!({"parameter": parameter})).unwrap()
}

#[test]
fn a_text_filter_keeps_the_tree_of_a_filtered_include_but_not_of_a_whole_system() {
    let exchange = || {
        ["data-exchange1", "data-exchange2", "data-exchange3"]
            .map(String::from)
            .to_vec()
    };
    // `search-filter-yes`: the text filter narrows an is-a include, whose codes keep their parent.
    let vs = search(
        "http://hl7.org/fhir/test/ValueSet/search-filter",
        Some("data"),
    );
    assert_eq!(tree(&vs), [("data-exchange".to_string(), exchange())]);
    assert_eq!(vs["expansion"]["total"], 4);
    // `search-all-yes`: the same text filter over the whole code system is a flat list of matches.
    let vs = search("http://hl7.org/fhir/test/ValueSet/search-all", Some("data"));
    let flat: Vec<_> = tree(&vs).into_iter().map(|(c, ch)| (c, ch.len())).collect();
    assert_eq!(
        flat,
        [
            "data-exchange",
            "data-exchange1",
            "data-exchange2",
            "data-exchange3"
        ]
        .map(|c| (c.to_string(), 0))
    );
    // Without a text filter, the whole code system is a tree.
    let vs = search("http://hl7.org/fhir/test/ValueSet/search-all", None);
    assert!(tree(&vs).contains(&("data-exchange".to_string(), exchange())));
    // An include listing codes beside the is-a include makes the whole expansion flat, text filter or not.
    let mut mixed = tx_test_file("search/valueset-search-filter.json");
    mixed["url"] = json!("http://hl7.org/fhir/test/ValueSet/search-mixed");
    mixed["compose"]["include"]
        .as_array_mut()
        .unwrap()
        .push(json!({
            "system": "http://hl7.org/fhir/test/CodeSystem/search",
            "concept": [{"code": "summary"}]
        }));
    for filter in [None, Some("data")] {
        let mut parameter = vec![json!({"name": "valueSet", "resource": mixed})];
        if let Some(f) = filter {
            parameter.push(json!({"name": "filter", "valueString": f}));
        }
        let vs = run(SEARCH, Operation::Expand, json!({"parameter": parameter})).unwrap();
        assert!(
            tree(&vs).iter().all(|(_, children)| children.is_empty()),
            "{filter:?}: {:?}",
            tree(&vs)
        );
    }
}
