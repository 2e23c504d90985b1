//! Acknowledgements: modes, codes, swapped routing, ERR segments, broken input.

use hl7v2::{AckCode, AckError, AckMode, ErrorCode, ErrorLocation, Message};

const ADT: &[u8] = b"MSH|^~\\&|HIS|Hospital|RIS|Radiology|20240315143000||ADT^A01^ADT_A01|MSG00001|P|2.5|||AL|NE\r\
PID|1||MRN12345^^^Hospital^MR||DOE^JOHN^ALLEN||19800315|M\r";

#[test]
fn enhanced_mode_honours_msh15_and_msh16() {
    let msg = Message::parse(ADT);
    assert_eq!(msg.ack_mode(), AckMode::Enhanced);
    // MSH-15 = AL: accept acks always; MSH-16 = NE: application acks never.
    assert!(msg.ack_required(AckCode::CA));
    assert!(msg.ack_required(AckCode::CR));
    assert!(!msg.ack_required(AckCode::AA));
    assert!(!msg.ack_required(AckCode::AE));
    let er = Message::parse(b"MSH|^~\\&|A|B|C|D|1||ADT^A01|X|P|2.5|||ER|SU\r");
    assert!(!er.ack_required(AckCode::CA));
    assert!(er.ack_required(AckCode::CE));
    assert!(er.ack_required(AckCode::AA));
    assert!(!er.ack_required(AckCode::AR));
    let original = Message::parse(b"MSH|^~\\&|A|B|C|D|1||ADT^A01|X|P|2.3\r");
    assert_eq!(original.ack_mode(), AckMode::Original);
    assert!(original.ack_required(AckCode::AE));
}

#[test]
fn ack_swaps_routing_and_echoes_control_id() {
    let msg = Message::parse(ADT);
    let ack = msg
        .ack(AckCode::CA)
        .timestamp("20240315143001")
        .control_id("A1")
        .build();
    let ack = Message::parse_strict(&ack).expect("the ACK itself parses strictly");
    assert_eq!(ack.get("MSH-3").as_deref(), Some("RIS"));
    assert_eq!(ack.get("MSH-4").as_deref(), Some("Radiology"));
    assert_eq!(ack.get("MSH-5").as_deref(), Some("HIS"));
    assert_eq!(ack.get("MSH-6").as_deref(), Some("Hospital"));
    assert_eq!(ack.raw("MSH-9"), Some(&b"ACK^A01^ACK"[..]));
    assert_eq!(ack.get("MSH-10").as_deref(), Some("A1"));
    assert_eq!(ack.get("MSH-12").as_deref(), Some("2.5"));
    assert_eq!(ack.get("MSA-1").as_deref(), Some("CA"));
    assert_eq!(ack.get("MSA-2").as_deref(), Some("MSG00001"));
}

#[test]
fn err_segment_carries_table_0357_code_and_location() {
    let msg = Message::parse(ADT);
    let loc = ErrorLocation {
        segment_id: *b"PID",
        sequence: 1,
        field: 3,
        repetition: 1,
        component: 1,
        subcomponent: 0,
    };
    let ack = msg
        .ack(AckCode::AE)
        .error(AckError::new(
            ErrorCode::UnknownKeyIdentifier,
            loc,
            "no such patient | here",
        ))
        .timestamp("1")
        .control_id("2")
        .build();
    let ack = Message::parse(&ack);
    assert_eq!(ack.raw("ERR-2"), Some(&b"PID^1^3^1^1"[..]));
    assert_eq!(
        ack.raw("ERR-3"),
        Some(&b"204^Unknown key identifier^HL70357"[..])
    );
    assert_eq!(ack.get("ERR-4").as_deref(), Some("E"));
    // The text is escaped on write and decoded on read.
    assert_eq!(ack.get("ERR-8").as_deref(), Some("no such patient | here"));
    assert_eq!(ack.raw("ERR-8"), Some(&b"no such patient \\F\\ here"[..]));
}

#[test]
fn pre_2_5_versions_get_err_1() {
    let msg = Message::parse(b"MSH|^~\\&|A|B|C|D|1||ORU^R01|X|P|2.3\rOBX|1|NM\r");
    let loc = ErrorLocation {
        segment_id: *b"OBX",
        sequence: 1,
        field: 5,
        ..Default::default()
    };
    let ack = msg
        .ack(AckCode::AE)
        .error(AckError::new(ErrorCode::RequiredFieldMissing, loc, ""))
        .build();
    let ack = Message::parse(&ack);
    assert_eq!(
        ack.raw("ERR-1"),
        Some(&b"OBX^1^5^101&Required field missing&HL70357"[..])
    );
}

#[test]
fn ack_of_unparseable_input_still_answers() {
    // Not HL7 at all: the ACK has empty routing but is itself well formed.
    let msg = Message::parse(b"hello world");
    let ack = msg.ack(AckCode::AR).errors_from_diagnostics().build();
    let ack = Message::parse_strict(&ack).expect("well-formed ACK");
    assert_eq!(ack.get("MSA-1").as_deref(), Some("AR"));
    assert_eq!(ack.get("ERR-3-1").as_deref(), Some("100"));
    // Duplicate delimiters: the ACK falls back to the default ones and still copies MSH-10.
    let msg = Message::parse(b"MSH|^^\\&|A|B|C|D|1||ADT^A01|CTRL7|P|2.5\r");
    assert!(msg.has_errors());
    let bytes = msg.ack(AckCode::AR).errors_from_diagnostics().build();
    let ack = Message::parse(&bytes);
    assert!(!ack.has_errors());
    assert_eq!(ack.get("MSA-2").as_deref(), Some("CTRL7"));
    assert_eq!(ack.get("ERR-3-1").as_deref(), Some("102"));
}

#[test]
fn ack_uses_the_messages_own_delimiters() {
    let msg = Message::parse(b"MSH#*!$%#A#B#C#D#1##ADT*A04#9#P#2.5\r");
    let ack = msg.ack(AckCode::AA).timestamp("1").control_id("2").build();
    assert_eq!(ack, b"MSH#*!$%#C#D#A#B#1##ACK*A04*ACK#2#P#2.5\rMSA#AA#9\r");
}

#[test]
fn line_breaks_kept_as_content_do_not_break_the_ack_header() {
    // "2.5" is followed by a LF and text that does not start a segment, so the lenient parse keeps the line break
    // inside MSH-12 (and says so). The ACK copies MSH-12 and must still be two clean segments.
    let msg = Message::parse(b"MSH|^~\\&|A|B|C|D|1||ADT^A01|X1|P|2.5\nnot a segment\rPID|1\r");
    assert!(
        msg.raw("MSH-12").is_some_and(|v| v.contains(&b'\n')),
        "the fixture keeps the line break in MSH-12"
    );
    let ack = msg
        .ack(AckCode::AA)
        .timestamp("20240315143001")
        .control_id("A1")
        .build();
    assert!(!ack.contains(&b'\n'), "{}", String::from_utf8_lossy(&ack));
    let ack = Message::parse_strict(&ack).expect("the ACK parses strictly");
    assert_eq!(ack.segment_count(), 2);
    assert_eq!(ack.get("MSH-12").as_deref(), Some("2.5\nnot a segment"));
    assert_eq!(ack.get("MSA-2").as_deref(), Some("X1"));
}
