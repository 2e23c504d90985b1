//! Acknowledgements: original mode (AA/AE/AR) and enhanced mode (CA/CE/CR), honouring MSH-15/MSH-16.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::diagnostic::{Diagnostic, DiagnosticKind, Severity};
use crate::{Delimiters, Message, escape};

/// HL7 table 0008, acknowledgement code (MSA-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AckCode {
    /// Original mode: application accept.
    AA,
    /// Original mode: application error.
    AE,
    /// Original mode: application reject.
    AR,
    /// Enhanced mode: commit accept.
    CA,
    /// Enhanced mode: commit error.
    CE,
    /// Enhanced mode: commit reject.
    CR,
}

impl AckCode {
    /// The code as written in MSA-1.
    pub fn as_str(&self) -> &'static str {
        match self {
            AckCode::AA => "AA",
            AckCode::AE => "AE",
            AckCode::AR => "AR",
            AckCode::CA => "CA",
            AckCode::CE => "CE",
            AckCode::CR => "CR",
        }
    }

    /// Reads `AA`, `AE`, `AR`, `CA`, `CE` or `CR` (case-insensitive).
    pub fn parse(text: &str) -> Option<AckCode> {
        Some(match text.trim().to_ascii_uppercase().as_str() {
            "AA" => AckCode::AA,
            "AE" => AckCode::AE,
            "AR" => AckCode::AR,
            "CA" => AckCode::CA,
            "CE" => AckCode::CE,
            "CR" => AckCode::CR,
            _ => return None,
        })
    }

    /// True for the accept codes AA and CA.
    pub fn is_success(&self) -> bool {
        matches!(self, AckCode::AA | AckCode::CA)
    }

    /// True for the enhanced-mode commit codes CA, CE, CR.
    pub fn is_commit(&self) -> bool {
        matches!(self, AckCode::CA | AckCode::CE | AckCode::CR)
    }
}

impl fmt::Display for AckCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which acknowledgement protocol a message asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AckMode {
    /// MSH-15 and MSH-16 are empty: one application acknowledgement (AA/AE/AR).
    Original,
    /// MSH-15 or MSH-16 is valued: an accept acknowledgement (CA/CE/CR) and/or an application acknowledgement,
    /// each sent according to its condition (AL, NE, ER, SU).
    Enhanced,
}

/// HL7 table 0357, message error condition codes (ERR-3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// 0: message accepted.
    MessageAccepted,
    /// 100: segment sequence error.
    SegmentSequenceError,
    /// 101: required field missing.
    RequiredFieldMissing,
    /// 102: data type error.
    DataTypeError,
    /// 103: table value not found.
    TableValueNotFound,
    /// 104: value too long.
    ValueTooLong,
    /// 200: unsupported message type.
    UnsupportedMessageType,
    /// 201: unsupported event code.
    UnsupportedEventCode,
    /// 202: unsupported processing id.
    UnsupportedProcessingId,
    /// 203: unsupported version id.
    UnsupportedVersionId,
    /// 204: unknown key identifier.
    UnknownKeyIdentifier,
    /// 205: duplicate key identifier.
    DuplicateKeyIdentifier,
    /// 206: application record locked.
    ApplicationRecordLocked,
    /// 207: application internal error.
    ApplicationInternalError,
}

impl ErrorCode {
    /// The numeric code.
    pub fn code(&self) -> u16 {
        match self {
            ErrorCode::MessageAccepted => 0,
            ErrorCode::SegmentSequenceError => 100,
            ErrorCode::RequiredFieldMissing => 101,
            ErrorCode::DataTypeError => 102,
            ErrorCode::TableValueNotFound => 103,
            ErrorCode::ValueTooLong => 104,
            ErrorCode::UnsupportedMessageType => 200,
            ErrorCode::UnsupportedEventCode => 201,
            ErrorCode::UnsupportedProcessingId => 202,
            ErrorCode::UnsupportedVersionId => 203,
            ErrorCode::UnknownKeyIdentifier => 204,
            ErrorCode::DuplicateKeyIdentifier => 205,
            ErrorCode::ApplicationRecordLocked => 206,
            ErrorCode::ApplicationInternalError => 207,
        }
    }

    /// The table's description.
    pub fn description(&self) -> &'static str {
        match self {
            ErrorCode::MessageAccepted => "Message accepted",
            ErrorCode::SegmentSequenceError => "Segment sequence error",
            ErrorCode::RequiredFieldMissing => "Required field missing",
            ErrorCode::DataTypeError => "Data type error",
            ErrorCode::TableValueNotFound => "Table value not found",
            ErrorCode::ValueTooLong => "Value too long",
            ErrorCode::UnsupportedMessageType => "Unsupported message type",
            ErrorCode::UnsupportedEventCode => "Unsupported event code",
            ErrorCode::UnsupportedProcessingId => "Unsupported processing id",
            ErrorCode::UnsupportedVersionId => "Unsupported version id",
            ErrorCode::UnknownKeyIdentifier => "Unknown key identifier",
            ErrorCode::DuplicateKeyIdentifier => "Duplicate key identifier",
            ErrorCode::ApplicationRecordLocked => "Application record locked",
            ErrorCode::ApplicationInternalError => "Application internal error",
        }
    }
}

/// Where an error is (ERR-2, ERL data type): segment, its occurrence, field, repetition, component,
/// subcomponent. Zero means "not specified".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ErrorLocation {
    /// Segment identifier; zeros when unknown.
    pub segment_id: [u8; 3],
    /// Occurrence of the segment in the message (1-based).
    pub sequence: usize,
    /// Field number.
    pub field: usize,
    /// Field repetition.
    pub repetition: usize,
    /// Component.
    pub component: usize,
    /// Subcomponent.
    pub subcomponent: usize,
}

/// HL7 table 0516, error severity (ERR-4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorSeverity {
    /// `E`.
    Error,
    /// `W`.
    Warning,
    /// `I`.
    Information,
    /// `F` (v2.7+: fatal).
    Fatal,
}

impl ErrorSeverity {
    fn as_str(&self) -> &'static str {
        match self {
            ErrorSeverity::Error => "E",
            ErrorSeverity::Warning => "W",
            ErrorSeverity::Information => "I",
            ErrorSeverity::Fatal => "F",
        }
    }
}

/// One ERR segment's content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckError {
    /// Table 0357 code.
    pub code: ErrorCode,
    /// Severity.
    pub severity: ErrorSeverity,
    /// Where the fault is.
    pub location: ErrorLocation,
    /// Free text for people (ERR-3.2 holds the table description; this goes to ERR-8, user message).
    pub text: String,
}

impl AckError {
    /// An error-severity ERR.
    pub fn new(code: ErrorCode, location: ErrorLocation, text: impl Into<String>) -> AckError {
        AckError {
            code,
            severity: ErrorSeverity::Error,
            location,
            text: text.into(),
        }
    }

    /// The ERR for a parser diagnostic: structural problems map to 102 (data type error) or 100 (segment
    /// sequence error), missing header fields to 101.
    pub fn from_diagnostic(msg: &Message<'_>, d: &Diagnostic) -> AckError {
        let code = match d.kind {
            DiagnosticKind::InvalidSegmentId
            | DiagnosticKind::MissingHeader
            | DiagnosticKind::Empty => ErrorCode::SegmentSequenceError,
            DiagnosticKind::MissingHeaderField => ErrorCode::RequiredFieldMissing,
            _ => ErrorCode::DataTypeError,
        };
        let l = d.location;
        // The segment's occurrence among segments with the same identifier.
        let sequence = if l.segment == 0 {
            0
        } else {
            msg.segments()
                .take(l.segment)
                .filter(|s| s.id_bytes() == l.segment_id)
                .count()
                .max(1)
        };
        AckError {
            code,
            severity: match d.severity() {
                Severity::Error => ErrorSeverity::Error,
                Severity::Warning => ErrorSeverity::Warning,
            },
            location: ErrorLocation {
                segment_id: l.segment_id,
                sequence,
                field: l.field,
                ..ErrorLocation::default()
            },
            text: d.to_string(),
        }
    }
}

impl Message<'_> {
    /// The acknowledgement mode the sender asked for (MSH-15/MSH-16 empty: original).
    pub fn ack_mode(&self) -> AckMode {
        let valued = |n| self.get_field_raw(n).is_some_and(|v| !v.is_empty());
        if valued(15) || valued(16) {
            AckMode::Enhanced
        } else {
            AckMode::Original
        }
    }

    /// Whether an acknowledgement with this code should be sent at all: always in original mode; in enhanced
    /// mode according to MSH-15 (for CA/CE/CR) or MSH-16 (for AA/AE/AR): `AL` or empty always, `NE` never, `ER`
    /// only for errors, `SU` only for success.
    pub fn ack_required(&self, code: AckCode) -> bool {
        if self.ack_mode() == AckMode::Original {
            return true;
        }
        let field = if code.is_commit() { 15 } else { 16 };
        let cond = self.get_field_raw(field).unwrap_or_default();
        match cond.trim_ascii() {
            b"NE" => false,
            b"ER" => !code.is_success(),
            b"SU" => code.is_success(),
            _ => true,
        }
    }

    /// Starts an acknowledgement of this message with the given code.
    pub fn ack(&self, code: AckCode) -> AckBuilder<'_, '_> {
        AckBuilder::new(self, code)
    }

    fn get_field_raw(&self, n: usize) -> Option<&[u8]> {
        let seg = self.segment(0)?;
        if seg.id_bytes() != b"MSH" {
            return None;
        }
        Some(seg.field(n)?.raw())
    }
}

/// Builds an ACK for a message (which may have failed to parse: whatever MSH fields could be read are used).
///
/// - MSH-3/4 are the original's MSH-5/6 and MSH-5/6 the original's MSH-3/4 (sender and receiver swapped);
/// - MSH-9 is `ACK^<trigger of the original>^ACK`, MSH-11, MSH-12 and MSH-18 are copied;
/// - MSA-1 is the code, MSA-2 the original's MSH-10;
/// - one ERR per [`AckError`]: v2.5 and later write ERR-2 (location), ERR-3 (`code^text^HL70357`), ERR-4
///   (severity) and ERR-8 (text); earlier versions write ERR-1 (`SEG^seq^field^code&text&HL70357`).
///
/// The ACK uses the original's delimiters when they are usable, else the defaults.
#[derive(Debug)]
pub struct AckBuilder<'m, 'a> {
    msg: &'m Message<'a>,
    code: AckCode,
    text: Option<String>,
    errors: Vec<AckError>,
    control_id: Option<String>,
    timestamp: Option<String>,
}

impl<'m, 'a> AckBuilder<'m, 'a> {
    /// An acknowledgement of `msg` with `code`.
    pub fn new(msg: &'m Message<'a>, code: AckCode) -> Self {
        AckBuilder {
            msg,
            code,
            text: None,
            errors: Vec::new(),
            control_id: None,
            timestamp: None,
        }
    }

    /// MSA-3, a text message (deprecated since v2.4 but still read by many receivers).
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Adds an ERR segment.
    pub fn error(mut self, error: AckError) -> Self {
        self.errors.push(error);
        self
    }

    /// Adds one ERR per error-severity parse diagnostic of the message.
    pub fn errors_from_diagnostics(mut self) -> Self {
        let msg = self.msg;
        self.errors.extend(
            msg.diagnostics()
                .iter()
                .filter(|d| d.severity() == Severity::Error)
                .map(|d| AckError::from_diagnostic(msg, d)),
        );
        self
    }

    /// The ACK's own MSH-10 (default: a timestamp plus a process-wide counter).
    pub fn control_id(mut self, id: impl Into<String>) -> Self {
        self.control_id = Some(id.into());
        self
    }

    /// The ACK's MSH-7 (default: the current UTC time as `YYYYMMDDHHMMSS`).
    pub fn timestamp(mut self, ts: impl Into<String>) -> Self {
        self.timestamp = Some(ts.into());
        self
    }

    /// Encodes the ACK (segments ended by CR).
    pub fn build(&self) -> Vec<u8> {
        let msg = self.msg;
        let broken = msg.diagnostics().iter().any(|d| {
            matches!(
                d.kind,
                DiagnosticKind::UnusableDelimiter
                    | DiagnosticKind::DuplicateDelimiter
                    | DiagnosticKind::MissingHeader
            )
        });
        let d = if broken {
            Delimiters::default()
        } else {
            *msg.delimiters()
        };
        let charset = msg.charset();
        // A copied header value: raw when the delimiters are the original's (it is already escaped for them),
        // else re-escaped from its decoded text.
        let copy = |path: &str| -> Vec<u8> {
            let is_msh = msg.segment(0).is_some_and(|s| s.id_bytes() == b"MSH");
            if !is_msh {
                return Vec::new();
            }
            let value = if broken {
                let text = msg.get(path).unwrap_or_default();
                escape::encode(&text, &d, charset)
                    .map(|c| c.into_owned())
                    .unwrap_or_default()
            } else {
                msg.raw(path).unwrap_or_default().to_vec()
            };
            escape_line_breaks(value, d.escape)
        };
        let text = |t: &str| -> Vec<u8> {
            match escape::encode(t, &d, charset) {
                Some(c) => c.into_owned(),
                // A character the message's character set cannot hold: fall back to ASCII.
                None => escape::encode(&t.replace(|c: char| !c.is_ascii(), "?"), &d, charset)
                    .map(|c| c.into_owned())
                    .unwrap_or_default(),
            }
        };
        let fs = d.field;
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(b"MSH");
        out.push(fs);
        out.extend_from_slice(&d.encoding_characters());
        let ts = self.timestamp.clone().unwrap_or_else(now_timestamp);
        let control = self
            .control_id
            .clone()
            .unwrap_or_else(|| next_control_id(&ts));
        let trigger = copy("MSH-9-2");
        let mut msh9 = b"ACK".to_vec();
        if !trigger.is_empty() {
            msh9.push(d.component);
            msh9.extend_from_slice(&trigger);
            msh9.push(d.component);
            msh9.extend_from_slice(b"ACK");
        }
        let version = copy("MSH-12");
        let fields: [Vec<u8>; 16] = [
            copy("MSH-5"),
            copy("MSH-6"),
            copy("MSH-3"),
            copy("MSH-4"),
            text(&ts),
            Vec::new(),
            msh9,
            text(&control),
            copy("MSH-11"),
            version.clone(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            copy("MSH-18"),
        ];
        let last = fields.iter().rposition(|f| !f.is_empty()).unwrap_or(0);
        for f in &fields[..=last] {
            out.push(fs);
            out.extend_from_slice(f);
        }
        out.push(b'\r');

        out.extend_from_slice(b"MSA");
        out.push(fs);
        out.extend_from_slice(self.code.as_str().as_bytes());
        out.push(fs);
        out.extend_from_slice(&copy("MSH-10"));
        if let Some(t) = &self.text {
            out.push(fs);
            out.extend_from_slice(&text(t));
        }
        out.push(b'\r');

        let modern = version_at_least(&version, 2, 5);
        for e in &self.errors {
            out.extend_from_slice(b"ERR");
            out.push(fs);
            let code = e.code.code().to_string();
            let desc = text(e.code.description());
            let l = &e.location;
            let seg_id: &[u8] = if l.segment_id == [0; 3] {
                b""
            } else {
                &l.segment_id
            };
            let num = |n: usize| if n == 0 { String::new() } else { n.to_string() };
            if modern {
                // ERR-2 location (ERL), ERR-3 code (CWE), ERR-4 severity, ERR-8 user message.
                out.push(fs);
                let parts = [
                    seg_id.to_vec(),
                    num(l.sequence).into_bytes(),
                    num(l.field).into_bytes(),
                    num(l.repetition).into_bytes(),
                    num(l.component).into_bytes(),
                    num(l.subcomponent).into_bytes(),
                ];
                join_trimmed(&mut out, &parts, d.component);
                out.push(fs);
                join_trimmed(
                    &mut out,
                    &[code.into_bytes(), desc, b"HL70357".to_vec()],
                    d.component,
                );
                out.push(fs);
                out.extend_from_slice(e.severity.as_str().as_bytes());
                if !e.text.is_empty() {
                    out.extend([fs, fs, fs, fs]);
                    out.extend_from_slice(&text(&e.text));
                }
            } else {
                // ERR-1 (ELD): segment^sequence^field^code&text&HL70357.
                let sub = d.subcomponent.unwrap_or(d.component);
                let mut ce = Vec::new();
                join_trimmed(
                    &mut ce,
                    &[code.into_bytes(), desc, b"HL70357".to_vec()],
                    sub,
                );
                let parts = [
                    seg_id.to_vec(),
                    num(l.sequence).into_bytes(),
                    num(l.field).into_bytes(),
                    ce,
                ];
                join_trimmed(&mut out, &parts, d.component);
            }
            out.push(b'\r');
        }
        out
    }
}

fn join_trimmed(out: &mut Vec<u8>, parts: &[Vec<u8>], sep: u8) {
    let last = parts
        .iter()
        .rposition(|p| !p.is_empty())
        .map_or(0, |i| i + 1);
    for (i, p) in parts[..last].iter().enumerate() {
        if i > 0 {
            out.push(sep);
        }
        out.extend_from_slice(p);
    }
}

/// A line break the lenient parser kept as content (text after it did not start a segment) would end the ACK's
/// segment early and make the receiver see a broken ACK: it is written as the hex escape `\X0D\` / `\X0A\`, or
/// dropped when the message declares no escape character.
fn escape_line_breaks(value: Vec<u8>, escape: Option<u8>) -> Vec<u8> {
    if !value.iter().any(|b| matches!(b, b'\r' | b'\n')) {
        return value;
    }
    let mut out = Vec::with_capacity(value.len() + 8);
    for b in value {
        match (b, escape) {
            (b'\r' | b'\n', Some(e)) => {
                out.push(e);
                out.extend_from_slice(if b == b'\r' { b"X0D" } else { b"X0A" });
                out.push(e);
            }
            (b'\r' | b'\n', None) => {}
            _ => out.push(b),
        }
    }
    out
}

/// True when a version string like `2.5.1` is at least `major.minor`; unknown versions count as modern.
fn version_at_least(version: &[u8], major: u32, minor: u32) -> bool {
    let text = String::from_utf8_lossy(version);
    let mut it = text.split(['.', '^']).map(|p| p.trim().parse::<u32>().ok());
    match (it.next().flatten(), it.next().flatten()) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => true,
    }
}

/// The current UTC time as `YYYYMMDDHHMMSS`.
fn now_timestamp() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}{m:02}{d:02}{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Gregorian date from days since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn next_control_id(ts: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed) % 10_000;
    format!("{ts}{n:04}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_797), (2024, 3, 15));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn versions() {
        assert!(version_at_least(b"2.5.1", 2, 5));
        assert!(!version_at_least(b"2.3", 2, 5));
        assert!(version_at_least(b"2.10", 2, 5));
        assert!(version_at_least(b"", 2, 5));
    }
}
