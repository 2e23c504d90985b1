//! FHIR JSON: reader and writer.

mod parse;
mod write;

pub(crate) use parse::{is_decimal, parse, parse_int, prim_str};
pub(crate) use write::write;
