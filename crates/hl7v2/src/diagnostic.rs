//! What the lenient parser noticed, with where it noticed it; and the strict parser's error.

use std::fmt;

/// How bad a [`Diagnostic`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The message was read, but something in it is unusual (defaults were assumed, a line break was taken as
    /// content). Reading it is still unambiguous.
    Warning,
    /// The message's structure is broken: values may be split differently than the sender meant.
    Error,
}

/// What a [`Diagnostic`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DiagnosticKind {
    /// The input holds no segment at all.
    Empty,
    /// The input is larger than 4 GiB, which the offset index cannot address.
    TooLarge,
    /// The first segment is not `MSH` (nor `FHS`/`BHS`); default delimiters were assumed.
    MissingHeader,
    /// MSH-2 is empty or too short; the default encoding characters were assumed.
    MissingEncodingCharacters,
    /// A delimiter is a letter, digit, space, CR, LF or NUL.
    UnusableDelimiter,
    /// Two delimiters are the same character.
    DuplicateDelimiter,
    /// A segment identifier is not three upper-case letters or digits starting with a letter.
    InvalidSegmentId,
    /// A line break is followed by text that does not start a segment: it was kept as field content.
    LineBreakInContent,
    /// A control character (other than CR/LF/TAB) is in the content.
    ControlCharacter,
    /// MSH-18 names a character set this library does not know; the default character set is used.
    UnknownCharset,
    /// A header field that acknowledgements and routing need (MSH-9, MSH-10 or MSH-12) is empty.
    MissingHeaderField,
}

impl DiagnosticKind {
    /// A one-line explanation for people.
    pub fn describe(&self) -> &'static str {
        match self {
            DiagnosticKind::Empty => "the input holds no segment",
            DiagnosticKind::TooLarge => "the input is larger than 4 GiB",
            DiagnosticKind::MissingHeader => "the message does not start with an MSH segment",
            DiagnosticKind::MissingEncodingCharacters => {
                "MSH-2 (encoding characters) is missing or incomplete; defaults assumed"
            }
            DiagnosticKind::UnusableDelimiter => {
                "a delimiter is a letter, digit, space, CR, LF or NUL"
            }
            DiagnosticKind::DuplicateDelimiter => "two delimiters are the same character",
            DiagnosticKind::InvalidSegmentId => "invalid segment identifier",
            DiagnosticKind::LineBreakInContent => {
                "line break not followed by a segment identifier; kept as field content"
            }
            DiagnosticKind::ControlCharacter => "control character in content",
            DiagnosticKind::UnknownCharset => "unknown character set in MSH-18; default used",
            DiagnosticKind::MissingHeaderField => "a required header field is empty",
        }
    }

    /// The severity this kind is reported with.
    pub fn severity(&self) -> Severity {
        match self {
            DiagnosticKind::Empty
            | DiagnosticKind::TooLarge
            | DiagnosticKind::MissingHeader
            | DiagnosticKind::UnusableDelimiter
            | DiagnosticKind::DuplicateDelimiter
            | DiagnosticKind::InvalidSegmentId => Severity::Error,
            DiagnosticKind::MissingEncodingCharacters
            | DiagnosticKind::LineBreakInContent
            | DiagnosticKind::ControlCharacter
            | DiagnosticKind::UnknownCharset
            | DiagnosticKind::MissingHeaderField => Severity::Warning,
        }
    }
}

/// Where in the input something is: a byte offset plus the segment and field it falls in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Location {
    /// Byte offset from the start of the parsed input.
    pub offset: usize,
    /// 1-based segment index within the message (0: before the first segment).
    pub segment: usize,
    /// The segment's identifier, e.g. `*b"PID"` (zeros when unknown).
    pub segment_id: [u8; 3],
    /// 1-based field number (HL7 numbering: MSH-1 is the field separator); 0 for the segment as a whole.
    pub field: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte {}", self.offset)?;
        if self.segment > 0 {
            write!(f, ", segment {}", self.segment)?;
            if self.segment_id != [0; 3] {
                write!(f, " ({})", String::from_utf8_lossy(&self.segment_id))?;
            }
            if self.field > 0 {
                write!(f, ", field {}", self.field)?;
            }
        }
        Ok(())
    }
}

/// One thing the parser noticed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    /// What it is.
    pub kind: DiagnosticKind,
    /// Where it is.
    pub location: Location,
}

impl Diagnostic {
    /// The severity of this diagnostic's kind.
    pub fn severity(&self) -> Severity {
        self.kind.severity()
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity() {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(f, "{sev} at {}: {}", self.location, self.kind.describe())
    }
}

/// The error of a strict parse: the first error-severity diagnostic.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The message's structure is broken at `diagnostic.location`.
    #[error("{diagnostic} ({count} error(s) in total)")]
    Malformed {
        /// The first error.
        diagnostic: Diagnostic,
        /// How many error-severity diagnostics the lenient parse produced.
        count: usize,
    },
}
