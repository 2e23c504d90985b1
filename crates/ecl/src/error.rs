//! Parse errors with byte positions.

use std::fmt;

/// Why an expression constraint could not be parsed, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at byte {offset}: {kind}")]
pub struct ParseError {
    /// Byte offset into the input where the problem was found.
    pub offset: usize,
    /// What went wrong.
    pub kind: ParseErrorKind,
}

impl ParseError {
    /// 1-based line and column (in characters) of [`ParseError::offset`] within `input`.
    pub fn line_column(&self, input: &str) -> (usize, usize) {
        let mut end = self.offset.min(input.len());
        while !input.is_char_boundary(end) {
            end -= 1;
        }
        let before = &input[..end];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    }
}

/// The kinds of parse error.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The input did not match any of the expected tokens.
    Expected {
        /// What would have been accepted here, e.g. `"'('"`, `"concept id"`.
        expected: Vec<&'static str>,
        /// A short excerpt of what was found (or `end of input`).
        found: String,
    },
    /// `AND`, `OR` and `MINUS` (or `,`) were mixed without brackets; the specification requires them.
    Ambiguous {
        /// The operator already in use at this level.
        first: &'static str,
        /// The operator that would mix with it.
        second: &'static str,
    },
    /// Brackets nested deeper than [`crate::MAX_DEPTH`].
    TooDeep,
    /// A well-formed token with an invalid value (SCTID length, cardinality, date…).
    Invalid(String),
    /// A construct outside the ECL Lite profile when parsing with [`crate::Profile::Lite`].
    NotInLite(&'static str),
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseErrorKind::Expected { expected, found } => {
                write!(f, "expected ")?;
                for (i, e) in expected.iter().enumerate() {
                    match i {
                        0 => {}
                        _ if i + 1 == expected.len() => write!(f, " or ")?,
                        _ => write!(f, ", ")?,
                    }
                    write!(f, "{e}")?;
                }
                write!(f, ", found {found}")
            }
            ParseErrorKind::Ambiguous { first, second } => write!(
                f,
                "{second} cannot follow {first} at the same level without brackets; add ( ) to say which applies first"
            ),
            ParseErrorKind::TooDeep => {
                write!(f, "brackets nested more than {} deep", crate::MAX_DEPTH)
            }
            ParseErrorKind::Invalid(why) => f.write_str(why),
            ParseErrorKind::NotInLite(what) => write!(f, "{what} is not part of ECL Lite"),
        }
    }
}
