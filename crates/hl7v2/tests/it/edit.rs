//! Editing: set by path, segments added and removed, encoding with the message's own delimiters.

use hl7v2::{EditError, Message, MessageBuf};

#[test]
fn set_builds_missing_parts_and_keeps_the_rest_byte_exact() {
    let src =
        b"MSH|^~\\&|A|B|C|D|1||ORU^R01|1|P|2.5\rOBX|1|FT|X||a\\.br\\b\\Zq\\~two\rOBX|2|NM|Y||3\r";
    let msg = Message::parse(src);
    let mut buf = MessageBuf::from(&msg);
    buf.set("OBX[2]-5", "4").unwrap();
    buf.set("OBX[2]-6-1-2", "mg&dL").unwrap();
    buf.set("OBX[2]-8[3]", "H").unwrap();
    let out = buf.encode();
    // OBX(1) keeps its escape sequences (known and unknown) byte for byte.
    assert_eq!(out, b"MSH|^~\\&|A|B|C|D|1||ORU^R01|1|P|2.5\rOBX|1|FT|X||a\\.br\\b\\Zq\\~two\rOBX|2|NM|Y||4|&mg\\T\\dL||~~H\r");
    let re = Message::parse(&out);
    assert_eq!(re.get("OBX[2]-6-1-2").as_deref(), Some("mg&dL"));
    assert_eq!(re.get("OBX[2]-8[3]").as_deref(), Some("H"));
    assert_eq!(re.get("OBX[1]-5[2]").as_deref(), Some("two"));
}

#[test]
fn edited_message_uses_its_own_delimiters_and_terminators() {
    let src = b"MSH#*!$%#A#B#C#D#1##ADT*A01#1#P#2.5\nPID#1##7\n";
    let mut buf = MessageBuf::from(&Message::parse(src));
    buf.set("PID-5-2", "x*y#z").unwrap();
    buf.push_segment(b"NTE#1##note").unwrap();
    assert_eq!(
        buf.encode(),
        b"MSH#*!$%#A#B#C#D#1##ADT*A01#1#P#2.5\nPID#1##7##*x$S$y$F$z\nNTE#1##note\n"
    );
    assert_eq!(
        Message::parse(&buf.encode()).get("PID-5-2").as_deref(),
        Some("x*y#z")
    );
}

#[test]
fn segments_are_added_and_removed() {
    let src = b"MSH|^~\\&|A|B|C|D|1||ORU^R01|1|P|2.5\rNTE|1\rOBX|1\rNTE|2";
    let mut buf = MessageBuf::from(&Message::parse(src));
    assert_eq!(buf.remove_segments("NTE"), 2);
    buf.insert_segment(1, b"PID|1||42").unwrap();
    buf.set("OBX[2]-1", "2").unwrap();
    assert_eq!(
        buf.encode(),
        b"MSH|^~\\&|A|B|C|D|1||ORU^R01|1|P|2.5\rPID|1||42\rOBX|1\rOBX|2\r"
    );
    buf.remove_segment(1).unwrap();
    assert_eq!(buf.segment_id(1), Some("OBX"));
    assert!(matches!(
        buf.set("OBX[4]-1", "x"),
        Err(EditError::NoSuchSegment { .. })
    ));
    assert!(matches!(
        buf.set("MSH-2", "x"),
        Err(EditError::Delimiters(_))
    ));
    assert!(matches!(
        buf.insert_segment(0, b"BAD SEG"),
        Err(EditError::NotASegment(_))
    ));
    assert!(matches!(
        buf.remove_segment(9),
        Err(EditError::NoSuchIndex(9))
    ));
}

#[test]
fn set_raw_replaces_at_the_named_depth() {
    let mut buf = MessageBuf::from(&Message::parse(
        b"MSH|^~\\&|A|B|C|D|1||ADT^A01|1|P|2.5\rPID|1||||DOE^JOHN~X^Y",
    ));
    buf.set_raw("PID-5", b"ROE^JANE^Q").unwrap();
    buf.set_raw("PID-5[2]-2", b"Z&W").unwrap();
    assert_eq!(buf.get("PID-5-3").as_deref(), Some("Q"));
    assert_eq!(buf.get("PID-5[2]-2-2").as_deref(), Some("W"));
    assert!(buf.encode().ends_with(b"PID|1||||ROE^JANE^Q~X^Z&W"));
}

#[test]
fn charset_is_honoured_on_write() {
    let src = b"MSH|^~\\&|A|B|C|D|1||ADT^A01|1|P|2.5||||||8859/1\rPID|1\r";
    let mut buf = MessageBuf::from(&Message::parse(src));
    buf.set("PID-5", "Müller").unwrap();
    assert!(buf.encode().ends_with(b"PID|1||||M\xfcller\r"));
    assert!(matches!(
        buf.set("PID-6", "Ωmega"),
        Err(EditError::Unencodable(_))
    ));
}
