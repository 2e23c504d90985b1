//! The necessary normal form of a concept: what SNOMED CT in FHIR calls the `normalForm` (with terms) and
//! `normalFormTerse` (ids only) properties of `$lookup`.
//!
//! It is the long normal form of the SNOMED CT Technical Implementation Guide, read from the inferred
//! (distribution normal form) relationships: the focus is the concept itself when it is primitive, else its
//! proximal primitive supertypes (the primitive ancestors that no other primitive ancestor specialises); the
//! refinement is every active inferred defining attribute, concrete values included, ungrouped ones first and
//! then the role groups, each sorted so that the same definition always prints the same text.

use super::expression::{AttrValue, Expression, Group};
use snomed::{ConceptIdx, Store, consts};
use std::collections::BTreeMap;

/// The normal form of the concept at `idx`.
pub(super) fn normal_form(store: &Store, idx: ConceptIdx) -> Expression {
    let primitive = |i: ConceptIdx| store.concept(i).definition_status != consts::DEFINED;
    let mut focus: Vec<u64> = if primitive(idx) {
        vec![store.id_of(idx).get()]
    } else {
        let primitives: Vec<ConceptIdx> = store
            .ancestors(idx)
            .iter()
            .copied()
            .filter(|&a| primitive(a))
            .collect();
        // Ancestor lists are sorted, so "q specialises p" is a binary search in q's ancestors.
        primitives
            .iter()
            .filter(|&&p| {
                !primitives
                    .iter()
                    .any(|&q| q != p && store.ancestors(q).binary_search(&p).is_ok())
            })
            .map(|&p| store.id_of(p).get())
            .collect()
    };
    focus.sort_unstable();

    // (type id, value as RF2 writes it: a concept id, `#` and a number, or a quoted string) per role group;
    // group 0 is ungrouped. Sorting these text pairs is what makes the printed form canonical.
    let mut groups: BTreeMap<u32, Vec<(u64, String)>> = BTreeMap::new();
    for r in store
        .relationships(idx)
        .filter(|r| r.is_inferred_active() && r.type_id != consts::IS_A)
    {
        groups
            .entry(r.group)
            .or_default()
            .push((r.type_id.get(), r.destination_id.get().to_string()));
    }
    for v in store
        .concrete_values(idx)
        .filter(|v| v.active && v.characteristic != consts::STATED_RELATIONSHIP)
    {
        groups
            .entry(v.group)
            .or_default()
            .push((v.type_id.get(), v.raw.to_string()));
    }
    let mut ungrouped = None;
    let mut grouped = Vec::new();
    for (group, mut attributes) in groups {
        attributes.sort_unstable();
        attributes.dedup();
        if group == 0 {
            ungrouped = Some(attributes);
        } else {
            grouped.push(attributes);
        }
    }
    // Group numbers carry no meaning: groups are ordered by what they hold.
    grouped.sort_unstable();
    grouped.dedup();
    let group = |grouped: bool, attributes: Vec<(u64, String)>| Group {
        grouped,
        attributes: attributes
            .into_iter()
            .map(|(t, raw)| (t, attribute_value(&raw)))
            .collect(),
    };
    let groups = ungrouped
        .into_iter()
        .map(|g| group(false, g))
        .chain(grouped.into_iter().map(|g| group(true, g)))
        .collect();
    Expression { focus, groups }
}

/// An attribute value as RF2 writes it, as the expression writer prints it.
fn attribute_value(raw: &str) -> AttrValue {
    if let Some(number) = raw.strip_prefix('#') {
        AttrValue::Number(number.to_string())
    } else if raw.starts_with('"') {
        AttrValue::Text(raw.trim_matches('"').to_string())
    } else {
        // A destination id, written from a u64 above.
        AttrValue::Concept(raw.parse().unwrap_or_default())
    }
}
