//! Bad input gets an error with a location, in bounded memory, never a panic.

use crate::common::shared;
use fhir::{Error, Format, ReadOptions, Resource};
use std::io::Read;

fn synthea_sample() -> Vec<u8> {
    let dir = shared().join("data/fhir/synthea");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let p = files
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a bundle");
    std::fs::read(p).expect("read")
}

fn invalid(e: &Error) -> (&fhir::Location, &str, &str) {
    match e {
        Error::Invalid {
            location,
            path,
            message,
            ..
        } => (location, path, message),
        other => panic!("expected Error::Invalid, got {other:?}"),
    }
}

#[test]
fn truncated_json_xml_and_binary_fail_with_a_location() {
    let json = synthea_sample();
    let r = Resource::from_json(&json).expect("parse");
    let xml = r.to_xml(false).expect("xml");
    let pb = r.to_protobuf().expect("pb");
    for (name, input, step) in [("json", &json, 1013), ("xml", &xml, 1009), ("pb", &pb, 211)] {
        for cut in (1..input.len()).step_by(step) {
            let e = Resource::from_bytes(&input[..cut], &ReadOptions::default())
                .err()
                .unwrap_or_else(|| panic!("{name} truncated at {cut} parsed"));
            let (loc, _, _) = invalid(&e);
            assert!(
                loc.offset <= cut,
                "{name}: location {loc} past the cut {cut}"
            );
            if name != "pb" {
                assert!(
                    loc.line >= 1 && loc.column >= 1,
                    "{name}: no line/column in {e}"
                );
            }
        }
    }
}

#[test]
fn wrong_types_and_unknown_properties_name_the_json_path() {
    let cases: &[(&str, &str, &str)] = &[
        (
            r#"{"resourceType":"Patient","active":"yes"}"#,
            "Patient.active",
            "expected a boolean",
        ),
        (
            r#"{"resourceType":"Patient","name":{"family":"x"}}"#,
            "Patient.name",
            "expected an array",
        ),
        (
            r#"{"resourceType":"Patient","name":[{"given":[1]}]}"#,
            "Patient.name[0].given[0]",
            "expected a string",
        ),
        (
            r#"{"resourceType":"Patient","birthDate":1970}"#,
            "Patient.birthDate",
            "expected a string",
        ),
        (
            r#"{"resourceType":"Patient","multipleBirthInteger":1.5}"#,
            "Patient.multipleBirthInteger",
            "invalid integer",
        ),
        (
            r#"{"resourceType":"Patient","contact":[{"nmae":{}}]}"#,
            "Patient.contact[0].nmae",
            "unknown property",
        ),
        (
            r#"{"resourceType":"Patient","deceasedBoolean":true,"deceasedDateTime":"2000"}"#,
            "Patient.deceasedDateTime",
            "choice",
        ),
        (
            r#"{"resourceType":"Patient","id":"a","id":"b"}"#,
            "Patient.id",
            "duplicate",
        ),
        (
            r#"{"resourceType":"Patient","given":["x"]}"#,
            "Patient.given",
            "unknown property",
        ),
        (r#"{"resourceType":"Nope"}"#, "", "unknown resourceType"),
        (r#"{"id":"x"}"#, "", "without resourceType"),
        (
            r#"{"resourceType":"Patient","name":[{"given":[null]}]}"#,
            "Patient.name[0].given[0]",
            "null",
        ),
    ];
    for (input, path, message) in cases {
        let e = Resource::from_json(input.as_bytes())
            .err()
            .unwrap_or_else(|| panic!("{input} parsed"));
        let (loc, p, m) = invalid(&e);
        assert_eq!(p, *path, "{input}: {e}");
        assert!(m.contains(message), "{input}: {e}");
        assert!(loc.line == 1 && loc.column > 1, "{input}: {e}");
    }
}

#[test]
fn lenient_mode_keeps_unknown_properties_in_json_only() {
    let input =
        br#"{"resourceType":"Patient","id":"p","futureThing":{"a":[1,2.50]},"active":true,"b":null}"#;
    assert!(Resource::from_json(input).is_err());
    let r = Resource::from_json_with(input, &ReadOptions::lenient()).expect("lenient");
    let out: serde_json::Value = serde_json::from_slice(&r.to_json()).expect("json");
    let want: serde_json::Value = serde_json::from_slice(input).expect("json");
    assert_eq!(out, want);
    assert!(
        String::from_utf8(r.to_json())
            .expect("utf-8")
            .ends_with(r#""futureThing":{"a":[1,2.50]},"b":null}"#),
        "unknown properties come last, in the order read"
    );
    assert!(matches!(
        r.to_xml(false),
        Err(Error::Unrepresentable {
            format: Format::Xml,
            ..
        })
    ));
    assert!(matches!(
        r.to_protobuf(),
        Err(Error::Unrepresentable {
            format: Format::Protobuf,
            ..
        })
    ));
}

/// Yields `prefix`, then `len` bytes of `a`, without ever holding them.
struct Lazy {
    prefix: Vec<u8>,
    sent: usize,
    len: usize,
}

impl Read for Lazy {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.sent < self.prefix.len() {
            let n = buf.len().min(self.prefix.len() - self.sent);
            buf[..n].copy_from_slice(&self.prefix[self.sent..self.sent + n]);
            self.sent += n;
            return Ok(n);
        }
        let left = self.prefix.len() + self.len - self.sent;
        let n = buf.len().min(left);
        buf[..n].fill(b'a');
        self.sent += n;
        Ok(n)
    }
}

#[test]
fn a_one_gigabyte_string_is_refused_at_the_limit() {
    let gib = 1 << 30;
    let opts = ReadOptions::default().with_max_bytes(8 << 20);
    let lazy = Lazy {
        prefix: br#"{"resourceType":"Patient","id":""#.to_vec(),
        sent: 0,
        len: gib,
    };
    match Resource::from_reader(lazy, &opts) {
        Err(Error::TooLarge { limit }) => assert_eq!(limit, 8 << 20),
        other => panic!("expected TooLarge, got {other:?}"),
    }
    // The same line in an NDJSON stream.
    let lazy = Lazy {
        prefix: br#"{"resourceType":"Patient","id":""#.to_vec(),
        sent: 0,
        len: gib,
    };
    let mut rd = fhir::NdjsonReader::new(std::io::BufReader::new(lazy), opts);
    assert!(matches!(rd.next(), Some(Err(Error::TooLarge { .. }))));
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    // Unoptimised (debug) builds use much larger stack frames than release; building the 300-deep binary input
    // below with a raised limit needs more than the 2 MiB default test-thread stack there. Which part needs it is
    // not yet pinned down (left open in the issue note), so the check runs on a thread with a known stack size.
    std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(deep_nesting_checks)
        .expect("spawn")
        .join()
        .expect("deep nesting checks panicked");
}

fn deep_nesting_checks() {
    let depth = 100_000;
    let mut json = String::from(r#"{"resourceType":"Questionnaire","status":"draft""#);
    for _ in 0..depth {
        json.push_str(r#","item":[{"linkId":"a","type":"group""#);
    }
    let e = Resource::from_json(json.as_bytes()).expect_err("deep JSON");
    assert!(invalid(&e).2.contains("nesting deeper"), "{e}");
    // Deep arrays in an unknown property, skipped by the lenient reader.
    let json = format!(r#"{{"resourceType":"Patient","x":{}"#, "[".repeat(depth));
    let e =
        Resource::from_json_with(json.as_bytes(), &ReadOptions::lenient()).expect_err("deep array");
    assert!(invalid(&e).2.contains("nesting deeper"), "{e}");
    let xml = format!(
        r#"<Questionnaire xmlns="http://hl7.org/fhir">{}"#,
        "<item>".repeat(depth)
    );
    let e = Resource::from_xml(xml.as_bytes()).expect_err("deep XML");
    assert!(invalid(&e).2.contains("nesting deeper"), "{e}");
    let e = Resource::from_protobuf(&deep_pb(300)).expect_err("deep binary");
    assert!(invalid(&e).2.contains("nesting deeper"), "{e}");
}

/// A binary Questionnaire whose items nest `depth` times, encoded from JSON read with a raised depth limit.
fn deep_pb(depth: usize) -> Vec<u8> {
    let mut json = String::from(r#"{"resourceType":"Questionnaire","status":"draft""#);
    for _ in 0..depth {
        json.push_str(r#","item":[{"linkId":"a","type":"group""#);
    }
    json.push_str(&"}]".repeat(depth));
    json.push('}');
    let deep = ReadOptions::default().with_max_depth(4 * depth);
    Resource::from_json_with(json.as_bytes(), &deep)
        .expect("parse deep JSON")
        .to_protobuf()
        .expect("pb")
}

#[test]
fn xml_with_a_doctype_or_entities_is_refused() {
    let laughs = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<Patient xmlns="http://hl7.org/fhir"><id value="&lol3;"/></Patient>"#;
    let e = Resource::from_xml(laughs.as_bytes()).expect_err("billion laughs");
    assert!(invalid(&e).2.contains("DOCTYPE"), "{e}");
    assert_eq!(invalid(&e).0.line, 2, "{e}");
    let xxe = r#"<!DOCTYPE p [<!ENTITY x SYSTEM "file:///etc/passwd">]><Patient xmlns="http://hl7.org/fhir"><id value="&x;"/></Patient>"#;
    assert!(
        invalid(&Resource::from_xml(xxe.as_bytes()).expect_err("xxe"))
            .2
            .contains("DOCTYPE")
    );
    // Without a DTD an undeclared entity is just an error.
    let undeclared = r#"<Patient xmlns="http://hl7.org/fhir"><id value="&x;"/></Patient>"#;
    let e = Resource::from_xml(undeclared.as_bytes()).expect_err("entity");
    assert!(invalid(&e).0.column > 1, "{e}");
}

#[test]
fn xml_structure_errors_name_the_element() {
    let cases: &[(&str, &str, &str)] = &[
        (
            r#"<Patient xmlns="http://hl7.org/fhir"><nmae/></Patient>"#,
            "Patient.nmae",
            "unknown element",
        ),
        (
            r#"<Patient xmlns="http://hl7.org/fhir"><active value="yes"/></Patient>"#,
            "Patient.active",
            "invalid boolean",
        ),
        (
            r#"<Patient xmlns="http://hl7.org/fhir"><name><given value="a" bogus="1"/></name></Patient>"#,
            "Patient.name[0].given[0]",
            "unknown attribute",
        ),
        (r#"<Patient><id value="a"/></Patient>"#, "", "namespace"),
        (
            r#"<Patient xmlns="http://hl7.org/fhir">text</Patient>"#,
            "Patient",
            "unexpected text",
        ),
        (
            r#"<Patient xmlns="http://hl7.org/fhir"><gender value="male"/><gender value="female"/></Patient>"#,
            "Patient.gender",
            "one value",
        ),
    ];
    for (input, path, message) in cases {
        let e = Resource::from_xml(input.as_bytes())
            .err()
            .unwrap_or_else(|| panic!("{input} parsed"));
        let (_, p, m) = invalid(&e);
        assert_eq!(p, *path, "{input}: {e}");
        assert!(m.contains(message), "{input}: {e}");
    }
}

#[test]
fn corrupted_binary_never_panics() {
    let json = synthea_sample();
    let pb = Resource::from_json(&json)
        .expect("parse")
        .to_protobuf()
        .expect("pb");
    let mut state = 0x2545F4914F6CDD1Du64;
    for i in 0..3000 {
        let mut bad = pb[..pb.len().min(4096)].to_vec();
        for _ in 0..1 + i % 4 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state as usize) % bad.len();
            bad[at] = (state >> 32) as u8;
        }
        let _ = Resource::from_protobuf(&bad);
    }
}
