//! Properties over generated inputs: parsing never panics, encoding reproduces the input, an edit reads back, a
//! read by path is what the value views give.

use hl7v2::{Message, MessageBuf};
use proptest::prelude::*;

/// Bytes drawn mostly from HL7's own alphabet (delimiters, escapes, line breaks, segment names), so that the
/// generator reaches the parser's corners rather than producing noise.
fn hl7ish() -> impl Strategy<Value = Vec<u8>> {
    let atoms = prop_oneof![
        Just(b"MSH|^~\\&|".to_vec()),
        Just(b"MSH|^~\\&#|".to_vec()),
        Just(b"\rPID|".to_vec()),
        Just(b"\nOBX|".to_vec()),
        Just(b"\r\nNTE|".to_vec()),
        Just(b"\\X0D\\".to_vec()),
        Just(b"\\F\\".to_vec()),
        Just(b"\\.br\\".to_vec()),
        Just(b"\\".to_vec()),
        prop::sample::select(b"|^~\\&#\r\n ABZ019\"\x00\xc3\xa9".to_vec()).prop_map(|b| vec![b]),
        "[A-Z0-9]{1,6}".prop_map(String::into_bytes),
    ];
    prop::collection::vec(atoms, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn parse_encode_is_identity(input in hl7ish()) {
        let msg = Message::parse(&input);
        prop_assert_eq!(msg.encode(), &input[..]);
        prop_assert_eq!(MessageBuf::from(&msg).encode(), input.clone());
        let _ = hl7v2::to_json(&msg);
        let _ = msg.ack(hl7v2::AckCode::AE).errors_from_diagnostics().build();
        let chunks: Vec<u8> = hl7v2::split(&input).flat_map(|c| c.bytes.to_vec()).collect();
        prop_assert_eq!(chunks, input);
    }

    /// `Message::get` finds the leaf in one pass per level without building `Value`s: it must read what the views
    /// read (segment, field, repetition, component 1 by default, subcomponent 1 by default, decoded text), in MSH-1
    /// and MSH-2 too, on any input.
    #[test]
    fn a_read_by_path_is_what_the_value_views_read(
        input in hl7ish(),
        seg in prop::sample::select(vec!["MSH", "PID", "OBX", "NTE", "ABZ"]),
        occurrence in 1usize..3,
        field in 1usize..5,
        repetition in 1usize..3,
        component in prop::option::of(1usize..4),
        subcomponent in 1usize..3,
    ) {
        let msg = Message::parse(&input);
        let mut text = format!("{seg}[{occurrence}]-{field}[{repetition}]");
        if let Some(c) = component {
            text.push_str(&format!("-{c}-{subcomponent}"));
        }
        let path = hl7v2::Path::parse(&text).unwrap();
        let by_views = msg
            .find_segment(seg.as_bytes(), occurrence)
            .and_then(|s| s.field(field))
            .and_then(|f| f.repetition(repetition))
            .and_then(|r| r.component(component.unwrap_or(1)))
            .and_then(|c| c.subcomponent(if component.is_some() { subcomponent } else { 1 }))
            .map(|v| v.text());
        prop_assert_eq!(msg.get(&path), by_views, "{}", text);
    }

    /// `Value::part` finds a part by a byte loop: it must give what the `parts` iterator gives (bytes, offset,
    /// level) at every level of every field, on any input.
    #[test]
    fn a_part_is_the_nth_of_the_parts(input in hl7ish(), n in 0usize..5) {
        let msg = Message::parse(&input);
        let same = |a: Option<hl7v2::Value<'_>>, b: Option<hl7v2::Value<'_>>| match (a, b) {
            (Some(a), Some(b)) => a.raw() == b.raw() && a.offset() == b.offset() && a.level() == b.level(),
            (None, None) => true,
            _ => false,
        };
        for seg in msg.segments() {
            for f in seg.fields() {
                let mut stack = vec![f];
                while let Some(v) = stack.pop() {
                    let want = if n == 0 { None } else { v.parts().nth(n - 1) };
                    prop_assert!(same(v.part(n), want), "{:?} part {}", v, n);
                    if !matches!(v.level(), hl7v2::Level::Subcomponent | hl7v2::Level::Verbatim) {
                        stack.extend(v.parts());
                    }
                }
            }
        }
    }

    /// `Segment::fields` walks the segment's spans in one pass: it must give what `field(n)` gives for each n.
    #[test]
    fn fields_are_each_field_in_order(input in hl7ish()) {
        let msg = Message::parse(&input);
        for seg in msg.segments() {
            let by_number: Vec<_> = (1..=seg.field_count()).filter_map(|n| seg.field(n)).collect();
            let walked: Vec<_> = seg.fields().collect();
            prop_assert_eq!(walked.len(), by_number.len());
            for (a, b) in walked.iter().zip(&by_number) {
                prop_assert!(a.raw() == b.raw() && a.offset() == b.offset() && a.level() == b.level(), "{:?} {:?}", a, b);
            }
        }
    }

    #[test]
    fn set_reads_back_and_disturbs_nothing_else(body in "[A-Z0-9 ]{0,12}", value in "[ -~]{0,12}", field in 1usize..6, comp in 1usize..4) {
        let src = format!("MSH|^~\\&|A|B|C|D|1||ADT^A01|1|P|2.5\rPID|1||{body}\rNTE|1||x\\F\\y");
        let msg = Message::parse(src.as_bytes());
        let mut buf = MessageBuf::from(&msg);
        let path = format!("PID-{field}-{comp}");
        buf.set(path.as_str(), &value).unwrap();
        let out = buf.encode();
        let re = Message::parse(&out);
        prop_assert!(!re.has_errors());
        let got = re.get(path.as_str());
        prop_assert_eq!(got.as_deref(), Some(value.as_str()));
        prop_assert_eq!(re.segment(0).unwrap().raw(), msg.segment(0).unwrap().raw());
        prop_assert_eq!(re.segment(2).unwrap().raw(), msg.segment(2).unwrap().raw());
    }
}
