//! FHIR R4 resources: JSON, XML and a compact Protocol Buffers encoding, lossless in every direction.
//!
//! The R4 definitions are compiled by `cargo xtask codegen` into one table per type (`src/generated/`), which
//! drives a single generic element tree ([`Resource`]) and all three formats. Everything a format can say
//! survives: decimal lexical forms (`1.0`, `1.00`, `1E-22`), ids and extensions on primitives (with `null`
//! padding), choice types, contained resources, Bundles and the XHTML narrative.
//!
//! ```
//! use fhir::{Resource, Format};
//! let json = br#"{"resourceType":"Observation","status":"final","code":{"text":"x"},"valueQuantity":{"value":1.50}}"#;
//! let obs = Resource::from_json(json)?;
//! let xml = obs.to_xml(false)?;
//! let pb = obs.to_protobuf()?;
//! assert_eq!(fhir::detect_format(&xml), Format::Xml);
//! assert_eq!(Resource::from_xml(&xml)?, obs);
//! assert_eq!(Resource::from_protobuf(&pb)?.to_json(), json.to_vec());
//! # Ok::<(), fhir::Error>(())
//! ```

mod error;
mod escape;
mod json;
mod model;
mod ndjson;
mod options;
mod path;
mod primitives;
mod protobuf;
mod resource;
mod schema;
mod shape;
mod xml;

pub use error::{Error, Format, Location};
pub use ndjson::{NdjsonReader, NdjsonWriter};
pub use options::{MAX_DEPTH, ReadOptions};
pub use primitives::PrimitiveIssue;
pub use resource::Resource;
pub use shape::{ElementShape, JsonKind, TypeShape};

/// The `.proto` schema of the binary encoding (`thoth fhir proto-schema`), generated with the tables.
pub const PROTO_SCHEMA: &str = include_str!("generated/fhir.proto");

/// Guesses the format of an input: JSON starts with `{`, XML with `<` (after optional BOM and whitespace),
/// anything else is the binary encoding (whose first byte is never `{` or `<`).
pub fn detect_format(input: &[u8]) -> Format {
    let t = input.strip_prefix("\u{feff}".as_bytes()).unwrap_or(input);
    match t
        .iter()
        .find(|c| !matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
    {
        Some(b'{')
            if t.first() == Some(&b'{') || input.len() != t.len() || !is_binary_prefix(t) =>
        {
            Format::Json
        }
        Some(b'<')
            if t.first() == Some(&b'<') || input.len() != t.len() || !is_binary_prefix(t) =>
        {
            Format::Xml
        }
        _ => Format::Protobuf,
    }
}

/// A leading newline byte (0x0A) is also field 1 of the binary `Resource` message; a text document would
/// not be followed by a length that spans the rest of the input exactly.
fn is_binary_prefix(t: &[u8]) -> bool {
    if t.first() != Some(&b'\n') {
        return false;
    }
    let mut len = 0usize;
    for (i, &b) in t[1..].iter().take(10).enumerate() {
        len |= ((b & 0x7f) as usize) << (7 * i);
        if b & 0x80 == 0 {
            return 1 + i + 1 + len == t.len();
        }
    }
    false
}
