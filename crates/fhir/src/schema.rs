//! The shape of the generated definition tables (`generated/schema.rs`) and lookups over them.
//!
//! One [`TypeDef`] per FHIR type (primitive, complex, resource, backbone element): its elements in the
//! spec's order. The element tree, the three formats and the `.proto` are all driven by these tables.

#[path = "generated/schema.rs"]
#[rustfmt::skip]
mod tables;

pub(crate) use tables::{BUNDLE, EXTENSION, RESOURCES, TYPES};

/// Index of a type in the generated table.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct TypeId(pub(crate) u16);

/// What a type is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Primitive(PrimKind),
    Complex,
    Resource,
    Backbone,
    /// `Resource` as an element type: any concrete resource (contained, Bundle.entry.resource).
    AnyResource,
}

/// How a primitive's value is written in JSON and stored in the binary encoding.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum PrimKind {
    Boolean,
    /// integer, positiveInt, unsignedInt: a JSON number, a protobuf sint64.
    Integer,
    /// A JSON number whose lexical form is kept.
    Decimal,
    /// Every other primitive: a JSON string.
    String,
    /// The narrative `div`: a string in JSON, embedded XHTML in XML, never extended.
    Xhtml,
    /// `Element.id` and `Extension.url`: a plain string, an XML attribute, never extended.
    SystemString,
}

/// Where an element goes in XML.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Repr {
    Element,
    Attr,
}

/// One element of a type.
#[derive(Debug)]
pub(crate) struct ElemDef {
    /// JSON/XML name without the choice suffix.
    pub(crate) name: &'static str,
    #[allow(dead_code)] // kept for validation, which is not part of parsing
    pub(crate) min: u32,
    pub(crate) many: bool,
    pub(crate) choice: bool,
    pub(crate) repr: Repr,
    /// Allowed types; more than one only for choice elements.
    pub(crate) types: &'static [TypeId],
    /// Protobuf field number per type alternative.
    pub(crate) tags: &'static [u32],
}

/// One type.
#[derive(Debug)]
pub(crate) struct TypeDef {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    pub(crate) elements: &'static [ElemDef],
    /// Every JSON property name (choice names expanded), sorted: (name, element, alternative).
    pub(crate) lookup: &'static [(&'static str, u16, u8)],
    /// Protobuf field number -> (element, alternative); `u16::MAX` for none.
    pub(crate) by_tag: &'static [(u16, u8)],
}

impl TypeId {
    pub(crate) fn def(self) -> &'static TypeDef {
        &TYPES[self.0 as usize]
    }

    /// The primitive kind, if this is a primitive type.
    pub(crate) fn prim(self) -> Option<PrimKind> {
        match self.def().kind {
            Kind::Primitive(p) => Some(p),
            _ => None,
        }
    }

    /// A primitive that may carry `id` and extensions (everything but xhtml and plain strings).
    pub(crate) fn extensible_prim(self) -> bool {
        matches!(self.prim(), Some(p) if p != PrimKind::Xhtml && p != PrimKind::SystemString)
    }
}

impl TypeDef {
    /// Finds a JSON/XML property name: (element index, type alternative).
    pub(crate) fn find(&self, name: &str) -> Option<(u16, u8)> {
        self.lookup
            .binary_search_by(|(n, _, _)| (*n).cmp(name))
            .ok()
            .map(|i| (self.lookup[i].1, self.lookup[i].2))
    }

    /// The protobuf field number's meaning: (element, alternative, is the primitive companion).
    pub(crate) fn by_tag(&self, tag: u32) -> Option<(u16, u8, bool)> {
        let get = |t: u32| {
            self.by_tag
                .get(t as usize)
                .copied()
                .filter(|(e, _)| *e != u16::MAX)
        };
        if let Some((e, a)) = get(tag) {
            return Some((e, a, false));
        }
        let (e, a) = get(tag.checked_sub(1)?)?;
        self.elements[e as usize].types[a as usize]
            .extensible_prim()
            .then_some((e, a, true))
    }
}

/// The JSON/XML property name of an element with a given type alternative (`valueQuantity`).
pub(crate) fn prop_name(e: &ElemDef, alt: u8) -> std::borrow::Cow<'static, str> {
    if !e.choice {
        return std::borrow::Cow::Borrowed(e.name);
    }
    let t = e.types[alt as usize].def().name;
    let mut s = String::with_capacity(e.name.len() + t.len());
    s.push_str(e.name);
    let mut c = t.chars();
    if let Some(f) = c.next() {
        s.extend(f.to_uppercase());
        s.push_str(c.as_str());
    }
    std::borrow::Cow::Owned(s)
}

/// Looks up a concrete resource type by name.
pub(crate) fn resource_type(name: &str) -> Option<TypeId> {
    RESOURCES
        .binary_search_by(|(n, _)| (*n).cmp(name))
        .ok()
        .map(|i| RESOURCES[i].1)
}

/// The field number of a resource type in the protobuf `Resource` message.
pub(crate) fn resource_tag(ty: TypeId) -> u32 {
    RESOURCES
        .iter()
        .position(|(_, t)| *t == ty)
        .map_or(0, |p| p as u32 + 1)
}
