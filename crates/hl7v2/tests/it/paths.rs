//! Paths, delimiters, escapes and character sets on read.

use hl7v2::{Charset, DiagnosticKind, Message, Path};

const ADT: &[u8] = b"MSH|^~\\&|HIS|Hospital|RIS|Radiology|20240315143000||ADT^A01^ADT_A01|MSG00001|P|2.5|||AL|NE\r\
PID|1||MRN12345^^^Hospital^MR||DOE^JOHN^ALLEN||19800315|M|||123 MAIN ST^^BOSTON^MA^02101^USA||^PRN^PH^^1^617^5551234\r\
PV1|1|I|ICU^101^A^Hospital||||1234567^SMITH^JANE^M^MD^^MD|||||||||VIP|||||||||||||||||||||||||20240315140000";

#[test]
fn terser_paths_read_the_adt() {
    let m = Message::parse(ADT);
    assert!(m.diagnostics().is_empty(), "{:?}", m.diagnostics());
    let get = |p: &str| m.get(p).map(|c| c.into_owned());
    assert_eq!(get("MSH-1").as_deref(), Some("|"));
    assert_eq!(get("MSH-2").as_deref(), Some("^~\\&"));
    assert_eq!(get("MSH-9-3").as_deref(), Some("ADT_A01"));
    assert_eq!(get("PID-11-3").as_deref(), Some("BOSTON"));
    assert_eq!(get("PID.13.6").as_deref(), Some("617"));
    assert_eq!(get("PV1-7-2").as_deref(), Some("SMITH"));
    assert_eq!(get("PV1-41").as_deref(), Some("20240315140000"));
    assert_eq!(get("PV1-42"), None);
    assert_eq!(get("PID-5-4").as_deref(), None);
    assert_eq!(get("PID-4").as_deref(), Some(""));
    assert_eq!(get("PID[2]-1"), None);
    assert_eq!(get("ZZZ-1"), None);
    assert_eq!(get("not a path"), None);
}

#[test]
fn segment_occurrences_and_repetitions() {
    let m = Message::parse(
        b"MSH|^~\\&|||||||ORU^R01|1|P|2.5\rOBX|1|NM|A||1\rOBX|2|NM|B||2~3\rOBX|3|ST|C||x&y^z\r",
    );
    assert_eq!(m.get("OBX[3]-5").as_deref(), Some("x"));
    assert_eq!(m.get("OBX[3]-5-1-2").as_deref(), Some("y"));
    assert_eq!(m.get("OBX[3]-5-2").as_deref(), Some("z"));
    assert_eq!(m.get("OBX[2]-5[2]").as_deref(), Some("3"));
    assert_eq!(m.get("OBX[2]-5[3]"), None);
    assert_eq!(m.raw("OBX[3]-5"), Some(&b"x&y^z"[..]));
    assert_eq!(m.raw("OBX[3]-5-1"), Some(&b"x&y"[..]));
}

#[test]
fn path_syntax() {
    let p = Path::parse("PID-3[2]-1").unwrap();
    assert_eq!(
        (
            p.segment_id(),
            p.occurrence,
            p.field,
            p.repetition,
            p.component
        ),
        ("PID", 1, 3, 2, Some(1))
    );
    assert_eq!(p.to_string(), "PID-3(1)-1"); // written in HAPI's 0-based form
    assert_eq!(Path::parse("PID-3(1)-1").unwrap(), p);
    assert_eq!(Path::parse("/obx(3).5").unwrap().to_string(), "/OBX(3)-5");
    assert_eq!(Path::parse("obx(3).5").unwrap().to_string(), "OBX(3)-5");
    assert_eq!(Path::parse("OBX[4]-5").unwrap().to_string(), "OBX(3)-5");
    for bad in [
        "",
        "PI-1",
        "PID",
        "PID-0",
        "PID-1-2-3-4",
        "PID-x",
        "PID[0]-1",
        "PID(2-1",
        "PID-1()",
    ] {
        assert!(Path::parse(bad).is_err(), "{bad:?} should be rejected");
    }
}

#[test]
fn escapes_are_decoded_on_read() {
    let m = Message::parse(
        b"MSH|^~\\&|||||||ORU^R01|1|P|2.5\rNTE|1||a\\F\\b\\S\\c\\T\\d\\R\\e\\E\\f\\X41424344\\\\H\\bold\\N\\\\.br\\next\\Zcustom\\ \\unterminated\r",
    );
    assert_eq!(
        m.get("NTE-3").as_deref(),
        Some("a|b^c&d~e\\fABCDbold\nnext\\Zcustom\\ \\unterminated")
    );
}

#[test]
fn truncation_character_v2_7() {
    let m = Message::parse(b"MSH|^~\\&#|||||||ADT^A01|1|P|2.7\rPID|1||12#\\P\\\r");
    assert_eq!(m.delimiters().truncation, Some(b'#'));
    assert_eq!(m.get("MSH-2").as_deref(), Some("^~\\&#"));
    assert_eq!(m.get("PID-3").as_deref(), Some("12##"));
}

#[test]
fn segment_terminators_cr_lf_crlf_and_line_breaks_in_content() {
    let m = Message::parse(
        b"MSH|^~\\&|||||||ADT^A01|1|P|2.5\r\nPID|1\nPV1|1\rNTE|1||line one\nline two\r\n",
    );
    let ids: Vec<_> = m.segments().map(|s| s.id()).collect();
    assert_eq!(ids, ["MSH", "PID", "PV1", "NTE"]);
    assert_eq!(m.segment(0).unwrap().terminator(), b"\r\n");
    assert_eq!(m.get("NTE-3").as_deref(), Some("line one\nline two"));
    assert_eq!(m.diagnostics().len(), 1);
    assert_eq!(m.diagnostics()[0].kind, DiagnosticKind::LineBreakInContent);
    assert_eq!(m.diagnostics()[0].location.segment, 4);
}

#[test]
fn millions_of_line_breaks_keep_a_thousand_diagnostics_and_count_the_rest() {
    // Every line of `x` is content of NTE-3 (no segment starts there), each a line break in content.
    let mut bytes = b"MSH|^~\\&|||||||ADT^A01|1|P|2.5\rNTE|1||a".to_vec();
    bytes.extend(b"\nx".repeat(250_000));
    let m = Message::parse(&bytes);
    assert_eq!(m.segment_count(), 2);
    assert_eq!(m.get("NTE-3").map(|t| t.len()), Some(1 + 2 * 250_000));
    assert_eq!(m.diagnostics().len(), 1000);
    assert!(
        m.diagnostics()
            .iter()
            .all(|d| d.kind == DiagnosticKind::LineBreakInContent)
    );
    assert_eq!(m.diagnostics_not_kept(), 249_000);
    assert!(!m.has_errors());
}

#[test]
fn charsets_from_msh18() {
    let latin1 = b"MSH|^~\\&|||||||ADT^A01|1|P|2.5||||||8859/1\rPID|1||||M\xfcller";
    let m = Message::parse(latin1);
    assert_eq!(m.charset(), Charset::Iso8859(1));
    assert_eq!(m.get("PID-5").as_deref(), Some("Müller"));
    let greek = b"MSH|^~\\&|||||||ADT^A01|1|P|2.5||||||8859/7\rPID|1||||\xc1\xe8\xde\xed\xe1";
    assert_eq!(Message::parse(greek).get("PID-5").as_deref(), Some("Αθήνα"));
    let utf8 = "MSH|^~\\&|||||||ADT^A01|1|P|2.5||||||UNICODE UTF-8\rPID|1||||Zoë".as_bytes();
    assert_eq!(Message::parse(utf8).get("PID-5").as_deref(), Some("Zoë"));
    // Unknown names fall back to the configured default, with a warning.
    let opts = hl7v2::ParseOptions::default().with_default_charset(Charset::Iso8859(1));
    let m = Message::parse_with(
        b"MSH|^~\\&|||||||ADT^A01|1|P|2.5||||||KLINGON\rPID|1||||\xe9",
        &opts,
    );
    assert_eq!(m.get("PID-5").as_deref(), Some("é"));
    assert_eq!(m.diagnostics()[0].kind, DiagnosticKind::UnknownCharset);
}

#[test]
fn strict_parse_reports_location() {
    let err =
        Message::parse_strict(b"MSH|^~\\&|||||||ADT^A01|1|P|2.5\rPID|1\rPiD|2\r").unwrap_err();
    let hl7v2::ParseError::Malformed { diagnostic, count } = err else {
        panic!()
    };
    assert_eq!(count, 1);
    assert_eq!(diagnostic.kind, DiagnosticKind::InvalidSegmentId);
    assert_eq!(diagnostic.location.offset, 37);
    assert_eq!(diagnostic.location.segment, 3);
}

#[test]
fn iso2022_switch_escapes_decode_the_text_that_follows() {
    // ASCII message; a Greek run between \C2D46\ (ISO-IR 126, ISO 8859-7) and \C2842\ (back to ASCII).
    let greek =
        b"MSH|^~\\&|||||||ADT^A01|1|P|2.5\rPID|1||||\\C2D46\\\xc1\xe8\xde\xed\xe1\\C2842\\ ok";
    let m = Message::parse(greek);
    assert_eq!(m.get("PID-5").as_deref(), Some("Αθήνα ok"));
    assert_eq!(hl7v2::MessageBuf::from(&m).encode(), greek.to_vec());
    // JIS X 0208 (\M2442\): 山田 is 0x3B33 0x4544 in 7-bit bytes; then JIS X 0201 katakana in the upper half.
    let japanese =
        b"MSH|^~\\&|||||||ADT^A01|1|P|2.5\rPID|1||||\\M2442\\;3ED\\C2842\\^\\C2949\\\xb1\xb2";
    let m = Message::parse(japanese);
    assert_eq!(m.get("PID-5-1").as_deref(), Some("山田"));
    assert_eq!(m.get("PID-5-2").as_deref(), Some("ｱｲ"));
    // KS X 1001 and GB 2312 runs are their EUC bytes.
    let cjk = b"MSH|^~\\&|||||||ADT^A01|1|P|2.5\rPID|1||||\\M242943\\\xb1\xe8^\\M242941\\\xcd\xf5";
    let m = Message::parse(cjk);
    assert_eq!(m.get("PID-5-1").as_deref(), Some("김"));
    assert_eq!(m.get("PID-5-2").as_deref(), Some("王"));
    // A designation Thoth does not know stays as written, like any unknown escape.
    let unknown = Message::parse(b"MSH|^~\\&|||||||ADT^A01|1|P|2.5\rPID|1||||a\\C2D7F\\b");
    assert_eq!(unknown.get("PID-5").as_deref(), Some("a\\C2D7F\\b"));
}
