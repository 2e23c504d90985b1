//! The JSON view.

use hl7v2::Message;
use serde_json::json;

#[test]
fn json_view_shape() {
    let m =
        Message::parse(b"MSH|^~\\&|A||||1||ADT^A01|1|P|2.5\rPID|1||7^^^H~8||DOE^JO\\T\\E&X||\r");
    let v = hl7v2::to_json(&m);
    assert_eq!(
        v,
        json!({
            "delimiters": "|^~\\&",
            "charset": "UNICODE UTF-8",
            "segments": [
                {"id": "MSH", "fields": ["|", "^~\\&", "A", "", "", "", "1", "", ["ADT", "A01"], "1", "P", "2.5"]},
                {"id": "PID", "fields": ["1", "", {"repetitions": [["7", "", "", "H"], "8"]}, "", ["DOE", ["JO&E", "X"]], "", ""]}
            ]
        })
    );
    let bad = hl7v2::to_json(&Message::parse(b"MSH|^~\\&|A\rpid|1"));
    let diags = bad["diagnostics"].as_array().unwrap();
    let invalid = diags
        .iter()
        .find(|d| d["kind"] == "InvalidSegmentId")
        .unwrap();
    assert_eq!(invalid["severity"], "error");
    assert_eq!(invalid["segment"], 2);
}
