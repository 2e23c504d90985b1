//! Every message of the shared corpora converts to a Bundle that parses as FHIR R4, whose references all resolve
//! inside it, and that is the same when converted twice.

use crate::support::{files, hl7_data, messages, references};
use std::collections::{BTreeMap, HashSet};

#[test]
fn every_corpus_message_converts_to_a_valid_bundle() {
    let data = hl7_data();
    let mut paths = files(&data.join("fhir-converter"));
    paths.extend(files(&data.join("trusted-intermediary")));
    assert!(
        paths.len() >= 271,
        "expected the shared corpora's 271 messages, found {}",
        paths.len()
    );
    let mut converted = 0;
    let mut by_type: BTreeMap<String, usize> = BTreeMap::new();
    for path in &paths {
        let bytes = std::fs::read(path).unwrap();
        for msg in messages(&bytes) {
            let out = v2fhir::convert(&msg, &v2fhir::Options::default()).unwrap();
            let again = v2fhir::convert(&msg, &v2fhir::Options::default()).unwrap();
            assert_eq!(
                out.json,
                again.json,
                "{}: converting twice differs",
                path.display()
            );
            let bundle = fhir::Resource::from_json(&out.json).unwrap_or_else(|e| {
                panic!(
                    "{}: not FHIR R4: {e}\n{}",
                    path.display(),
                    String::from_utf8_lossy(&out.json)
                )
            });
            assert_eq!(bundle.resource_type(), "Bundle");
            let json: serde_json::Value = serde_json::from_slice(&out.json).unwrap();
            let entries = json["entry"].as_array().cloned().unwrap_or_default();
            assert!(!entries.is_empty(), "{}: empty Bundle", path.display());
            assert_eq!(
                entries[0]["resource"]["resourceType"],
                "MessageHeader",
                "{}: a message Bundle starts with its MessageHeader",
                path.display()
            );
            let urls: HashSet<String> = entries
                .iter()
                .map(|e| e["fullUrl"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(
                urls.len(),
                entries.len(),
                "{}: duplicate fullUrl",
                path.display()
            );
            let mut refs = Vec::new();
            references(&json, &mut refs);
            for r in refs {
                assert!(
                    urls.contains(&r),
                    "{}: reference {r} does not resolve in the Bundle",
                    path.display()
                );
            }
            for e in &entries {
                *by_type
                    .entry(e["resource"]["resourceType"].as_str().unwrap().to_string())
                    .or_default() += 1;
            }
            converted += 1;
        }
    }
    // 271 files; one holds no message (no MSH segment), which is not a message to convert.
    assert!(converted >= 270, "converted {converted} messages");
    // The corpus is mostly ADT and ORU: patients, encounters and observations must come out of it.
    for ty in [
        "Patient",
        "Encounter",
        "Observation",
        "DiagnosticReport",
        "MessageHeader",
    ] {
        assert!(
            by_type.get(ty).copied().unwrap_or(0) > 10,
            "too few {ty}: {by_type:?}"
        );
    }
    eprintln!("{converted} messages converted; resources: {by_type:?}");
}
