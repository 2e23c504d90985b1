//! FHIR XML: reader (quick-xml, no DTDs) and writer.

mod parse;
mod write;

pub(crate) use parse::parse;
pub(crate) use write::write;
