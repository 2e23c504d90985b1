//! The shape of FHIR R4 types, for code that builds resources element by element (the v2-to-FHIR converter):
//! whether an element repeats and what type it holds. A thin public view over the generated tables.

use crate::schema::{Kind, PrimKind, TYPES, TypeId, resource_type};

/// A FHIR R4 type: a resource, a complex data type, a backbone element or a primitive.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct TypeShape(TypeId);

/// One element of a type, as named in JSON (a choice element by its typed name, `valueQuantity`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ElementShape {
    /// The element repeats (a JSON array).
    pub many: bool,
    /// The element's type (for a choice element, the alternative its name selects).
    pub ty: TypeShape,
    /// For a choice element, its name without the type (`value` for `valueQuantity`): only one alternative may
    /// be present.
    pub choice: Option<&'static str>,
}

/// How a primitive is written in JSON.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum JsonKind {
    /// An object (complex type, backbone element or resource).
    Object,
    /// `true` / `false`.
    Boolean,
    /// A JSON number (integer, decimal and their relatives).
    Number,
    /// A JSON string (every other primitive).
    String,
}

impl TypeShape {
    /// A concrete resource type by name (`Patient`).
    pub fn resource(name: &str) -> Option<TypeShape> {
        resource_type(name).map(TypeShape)
    }

    /// Any type by its definition name: `Identifier`, `dateTime`, `Patient`, `Patient.contact`.
    /// A linear scan: meant for compiling tables once, not for hot paths.
    pub fn named(name: &str) -> Option<TypeShape> {
        TYPES
            .iter()
            .position(|t| t.name == name)
            .map(|i| TypeShape(TypeId(i as u16)))
    }

    /// The type numbered `index` (see [`TypeShape::index`]), if there is one: for building tables over all types.
    pub fn from_index(index: usize) -> Option<TypeShape> {
        let n = u16::try_from(index).ok()?;
        (index < TYPES.len()).then_some(TypeShape(TypeId(n)))
    }

    /// The type's number, dense from 0: an index for tables keyed by type, looked up without hashing.
    pub fn index(self) -> usize {
        usize::from(self.0.0)
    }

    /// The definition name of the type.
    pub fn name(self) -> &'static str {
        self.0.def().name
    }

    /// The type is a resource.
    pub fn is_resource(self) -> bool {
        matches!(self.0.def().kind, Kind::Resource)
    }

    /// How a value of this type is written in JSON.
    pub fn json_kind(self) -> JsonKind {
        match self.0.def().kind {
            Kind::Primitive(PrimKind::Boolean) => JsonKind::Boolean,
            Kind::Primitive(PrimKind::Integer | PrimKind::Decimal) => JsonKind::Number,
            Kind::Primitive(_) => JsonKind::String,
            _ => JsonKind::Object,
        }
    }

    /// An element of this type by its JSON name.
    pub fn element(self, json_name: &str) -> Option<ElementShape> {
        let def = self.0.def();
        let (e, alt) = def.find(json_name)?;
        let el = &def.elements[e as usize];
        Some(ElementShape {
            many: el.many,
            ty: TypeShape(el.types[alt as usize]),
            choice: el.choice.then_some(el.name),
        })
    }

    /// The elements of this type that are not choices, in the specification's order: (JSON name, shape).
    pub fn elements(self) -> impl Iterator<Item = (&'static str, ElementShape)> {
        self.0.def().elements.iter().filter(|e| !e.choice).map(|e| {
            (
                e.name,
                ElementShape {
                    many: e.many,
                    ty: TypeShape(e.types[0]),
                    choice: None,
                },
            )
        })
    }

    /// The element names of a choice element (`value` → `valueString`, `valueQuantity`, ...), or `None` when
    /// `base` is not a choice element of this type.
    pub fn choice_names(self, base: &str) -> Option<Vec<String>> {
        let def = self.0.def();
        let el = def.elements.iter().find(|e| e.name == base && e.choice)?;
        Some(
            (0..el.types.len())
                .map(|alt| crate::schema::prop_name(el, alt as u8).into_owned())
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_is_found_by_its_index_and_no_other_index_names_one() {
        let all: Vec<TypeShape> = (0..).map_while(TypeShape::from_index).collect();
        assert_eq!(all.len(), TYPES.len());
        for (i, t) in all.iter().enumerate() {
            assert_eq!(t.index(), i);
            assert_eq!(TypeShape::named(t.name()), Some(*t), "{}", t.name());
        }
        assert_eq!(TypeShape::from_index(TYPES.len()), None);
        assert_eq!(TypeShape::from_index(usize::MAX), None);
    }
}
