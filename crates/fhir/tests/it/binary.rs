//! The binary encoding's string table: long strings are tabled (zstd-compressed when large), references are
//! never ambiguous, and a hostile table cannot make the reader allocate past its limit.

use crate::common::shared;
use fhir::{Error, ReadOptions, Resource};
use std::io::Read;

fn patient_with_text(div: &str, family: &str) -> Resource {
    let json = serde_json::json!({
        "resourceType": "Patient",
        "text": {"status": "generated", "div": div},
        "name": [{"family": family, "given": ["\u{0}7", "Ann"]}],
    });
    Resource::from_json(json.to_string().as_bytes()).expect("patient")
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

#[test]
fn long_strings_go_to_a_compressed_table_and_come_back() {
    let row = "<tr><td>same row of a narrative table</td></tr>";
    let div = format!(
        r#"<div xmlns="http://www.w3.org/1999/xhtml"><table>{}</table></div>"#,
        row.repeat(200)
    );
    // The family name starts like a table reference would; strings starting with U+0000 are always tabled.
    let r = patient_with_text(&div, "\u{0}1");
    let pb = r.to_protobuf().expect("pb");
    assert!(
        pb.len() < div.len() / 10,
        "the narrative is compressed: {} bytes",
        pb.len()
    );
    assert_eq!(
        count(&pb, row.as_bytes()),
        0,
        "no row is stored in the clear"
    );
    assert_eq!(Resource::from_protobuf(&pb).expect("read"), r);
    // A short table stays plain: the narrative's text is in the message as is.
    let r = patient_with_text(
        r#"<div xmlns="http://www.w3.org/1999/xhtml">short</div>"#,
        "\u{0}",
    );
    let pb = r.to_protobuf().expect("pb");
    assert_eq!(count(&pb, b"short"), 1);
    assert_eq!(Resource::from_protobuf(&pb).expect("read"), r);
}

/// A zstd frame that declares more than `max_bytes` is refused before anything is allocated for it, and a
/// reference past the end of the table is an error, not a panic.
#[test]
fn hostile_string_tables_are_refused() {
    let div = format!(
        r#"<div xmlns="http://www.w3.org/1999/xhtml">{}</div>"#,
        "<p>x</p>".repeat(1000)
    );
    let pb = patient_with_text(&div, "Doe").to_protobuf().expect("pb");
    assert_eq!(
        pb[..2],
        [0xca, 0x0c],
        "starts with field 201 (strings_zstd)"
    );
    let small = ReadOptions::default().with_max_bytes(1000);
    let e = Resource::from_protobuf_with(&pb, &small).expect_err("table over the limit");
    assert!(e.to_string().contains("exceeds the limit"), "{e}");
    // Point the narrative's reference ("\0" + "0") at entry 9, which does not exist.
    let at = pb
        .windows(3)
        .position(|w| w == [2, 0, b'0'])
        .expect("a reference to entry 0");
    let mut bad = pb.clone();
    bad[at + 2] = b'9';
    let e = Resource::from_protobuf(&bad).expect_err("dangling reference");
    assert!(
        matches!(e, Error::Invalid { .. }) && e.to_string().contains("no table entry"),
        "{e}"
    );
}

/// The issue's size targets on the text-heavy StructureDefinition of the bench: binary ≤ 0.7× compact JSON,
/// and gzipped no larger than gzipped compact JSON.
#[test]
fn structure_definition_meets_the_size_targets() {
    let tgz = shared().join("data/fhir/packages/hl7.fhir.r4.examples-4.0.1.tgz");
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(&tgz).expect("package"),
    ));
    let mut json = Vec::new();
    for e in ar.entries().expect("tar") {
        let mut e = e.expect("entry");
        if e.path()
            .expect("path")
            .ends_with("StructureDefinition-ExplanationOfBenefit.json")
        {
            e.read_to_end(&mut json).expect("read");
            break;
        }
    }
    let r = Resource::from_json(&json).expect("parse");
    let (compact, pb) = (r.to_json(), r.to_protobuf().expect("pb"));
    let gz = |b: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut e, b).expect("gzip");
        e.finish().expect("gzip").len()
    };
    let ratio = pb.len() as f64 / compact.len() as f64;
    assert!(ratio <= 0.7, "binary is {ratio:.3}x compact JSON");
    assert!(
        gz(&pb) <= gz(&compact),
        "gzip: {} > {}",
        gz(&pb),
        gz(&compact)
    );
    assert_eq!(Resource::from_protobuf(&pb).expect("read"), r);
}
