//! Bad input gets an error with a location, in bounded memory, never a panic.

use crate::common::synthea_sample;
use fhir::{Error, Format, ReadOptions, Resource};
use std::io::Read;

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

/// Runs on the default test-thread stack (2 MiB), in debug too: every reader stops at `MAX_DEPTH` levels
/// whatever the options ask for, so no input can overflow a server thread.
#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let depth = 100_000;
    let unlimited = ReadOptions::default().with_max_depth(usize::MAX);
    let mut json = String::from(r#"{"resourceType":"Questionnaire","status":"draft""#);
    for _ in 0..depth {
        json.push_str(r#","item":[{"linkId":"a","type":"group""#);
    }
    for opts in [ReadOptions::default(), unlimited.clone()] {
        let e = Resource::from_json_with(json.as_bytes(), &opts).expect_err("deep JSON");
        assert!(
            invalid(&e).2.contains("nesting deeper than 128 levels"),
            "{e}"
        );
    }
    // Deep arrays in an unknown property, skipped by the lenient reader.
    let json = format!(r#"{{"resourceType":"Patient","x":{}"#, "[".repeat(depth));
    let e =
        Resource::from_json_with(json.as_bytes(), &ReadOptions::lenient()).expect_err("deep array");
    assert!(invalid(&e).2.contains("nesting deeper"), "{e}");
    let xml = format!(
        r#"<Questionnaire xmlns="http://hl7.org/fhir">{}"#,
        "<item>".repeat(depth)
    );
    let e = Resource::from_xml_with(xml.as_bytes(), &unlimited).expect_err("deep XML");
    assert!(
        invalid(&e).2.contains("nesting deeper than 128 levels"),
        "{e}"
    );
    // (deep_pb copies each level's bytes into the next: quadratic, so fewer levels.)
    let e = Resource::from_protobuf_with(&deep_pb(10_000), &unlimited).expect_err("deep binary");
    assert!(
        invalid(&e).2.contains("nesting deeper than 128 levels"),
        "{e}"
    );
}

/// A resource nested exactly to the limit reads and writes in every format, on the default test-thread stack;
/// one level more is refused by every reader. Depth counts elements alike in all formats (a JSON array of
/// elements is not a level of its own), so what one format accepts, the others do too.
#[test]
fn nesting_at_the_limit_round_trips_in_every_format() {
    let items = fhir::MAX_DEPTH - 1; // the Questionnaire itself is the first level
    let xml = |n: usize| {
        format!(
            r#"<Questionnaire xmlns="http://hl7.org/fhir"><status value="draft"/>{}{}</Questionnaire>"#,
            r#"<item><linkId value="a"/><type value="group"/>"#.repeat(n),
            "</item>".repeat(n)
        )
    };
    let r = Resource::from_xml(xml(items).as_bytes()).expect("XML at the limit");
    let json = r.to_json_pretty();
    let pb = r.to_protobuf().expect("binary");
    assert_eq!(Resource::from_json(&json).expect("JSON at the limit"), r);
    assert_eq!(
        Resource::from_protobuf(&pb).expect("binary at the limit"),
        r
    );
    assert_eq!(
        Resource::from_xml(&r.to_xml(true).expect("xml")).expect("XML again"),
        r
    );
    let e = Resource::from_xml(xml(items + 1).as_bytes()).expect_err("one level more");
    assert!(invalid(&e).2.contains("nesting deeper"), "{e}");
    let mut json = String::from(r#"{"resourceType":"Questionnaire","status":"draft""#);
    for _ in 0..items + 1 {
        json.push_str(r#","item":[{"linkId":"a","type":"group""#);
    }
    json.push_str(&"}]".repeat(items + 1));
    json.push('}');
    let e = Resource::from_json(json.as_bytes()).expect_err("one level more");
    assert!(invalid(&e).2.contains("nesting deeper"), "{e}");
    let e = Resource::from_protobuf(&deep_pb(items + 1)).expect_err("one level more");
    assert!(invalid(&e).2.contains("nesting deeper"), "{e}");
    Resource::from_protobuf(&deep_pb(items)).expect("binary at the limit");
}

/// A binary Questionnaire whose items nest `depth` times (innermost empty), built byte by byte with the field
/// numbers of the published `.proto`, so it can be deeper than any reader accepts.
fn deep_pb(depth: usize) -> Vec<u8> {
    let tag = |message: &str, field: &str| -> u64 {
        let body = fhir::PROTO_SCHEMA
            .split(&format!("\nmessage {message} {{\n"))
            .nth(1)
            .and_then(|b| b.split("\n}").next())
            .unwrap_or_else(|| panic!("message {message} in the .proto"));
        body.lines()
            .find_map(|l| {
                l.trim()
                    .strip_suffix(';')?
                    .split_once(&format!(" {field} = "))
            })
            .and_then(|(_, n)| n.parse().ok())
            .unwrap_or_else(|| panic!("{message}.{field} in the .proto"))
    };
    let varint = |out: &mut Vec<u8>, mut v: u64| {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    };
    let wrap = |tag: u64, inner: &[u8]| {
        let mut out = Vec::with_capacity(inner.len() + 8);
        varint(&mut out, tag << 3 | 2);
        varint(&mut out, inner.len() as u64);
        out.extend_from_slice(inner);
        out
    };
    let item = tag("Questionnaire_Item", "item");
    let mut msg = Vec::new();
    for _ in 1..depth {
        msg = wrap(item, &msg);
    }
    let msg = wrap(tag("Questionnaire", "item"), &msg);
    wrap(tag("Resource", "questionnaire"), &msg)
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

/// Found by fuzzing (fhir_xml): a NUL in an extension url was read, then the XML writer refused it.
#[test]
fn xml_control_characters_are_refused_on_read() {
    let cases: [&[u8]; 4] = [
        b"<Patient xmlns=\"http://hl7.org/fhir\"><extension url=\"http://x/\0y\"><valueCode value=\"a\"/></extension></Patient>",
        b"<Patient xmlns=\"http://hl7.org/fhir\"><gender value=\"ma&#1;le\"/></Patient>",
        b"<Patient xmlns=\"http://hl7.org/fhir\"><id value=\"a\x1fb\"/></Patient>",
        b"<Patient xmlns=\"http://hl7.org/fhir\"><text><status value=\"generated\"/><div xmlns=\"http://www.w3.org/1999/xhtml\">a\x01b</div></text></Patient>",
    ];
    for input in cases {
        let e = Resource::from_xml(input).expect_err(&String::from_utf8_lossy(input));
        assert!(invalid(&e).2.contains("control character"), "{e}");
    }
    // Tab, LF and CR are XML 1.0 characters and survive (as character references in attributes).
    let ok = b"<Patient xmlns=\"http://hl7.org/fhir\"><gender value=\"ma&#9;le\"/></Patient>";
    let r = Resource::from_xml(ok).expect("tab");
    assert_eq!(
        Resource::from_xml(&r.to_xml(false).expect("xml")).expect("again"),
        r
    );
}

/// Found by fuzzing (fhir_xml): with a byte-order mark the narrative was sliced three bytes early, so the
/// resource read back from its own XML had a broken `div`.
#[test]
fn xml_with_a_byte_order_mark_keeps_the_narrative_intact() {
    let div = r#"<div xmlns="http://www.w3.org/1999/xhtml"><p>x</p></div>"#;
    let xml = format!(
        "\u{feff}<?xml version=\"1.0\"?><Patient xmlns=\"http://hl7.org/fhir\"><text><status value=\"generated\"/>{div}</text></Patient>"
    );
    let r = Resource::from_xml(xml.as_bytes()).expect("BOM");
    let json: serde_json::Value = serde_json::from_slice(&r.to_json()).expect("json");
    assert_eq!(json["text"]["div"], div);
    assert_eq!(
        Resource::from_xml(&r.to_xml(false).expect("xml")).expect("own XML"),
        r
    );
}

/// Regression (found by mutating inputs): a kept unknown property whose name needs a JSON escape is written
/// escaped, so the lenient reader reads its own output back.
#[test]
fn lenient_names_with_escapes_write_back_as_valid_json() {
    let input = br#"{"resourceType":"Patient","x\u0001\"y":[true]}"#;
    let r = Resource::from_json_with(input, &ReadOptions::lenient()).expect("lenient");
    let back = Resource::from_json_with(&r.to_json(), &ReadOptions::lenient()).expect("own JSON");
    assert_eq!(back, r);
    assert_eq!(r.to_json(), input.to_vec());
}

/// Regression (found by mutating inputs): the binary reader refuses a decimal that is not a number, as
/// JSON and XML do, instead of accepting what it cannot write back as JSON.
#[test]
fn binary_decimals_are_checked_like_json_and_xml() {
    let r = Resource::from_json(
        br#"{"resourceType":"Observation","status":"final","code":{"text":"x"},"valueQuantity":{"value":1.50}}"#,
    )
    .expect("json");
    let pb = r.to_protobuf().expect("pb");
    let at = pb
        .windows(4)
        .position(|w| w == b"1.50")
        .expect("the decimal");
    let mut bad = pb.clone();
    bad[at + 1] = b'x';
    let e = Resource::from_protobuf(&bad).expect_err("1x50 is no decimal");
    assert!(e.to_string().contains("invalid decimal"), "{e}");
    assert_eq!(Resource::from_protobuf(&pb).expect("pb"), r);
}
