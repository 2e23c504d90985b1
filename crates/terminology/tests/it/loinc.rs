//! The LOINC subset in ../shared/tx-ecosystem/tx-source/loinc (same layout as a release) imported into the
//! store and served by `LoincProvider`, then the FHIR operations over it; `import_loinc` (the FHIR CodeSystem
//! model the store replaced) is the reference its answers are compared with.

use crate::shared;
use serde_json::{Value, json};
use terminology::{
    Config, Kind, LoincProvider, Operation, Params, Registry, Terminology, import_loinc,
    import_loinc_store,
};

fn subset() -> std::path::PathBuf {
    shared().join("tx-ecosystem/tx-source/loinc")
}

/// LOINC as served: the subset imported into a store, opened by the provider.
fn service() -> Terminology {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("loinc.store");
    import_loinc_store(&subset(), Some("2.82"), &path).unwrap();
    // The mapping outlives the file's directory entry (removed with `dir`).
    let provider = LoincProvider::open(&path).unwrap();
    let mut registry = Registry::new();
    for r in provider.resources() {
        assert!(registry.add(r));
    }
    Terminology::new(registry, Config::default()).with_provider(provider)
}

/// LOINC as the FHIR CodeSystem model the store replaces: the reference for the store's answers.
fn json_service() -> Terminology {
    let import = import_loinc(&subset(), Some("2.82")).unwrap();
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
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("loinc.store");
    let stored = import_loinc_store(&subset(), None, &path).unwrap();
    assert_eq!(
        &stored, s,
        "the store import counts what the JSON import counts"
    );
    let provider = LoincProvider::open(&path).unwrap();
    assert_eq!(provider.store().stats(), s);
    assert_eq!(provider.store().len(), import.resources[0]["count"]);
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

/// An operation's answer, or its OperationOutcome, without what changes from run to run.
fn answer(tx: &Terminology, op: Operation, params: Value, lang: Option<&str>) -> Value {
    let mut out = match tx.run(op, &Params::from_json(&params), lang) {
        Ok(v) => v,
        Err(e) => e.operation_outcome(),
    };
    if let Some(exp) = out.get_mut("expansion").and_then(Value::as_object_mut) {
        exp.remove("identifier");
        exp.remove("timestamp");
    }
    out
}

fn parameters(list: Value) -> Value {
    json!({"resourceType": "Parameters", "parameter": list})
}

/// The store answers as the FHIR CodeSystem model did, over every code of the subset: `$lookup` with all
/// properties (and in German), CodeSystem `$validate-code` with the right and a wrong display, `$subsumes`
/// along every hierarchy link, ValueSet `$validate-code` against `http://loinc.org/vs` and a filtered value
/// set, and expansions with every filter of the LOINC guide the importer supports. Expansions are compared
/// flat (`excludeNested`): the store's are never nested, as tx.fhir.org's LOINC expansions are not.
#[test]
fn the_store_answers_as_the_json_model_did() {
    let (old, new) = (json_service(), service());
    let import = import_loinc(&subset(), Some("2.82")).unwrap();
    let concepts = import.resources[0]["concept"].as_array().unwrap().clone();
    assert!(concepts.len() > 480, "{}", concepts.len());
    let mut compared = 0;
    let mut same = |op: Operation, params: Value, lang: Option<&str>| {
        let (a, b) = (
            answer(&old, op, params.clone(), lang),
            answer(&new, op, params.clone(), lang),
        );
        assert_eq!(a, b, "{op:?} {params}");
        compared += 1;
        a
    };
    for c in &concepts {
        let code = c["code"].as_str().unwrap();
        let display = c["display"].as_str().unwrap_or("x");
        let coding = |system: &str| json!({"name": "system", "valueUri": system});
        same(
            Operation::Lookup,
            parameters(
                json!([coding("http://loinc.org"), {"name": "code", "valueCode": code},
                {"name": "property", "valueCode": "*"}]),
            ),
            None,
        );
        same(
            Operation::Lookup,
            parameters(
                json!([coding("http://loinc.org"), {"name": "code", "valueCode": code.to_lowercase()},
                {"name": "property", "valueCode": "COMPONENT"}, {"name": "property", "valueCode": "parent"}]),
            ),
            Some("de-DE"),
        );
        for d in [display, "Not the display"] {
            same(
                Operation::ValidateCs,
                parameters(json!([{"name": "url", "valueUri": "http://loinc.org"},
                    {"name": "code", "valueCode": code}, {"name": "display", "valueString": d}])),
                None,
            );
        }
        for vs in [
            json!({"name": "url", "valueUri": "http://loinc.org/vs"}),
            json!({"name": "valueSet", "resource": {"resourceType": "ValueSet", "url": "http://example.org/vs",
                "status": "active", "compose": {"include": [{"system": "http://loinc.org", "filter": [
                    {"property": "CLASSTYPE", "op": "=", "value": "1"}]}]}}}),
        ] {
            same(
                Operation::ValidateVs,
                parameters(
                    json!([vs, {"name": "system", "valueUri": "http://loinc.org"},
                    {"name": "code", "valueCode": code}]),
                ),
                None,
            );
        }
        let subsumes = |a: &str, b: &str| {
            parameters(json!([{"name": "system", "valueUri": "http://loinc.org"},
                {"name": "codeA", "valueCode": a}, {"name": "codeB", "valueCode": b}]))
        };
        same(Operation::Subsumes, subsumes(code, code), None);
        same(Operation::Subsumes, subsumes(code, "LP14082-9"), None);
        for p in c["property"].as_array().into_iter().flatten() {
            if p["code"] == "parent" {
                let parent = p["valueCode"].as_str().unwrap();
                same(Operation::Subsumes, subsumes(parent, code), None);
                same(Operation::Subsumes, subsumes(code, parent), None);
            }
        }
    }
    // Filters: every axis by a part code and a part name, string properties, the hierarchy, answer lists.
    let mut filters: Vec<(String, String, String)> = Vec::new();
    for c in concepts.iter().step_by(7) {
        for p in c["property"].as_array().into_iter().flatten() {
            let code = p["code"].as_str().unwrap().to_string();
            if let Some(part) = p["valueCoding"].as_object() {
                filters.push((
                    code.clone(),
                    "=".into(),
                    part["code"].as_str().unwrap().into(),
                ));
                if let Some(d) = part.get("display").and_then(Value::as_str) {
                    filters.push((code.clone(), "=".into(), d.into()));
                    filters.push((code.clone(), "regex".into(), format!("{}.*", &d[..1])));
                }
            } else if let Some(v) = p["valueString"].as_str() {
                filters.push((code.clone(), "=".into(), v.into()));
            } else if let Some(v) = p["valueCode"].as_str() {
                filters.push((code.clone(), "=".into(), v.into()));
            }
        }
    }
    for c in &concepts {
        let code = c["code"].as_str().unwrap();
        if code.starts_with("LP") || code.starts_with("LL") {
            for op in ["is-a", "descendent-of", "generalizes", "child-of"] {
                filters.push(("concept".into(), op.into(), code.into()));
            }
            filters.push(("answers-for".into(), "=".into(), code.into()));
        }
        if c["property"]
            .as_array()
            .is_some_and(|a| a.iter().any(|p| p["code"] == "answer-list"))
        {
            filters.push(("answers-for".into(), "=".into(), code.into()));
        }
    }
    for (p, op, v) in [
        ("STATUS", "=", "ACTIVE"),
        ("STATUS", "regex", "DISC.*"),
        ("copyright", "=", "3rdParty"),
        ("inactive", "=", "true"),
        ("inactive", "=", "false"),
        ("display", "regex", ".*[Uu]rine.*"),
        ("CLASS", "in", "CHEM,MICRO"),
        ("CLASS", "not-in", "CHEM,MICRO"),
        ("METHOD_TYP", "exists", "true"),
        ("METHOD_TYP", "exists", "false"),
        ("ORDER_OBS", "regex", "Obs.*"),
        ("concept", "is-not-a", "LP14082-9"),
        ("code", "regex", "LA.*"),
        ("LIST", "=", "LL360-9"),
        ("CLASS", "regex", "(bad"),
        ("CLASS", "frobs", "x"),
    ] {
        filters.push((p.into(), op.into(), v.into()));
    }
    filters.sort();
    filters.dedup();
    assert!(filters.len() > 300, "{}", filters.len());
    let mut nonempty = 0;
    for (p, op, v) in &filters {
        let vs = json!({"resourceType": "ValueSet", "url": "http://example.org/vs", "status": "active",
            "compose": {"include": [{"system": "http://loinc.org", "filter": [{"property": p, "op": op, "value": v}]}]}});
        let out = same(
            Operation::Expand,
            parameters(json!([{"name": "valueSet", "resource": vs},
                {"name": "excludeNested", "valueBoolean": true},
                {"name": "includeDesignations", "valueBoolean": true},
                {"name": "property", "valueCode": "COMPONENT"}, {"name": "property", "valueCode": "parent"}])),
            None,
        );
        if out["expansion"]["contains"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
        {
            nonempty += 1;
        }
    }
    // Most filters select something: the comparison is not of empty answers.
    assert!(
        nonempty * 2 > filters.len(),
        "{nonempty} of {}",
        filters.len()
    );
    // Paged expansions of one filtered include (the provider pages them itself): the page, the total, the
    // text filter over the displays, activeOnly.
    for f in [
        json!([]),
        json!([{"property": "CLASSTYPE", "op": "=", "value": "1"}]),
        json!([{"property": "concept", "op": "is-a", "value": "LP14082-9"}]),
    ] {
        let vs = json!({"resourceType": "ValueSet", "url": "http://example.org/vs", "status": "active",
            "compose": {"include": [{"system": "http://loinc.org", "filter": f}]}});
        for extra in [
            json!([]),
            json!([{"name": "filter", "valueString": "urin"}]),
            json!([{"name": "filter", "valueString": "bact cult"}]),
            json!([{"name": "activeOnly", "valueBoolean": true}, {"name": "offset", "valueInteger": 7}]),
        ] {
            for lang in [None, Some("en"), Some("en-US, de;q=0.5")] {
                let mut list = vec![
                    json!({"name": "valueSet", "resource": vs}),
                    json!({"name": "count", "valueInteger": 15}),
                ];
                list.extend(extra.as_array().unwrap().iter().cloned());
                let out = same(Operation::Expand, parameters(Value::Array(list)), lang);
                assert!(out["expansion"]["total"].is_number(), "{out}");
            }
        }
    }
    // A supplement carried in the request (a language pack, applied unnamed; and one named by useSupplement).
    for lang_pack in [true, false] {
        let mut sup = json!({"resourceType": "CodeSystem", "url": "http://example.org/loinc-fr",
            "version": "1", "status": "active", "content": "supplement", "supplements": "http://loinc.org",
            "concept": [{"code": "14394-1", "designation": [{"language": "fr-FR", "value": "Azote uréique"}]},
                {"code": "LP14082-9", "designation": [{"language": "fr-FR", "value": "Bactéries"}]}]});
        if lang_pack {
            sup["extension"] = json!([{"url": "http://hl7.org/fhir/StructureDefinition/codesystem-supplement-type",
                "valueCode": "lang-pack"}]);
        }
        let mut common = vec![json!({"name": "tx-resource", "resource": sup})];
        if !lang_pack {
            common.push(
                json!({"name": "useSupplement", "valueCanonical": "http://example.org/loinc-fr|1"}),
            );
        }
        let with = |extra: Value| {
            let mut l = common.clone();
            l.extend(extra.as_array().unwrap().iter().cloned());
            parameters(Value::Array(l))
        };
        for code in ["14394-1", "LP14082-9"] {
            same(
                Operation::Lookup,
                with(json!([{"name": "system", "valueUri": "http://loinc.org"},
                {"name": "code", "valueCode": code}])),
                Some("fr-FR"),
            );
            for d in ["Azote uréique", "Bactéries"] {
                same(
                    Operation::ValidateCs,
                    with(json!([{"name": "url", "valueUri": "http://loinc.org"},
                    {"name": "code", "valueCode": code}, {"name": "display", "valueString": d}])),
                    Some("fr-FR"),
                );
            }
        }
        let vs = json!({"resourceType": "ValueSet", "url": "http://example.org/vs", "status": "active",
            "compose": {"include": [{"system": "http://loinc.org", "filter": [
                {"property": "concept", "op": "is-a", "value": "LP14082-9"}]}]}});
        same(
            Operation::Expand,
            with(json!([{"name": "valueSet", "resource": vs},
            {"name": "includeDesignations", "valueBoolean": true},
            {"name": "excludeNested", "valueBoolean": true}])),
            Some("fr-FR"),
        );
    }
    for url in ["http://loinc.org/vs", "http://loinc.org/vs/LL6136-7"] {
        for extra in [
            json!({"name": "filter", "valueString": "urin"}),
            json!({"name": "count", "valueInteger": 20}),
        ] {
            same(
                Operation::Expand,
                parameters(json!([{"name": "url", "valueUri": url}, extra,
                    {"name": "excludeNested", "valueBoolean": true}])),
                Some("de"),
            );
        }
    }
    assert!(compared >= 5000, "{compared}");
}

/// A store of another format, a truncated one or another file is refused when opened, with what to run.
#[test]
fn a_damaged_or_foreign_store_is_refused_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("loinc.store");
    import_loinc_store(&subset(), Some("2.82"), &path).unwrap();
    let good = std::fs::read(&path).unwrap();
    let refused = |bytes: &[u8]| {
        let p = dir.path().join("bad.store");
        std::fs::write(&p, bytes).unwrap();
        LoincProvider::open(&p).unwrap_err().to_string()
    };
    let mut other = good.clone();
    other[8..12].copy_from_slice(&99u32.to_le_bytes());
    assert!(
        refused(&other).contains("run `thoth import loinc` again"),
        "{}",
        refused(&other)
    );
    assert!(refused(&good[..good.len() / 2]).contains("truncated"));
    assert!(refused(b"{\"resourceType\": \"Bundle\"}").contains("not a LOINC store"));
}

#[test]
fn a_code_is_found_ignoring_case_and_an_unknown_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("loinc.store");
    import_loinc_store(&subset(), Some("2.82"), &path).unwrap();
    let provider = LoincProvider::open(&path).unwrap();
    let store = provider.store();
    let codes: Vec<String> = (0..store.len() as u32)
        .map(|i| store.code(i).to_string())
        .collect();
    assert!(codes.len() > 300, "{} codes", codes.len());
    for code in &codes {
        // `lacks` searches ignoring case only: a code spelled as stored must be found so too.
        assert!(
            !terminology::CodeSystemProvider::lacks(&*provider, code),
            "{code}"
        );
        for spelled in [code.clone(), code.to_lowercase(), code.to_uppercase()] {
            let i = store
                .find_any_case(&spelled)
                .unwrap_or_else(|| panic!("{spelled} not found"));
            assert_eq!(store.code(i).to_lowercase(), code.to_lowercase());
            assert_eq!(
                store.find(&spelled).map(|i| store.code(i).to_lowercase()),
                Some(code.to_lowercase())
            );
        }
    }
    for bogus in ["", "0", "6690-2x", "lp", "zz-9", "Σ-1", "ß"] {
        assert_eq!(store.find_any_case(bogus), None, "{bogus}");
        assert!(
            terminology::CodeSystemProvider::lacks(&*provider, bogus),
            "{bogus}"
        );
    }
}
