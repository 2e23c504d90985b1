//! The decimal and primitive-extension edge cases in ../shared/data/fhir/edge-cases, both ways.

use crate::common::{number_tokens, shared};
use fhir::Resource;

fn read(name: &str) -> Vec<u8> {
    let p = shared().join("data/fhir/edge-cases").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every `value="..."` of `<value>` elements, in order.
fn xml_values(xml: &[u8]) -> Vec<String> {
    let text = std::str::from_utf8(xml).expect("utf-8");
    text.match_indices("<value value=\"")
        .map(|(i, m)| {
            text[i + m.len()..]
                .split('"')
                .next()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[test]
fn decimals_keep_their_lexical_form_json_first() {
    let json = read("observation-decimal.json");
    let r = Resource::from_json(&json).expect("parse");
    // The file is in canonical order and layout: pretty output is byte-identical.
    assert_eq!(
        String::from_utf8(r.to_json_pretty()).expect("utf-8"),
        String::from_utf8(json.clone()).expect("utf-8")
    );
    let want = [
        "1.0",
        "1.00",
        "1.0",
        "1E-22",
        "1000000000000000000",
        "1.000000000000000000E-245",
        "-1.000000000000000000E+245",
    ];
    let xml = r.to_xml(true).expect("xml");
    assert_eq!(xml_values(&xml), want);
    let back = Resource::from_xml(&xml).expect("xml parse");
    assert_eq!(back, r);
    assert_eq!(back.to_json_pretty(), json);
    let pb = r.to_protobuf().expect("pb");
    assert_eq!(
        Resource::from_protobuf(&pb)
            .expect("pb parse")
            .to_json_pretty(),
        json
    );
}

#[test]
fn decimals_keep_their_lexical_form_xml_first() {
    let xml = read("observation-decimal.xml");
    let r = Resource::from_xml(&xml).expect("parse");
    let file_values = xml_values(&xml);
    assert_eq!(file_values[2], "1.0e0");
    assert_eq!(file_values[3], "0.0000000000000000000001");
    // XML -> JSON keeps every lexical form (JSON numbers allow them all).
    let json = r.to_json();
    let numbers: Vec<String> = number_tokens(&json)
        .iter()
        .map(|t| String::from_utf8_lossy(t).into_owned())
        .collect();
    assert_eq!(numbers, file_values);
    let back = Resource::from_json(&json).expect("json parse");
    assert_eq!(back, r);
    assert_eq!(xml_values(&back.to_xml(false).expect("xml")), file_values);
    // The narrative div is carried over byte for byte.
    let div_start = xml.windows(4).position(|w| w == b"<div").expect("div");
    let div_end = xml
        .windows(6)
        .position(|w| w == b"</div>")
        .expect("div end")
        + 6;
    let div = std::str::from_utf8(&xml[div_start..div_end]).expect("utf-8");
    let reparsed: serde_json::Value = serde_json::from_slice(&json).expect("json");
    assert_eq!(reparsed["text"]["div"], div);
    assert_eq!(
        Resource::from_protobuf(&r.to_protobuf().expect("pb")).expect("pb parse"),
        r
    );
}

#[test]
fn null_padded_primitive_extensions() {
    let json = read("patient-name-extensions.json");
    let r = Resource::from_json(&json).expect("parse");
    let out: serde_json::Value = serde_json::from_slice(&r.to_json()).expect("json");
    let name = &out["name"][0];
    assert_eq!(name["given"], serde_json::json!([null, "James"]));
    // `_given` is written padded to the length of `given`, as the spec requires (the file leaves it short).
    assert_eq!(name["_given"][1], serde_json::Value::Null);
    assert_eq!(name["_given"][0]["extension"][0]["valueString"], "five");
    let original: serde_json::Value = serde_json::from_slice(&json).expect("json");
    assert_eq!(name["_given"][0], original["name"][0]["_given"][0]);
    let xml = r.to_xml(false).expect("xml");
    let text = String::from_utf8(xml.clone()).expect("utf-8");
    assert!(
        text.contains(r#"<given><extension url="https://example.org/syllable-count"><valueString value="five"/></extension></given><given value="James"/>"#),
        "{text}"
    );
    assert_eq!(Resource::from_xml(&xml).expect("xml parse"), r);
    assert_eq!(
        Resource::from_protobuf(&r.to_protobuf().expect("pb")).expect("pb parse"),
        r
    );
    // And the padded form reads back to the same resource.
    assert_eq!(Resource::from_json(&r.to_json()).expect("reparse"), r);
}

#[test]
fn primitive_ids_and_extensions_on_singular_and_repeated_elements() {
    let json = br#"{"resourceType":"Patient","id":"p","_id":{"extension":[{"url":"u","valueBoolean":true}]},"active":false,"_active":{"id":"a1"},"name":[{"given":["A",null,"C"],"_given":[null,{"id":"g2","extension":[{"url":"x","valueDecimal":2.50}]},{"id":"g3"}]}],"birthDate":"1970","deceasedBoolean":false,"multipleBirthInteger":-3}"#;
    let r = Resource::from_json(json).expect("parse");
    assert_eq!(r.to_json(), json.to_vec());
    let xml = r.to_xml(false).expect("xml");
    assert_eq!(
        Resource::from_xml(&xml).expect("xml parse").to_json(),
        json.to_vec()
    );
    let pb = r.to_protobuf().expect("pb");
    assert_eq!(
        Resource::from_protobuf(&pb).expect("pb parse").to_json(),
        json.to_vec()
    );
}

#[test]
fn resource_type_may_come_last_and_contained_resources_survive() {
    let json = br##"{"id":"o","contained":[{"id":"p1","resourceType":"Patient","active":true}],"status":"final","code":{"text":"t"},"subject":{"reference":"#p1"},"valueString":"x","resourceType":"Observation"}"##;
    let r = Resource::from_json(json).expect("parse");
    assert_eq!(r.resource_type(), "Observation");
    let canonical = br##"{"resourceType":"Observation","id":"o","contained":[{"resourceType":"Patient","id":"p1","active":true}],"status":"final","code":{"text":"t"},"subject":{"reference":"#p1"},"valueString":"x"}"##;
    assert_eq!(
        String::from_utf8(r.to_json()).expect("utf-8"),
        String::from_utf8(canonical.to_vec()).expect("utf-8")
    );
    let xml = String::from_utf8(r.to_xml(false).expect("xml")).expect("utf-8");
    assert!(
        xml.contains(
            "<contained><Patient><id value=\"p1\"/><active value=\"true\"/></Patient></contained>"
        ),
        "{xml}"
    );
    assert_eq!(Resource::from_xml(xml.as_bytes()).expect("xml parse"), r);
}

#[test]
fn attribute_whitespace_is_escaped_and_restored() {
    let json = br#"{"resourceType":"Patient","id":"p","extension":[{"url":"http://x","valueString":"line 1\nline 2\ttab\r\"q\" <&>"}]}"#;
    let r = Resource::from_json(json).expect("parse");
    let xml = String::from_utf8(r.to_xml(false).expect("xml")).expect("utf-8");
    assert!(
        xml.contains(r#"value="line 1&#xA;line 2&#x9;tab&#xD;&quot;q&quot; &lt;&amp;&gt;""#),
        "{xml}"
    );
    assert_eq!(
        Resource::from_xml(xml.as_bytes())
            .expect("xml parse")
            .to_json(),
        json.to_vec()
    );
}

/// Properties in any order, and a primitive's `_name` companion before its values, read into the same
/// resource as the canonical order: the tree lays each node out in element order once it is complete.
#[test]
fn property_order_and_companions_first_do_not_matter() {
    let canonical = br#"{"resourceType":"Patient","id":"p","active":true,"name":[{"family":"F","given":["A",null,"C"],"_given":[null,{"id":"g2"},{"extension":[{"url":"x","valueString":"y"}]}]}],"gender":"male"}"#;
    let shuffled = br#"{"gender":"male","name":[{"_given":[null,{"id":"g2"},{"extension":[{"valueString":"y","url":"x"}]}],"given":["A",null,"C"],"family":"F"}],"active":true,"id":"p","resourceType":"Patient"}"#;
    let a = Resource::from_json(canonical).expect("canonical");
    let b = Resource::from_json(shuffled).expect("shuffled");
    assert_eq!(a, b);
    assert_eq!(
        String::from_utf8_lossy(&b.to_json()),
        String::from_utf8_lossy(canonical)
    );
    let pb = b.to_protobuf().expect("pb");
    assert_eq!(Resource::from_protobuf(&pb).expect("pb"), a);
    let xml = b.to_xml(false).expect("xml");
    assert_eq!(Resource::from_xml(&xml).expect("xml"), a);
}
