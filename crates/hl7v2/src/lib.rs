//! HL7 v2 messages: a zero-copy model over borrowed bytes, a parser with diagnostics, escapes, character sets,
//! Terser-style paths, acknowledgements. No I/O.
//!
//! # Reading
//!
//! [`Message::parse`] never fails: it indexes segment and field offsets over the input and reports what was
//! wrong as [`Diagnostic`]s (byte offset, segment, field). [`Message::parse_strict`] turns the first
//! error-severity diagnostic into a [`ParseError`]. Values are split into repetitions, components and
//! subcomponents and decoded (escape sequences, MSH-18 character set) only when read, as `Cow<str>` that borrows
//! whenever nothing had to be decoded.
//!
//! ```
//! use hl7v2::{AckCode, Message};
//!
//! let bytes = b"MSH|^~\\&|HIS|Hospital|RIS|Radiology|20240315143000||ADT^A01^ADT_A01|MSG00001|P|2.5\r\
//!               PID|1||MRN12345^^^Hospital^MR~X9^^^Other||DOE^JOHN^ALLEN||19800315|M|||1 A \\T\\ B ST\r";
//! let msg = Message::parse(bytes);
//! assert!(msg.diagnostics().is_empty());
//! assert_eq!(msg.get("PID-5-1").as_deref(), Some("DOE"));
//! assert_eq!(msg.get("PID-3(1)-4").as_deref(), Some("Other")); // 0-based in parentheses, as in HAPI
//! assert_eq!(msg.get("PID-3[2]-4").as_deref(), Some("Other")); // 1-based in brackets
//! assert_eq!(msg.get("MSH-9-2").as_deref(), Some("A01"));
//! assert_eq!(msg.get("PID-11").as_deref(), Some("1 A & B ST")); // escapes decoded on read
//! assert_eq!(msg.raw("PID-5"), Some(&b"DOE^JOHN^ALLEN"[..])); // raw bytes at the depth the path names
//!
//! // Structured access, 1-based like the standard.
//! let pid = msg.find_segment(b"PID", 1).unwrap();
//! let names: Vec<_> = pid.field(3).unwrap().parts().map(|rep| rep.component(1).unwrap().text()).collect();
//! assert_eq!(names, ["MRN12345", "X9"]);
//!
//! // An unchanged message encodes to its input, byte for byte.
//! assert_eq!(msg.encode(), &bytes[..]);
//!
//! // Acknowledge it: sender and receiver swapped, MSA-2 = MSH-10.
//! let ack = msg.ack(AckCode::AA).timestamp("20240315143001").control_id("ACK1").build();
//! assert_eq!(
//!     ack,
//!     b"MSH|^~\\&|RIS|Radiology|HIS|Hospital|20240315143001||ACK^A01^ACK|ACK1|P|2.5\rMSA|AA|MSG00001\r"
//! );
//! ```
//!
//! # Acknowledging what failed to parse
//!
//! The ACK builder reads whatever MSH fields the lenient parse found, so a broken message still gets an answer
//! that names its control ID, with one ERR (HL7 table 0357 code and location) per error:
//!
//! ```
//! use hl7v2::{AckCode, Message};
//!
//! let msg = Message::parse(b"MSH|^~\\&|A|B|C|D|20240101||ORU^R01|C42|P|2.5.1\rpid|1\r");
//! assert!(msg.has_errors());
//! let ack = msg.ack(AckCode::AR).errors_from_diagnostics().timestamp("20240101").control_id("X").build();
//! let ack = Message::parse(&ack);
//! assert_eq!(ack.get("MSA-2").as_deref(), Some("C42"));
//! assert_eq!(ack.get("ERR-3-1").as_deref(), Some("100"));
//! assert_eq!(ack.get("ERR-2-1").as_deref(), Some("pid"));
//! ```
//!
//! # Message structures, group paths, validation
//!
//! [`Version::definitions`] holds every version's message structures, segments, fields, data types and tables
//! (2.1-2.8.2, generated from hl7apy, hl7-dictionary and HL7 Terminology). [`Message::group_tree`] places each
//! segment in its structure as HAPI's parser does, so HAPI's Terser paths read the same values here.
//! **Parentheses are 0-based, as in HAPI** (`OBX(1)` is the second OBX); brackets are 1-based (`OBX[2]`).
//!
//! ```
//! use hl7v2::{Message, Profile, validate};
//!
//! let msg = Message::parse(
//!     b"MSH|^~\\&|LAB|H|EHR|H|20240101||ORU^R01^ORU_R01|7|P|2.5.1\rPID|1||42^^^H^MR||DOE^JANE\r\
//!       OBR|1||X1|GLU^Glucose\rOBX|1|NM|GLU||5.4|mmol/L|||||F\rOBX|2|NM|K||4.1|mmol/L|||||F\r",
//! );
//! assert_eq!(msg.get("/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION(1)/OBX-5").as_deref(), Some("4.1"));
//! assert_eq!(msg.get("OBX(1)-5").as_deref(), Some("4.1")); // the second OBX of the message
//! assert_eq!(msg.get("OBX[2]-5").as_deref(), Some("4.1")); // the same, 1-based
//! let report = validate(&msg, &Profile::lenient());
//! assert!(report.is_valid(), "{:?}", report.issues);
//! let pid8 = hl7v2::Version::V2_5_1.definitions().element(&hl7v2::Path::parse("PID-8").unwrap()).unwrap();
//! assert_eq!(pid8.name, "Administrative Sex");
//! ```
//!
//! # Editing, files, JSON
//!
//! - [`MessageBuf`]: set values by path (building missing repetitions, components and segments), add and remove
//!   segments, encode; untouched fields keep their bytes, so escape sequences survive byte for byte.
//! - [`split`] and [`messages`]: stream over a file of many messages or an FHS/BHS batch file, chunk by chunk;
//!   the chunks concatenate to the file. [`write_batch`] writes one.
//! - [`to_json`]: the JSON view of a message; its shape is documented on the function.
//!
//! # Invariants
//!
//! - Parsing never panics and never fails; it is linear in the input (one SIMD block scan for the field separator,
//!   CR and LF) and allocates two arrays per message, never per field.
//! - `Message::encode` is the input; `MessageBuf::from(&msg).encode()` is the input too.
//! - No I/O: callers bring bytes.

mod ack;
mod batch;
mod charset;
mod definitions;
mod delimiters;
mod diagnostic;
mod edit;
mod escape;
mod json;
mod message;
mod parse;
mod path;
mod structure;
mod validate;

pub use ack::{AckBuilder, AckCode, AckError, AckMode, ErrorCode, ErrorLocation, ErrorSeverity};
pub use batch::{BatchHeader, Chunk, ChunkKind, Chunks, messages, split, write_batch};
pub use charset::Charset;
pub use definitions::{
    ComponentDef, DataTypeDef, Definitions, Element, FieldDef, MessageStructure, NodeKind,
    SegmentDef, StructureNode, Table, TableCode, Version,
};
pub use delimiters::Delimiters;
pub use diagnostic::{Diagnostic, DiagnosticKind, Location, ParseError, Severity};
pub use edit::{EditError, MessageBuf};
pub use escape::{decode as decode_escapes, encode as encode_escapes};
pub use json::{to_json, to_json_with_names};
pub use message::{Level, Message, Parts, Segment, Value};
pub use parse::{ParseOptions, element_count, elements_over};
pub use path::{AsPath, Path, PathError, Step};
pub use structure::{GroupTree, PlacedSegment, TreeOptions, Unexpected, UnexpectedKind};
pub use validate::{Issue, IssueSeverity, MAX_ISSUES, Profile, Report, Rule, validate};
