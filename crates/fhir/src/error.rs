//! Errors of reading and writing FHIR resources.

use std::fmt;

/// A wire format of a FHIR resource.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Format {
    /// FHIR JSON.
    Json,
    /// FHIR XML.
    Xml,
    /// Thoth's Protocol Buffers encoding (`thoth fhir proto-schema`).
    Protobuf,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Json => "JSON",
            Format::Xml => "XML",
            Format::Protobuf => "protobuf",
        })
    }
}

/// Where in the input an error was found.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Location {
    /// Byte offset from the start of the input.
    pub offset: usize,
    /// 1-based line (text formats; 0 for binary).
    pub line: usize,
    /// 1-based column in bytes (text formats; 0 for binary).
    pub column: usize,
}

impl Location {
    /// The location of byte `offset` in `input`.
    pub(crate) fn of(input: &[u8], offset: usize) -> Location {
        let offset = offset.min(input.len());
        let before = &input[..offset];
        let line = memchr::memchr_iter(b'\n', before).count() + 1;
        let column = offset - memchr::memrchr(b'\n', before).map_or(0, |p| p + 1) + 1;
        Location {
            offset,
            line,
            column,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "line {}, column {}", self.line, self.column)
        } else {
            write!(f, "byte {}", self.offset)
        }
    }
}

/// Why reading or writing a resource failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input is not a valid resource in `format`; `path` is the FHIR path of the element being read
    /// (e.g. `Patient.name[0].given[1]`).
    #[error("{format} at {location}{}: {message}", if path.is_empty() { String::new() } else { format!(" ({path})") })]
    Invalid {
        /// The format being read.
        format: Format,
        /// Where.
        location: Location,
        /// The element path.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The input is larger than the configured limit; nothing beyond the limit was read.
    #[error("input exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The limit in bytes ([`ReadOptions::max_bytes`](crate::ReadOptions::max_bytes)).
        limit: usize,
    },
    /// The resource holds something the target format cannot say (properties kept by the lenient JSON
    /// parser can only be written back as JSON).
    #[error("cannot write {format}: {message} ({path})")]
    Unrepresentable {
        /// The format being written.
        format: Format,
        /// The element path.
        path: String,
        /// What cannot be written.
        message: String,
    },
    /// Reading or writing a stream failed.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}
