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

/// How deep nested expressions are followed when testing subsumption (the parser bounds nesting too).
const MAX_DEPTH: usize = 16;

/// The normal form of an expression: its focus concepts replaced by their normal forms (proximal primitives as
/// the focus, every defining attribute), with the expression's own attributes added.
pub(super) fn expression_normal_form(store: &Store, e: &Expression) -> Expression {
    let mut focus = Vec::new();
    let mut groups = Vec::new();
    for &f in &e.focus {
        match index_of(store, f) {
            Some(idx) => {
                let form = normal_form(store, idx);
                focus.extend(form.focus);
                groups.extend(form.groups);
            }
            None => focus.push(f),
        }
    }
    focus.sort_unstable();
    focus.dedup();
    groups.extend(e.groups.iter().cloned());
    Expression { focus, groups }
}

/// Whether `a` is subsumed by `b` (every instance of `a` is one of `b`), structurally over their normal forms,
/// as the Technical Implementation Guide tests it: each focus concept of `b` has a subtype (or itself) among
/// those of `a`; each ungrouped attribute of `b` is refined by an attribute of `a` (a subtype of its type with a
/// value subsumed by its value); each group of `b` by one group of `a`, attribute by attribute.
pub(super) fn subsumed_by(store: &Store, a: &Expression, b: &Expression) -> bool {
    subsumed_at(store, a, b, 0)
}

fn subsumed_at(store: &Store, a: &Expression, b: &Expression, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let (a, b) = (
        expression_normal_form(store, a),
        expression_normal_form(store, b),
    );
    let foci = b
        .focus
        .iter()
        .all(|&fb| a.focus.iter().any(|&fa| is_a_or_self(store, fa, fb)));
    let refines = |(ta, va): &(u64, AttrValue), (tb, vb): &(u64, AttrValue)| {
        is_a_or_self(store, *ta, *tb) && value_subsumed(store, va, vb, depth)
    };
    let all_attributes = || a.groups.iter().flat_map(|g| g.attributes.iter());
    foci && b.groups.iter().all(|gb| {
        if gb.grouped {
            a.groups.iter().any(|ga| {
                gb.attributes
                    .iter()
                    .all(|ab| ga.attributes.iter().any(|aa| refines(aa, ab)))
            })
        } else {
            gb.attributes
                .iter()
                .all(|ab| all_attributes().any(|aa| refines(aa, ab)))
        }
    })
}

fn value_subsumed(store: &Store, a: &AttrValue, b: &AttrValue, depth: usize) -> bool {
    let as_expression = |v: &AttrValue| match v {
        AttrValue::Concept(c) => Some(Expression {
            focus: vec![*c],
            groups: Vec::new(),
        }),
        AttrValue::Nested(e) => Some((**e).clone()),
        AttrValue::Number(_) | AttrValue::Text(_) => None,
    };
    match (a, b) {
        (AttrValue::Concept(x), AttrValue::Concept(y)) => is_a_or_self(store, *x, *y),
        (AttrValue::Number(x), AttrValue::Number(y)) => {
            x == y || matches!((x.parse::<f64>(), y.parse::<f64>()), (Ok(p), Ok(q)) if p == q)
        }
        (AttrValue::Text(x), AttrValue::Text(y)) => x == y,
        _ => match (as_expression(a), as_expression(b)) {
            (Some(ea), Some(eb)) => subsumed_at(store, &ea, &eb, depth + 1),
            _ => false,
        },
    }
}

fn index_of(store: &Store, id: u64) -> Option<ConceptIdx> {
    store.index_of(snomed::SctId::new(id).ok()?)
}

fn is_a_or_self(store: &Store, a: u64, b: u64) -> bool {
    a == b
        || matches!((index_of(store, a), index_of(store, b)), (Some(x), Some(y)) if store.is_a(x, y))
}
