//! Property: for any bytes, parsing never panics; the message encodes back to its input (read-only and through
//! the editable model); and after setting one value by path, encode → parse reads that value back while every
//! other field keeps its raw bytes. The group tree places every segment exactly once, and each segment's own group
//! path leads back to it; validation finishes with a bounded report.
#![no_main]

use hl7v2::{Message, MessageBuf};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let msg = Message::parse(data);
    assert_eq!(msg.encode(), data);
    let mut buf = MessageBuf::from(&msg);
    assert_eq!(
        buf.encode(),
        data,
        "unchanged MessageBuf must re-encode byte for byte"
    );

    // Exercise every reader: no panics, escapes decode, JSON builds.
    for seg in msg.segments() {
        for f in seg.fields() {
            for rep in f.parts() {
                for c in rep.parts() {
                    for s in c.parts() {
                        let _ = s.text();
                    }
                }
            }
        }
    }
    let _ = hl7v2::to_json(&msg);
    let _ = msg
        .ack(hl7v2::AckCode::AR)
        .errors_from_diagnostics()
        .timestamp("1")
        .control_id("2")
        .build();
    for chunk in hl7v2::split(data) {
        let _ = chunk.parse().segment_count();
    }

    let tree = msg.group_tree();
    assert_eq!(tree.segments(&msg).count(), msg.segment_count());
    // Paths name segments by upper-case three-character identifiers; others are placed but not addressable.
    let addressable = msg.segments().all(|s| {
        s.id_bytes().len() == 3 && s.id_bytes().iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    });
    for placed in tree.segments(&msg).filter(|_| addressable) {
        let path = hl7v2::Path::parse(&format!("{}-1", placed.path()))
            .unwrap_or_else(|e| panic!("{} is not a valid path: {e}", placed.path()));
        assert_eq!(msg.segment_at(&path).map(|s| s.index()), Some(placed.segment.index()), "{path}");
    }
    let report = hl7v2::validate(&msg, &hl7v2::Profile::strict());
    assert!(report.issues.len() <= hl7v2::MAX_ISSUES);
    let _ = hl7v2::to_json_with_names(&msg);

    // Only well-formed messages have a meaningful "same message" after an edit: structure errors may make a
    // re-split differ (e.g. a control character in a segment identifier).
    if msg.has_errors() || msg.segment_count() < 2 {
        return;
    }
    // Choose an edit from the input itself: the last segment, a field and component from its length.
    let target = msg.segment(msg.segment_count() - 1).unwrap();
    if target.is_header() {
        return;
    }
    let field = 1 + data.len() % 7;
    let component = 1 + data.len() % 3;
    let occurrence = msg
        .segments()
        .filter(|s| s.id_bytes() == target.id_bytes())
        .count();
    let path = format!("{}[{occurrence}]-{field}-{component}", target.id());
    let value = "x|y^z~w\\v&u\r\n#";
    if buf.set(path.as_str(), value).is_err() {
        return;
    }
    let encoded = buf.encode();
    let re = Message::parse(&encoded);
    assert_eq!(
        re.get(path.as_str()).as_deref(),
        Some(value),
        "{path} must read back what was set"
    );
    assert_eq!(re.segment_count(), msg.segment_count());
    for (a, b) in msg.segments().zip(re.segments()) {
        assert_eq!(a.id_bytes(), b.id_bytes());
        if a.index() == target.index() {
            // Other fields of the edited segment are unchanged.
            for n in 1..=a.field_count() {
                if n != field {
                    assert_eq!(a.field(n).map(|v| v.raw()), b.field(n).map(|v| v.raw()));
                }
            }
        } else {
            assert_eq!(a.raw(), b.raw());
        }
    }
});
