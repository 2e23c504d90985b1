//! BCP-47 language tags, served by every service without content: valid tags in the registry's case, displays
//! from the loaded language value sets when the IANA registry's data is absent, and the expansion of the
//! conformance suite `langcodes`.

use crate::tx_test_file;
use serde_json::{Value, json};
use std::sync::OnceLock;
use terminology::{Config, Operation, Params, Terminology};

/// A service over both packages (HL7 Terminology's `Languages`, R4's `languages`).
fn tx() -> &'static Terminology {
    static TX: OnceLock<Terminology> = OnceLock::new();
    TX.get_or_init(|| {
        let mut registry = crate::both_packages();
        registry.add(tx_test_file("langcodes/valueset-langcodes-all.json"));
        Terminology::new(registry, Config::default())
    })
}

fn param<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    v["parameter"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)
}

fn validate(code: &str) -> Value {
    let p = json!({"parameter": [
        {"name": "url", "valueUri": "urn:ietf:bcp:47"},
        {"name": "code", "valueCode": code},
    ]});
    tx().run(Operation::ValidateCs, &Params::from_json(&p), None)
        .unwrap()
}

#[test]
fn a_valid_tag_in_the_registry_s_case_is_a_code() {
    let v = validate("en-US");
    assert_eq!(param(&v, "result").unwrap()["valueBoolean"], true, "{v}");
    assert_eq!(
        param(&v, "display").unwrap()["valueString"],
        "English (United States)"
    );
    assert!(param(&v, "version").is_none(), "{v}");
    // A tag without a listed name shows its language's name.
    let v = validate("de-LI");
    assert_eq!(param(&v, "result").unwrap()["valueBoolean"], true, "{v}");
    assert_eq!(param(&v, "display").unwrap()["valueString"], "German");
}

#[test]
fn wrong_case_ill_formed_and_unregistered_tags_are_unknown() {
    for code in ["en-us", "EN", "en--US", "xx-US", "en-QQQ", "en-Latx"] {
        let v = validate(code);
        assert_eq!(
            param(&v, "result").unwrap()["valueBoolean"],
            false,
            "{code}: {v}"
        );
        assert_eq!(
            param(&v, "message").unwrap()["valueString"],
            format!("Unknown code '{code}' in the CodeSystem 'urn:ietf:bcp:47'"),
            "{code}"
        );
    }
}

#[test]
fn the_expansion_of_all_tags_lists_the_common_languages_as_tx_fhir_org_does() {
    let p = json!({"parameter": [
        {"name": "url", "valueUri": "http://hl7.org/fhir/test/ValueSet/langcodes-all"},
    ]});
    let v = tx()
        .run(Operation::Expand, &Params::from_json(&p), None)
        .unwrap();
    let expected = tx_test_file("langcodes/expand-langcodes-all-response.json");
    // The codes are tx.fhir.org's; its displays are the IANA registry's descriptions, which a service without
    // the registry's data lacks (builtins.rs checks them with it).
    let codes = |v: &Value| -> Vec<String> {
        v["expansion"]["contains"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["code"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(codes(&v), codes(&expected));
    assert!(v["expansion"].get("total").is_none(), "{}", v["expansion"]);
}
