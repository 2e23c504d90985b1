//! [`Resource`]: the public face of the element tree.

use crate::error::{Error, Format};
use crate::model::{NodeId, PrimValue, Tree, Value};
use crate::options::ReadOptions;
use std::io::Read;
use std::sync::Arc;

/// A FHIR R4 resource, read from and written to JSON, XML or the binary encoding without loss.
///
/// Equality is structural: two resources are equal when every format writes them identically. Cloning is
/// cheap (the tree is shared), and so is taking a Bundle's entries apart: an entry shares the Bundle's tree,
/// which stays in memory as long as any of them does.
#[derive(Clone)]
pub struct Resource {
    pub(crate) tree: Arc<Tree>,
    pub(crate) node: NodeId,
}

impl PartialEq for Resource {
    fn eq(&self, other: &Resource) -> bool {
        self.tree.same(self.node, &other.tree, other.node)
    }
}

impl std::fmt::Debug for Resource {
    /// Compact JSON, which shows every part of the tree.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Resource({})", String::from_utf8_lossy(&self.to_json()))
    }
}

impl Resource {
    fn new((tree, node): (Tree, NodeId)) -> Resource {
        Resource {
            tree: Arc::new(tree),
            node,
        }
    }
}

impl Resource {
    /// Reads FHIR JSON (strict: unknown properties are errors).
    pub fn from_json(input: &[u8]) -> Result<Resource, Error> {
        Self::from_json_with(input, &ReadOptions::default())
    }

    /// Reads FHIR JSON with options (lenient mode keeps unknown properties).
    pub fn from_json_with(input: &[u8], opts: &ReadOptions) -> Result<Resource, Error> {
        crate::json::parse(input, opts).map(Resource::new)
    }

    /// Reads FHIR XML. DTDs are rejected; entities other than XML's five and character references are errors.
    pub fn from_xml(input: &[u8]) -> Result<Resource, Error> {
        Self::from_xml_with(input, &ReadOptions::default())
    }

    /// Reads FHIR XML with options.
    pub fn from_xml_with(input: &[u8], opts: &ReadOptions) -> Result<Resource, Error> {
        crate::xml::parse(input, opts).map(Resource::new)
    }

    /// Reads the binary (protobuf) encoding.
    pub fn from_protobuf(input: &[u8]) -> Result<Resource, Error> {
        Self::from_protobuf_with(input, &ReadOptions::default())
    }

    /// Reads the binary (protobuf) encoding with options.
    pub fn from_protobuf_with(input: &[u8], opts: &ReadOptions) -> Result<Resource, Error> {
        crate::protobuf::decode(input, opts).map(Resource::new)
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
        crate::json::write(&self.tree, self.node, false, &mut out);
        out
    }

    /// Pretty FHIR JSON, laid out like the official examples (2-space indent).
    pub fn to_json_pretty(&self) -> Vec<u8> {
        let mut out = Vec::new();
        crate::json::write(&self.tree, self.node, true, &mut out);
        out
    }

    /// FHIR XML (`pretty`: one element per line, 2-space indent).
    pub fn to_xml(&self, pretty: bool) -> Result<Vec<u8>, Error> {
        crate::xml::write(&self.tree, self.node, pretty)
    }

    /// The binary (protobuf) encoding: a `thoth.fhir.r4.Resource` message.
    pub fn to_protobuf(&self) -> Result<Vec<u8>, Error> {
        crate::protobuf::encode(&self.tree, self.node)
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
        self.tree.node(self.node).ty.def().name
    }

    /// The logical id, if any.
    pub fn id(&self) -> Option<&str> {
        self.primitive("id")
    }

    /// The value of a top-level primitive element as text (`"birthDate"`, `"status"`); decimals lexically.
    pub fn primitive(&self, name: &str) -> Option<&str> {
        let t = &*self.tree;
        let node = t.node(self.node);
        let (elem, alt) = node.ty.def().find(name)?;
        let f = t
            .fields(node)
            .iter()
            .find(|f| f.elem == elem && f.alt == alt)?;
        match t.values(f).first()? {
            Value::Prim(p) => match p.value? {
                PrimValue::Str(s) => Some(t.str(s)),
                _ => None,
            },
            Value::Node(_) => None,
        }
    }

    /// The primitive values whose text their FHIR type does not allow (`"birthDate": "notadate"`, a day that
    /// does not exist, an `id` with a space), with their paths; empty for a resource whose values are all valid.
    /// Reading does not check them, so that a resource converts losslessly; ask when validity matters.
    pub fn invalid_primitives(&self) -> Vec<crate::PrimitiveIssue> {
        let mut out = Vec::new();
        let mut path = self.resource_type().to_string();
        crate::primitives::check(&self.tree, self.node, &mut path, &mut out);
        out
    }

    /// For a Bundle: its entries' resources, in order (empty for other resource types). They share the
    /// Bundle's tree: nothing is copied.
    pub fn bundle_entries(&self) -> Vec<Resource> {
        let t = &*self.tree;
        let node = t.node(self.node);
        let mut out = Vec::new();
        if node.ty != crate::schema::BUNDLE {
            return out;
        }
        for f in t.fields(node) {
            if node.elem_def(f).name != "entry" {
                continue;
            }
            for entry in t.values(f) {
                let Value::Node(entry) = entry else { continue };
                let entry = t.node(*entry);
                for ef in t.fields(entry) {
                    if entry.elem_def(ef).name == "resource" {
                        for r in t.values(ef) {
                            if let Value::Node(n) = r {
                                out.push(Resource {
                                    tree: Arc::clone(&self.tree),
                                    node: *n,
                                });
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
