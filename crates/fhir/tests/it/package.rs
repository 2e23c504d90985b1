//! Every JSON resource of the official R4 examples package survives JSON -> JSON, JSON -> XML -> JSON and
//! JSON -> binary -> JSON; pretty output is byte-identical wherever the file is in canonical form.

use crate::common::{member_names, same_json, shared};
use fhir::Resource;
use std::io::Read;

/// Why a file is not byte-identical to our output (docs/CONFORMANCE.md lists the files).
#[derive(Debug, PartialEq, Eq, Hash, Clone, Copy)]
enum NotCanonical {
    /// Members not in the spec's element order (alphabetical files, `url` before `extension`).
    MemberOrder,
    /// The publisher's other layout: CRLF line ends and `"name" : value`.
    Layout,
}

#[test]
fn every_example_round_trips_in_all_formats() {
    let tgz = shared().join("data/fhir/packages/hl7.fhir.r4.examples-4.0.1.tgz");
    let file = std::fs::File::open(&tgz).unwrap_or_else(|e| panic!("{}: {e}", tgz.display()));
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let (mut total, mut canonical) = (0, 0);
    let mut failures = Vec::new();
    let mut non_canonical: Vec<(String, NotCanonical)> = Vec::new();
    for entry in archive.entries().expect("tar") {
        let mut entry = entry.expect("tar entry");
        let name = entry.path().expect("path").to_string_lossy().into_owned();
        let Some(name) = name.strip_prefix("package/") else {
            continue;
        };
        if !name.ends_with(".json") || name == "package.json" || name.starts_with('.') {
            continue;
        }
        let mut text = Vec::new();
        entry.read_to_end(&mut text).expect("read entry");
        total += 1;
        let before = canonical;
        match check(&text, &mut canonical) {
            Err(e) => failures.push(format!("{name}: {e}")),
            Ok(None) if canonical == before => {
                failures.push(format!("{name}: differs only in layout"))
            }
            Ok(Some(why)) => non_canonical.push((name.to_string(), why)),
            Ok(None) => {}
        }
    }
    assert!(
        total > 5000,
        "expected ~5,300 JSON files in the package, found {total}"
    );
    assert!(
        failures.is_empty(),
        "{} of {total} files failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let count = |k| non_canonical.iter().filter(|(_, w)| *w == k).count();
    eprintln!(
        "{total} files round-trip; {canonical} byte-identical; not canonical: {} member order, {} layout",
        count(NotCanonical::MemberOrder),
        count(NotCanonical::Layout)
    );
    if std::env::var_os("FHIR_LIST_NONCANONICAL").is_some() {
        for (n, w) in &non_canonical {
            eprintln!("{w:?}\t{n}");
        }
    }
    // The package is mostly canonical; a regression in the writer shows up as a jump here.
    assert!(
        canonical * 100 >= total * 97,
        "only {canonical} of {total} files byte-identical"
    );
}

/// Round-trips one file; `Some(reason)` when our output is not byte-identical but only for an allowed reason.
fn check(text: &[u8], canonical: &mut usize) -> Result<Option<NotCanonical>, String> {
    let r = Resource::from_json(text).map_err(|e| format!("parse: {e}"))?;
    // The package holds both layouts: minified files and pretty ones (2-space indent).
    let trimmed = text.strip_suffix(b"\n").unwrap_or(text);
    let pretty = if trimmed.get(1) == Some(&b'\n') {
        r.to_json_pretty()
    } else {
        r.to_json()
    };
    let mut why = None;
    if pretty == trimmed {
        *canonical += 1;
    } else {
        same_json(text, &pretty).map_err(|e| format!("JSON -> JSON: {e}"))?;
        if member_names(text) != member_names(&pretty) {
            why = Some(NotCanonical::MemberOrder);
        } else if text.windows(2).any(|w| w == b"\r\n") && text.windows(4).any(|w| w == b"\" : ") {
            why = Some(NotCanonical::Layout);
        }
    }
    let xml = r.to_xml(false).map_err(|e| format!("to XML: {e}"))?;
    let back = Resource::from_xml(&xml).map_err(|e| format!("XML -> JSON: {e}"))?;
    if back != r {
        same_json(&r.to_json(), &back.to_json())
            .map_err(|e| format!("JSON -> XML -> JSON: {e}"))?;
        return Err("JSON -> XML -> JSON: trees differ".into());
    }
    let pb = r.to_protobuf().map_err(|e| format!("to binary: {e}"))?;
    let back = Resource::from_protobuf(&pb).map_err(|e| format!("binary -> JSON: {e}"))?;
    if back != r {
        same_json(&r.to_json(), &back.to_json())
            .map_err(|e| format!("JSON -> binary -> JSON: {e}"))?;
        return Err("JSON -> binary -> JSON: trees differ".into());
    }
    Ok(why)
}
