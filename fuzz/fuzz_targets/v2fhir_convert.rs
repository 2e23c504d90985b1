//! Property: any bytes, parsed and converted to FHIR, never panic. When a Bundle comes out, it is JSON, it starts
//! with its MessageHeader, its full URLs are distinct and every reference in it resolves to one of them (the issue's
//! "never a Bundle with a dangling reference"), in each Bundle type; and converting twice gives the same bytes
//! (resource ids are derived from the message, not drawn). The transaction Bundle reads times in a zone, the
//! collection checks its codes.
//!
//! Seeds: the shared v2 corpus (`fuzz/seed-v2fhir.sh` copies it into `corpus/v2fhir_convert`).
#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn references<'v>(v: &'v Value, out: &mut Vec<&'v str>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match x.as_str() {
                    Some(s) if k == "reference" => out.push(s),
                    _ => references(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| references(x, out)),
        _ => {}
    }
}

/// A terminology that answers each way a checker can, by the code's last byte, so that the checked path (a display
/// filled in, a code reported as not valid, a system not loaded) is fuzzed as well.
struct Oracle;

impl v2fhir::CodeChecker for Oracle {
    fn check(&self, system: &str, code: &str) -> v2fhir::CodeCheck {
        match code.bytes().last().unwrap_or(0) % 3 {
            0 => v2fhir::CodeCheck::NotLoaded,
            1 => v2fhir::CodeCheck::Valid {
                display: Some(format!("{code} \"in\" {system}")),
            },
            _ => v2fhir::CodeCheck::Invalid {
                message: format!("{code} is not in {system}"),
            },
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let msg = hl7v2::Message::parse(data);
    // A zone for the transaction Bundle: times without an offset take the zone's (summer time included).
    let zone = v2fhir::time_zone("Europe/Berlin").expect("a zone jiff knows");
    for bundle in [
        v2fhir::BundleType::Message,
        v2fhir::BundleType::Transaction,
        v2fhir::BundleType::Collection,
    ] {
        let options = v2fhir::Options {
            bundle,
            // Small enough that a hostile message meets the budget, large enough for every corpus message.
            max_memory: 64 << 20,
            time_zone: (bundle == v2fhir::BundleType::Transaction).then_some(&zone),
            checker: (bundle == v2fhir::BundleType::Collection).then_some(&Oracle as _),
            ..v2fhir::Options::default()
        };
        let Ok(conversion) = v2fhir::convert(&msg, &options) else {
            continue;
        };
        let json: Value = serde_json::from_slice(&conversion.json).expect("the Bundle is JSON");
        let entries = json["entry"].as_array().cloned().unwrap_or_default();
        if bundle == v2fhir::BundleType::Message {
            assert_eq!(
                entries.first().map(|e| &e["resource"]["resourceType"]),
                Some(&Value::from("MessageHeader")),
                "a message Bundle starts with its MessageHeader"
            );
        }
        let urls: HashSet<&str> = entries
            .iter()
            .map(|e| e["fullUrl"].as_str().expect("every entry has a full URL"))
            .collect();
        assert_eq!(urls.len(), entries.len(), "full URLs are distinct");
        let mut refs = Vec::new();
        references(&json, &mut refs);
        for r in refs {
            assert!(urls.contains(r), "reference {r} does not resolve in the Bundle");
        }
        let again = v2fhir::convert_json(&msg, &options).expect("converts again");
        assert_eq!(again, conversion.json, "converting twice gives the same Bundle");
    }
});
