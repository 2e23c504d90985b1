//! The ten Synthea bundles round-trip in all three formats, and the binary encoding is compact.

use crate::common::{same_json, shared};
use fhir::Resource;
use std::io::Write;

fn gzip_len(b: &[u8]) -> usize {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).expect("gzip");
    e.finish().expect("gzip").len()
}

#[test]
fn synthea_bundles_round_trip_in_all_formats() {
    let dir = shared().join("data/fhir/synthea");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("synthea dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.retain(|p| p.extension().is_some_and(|e| e == "json"));
    assert_eq!(
        files.len(),
        10,
        "expected the 10 Synthea bundles in {}",
        dir.display()
    );
    let (mut compact_total, mut pb_total, mut gz_json, mut gz_pb) = (0, 0, 0, 0);
    for path in &files {
        let name = path.display();
        let text = std::fs::read(path).expect("read");
        let r = Resource::from_json(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.resource_type(), "Bundle");
        let compact = r.to_json();
        same_json(&text, &compact).unwrap_or_else(|e| panic!("{name}: JSON -> JSON: {e}"));
        same_json(&text, &r.to_json_pretty()).unwrap_or_else(|e| panic!("{name}: pretty: {e}"));
        let xml = r.to_xml(true).expect("xml");
        let from_xml = Resource::from_xml(&xml).unwrap_or_else(|e| panic!("{name}: XML: {e}"));
        same_json(&text, &from_xml.to_json())
            .unwrap_or_else(|e| panic!("{name}: JSON -> XML -> JSON: {e}"));
        let pb = r.to_protobuf().expect("pb");
        let from_pb =
            Resource::from_protobuf(&pb).unwrap_or_else(|e| panic!("{name}: binary: {e}"));
        same_json(&text, &from_pb.to_json())
            .unwrap_or_else(|e| panic!("{name}: JSON -> binary -> JSON: {e}"));
        assert_eq!(from_pb, r);
        compact_total += compact.len();
        pb_total += pb.len();
        gz_json += gzip_len(&compact);
        gz_pb += gzip_len(&pb);
    }
    // The size targets: binary <= 0.7x compact JSON, and no larger than it once both are gzipped.
    assert!(
        pb_total * 10 <= compact_total * 7,
        "binary {pb_total} B vs compact JSON {compact_total} B"
    );
    assert!(
        gz_pb <= gz_json,
        "gzipped binary {gz_pb} B vs gzipped compact JSON {gz_json} B"
    );
}
