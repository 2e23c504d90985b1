//! Primitive values are checked against their FHIR type: no false alarm over the ~5,300 official R4 examples
//! (all valid, bar the ones listed), and a bad value is found with the same path in JSON, XML and binary.

use crate::common::shared;
use fhir::Resource;
use std::io::Read;

#[test]
fn the_official_examples_have_valid_primitives() {
    let tgz = shared().join("data/fhir/packages/hl7.fhir.r4.examples-4.0.1.tgz");
    let file = std::fs::File::open(&tgz).unwrap_or_else(|e| panic!("{}: {e}", tgz.display()));
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let (mut total, mut issues) = (0, Vec::new());
    for entry in archive.entries().expect("tar") {
        let mut entry = entry.expect("tar entry");
        let name = entry.path().expect("path").to_string_lossy().into_owned();
        if !name.ends_with(".json") || name.ends_with("package.json") || name.contains("/.") {
            continue;
        }
        let mut text = Vec::new();
        entry.read_to_end(&mut text).expect("read entry");
        let r = Resource::from_json(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        total += 1;
        issues.extend(
            r.invalid_primitives()
                .into_iter()
                .map(|i| format!("{name}: {i}")),
        );
    }
    assert!(total > 5000, "{total} files");
    // One real defect in the package: an id of 68 characters, where R4 allows 64.
    assert_eq!(
        issues,
        [
            "package/SearchParameter-questionnaireresponse-extensions-QuestionnaireResponse-item-subject.json: \
             SearchParameter.id: \"questionnaireresponse-extensions-QuestionnaireResponse-item-subject\" is not a \
             valid id: 1 to 64 of A-Z, a-z, 0-9, '-' and '.'"
        ]
    );
}

#[test]
fn a_bad_value_has_the_same_path_in_every_format() {
    let json = br#"{"resourceType":"Patient","id":"p 1","birthDate":"notadate","contact":[{"name":{"family":"A"}},{"period":{"start":"2024-02-30"}}],"extension":[{"url":"http://e.org","valueDateTime":"2024-01-01T10:00:00"}]}"#;
    let r = Resource::from_json(json).unwrap();
    let paths = |r: &Resource| -> Vec<(String, String)> {
        r.invalid_primitives()
            .into_iter()
            .map(|i| (i.path, i.type_name.to_string()))
            .collect()
    };
    let expected = vec![
        ("Patient.id".to_string(), "id".to_string()),
        (
            "Patient.extension[0].valueDateTime".to_string(),
            "dateTime".to_string(),
        ),
        ("Patient.birthDate".to_string(), "date".to_string()),
        (
            "Patient.contact[1].period.start".to_string(),
            "dateTime".to_string(),
        ),
    ];
    let mut got = paths(&r);
    got.sort();
    let mut want = expected.clone();
    want.sort();
    assert_eq!(got, want);
    let xml = Resource::from_xml(&r.to_xml(false).unwrap()).unwrap();
    let pb = Resource::from_protobuf(&r.to_protobuf().unwrap()).unwrap();
    assert_eq!(paths(&xml), paths(&r));
    assert_eq!(paths(&pb), paths(&r));
    let valid =
        Resource::from_json(br#"{"resourceType":"Patient","birthDate":"2024-02-29"}"#).unwrap();
    assert!(valid.invalid_primitives().is_empty());
}
