//! Display languages: which displays are valid for the languages asked for (the `display` and `language`
//! suites' code systems and value sets), and what an expansion shows when no other language is acceptable.

use crate::tx_test_file;
use serde_json::{Value, json};
use terminology::{Config, ErrorKind, Operation, Params, Registry, Terminology};

const SETUP: &[&str] = &[
    "display/codesystem-none.json",
    "display/codesystem-en.json",
    "display/valueset-none.json",
    "display/valueset-en.json",
    "language/codesystem-en-multi.json",
    "language/valueset-en-multi.json",
    "language/valueset-en-en-multi.json",
    "language/valueset-en-enlang-multi.json",
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

/// `$validate-code` of `code1` with `display` against value set `vs`, optionally in `language`.
fn validate(vs: &str, system: &str, display: &str, language: Option<&str>) -> Value {
    let mut p = vec![
        json!({"name": "url", "valueUri": format!("http://hl7.org/fhir/test/ValueSet/{vs}")}),
        json!({"name": "coding", "valueCoding": {
            "system": format!("http://hl7.org/fhir/test/CodeSystem/{system}"),
            "code": "code1",
            "display": display
        }}),
    ];
    if let Some(l) = language {
        p.push(json!({"name": "displayLanguage", "valueCode": l}));
    }
    run(Operation::ValidateVs, json!({"parameter": p})).unwrap()
}

fn message(v: &Value) -> Option<&str> {
    param(v, "message").and_then(|m| m["valueString"].as_str())
}

#[test]
fn a_display_of_no_stated_language_is_valid_in_any_language() {
    // lang-none states no language: its display is right whatever language is asked for.
    let right = validate("lang-none", "lang-none", "Code1", Some("de"));
    assert_eq!(param(&right, "result").unwrap()["valueBoolean"], true);
    assert!(param(&right, "issues").is_none(), "{right}");
    // And a wrong display is told the valid one without a language tag.
    for (lang, label) in [(Some("de"), "de"), (Some("en"), "en"), (None, "--")] {
        let wrong = validate("lang-none", "lang-none", "XCode1", lang);
        assert_eq!(param(&wrong, "result").unwrap()["valueBoolean"], false);
        assert_eq!(
            message(&wrong).unwrap(),
            format!(
                "Wrong Display Name 'XCode1' for http://hl7.org/fhir/test/CodeSystem/lang-none#code1. Valid display is 'Code1' (for the language(s) '{label}')"
            )
        );
    }
    // A code system in English has no German display.
    let wrong = validate("lang-en", "lang-en", "XCode1", Some("de"));
    assert!(
        message(&wrong)
            .unwrap()
            .contains("There are no valid display names found for language(s) 'de'")
    );
}

#[test]
fn an_invalid_display_language_is_a_client_error() {
    let mut p = Params::default();
    p.push(json!({"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/lang-en"}));
    p.push(json!({"name": "coding", "valueCoding": {
        "system": "http://hl7.org/fhir/test/CodeSystem/lang-en", "code": "code1"
    }}));
    p.push(json!({"name": "displayLanguage", "valueCode": "-"}));
    for f in SETUP {
        p.push(json!({"name": "tx-resource", "resource": tx_test_file(f)}));
    }
    let tx = Terminology::new(Registry::new(), Config::default());
    let e = tx.run(Operation::ValidateVs, &p, None).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert_eq!(e.issues[0].text, "Invalid displayLanguage: '-'");
    assert_eq!(e.issues[0].code, "processing");
    // Well-formed lists with weights and wildcards are accepted.
    for ok in ["de", "en-AU", "de, *; q=0", "en,it,*", "en, en-AU; q=0.4"] {
        let v = validate("lang-en", "lang-en", "Code1", Some(ok));
        assert!(param(&v, "result").is_some(), "{ok}");
    }
}

#[test]
fn the_value_set_language_chooses_the_valid_displays() {
    // en-en-multi asks for English through its displayLanguage expansion parameter, en-enlang-multi through
    // its `language`: the German designation is then not a valid display.
    for vs in ["en-en-multi", "en-enlang-multi"] {
        let v = validate(vs, "en-multi", "Anzeige 1", None);
        assert_eq!(param(&v, "result").unwrap()["valueBoolean"], false, "{vs}");
        assert_eq!(
            message(&v).unwrap(),
            "Wrong Display Name 'Anzeige 1' for http://hl7.org/fhir/test/CodeSystem/en-multi#code1. Valid display is 'Display 1' (en) (for the language(s) 'en')"
        );
    }
    // Without a language, every language's display is valid.
    let v = validate("en-multi", "en-multi", "Anzeige 1", None);
    assert_eq!(param(&v, "result").unwrap()["valueBoolean"], true);
    // The request's own language wins over the value set's.
    let v = validate("en-enlang-multi", "en-multi", "Anzeige 1", Some("de"));
    assert_eq!(param(&v, "result").unwrap()["valueBoolean"], true);
}

#[test]
fn a_refused_wildcard_leaves_concepts_without_a_display() {
    let vs = run(
        Operation::Expand,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/en-multi"},
            {"name": "displayLanguage", "valueCode": "de,*; q=0"},
            {"name": "includeDesignations", "valueBoolean": true},
            {"name": "excludeNested", "valueBoolean": true}
        ]}),
    )
    .unwrap();
    let contains = vs["expansion"]["contains"].as_array().unwrap();
    let by_code = |c: &str| contains.iter().find(|e| e["code"] == c).unwrap();
    // A German designation (de-CH counts) is the display; the English display becomes a designation.
    assert_eq!(by_code("code2")["display"], "Anzeige 2");
    // code2aI has no German designation: no display at all, its English display listed first.
    let c = by_code("code2aI");
    assert!(c.get("display").is_none(), "{c}");
    assert_eq!(c["designation"][0]["language"], "en");
    assert_eq!(c["designation"][0]["value"], "Display 2aI");
    assert_eq!(c["designation"][0]["use"]["code"], "preferredForLanguage");
    assert_eq!(c["designation"][1]["value"], "Mostrar 2aI");
    // With the wildcard acceptable the English display stands in.
    let vs = run(
        Operation::Expand,
        json!({"parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/en-multi"},
            {"name": "displayLanguage", "valueCode": "de,*"},
            {"name": "excludeNested", "valueBoolean": true}
        ]}),
    )
    .unwrap();
    let c = vs["expansion"]["contains"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["code"] == "code2aI")
        .unwrap();
    assert_eq!(c["display"], "Display 2aI");
}
