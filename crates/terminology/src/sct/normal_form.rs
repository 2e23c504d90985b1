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

    // (type id, sort key of the value, value) per role group; group 0 is ungrouped.
    let mut groups: BTreeMap<u32, Vec<(u64, String, AttrValue)>> = BTreeMap::new();
    for r in store
        .relationships(idx)
        .filter(|r| r.is_inferred_active() && r.type_id != consts::IS_A)
    {
        let value = r.destination_id.get();
        groups.entry(r.group).or_default().push((
            r.type_id.get(),
            value.to_string(),
            AttrValue::Concept(value),
        ));
    }
    for v in store
        .concrete_values(idx)
        .filter(|v| v.active && v.characteristic != consts::STATED_RELATIONSHIP)
    {
        let value = match v.raw.strip_prefix('#') {
            Some(number) => AttrValue::Number(number.to_string()),
            None => AttrValue::Text(v.raw.trim_matches('"').to_string()),
        };
        groups
            .entry(v.group)
            .or_default()
            .push((v.type_id.get(), v.raw.to_string(), value));
    }
    let mut ungrouped = None;
    let mut grouped: Vec<Vec<(u64, String, AttrValue)>> = Vec::new();
    for (group, mut attributes) in groups {
        attributes.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        attributes.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        if group == 0 {
            ungrouped = Some(attributes);
        } else {
            grouped.push(attributes);
        }
    }
    // Group numbers carry no meaning: groups are ordered by what they hold.
    let key = |g: &Vec<(u64, String, AttrValue)>| -> Vec<(u64, String)> {
        g.iter().map(|(t, v, _)| (*t, v.clone())).collect()
    };
    grouped.sort_by_key(key);
    grouped.dedup_by(|a, b| key(a) == key(b));
    let strip = |g: Vec<(u64, String, AttrValue)>| g.into_iter().map(|(t, _, v)| (t, v)).collect();
    let groups = ungrouped
        .into_iter()
        .map(|g| Group {
            grouped: false,
            attributes: strip(g),
        })
        .chain(grouped.into_iter().map(|g| Group {
            grouped: true,
            attributes: strip(g),
        }))
        .collect();
    Expression { focus, groups }
}
