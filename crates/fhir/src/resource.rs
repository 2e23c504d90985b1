//! [`Resource`]: the public face of the element tree.

use crate::error::{Error, Format};
use crate::model::{Node, Value};
use crate::options::ReadOptions;
use std::io::Read;

/// A FHIR R4 resource, read from and written to JSON, XML or the binary encoding without loss.
///
/// Equality is structural: two resources are equal when every format writes them identically.
#[derive(Clone, Debug, PartialEq)]
pub struct Resource {
    pub(crate) node: Node,
}

impl Resource {
    /// Reads FHIR JSON (strict: unknown properties are errors).
    pub fn from_json(input: &[u8]) -> Result<Resource, Error> {
        Self::from_json_with(input, &ReadOptions::default())
    }

    /// Reads FHIR JSON with options (lenient mode keeps unknown properties).
    pub fn from_json_with(input: &[u8], opts: &ReadOptions) -> Result<Resource, Error> {
        crate::json::parse(input, opts).map(|node| Resource { node })
    }

    /// Reads FHIR XML. DTDs are rejected; entities other than XML's five and character references are errors.
    pub fn from_xml(input: &[u8]) -> Result<Resource, Error> {
        Self::from_xml_with(input, &ReadOptions::default())
    }

    /// Reads FHIR XML with options.
    pub fn from_xml_with(input: &[u8], opts: &ReadOptions) -> Result<Resource, Error> {
        crate::xml::parse(input, opts).map(|node| Resource { node })
    }

    /// Reads the binary (protobuf) encoding.
    pub fn from_protobuf(input: &[u8]) -> Result<Resource, Error> {
        Self::from_protobuf_with(input, &ReadOptions::default())
    }

    /// Reads the binary (protobuf) encoding with options.
    pub fn from_protobuf_with(input: &[u8], opts: &ReadOptions) -> Result<Resource, Error> {
        crate::protobuf::decode(input, opts).map(|node| Resource { node })
    }

    /// Reads any format (detected with [`detect_format`](crate::detect_format)).
    pub fn from_bytes(input: &[u8], opts: &ReadOptions) -> Result<Resource, Error> {
        match crate::detect_format(input) {
            Format::Json => Self::from_json_with(input, opts),
            Format::Xml => Self::from_xml_with(input, opts),
            Format::Protobuf => Self::from_protobuf_with(input, opts),
        }
    }

    /// Reads a whole stream (at most `opts.max_bytes`, so memory stays bounded) in any format.
    pub fn from_reader(reader: impl Read, opts: &ReadOptions) -> Result<Resource, Error> {
        let buf = read_limited(reader, opts.max_bytes)?;
        Self::from_bytes(&buf, opts)
    }

    /// Compact FHIR JSON.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::new();
        crate::json::write(&self.node, false, &mut out);
        out
    }

    /// Pretty FHIR JSON, laid out like the official examples (2-space indent).
    pub fn to_json_pretty(&self) -> Vec<u8> {
        let mut out = Vec::new();
        crate::json::write(&self.node, true, &mut out);
        out
    }

    /// FHIR XML (`pretty`: one element per line, 2-space indent).
    pub fn to_xml(&self, pretty: bool) -> Result<Vec<u8>, Error> {
        crate::xml::write(&self.node, pretty)
    }

    /// The binary (protobuf) encoding: a `thoth.fhir.r4.Resource` message.
    pub fn to_protobuf(&self) -> Result<Vec<u8>, Error> {
        crate::protobuf::encode(&self.node)
    }

    /// Writes in `format`.
    pub fn to_format(&self, format: Format, pretty: bool) -> Result<Vec<u8>, Error> {
        match format {
            Format::Json if pretty => Ok(self.to_json_pretty()),
            Format::Json => Ok(self.to_json()),
            Format::Xml => self.to_xml(pretty),
            Format::Protobuf => self.to_protobuf(),
        }
    }

    /// The resource type (`"Patient"`).
    pub fn resource_type(&self) -> &'static str {
        self.node.ty.def().name
    }

    /// The logical id, if any.
    pub fn id(&self) -> Option<&str> {
        self.primitive("id")
    }

    /// The value of a top-level primitive element as text (`"birthDate"`, `"status"`); decimals lexically.
    pub fn primitive(&self, name: &str) -> Option<&str> {
        let (elem, alt) = self.node.ty.def().find(name)?;
        let f = self
            .node
            .fields
            .iter()
            .find(|f| f.elem == elem && f.alt == alt)?;
        match f.values.first()? {
            Value::Prim(p) => match p.value.as_ref()? {
                crate::model::PrimValue::Str(s) => Some(s),
                _ => None,
            },
            Value::Node(_) => None,
        }
    }

    /// For a Bundle: its entries' resources, in order (empty for other resource types).
    pub fn bundle_entries(&self) -> Vec<Resource> {
        let mut out = Vec::new();
        if self.node.ty != crate::schema::BUNDLE {
            return out;
        }
        for f in &self.node.fields {
            if self.node.elem_def(f).name != "entry" {
                continue;
            }
            for entry in &f.values {
                let Value::Node(entry) = entry else { continue };
                for ef in &entry.fields {
                    if entry.elem_def(ef).name == "resource" {
                        for r in &ef.values {
                            if let Value::Node(n) = r {
                                out.push(Resource { node: n.clone() });
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

/// Reads at most `limit` bytes; more is [`Error::TooLarge`] (the excess is never buffered).
pub(crate) fn read_limited(reader: impl Read, limit: usize) -> Result<Vec<u8>, Error> {
    let mut buf = Vec::new();
    reader.take(limit as u64 + 1).read_to_end(&mut buf)?;
    if buf.len() > limit {
        return Err(Error::TooLarge { limit });
    }
    Ok(buf)
}
