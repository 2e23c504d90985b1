//! NDJSON (Bulk Data) streaming in and out.

use crate::common::synthea_sample;
use fhir::{Error, NdjsonReader, NdjsonWriter, ReadOptions, Resource};

#[test]
fn bundle_entries_stream_through_ndjson() {
    let bundle = Resource::from_json(&synthea_sample()).expect("parse");
    let entries = bundle.bundle_entries();
    assert!(entries.len() > 50, "{} entries", entries.len());
    let mut w = NdjsonWriter::new(Vec::new());
    for r in &entries {
        w.write(r).expect("write");
    }
    let text = w.finish().expect("finish");
    assert_eq!(text.iter().filter(|&&b| b == b'\n').count(), entries.len());
    let back: Vec<Resource> = NdjsonReader::new(&text[..], ReadOptions::default())
        .collect::<Result<_, _>>()
        .expect("read back");
    assert_eq!(back, entries);
}

#[test]
fn a_bad_line_reports_its_line_number_and_the_stream_continues() {
    let text = b"{\"resourceType\":\"Patient\",\"id\":\"a\"}\n\n{\"resourceType\":\"Patient\",\"active\":1}\n{\"resourceType\":\"Patient\",\"id\":\"c\"}\n";
    let items: Vec<_> = NdjsonReader::new(&text[..], ReadOptions::default()).collect();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0].as_ref().expect("first").id(), Some("a"));
    match &items[1] {
        Err(Error::Invalid { location, path, .. }) => {
            assert_eq!(location.line, 3);
            assert_eq!(path, "Patient.active");
        }
        other => panic!("expected an error on line 3, got {other:?}"),
    }
    assert_eq!(items[2].as_ref().expect("third").id(), Some("c"));
}
