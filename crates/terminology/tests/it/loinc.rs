//! `import_loinc` over the LOINC subset in ../shared/tx-ecosystem/tx-source/loinc (same layout as a release),
//! then the FHIR operations over the result.

use crate::shared;
use serde_json::{Value, json};
use terminology::{Config, Kind, Operation, Params, Registry, Terminology, import_loinc};

fn service() -> Terminology {
    let import =
        import_loinc(&shared().join("tx-ecosystem/tx-source/loinc"), Some("2.82")).unwrap();
    let mut registry = Registry::new();
    for r in import.resources {
        assert!(registry.add(r));
    }
    Terminology::new(registry, Config::default())
}

fn param<'a>(answer: &'a Value, name: &str) -> Option<&'a Value> {
    answer["parameter"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)
}

fn expand_codes(tx: &Terminology, compose: Value) -> Vec<String> {
    let vs = json!({"resourceType": "ValueSet", "url": "http://example.org/vs", "status": "active", "compose": compose});
    let params = Params::from_json(&json!({"resourceType": "Parameters", "parameter": [
        {"name": "valueSet", "resource": vs}
    ]}));
    let out = tx.run(Operation::Expand, &params, None).unwrap();
    let mut codes = Vec::new();
    flatten(&out["expansion"]["contains"], &mut codes);
    codes
}

/// Codes of an expansion, nested `contains` included.
fn flatten(contains: &Value, out: &mut Vec<String>) {
    for c in contains.as_array().into_iter().flatten() {
        out.push(c["code"].as_str().unwrap().to_string());
        flatten(&c["contains"], out);
    }
}

fn loinc_filter(property: &str, op: &str, value: &str) -> Value {
    json!({"include": [{"system": "http://loinc.org", "filter": [{"property": property, "op": op, "value": value}]}]})
}

#[test]
fn the_subset_imports_with_every_kind_of_concept() {
    let import = import_loinc(&shared().join("tx-ecosystem/tx-source/loinc"), None).unwrap();
    let s = &import.stats;
    assert_eq!(s.terms, 322, "{s:?}");
    assert_eq!(s.answer_lists, 3, "{s:?}");
    assert_eq!(s.answers, 8, "{s:?}");
    assert!(s.parts >= 147, "{s:?}");
    assert!(s.designations > 2000, "{s:?}");
    assert!(s.missing_files.is_empty(), "{s:?}");
    // Without a version option or a Loinc_X.YY folder name: the newest VersionLastChanged.
    assert_eq!(s.version, "2.79");
    let cs = &import.resources[0];
    assert_eq!(cs["url"], "http://loinc.org");
    let codes: Vec<&str> = cs["concept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["code"].as_str().unwrap())
        .collect();
    assert_eq!(cs["count"], codes.len());
    let mut sorted = codes.clone();
    sorted.sort();
    assert_eq!(codes, sorted, "concepts are in code order");
    let urls: Vec<&str> = import.resources[1..]
        .iter()
        .map(|r| r["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        [
            "http://loinc.org/vs",
            "http://loinc.org/vs/LL360-9",
            "http://loinc.org/vs/LL6136-7",
            "http://loinc.org/vs/LL744-4"
        ]
    );
}

#[test]
fn lookup_gives_axes_as_parts_designations_and_hierarchy() {
    let tx = service();
    let params = Params::from_json(&json!({"resourceType": "Parameters", "parameter": [
        {"name": "system", "valueUri": "http://loinc.org"},
        {"name": "code", "valueCode": "14394-1"},
        {"name": "property", "valueCode": "*"}
    ]}));
    let out = tx.run(Operation::Lookup, &params, None).unwrap();
    assert_eq!(param(&out, "version").unwrap()["valueString"], "2.82");
    let text = out.to_string();
    assert!(
        text.contains("Urea nitrogen [Mass/volume] in Pleural fluid"),
        "{text}"
    );
    assert!(
        text.contains("Harnstoff-Stickstoff [Masse/Volumen] in Pleuraflüssigkeit"),
        "German linguistic variant missing: {text}"
    );
    assert!(
        text.contains("Urea Nitrogen (BUN), Pleural fluid"),
        "consumer name missing: {text}"
    );
    assert!(text.contains("\"de-DE\""), "{text}");

    // A part: a concept of its own, with its place in the component hierarchy.
    let params = Params::from_json(&json!({"resourceType": "Parameters", "parameter": [
        {"name": "system", "valueUri": "http://loinc.org"},
        {"name": "codeA", "valueCode": "LP14082-9"},
        {"name": "codeB", "valueCode": "107188-5"}
    ]}));
    let out = tx.run(Operation::Subsumes, &params, None).unwrap();
    assert_eq!(param(&out, "outcome").unwrap()["valueCode"], "subsumes");
}

#[test]
fn validate_code_knows_terms_parts_lists_and_answers() {
    let tx = service();
    for (code, display) in [
        ("100041-3", "Aminoglycoside [Susceptibility]"),
        ("LL360-9", "Pos|Neg"),
        ("LA6576-8", "Positive"),
        ("LP14082-9", "Bacteria"),
    ] {
        let params = Params::from_json(&json!({"resourceType": "Parameters", "parameter": [
            {"name": "url", "valueUri": "http://loinc.org"},
            {"name": "code", "valueCode": code}
        ]}));
        let out = tx.run(Operation::ValidateCs, &params, None).unwrap();
        assert_eq!(
            param(&out, "result").unwrap()["valueBoolean"],
            true,
            "{code}: {out}"
        );
        assert_eq!(
            param(&out, "display").unwrap()["valueString"],
            display,
            "{code}"
        );
    }
    let params = Params::from_json(&json!({"resourceType": "Parameters", "parameter": [
        {"name": "url", "valueUri": "http://loinc.org"},
        {"name": "code", "valueCode": "XX111373-9"}
    ]}));
    let out = tx.run(Operation::ValidateCs, &params, None).unwrap();
    assert_eq!(param(&out, "result").unwrap()["valueBoolean"], false);
    assert_eq!(
        param(&out, "message").unwrap()["valueString"],
        "Unknown code 'XX111373-9' in the CodeSystem 'http://loinc.org' version '2.82'"
    );
}

#[test]
fn filters_of_the_loinc_guide() {
    let tx = service();
    // Answers of a list, of a term's list, and the implicit answer-list value set.
    let answers = ["LA10105-7", "LA32971-6", "LA32972-4", "LA9040-2"];
    assert_eq!(
        expand_codes(&tx, loinc_filter("answers-for", "=", "LL6136-7")),
        answers
    );
    assert_eq!(
        expand_codes(&tx, loinc_filter("LIST", "=", "LL6136-7")),
        answers
    );
    assert_eq!(
        expand_codes(&tx, loinc_filter("answers-for", "=", "100041-3")),
        ["LA6576-8", "LA6577-6"]
    );
    let params = Params::from_json(&json!({"resourceType": "Parameters", "parameter": [
        {"name": "url", "valueUri": "http://loinc.org/vs/LL360-9"}
    ]}));
    let out = tx.run(Operation::Expand, &params, None).unwrap();
    assert_eq!(out["expansion"]["total"], 2, "{out}");

    // An axis by part code and by part name.
    let by_code = expand_codes(&tx, loinc_filter("COMPONENT", "=", "LP267482-0"));
    assert_eq!(by_code, ["100041-3"]);
    assert_eq!(
        expand_codes(&tx, loinc_filter("COMPONENT", "=", "Aminoglycoside")),
        by_code
    );

    // The component hierarchy.
    let mut below = expand_codes(&tx, loinc_filter("concept", "is-a", "LP442038-8"));
    below.sort();
    assert_eq!(below, ["107188-5", "595-9", "75357-4", "LP442038-8"]);

    // String properties.
    let discouraged = expand_codes(&tx, loinc_filter("STATUS", "=", "DISCOURAGED"));
    assert!(!discouraged.is_empty());
    let lab = expand_codes(&tx, loinc_filter("CLASSTYPE", "=", "1"));
    assert!(lab.contains(&"14394-1".to_string()));
    assert!(
        !lab.contains(&"100007-4".to_string()),
        "a survey (CLASSTYPE 4)"
    );
    let regex = expand_codes(&tx, loinc_filter("CLASS", "regex", "SURVEY\\..*"));
    assert!(regex.contains(&"100007-4".to_string()), "{regex:?}");
    assert!(!regex.contains(&"14394-1".to_string()));
}

#[test]
fn the_code_system_is_searchable() {
    let tx = service();
    assert_eq!(tx.registry().resources(Kind::CodeSystem).count(), 1);
    let bundle = tx.search(
        Kind::ValueSet,
        &[("url".into(), "http://loinc.org/vs/LL744-4".into())],
        "http://x",
    );
    assert_eq!(bundle["total"], 1);
}
