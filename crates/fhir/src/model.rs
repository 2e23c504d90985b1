//! The element tree: one generic node type driven by the generated schema tables.
//!
//! A [`Node`] is an instance of a complex type, backbone element or resource; its fields are kept in the
//! spec's element order, so every writer can walk them front to back. Primitive values keep what each format
//! can say: the lexical form of decimals, an `id`, extensions, and "no value" (JSON's `null` padding).

use crate::schema::{ElemDef, TypeId};
use crate::text::Str;

/// Element index of a property kept verbatim by the lenient JSON parser (values: name, raw JSON text).
pub(crate) const UNKNOWN_ELEM: u16 = u16::MAX;

/// An instance of a complex type, backbone element or resource.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub(crate) ty: TypeId,
    /// Sorted by element index (unknown properties last).
    pub(crate) fields: Vec<Field>,
}

/// The values of one element (one alternative of a choice element).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Field {
    pub(crate) elem: u16,
    pub(crate) alt: u8,
    /// Inline when there is one value, as for most elements: no allocation per field.
    pub(crate) values: Values,
}

/// The values of a field.
pub(crate) type Values = smallvec::SmallVec<[Value; 1]>;

/// One value of an element.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Prim(Prim),
    /// A complex type, backbone element or (for `Resource`-typed elements) a resource.
    Node(Node),
}

/// A primitive value with its optional id and extensions.
#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct Prim {
    pub(crate) value: Option<PrimValue>,
    pub(crate) extra: Option<Box<PrimExtra>>,
}

/// The rarely present parts of a primitive, boxed to keep [`Prim`] small.
#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct PrimExtra {
    pub(crate) id: Option<Box<str>>,
    pub(crate) extension: Vec<Node>,
}

/// A primitive's value. Decimals are `Str` holding their lexical form.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum PrimValue {
    Bool(bool),
    Int(i64),
    Str(Str),
}

impl Node {
    pub(crate) fn new(ty: TypeId) -> Node {
        Node {
            ty,
            fields: Vec::new(),
        }
    }

    /// The field of element `elem`, creating it in element order; errors if another choice alternative is set.
    pub(crate) fn field_mut(&mut self, elem: u16, alt: u8) -> Result<&mut Field, &'static str> {
        // Formats write in element order, so the field is almost always the last one or new.
        let pos = match self.fields.last() {
            // Unknown properties (lenient JSON) come last, in the order read.
            _ if elem == UNKNOWN_ELEM => self.fields.len(),
            Some(f) if f.elem < elem => self.fields.len(),
            Some(f) if f.elem == elem => self.fields.len() - 1,
            _ => self.fields.partition_point(|f| f.elem < elem),
        };
        if pos < self.fields.len() && self.fields[pos].elem == elem && elem != UNKNOWN_ELEM {
            if self.fields[pos].alt != alt {
                return Err("more than one type given for a choice element");
            }
        } else {
            self.fields.insert(
                pos,
                Field {
                    elem,
                    alt,
                    values: Values::new(),
                },
            );
        }
        Ok(&mut self.fields[pos])
    }

    /// The element definition of a field.
    pub(crate) fn elem_def(&self, f: &Field) -> &'static ElemDef {
        &self.ty.def().elements[f.elem as usize]
    }
}

impl Prim {
    /// The value as text, as JSON or XML writes it.
    pub(crate) fn text(&self) -> Option<std::borrow::Cow<'_, str>> {
        self.value.as_ref().map(PrimValue::text)
    }
}

impl PrimValue {
    pub(crate) fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            PrimValue::Bool(b) => std::borrow::Cow::Borrowed(if *b { "true" } else { "false" }),
            PrimValue::Int(i) => std::borrow::Cow::Owned(i.to_string()),
            PrimValue::Str(s) => std::borrow::Cow::Borrowed(s),
        }
    }
}
