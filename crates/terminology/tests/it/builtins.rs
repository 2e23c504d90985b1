//! The built-in code systems against the conformance suites that use them and the registries' real content:
//! BCP-47 displays from the IANA Language Subtag Registry (suite `langcodes`), ISO 3166-1 (suite `bugs`:
//! `country-code`, `country-codes`, `3166-a`..`d`; FHIR R4's `iso3166-1-*` value sets) and MIME media types
//! (FHIR R4's `mimetypes`).

use crate::{builtin_data_dir, tx_test_file};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::OnceLock;
use terminology::{
    Config, Operation, Params, Registry, SubtagKind, Terminology, load_builtin_data,
};

fn registry() -> Registry {
    let mut registry = crate::both_packages();
    registry.add(tx_test_file("langcodes/valueset-langcodes-all.json"));
    registry
}

/// A service over both packages with the IANA registry's descriptions.
fn tx() -> &'static Terminology {
    static TX: OnceLock<Terminology> = OnceLock::new();
    TX.get_or_init(|| {
        let (data, problems) = load_builtin_data(&builtin_data_dir());
        assert!(problems.is_empty(), "{problems:?}");
        Terminology::with_builtin_data(registry(), Config::default(), &data)
    })
}

/// A service over no content at all: the built-in code systems alone, without data files.
fn bare() -> &'static Terminology {
    static TX: OnceLock<Terminology> = OnceLock::new();
    TX.get_or_init(|| Terminology::new(Registry::new(), Config::default()))
}

fn run(tx: &Terminology, op: Operation, params: Value) -> Value {
    tx.run(op, &Params::from_json(&params), None)
        .unwrap_or_else(|e| panic!("{params}: {e:?}"))
}

fn param<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    v["parameter"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)
}

fn value<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    let p = param(v, name)?;
    ["valueBoolean", "valueString", "valueCode", "valueUri"]
        .iter()
        .find_map(|k| p.get(*k))
}

fn validate_cs(tx: &Terminology, system: &str, code: &str, display: Option<&str>) -> Value {
    let mut p = vec![
        json!({"name": "url", "valueUri": system}),
        json!({"name": "code", "valueCode": code}),
    ];
    if let Some(d) = display {
        p.push(json!({"name": "display", "valueString": d}));
    }
    run(
        tx,
        Operation::ValidateCs,
        json!({"resourceType": "Parameters", "parameter": p}),
    )
}

fn contains(v: &Value) -> Vec<(String, String)> {
    v["expansion"]["contains"]
        .as_array()
        .unwrap_or_else(|| panic!("no contains: {v}"))
        .iter()
        .map(|c| {
            (
                c["code"].as_str().unwrap().to_string(),
                c["display"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_subtag_registry_package_reads_as_published() {
    let (data, _) = load_builtin_data(&builtin_data_dir());
    let reg = data.subtags.expect("registry loaded");
    assert_eq!(reg.file_date, "2025-08-25");
    // 9,281 records less the 4 private-use ranges (`qaa..qtz`, ...).
    assert_eq!(reg.len(), 9277);
    assert_eq!(
        reg.descriptions(SubtagKind::Language, "ady"),
        ["Adyghe", "Adygei"]
    );
    assert_eq!(
        reg.descriptions(SubtagKind::Region, "us"),
        ["United States"]
    );
    assert_eq!(reg.descriptions(SubtagKind::Script, "Latn"), ["Latin"]);
    assert_eq!(
        reg.descriptions(SubtagKind::Variant, "1996"),
        ["German orthography of 1996"]
    );
    assert_eq!(reg.tag_descriptions("zh-Hant"), ["traditional Chinese"]);
    assert!(reg.descriptions(SubtagKind::Language, "qab").is_empty());
}

#[test]
fn language_displays_are_the_iana_registry_s_descriptions_as_in_langcodes() {
    let v = run(
        tx(),
        Operation::Expand,
        json!({"resourceType": "Parameters", "parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/langcodes-all"},
        ]}),
    );
    let expected = tx_test_file("langcodes/expand-langcodes-all-response.json");
    let ours = contains(&v);
    let theirs = contains(&expected);
    assert_eq!(ours.len(), 485);
    assert_eq!(
        ours.iter().map(|c| &c.0).collect::<Vec<_>>(),
        theirs.iter().map(|c| &c.0).collect::<Vec<_>>()
    );
    let differ: Vec<_> = ours
        .iter()
        .zip(&theirs)
        .filter(|(a, b)| a.1 != b.1)
        .collect();
    // tx.fhir.org reads the registry's text form and drops the continuation line of a folded description
    // (`Interlingua (International Auxiliary Language` / `  Association)`); every other display is equal.
    assert_eq!(
        differ,
        [(
            &(
                "ia".to_string(),
                "Interlingua (International Auxiliary Language Association)".to_string()
            ),
            &(
                "ia".to_string(),
                "Interlingua (International Auxiliary Language".to_string()
            )
        )]
    );
    // Without the registry the displays are the value set's names.
    let v = run(
        &Terminology::new(registry(), Config::default()),
        Operation::Expand,
        json!({"resourceType": "Parameters", "parameter": [
            {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/langcodes-all"},
        ]}),
    );
    let ady = contains(&v).into_iter().find(|c| c.0 == "ady").unwrap();
    assert_eq!(ady.1, "Adyghe; Adygei");
}

#[test]
fn tags_are_named_from_their_subtags_and_accept_tx_fhir_org_s_other_names() {
    let display = |code: &str| {
        let v = validate_cs(tx(), "urn:ietf:bcp:47", code, None);
        assert_eq!(value(&v, "result"), Some(&json!(true)), "{code}: {v}");
        value(&v, "display").cloned()
    };
    // Listed by the Languages value set: its name.
    assert_eq!(display("en-US"), Some(json!("English (United States)")));
    // Not listed: the registry's descriptions of the subtags, in tx.fhir.org's form.
    assert_eq!(
        display("de-LI"),
        Some(json!("German (Region=Liechtenstein)"))
    );
    assert_eq!(
        display("de-Latn-CH-1996"),
        Some(json!(
            "German (Script=Latin, Region=Switzerland, Variant=German orthography of 1996)"
        ))
    );
    assert_eq!(display("ady"), Some(json!("Adyghe")));
    assert_eq!(
        display("zh-yue-HK"),
        Some(json!("Yue Chinese (Region=Hong Kong)"))
    );
    // The other descriptions of the language, and `Language (Region)`, are valid displays.
    for (code, d) in [
        ("ady", "Adygei"),
        ("de-LI", "German (Liechtenstein)"),
        ("de-LI", "German (Region=Liechtenstein)"),
    ] {
        let v = validate_cs(tx(), "urn:ietf:bcp:47", code, Some(d));
        assert_eq!(value(&v, "result"), Some(&json!(true)), "{code} {d}: {v}");
        assert!(param(&v, "issues").is_none(), "{code} {d}: {v}");
    }
    // `$lookup` lists them as designations.
    let v = run(
        tx(),
        Operation::Lookup,
        json!({"resourceType": "Parameters", "parameter": [
            {"name": "system", "valueUri": "urn:ietf:bcp:47"},
            {"name": "code", "valueCode": "ady"},
        ]}),
    );
    assert_eq!(value(&v, "display"), Some(&json!("Adyghe")));
    let names: Vec<&Value> = v["parameter"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "designation")
        .map(|p| &p["part"][1]["valueString"])
        .collect();
    assert_eq!(names, [&json!("Adygei"), &json!("Adyghe; Adygei")], "{v}");
    let v = validate_cs(tx(), "urn:ietf:bcp:47", "de-LI", Some("Swiss German"));
    assert_eq!(value(&v, "result"), Some(&json!(false)), "{v}");
    // Offline (no registry, no content) a tag is still validated, and has no display.
    let v = validate_cs(bare(), "urn:ietf:bcp:47", "de-LI", None);
    assert_eq!(value(&v, "result"), Some(&json!(true)), "{v}");
    assert!(param(&v, "display").is_none(), "{v}");
    let v = validate_cs(bare(), "urn:ietf:bcp:47", "de-AB", None);
    assert_eq!(value(&v, "result"), Some(&json!(false)), "{v}");
}

/// The parameters of a conformance test's expected answer that a comparison can rely on, with the messages'
/// ids of the issues.
fn essentials(v: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for p in v["parameter"].as_array().into_iter().flatten() {
        let name = p["name"].as_str().unwrap().to_string();
        if name == "issues" {
            let ids: Vec<Value> = p["resource"]["issue"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|i| {
                    json!([
                        i["severity"],
                        i["extension"][0]["valueString"],
                        i["details"]["text"]
                    ])
                })
                .collect();
            out.insert(name, Value::Array(ids));
        } else if let Some((_, v)) = p
            .as_object()
            .unwrap()
            .iter()
            .find(|(k, _)| k.starts_with("value"))
        {
            out.insert(name, v.clone());
        }
    }
    out
}

#[test]
fn iso_3166_answers_the_bugs_suite_as_tx_fhir_org_does() {
    for test in ["country-code", "3166-a", "3166-b", "3166-c", "3166-d"] {
        let request = tx_test_file(&format!("bugs/validate-{test}-request.json"));
        let expected = tx_test_file(&format!("bugs/validate-{test}-response.json"));
        let v = run(tx(), Operation::ValidateCs, request);
        assert_eq!(essentials(&v), essentials(&expected), "{test}: {v}");
    }
}

#[test]
fn iso_3166_expands_to_tx_fhir_org_s_789_codes() {
    let request = tx_test_file("bugs/expand-country-codes-request.json");
    let expected = tx_test_file("bugs/expand-country-codes-response.json");
    let v = run(tx(), Operation::Expand, request);
    assert_eq!(v["expansion"]["total"], 789);
    assert_eq!(
        v["expansion"]["parameter"],
        expected["expansion"]["parameter"]
    );
    let ours = contains(&v);
    let theirs = contains(&expected);
    assert_eq!(
        ours.iter().map(|c| &c.0).collect::<Vec<_>>(),
        theirs.iter().map(|c| &c.0).collect::<Vec<_>>()
    );
    // 783 of the 789 names are equal. tx.fhir.org names the United Kingdom's alpha-3 and numeric codes
    // differently from its alpha-2 code (ISO and FHIR R4 name all three alike), and gives names of its own to
    // four user-assigned codes, which ISO 3166-1 leaves unnamed.
    let differ: Vec<(&str, &str, &str)> = ours
        .iter()
        .zip(&theirs)
        .filter(|(a, b)| a.1 != b.1)
        .map(|(a, b)| (a.0.as_str(), a.1.as_str(), b.1.as_str()))
        .collect();
    let uk = "United Kingdom of Great Britain and Northern Ireland";
    assert_eq!(
        differ,
        [
            ("826", uk, "United Kingdom"),
            ("GBR", uk, "United Kingdom"),
            ("XK", "User-assigned", "Kosovo"),
            ("XX", "User-assigned", "Unknown"),
            ("XZ", "User-assigned", "International Waters"),
            ("ZZ", "User-assigned", "Unknown or Invalid Territory"),
        ]
    );
    // R4's value set's faults are undone: doubled apostrophes, a name cut at its comma.
    let names: BTreeMap<_, _> = ours.into_iter().collect();
    assert_eq!(names["CI"], "Côte d'Ivoire");
    assert_eq!(names["VI"], "Virgin Islands, U.S.");
    assert_eq!(names["VIR"], "Virgin Islands, U.S.");
}

#[test]
fn iso_3166_value_sets_of_fhir_r4_and_hl7_terminology() {
    let expand = |url: &str| {
        run(
            tx(),
            Operation::Expand,
            json!({"resourceType": "Parameters", "parameter": [
                {"name": "url", "valueUri": url},
            ]}),
        )
    };
    // `code regex [A-Z]{3}` and `[0-9]{3}`: the 249 countries each.
    for url in [
        "http://hl7.org/fhir/ValueSet/iso3166-1-3",
        "http://hl7.org/fhir/ValueSet/iso3166-1-N",
        "http://terminology.hl7.org/ValueSet/v3-Country",
    ] {
        let v = expand(url);
        assert_eq!(v["expansion"]["total"], 249, "{url}");
    }
    let v = expand("http://hl7.org/fhir/ValueSet/iso3166-1-3");
    assert!(contains(&v).contains(&("DEU".to_string(), "Germany".to_string())));
    // The enumerated alpha-2 value set: every code is known, with the code system's display.
    let v = expand("http://hl7.org/fhir/ValueSet/iso3166-1-2");
    assert_eq!(v["expansion"]["total"], 249);
    let vs_validate = |url: &str, code: &str| {
        run(
            tx(),
            Operation::ValidateVs,
            json!({"resourceType": "Parameters", "parameter": [
                {"name": "url", "valueUri": url},
                {"name": "system", "valueUri": "urn:iso:std:iso:3166"},
                {"name": "code", "valueCode": code},
            ]}),
        )
    };
    let v = vs_validate("http://hl7.org/fhir/ValueSet/iso3166-1-N", "276");
    assert_eq!(value(&v, "result"), Some(&json!(true)), "{v}");
    assert_eq!(value(&v, "display"), Some(&json!("Germany")));
    let v = vs_validate("http://hl7.org/fhir/ValueSet/iso3166-1-N", "DE");
    assert_eq!(value(&v, "result"), Some(&json!(false)), "{v}");
    // `$lookup`, and codes ISO 3166-1 does not assign.
    let v = run(
        tx(),
        Operation::Lookup,
        json!({"resourceType": "Parameters", "parameter": [
            {"name": "system", "valueUri": "urn:iso:std:iso:3166"},
            {"name": "code", "valueCode": "BOL"},
        ]}),
    );
    assert_eq!(
        value(&v, "display"),
        Some(&json!("Bolivia, Plurinational State of"))
    );
    assert_eq!(value(&v, "version"), Some(&json!("2018")));
    for code in ["UK", "de", "DEUT", "999", "XKX"] {
        let v = validate_cs(tx(), "urn:iso:std:iso:3166", code, None);
        assert_eq!(value(&v, "result"), Some(&json!(false)), "{code}: {v}");
    }
    // A wrong display of an assigned code is an error, as for any code system.
    let v = validate_cs(tx(), "urn:iso:std:iso:3166", "DE", Some("Prussia"));
    assert_eq!(value(&v, "result"), Some(&json!(false)), "{v}");
    // Without FHIR R4 loaded, the names are the crate's (ISO's bracketed form).
    let v = validate_cs(bare(), "urn:iso:std:iso:3166", "BO", None);
    assert_eq!(
        value(&v, "display"),
        Some(&json!("Bolivia (Plurinational State of)"))
    );
}

#[test]
fn mime_types_are_validated_by_their_grammar() {
    for code in [
        "text/plain",
        "application/fhir+json",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "text/plain; charset=UTF-8",
        "text/plain;charset=utf-8;format=flowed",
        "multipart/form-data; boundary=\"a b;c\"",
        "Text/HTML",
        "application/x-www-form-urlencoded",
    ] {
        let v = validate_cs(tx(), "urn:ietf:bcp:13", code, None);
        assert_eq!(value(&v, "result"), Some(&json!(true)), "{code}: {v}");
        assert_eq!(value(&v, "display"), Some(&json!(code)), "{code}");
        assert!(param(&v, "version").is_none(), "{v}");
    }
    for code in [
        "text",
        "text/",
        "/plain",
        "text/plain/x",
        "text /plain",
        "text/plain; charset",
        "text/plain; charset=\"utf-8",
        "text/plain; =utf-8",
        "text/plain; a=\"x\" b=c",
        "text/plain; charset=utf 8",
        "text/plain;",
        "text/pl ain",
        "-text/plain",
        "",
    ] {
        let v = validate_cs(tx(), "urn:ietf:bcp:13", code, None);
        assert_eq!(value(&v, "result"), Some(&json!(false)), "{code:?}: {v}");
    }
    // The grammar never panics, whatever is cut off or inserted (multi-byte characters included).
    let samples = [
        "multipart/form-data; boundary=\"a\\\"b;c\"; charset=utf-8",
        "text/plain; name=\"é\\ü\"",
    ];
    for s in samples {
        for (i, _) in s.char_indices() {
            let _ = terminology::valid_media_type(&s[..i]);
            let _ = terminology::valid_media_type(&s[i..]);
            for insert in ["\"", "\\", ";", "=", " ", "ß", "\u{1}"] {
                let _ = terminology::valid_media_type(&format!("{}{insert}{}", &s[..i], &s[i..]));
            }
        }
        assert!(terminology::valid_media_type(s), "{s}");
    }
    // FHIR R4's `mimetypes` (all of BCP 13) and `consent-content-class` (one listed type).
    let vs_validate = |url: &str, code: &str| {
        let v = run(
            tx(),
            Operation::ValidateVs,
            json!({"resourceType": "Parameters", "parameter": [
                {"name": "url", "valueUri": url},
                {"name": "system", "valueUri": "urn:ietf:bcp:13"},
                {"name": "code", "valueCode": code},
            ]}),
        );
        value(&v, "result").cloned()
    };
    let all = "http://hl7.org/fhir/ValueSet/mimetypes";
    assert_eq!(vs_validate(all, "image/png"), Some(json!(true)));
    assert_eq!(vs_validate(all, "image"), Some(json!(false)));
    let class = "http://hl7.org/fhir/ValueSet/consent-content-class";
    assert_eq!(
        vs_validate(class, "application/hl7-cda+xml"),
        Some(json!(true))
    );
    assert_eq!(vs_validate(class, "application/pdf"), Some(json!(false)));
    // A grammar has no list: the expansion is empty and says why.
    let v = run(
        tx(),
        Operation::Expand,
        json!({"resourceType": "Parameters", "parameter": [
            {"name": "url", "valueUri": all},
        ]}),
    );
    assert!(v["expansion"].get("contains").is_none(), "{v}");
    assert_eq!(
        v["expansion"]["extension"][1]["valueString"],
        "The code System 'urn:ietf:bcp:13' has a grammar and so has infinite members"
    );
    // BCP 13 has no properties: a filter is refused, not an empty selection.
    let e = tx()
        .run(
            Operation::Expand,
            &Params::from_json(&json!({"resourceType": "Parameters", "parameter": [
                {"name": "valueSet", "resource": {"resourceType": "ValueSet", "status": "active",
                    "compose": {"include": [{"system": "urn:ietf:bcp:13",
                        "filter": [{"property": "type", "op": "=", "value": "text"}]}]}}},
            ]})),
            None,
        )
        .unwrap_err();
    assert_eq!(e.kind, terminology::ErrorKind::NotSupported, "{e:?}");
    let v = run(
        bare(),
        Operation::Lookup,
        json!({"resourceType": "Parameters", "parameter": [
            {"name": "system", "valueUri": "urn:ietf:bcp:13"},
            {"name": "code", "valueCode": "application/fhir+xml"},
        ]}),
    );
    assert_eq!(value(&v, "display"), Some(&json!("application/fhir+xml")));
}
