//! The JSON text of a SNOMED CT `$lookup` answer, written straight from the store for the fast path: the same
//! bytes the general path's `serde_json::Value` gives (`tests/it/fast.rs` compares them over the test edition),
//! without a `Value`, a compiled code system or a string per property.

use super::{SCT, SnomedProvider};
use crate::fast::{json_number, json_string, json_string_of};
use snomed::{ConceptIdx, DescriptionKind, consts};
use std::cmp::Ordering;

/// One property of the answer, before it is written.
enum Property {
    /// A defining attribute: its type and value concepts.
    Attribute {
        type_id: u64,
        type_idx: Option<ConceptIdx>,
        value: u64,
        value_idx: Option<ConceptIdx>,
    },
    /// `parent`, `child` or `module`: a concept named by a fixed code.
    Related {
        code: &'static str,
        value: u64,
        value_idx: Option<ConceptIdx>,
    },
    EffectiveTime,
    Inactive,
}

impl Property {
    /// The property's code and value as the general path sorts them (both as text; `None` is no value).
    fn sort_key(&self) -> (Code, Option<u64>) {
        match *self {
            Property::Attribute { type_id, value, .. } => (Code::Id(type_id), Some(value)),
            Property::Related { code, value, .. } => (Code::Name(code), Some(value)),
            Property::EffectiveTime => (Code::Name("effectiveTime"), None),
            Property::Inactive => (Code::Name("inactive"), None),
        }
    }
}

/// A property code: a concept id (an attribute) or a name.
#[derive(Clone, Copy)]
enum Code {
    Id(u64),
    Name(&'static str),
}

/// The order of `a` and `b` written in decimal and compared as text ("12" < "120" < "13").
fn decimal_text_order(a: u64, b: u64) -> Ordering {
    let (da, db) = (
        a.checked_ilog10().unwrap_or(0),
        b.checked_ilog10().unwrap_or(0),
    );
    // Scaled to the same number of digits, the numbers compare as their texts do; a tie means one text is a
    // prefix of the other, and the shorter sorts first.
    let wa = u128::from(a) * 10u128.pow(db.saturating_sub(da));
    let wb = u128::from(b) * 10u128.pow(da.saturating_sub(db));
    wa.cmp(&wb).then(da.cmp(&db))
}

fn code_order(a: Code, b: Code) -> Ordering {
    match (a, b) {
        (Code::Id(x), Code::Id(y)) => decimal_text_order(x, y),
        // Digits sort before letters.
        (Code::Id(_), Code::Name(_)) => Ordering::Less,
        (Code::Name(_), Code::Id(_)) => Ordering::Greater,
        (Code::Name(x), Code::Name(y)) => x.cmp(y),
    }
}

fn value_order(a: Option<u64>, b: Option<u64>) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => decimal_text_order(x, y),
        (x, y) => x.is_some().cmp(&y.is_some()),
    }
}

impl SnomedProvider {
    /// The `$lookup` answer of the concept `code` (a plain id) in the default language, or None when the
    /// code is not a concept of this edition.
    pub(super) fn lookup_answer(&self, code: &str) -> Option<Vec<u8>> {
        let store = &*self.store;
        let focus = self.idx(code)?;
        let concept = store.concept(focus);
        let mut descs: Vec<_> = store
            .descriptions(focus)
            .filter(|d| d.active && d.kind != DescriptionKind::Definition)
            .collect();
        descs.sort_by_key(|d| d.id.get());
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(
            br#"{"resourceType":"Parameters","parameter":[{"name":"abstract","valueBoolean":false},{"name":"code","valueCode":"#,
        );
        json_string(&mut out, code);
        out.push(b'}');
        for d in &descs {
            out.extend_from_slice(
                br#",{"name":"designation","part":[{"name":"language","valueCode":"#,
            );
            json_string(&mut out, d.language);
            out.extend_from_slice(
                br#"},{"name":"use","valueCoding":{"system":"http://snomed.info/sct","code":""#,
            );
            json_number(&mut out, d.type_id.get());
            out.extend_from_slice(if d.kind == DescriptionKind::Fsn {
                br#"","display":"Fully specified name"}},{"name":"value","valueString":"#.as_slice()
            } else {
                br#"","display":"Synonym"}},{"name":"value","valueString":"#.as_slice()
            });
            json_string(&mut out, d.term);
            out.extend_from_slice(b"}]}");
        }
        let mut attributes: Vec<(u64, u64, Option<ConceptIdx>, Option<ConceptIdx>)> = store
            .relationships(focus)
            .filter(|r| r.is_inferred_active() && r.type_id != consts::IS_A)
            .map(|r| {
                (
                    r.type_id.get(),
                    r.destination_id.get(),
                    r.type_idx,
                    r.destination,
                )
            })
            .collect();
        attributes.sort_unstable();
        attributes.dedup();
        let related = |code: &'static str, idx: ConceptIdx| Property::Related {
            code,
            value: store.id_of(idx).get(),
            value_idx: Some(idx),
        };
        let module = concept.module.get();
        let mut properties: Vec<Property> = attributes
            .into_iter()
            .map(
                |(type_id, value, type_idx, value_idx)| Property::Attribute {
                    type_id,
                    type_idx,
                    value,
                    value_idx,
                },
            )
            .chain(store.parents(focus).iter().map(|&p| related("parent", p)))
            .chain(store.children(focus).iter().map(|&c| related("child", c)))
            .chain([
                Property::Related {
                    code: "module",
                    value: module,
                    value_idx: self.idx_of_id(module),
                },
                Property::EffectiveTime,
                Property::Inactive,
            ])
            .collect();
        properties.sort_by(|a, b| {
            let ((ca, va), (cb, vb)) = (a.sort_key(), b.sort_key());
            code_order(ca, cb).then_with(|| value_order(va, vb))
        });
        // Every display the answer names, read together (see `Store::preferred_terms`), in the order written.
        let mut wanted = Vec::with_capacity(2 * properties.len() + 1);
        wanted.push(focus);
        for p in &properties {
            match *p {
                Property::Attribute {
                    type_idx,
                    value_idx,
                    ..
                } => wanted.extend(type_idx.into_iter().chain(value_idx)),
                Property::Related { value_idx, .. } => wanted.extend(value_idx),
                Property::EffectiveTime | Property::Inactive => {}
            }
        }
        let mut terms = store.default_terms_of(&wanted).into_iter();
        let mut term = |idx: Option<ConceptIdx>| idx.and_then(|_| terms.next().flatten());

        out.extend_from_slice(br#",{"name":"display","valueString":"#);
        json_string(&mut out, term(Some(focus)).unwrap_or_default());
        out.extend_from_slice(br#"},{"name":"name","valueString":"#);
        json_string_of(&mut out, &[SCT, "|", &self.version]);
        out.push(b'}');
        for p in &properties {
            out.extend_from_slice(br#",{"name":"property","part":[{"name":"code","valueCode":""#);
            match *p {
                Property::Attribute {
                    type_id,
                    type_idx,
                    value,
                    value_idx,
                } => {
                    json_number(&mut out, type_id);
                    out.push(b'"');
                    out.push(b'}');
                    if let Some(d) = term(type_idx) {
                        out.extend_from_slice(br#",{"name":"code-display","valueString":"#);
                        json_string(&mut out, d);
                        out.push(b'}');
                    }
                    related_value(&mut out, value, term(value_idx));
                }
                Property::Related {
                    code,
                    value,
                    value_idx,
                } => {
                    out.extend_from_slice(code.as_bytes());
                    out.extend_from_slice(b"\"}");
                    related_value(&mut out, value, term(value_idx));
                }
                Property::EffectiveTime => {
                    out.extend_from_slice(br#"effectiveTime"},{"name":"value","valueDateTime":"#);
                    json_string(&mut out, &snomed::format_date(concept.effective_time));
                    out.extend_from_slice(b"}]}");
                }
                Property::Inactive => {
                    out.extend_from_slice(if concept.active {
                        br#"inactive"},{"name":"value","valueBoolean":false}]}"#.as_slice()
                    } else {
                        br#"inactive"},{"name":"value","valueBoolean":true}]}"#.as_slice()
                    });
                }
            }
        }
        out.extend_from_slice(
            br#",{"name":"system","valueUri":"http://snomed.info/sct"},{"name":"version","valueString":"#,
        );
        json_string(&mut out, &self.version);
        out.extend_from_slice(b"}]}");
        Some(out)
    }
}

/// The rest of a concept-valued property: the value concept's display when it has one, then its id.
fn related_value(out: &mut Vec<u8>, value: u64, display: Option<&str>) {
    if let Some(d) = display {
        out.extend_from_slice(br#",{"name":"description","valueString":"#);
        json_string(out, d);
        out.push(b'}');
    }
    out.extend_from_slice(br#",{"name":"value","valueCode":""#);
    json_number(out, value);
    out.extend_from_slice(br#""}]}"#);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_sort_as_their_decimal_texts() {
        let mut ns = vec![
            13u64,
            120,
            12,
            0,
            9,
            116680003,
            1166800030,
            363698007,
            u64::MAX,
            10,
            1,
        ];
        let mut texts: Vec<String> = ns.iter().map(u64::to_string).collect();
        texts.sort();
        ns.sort_by(|a, b| decimal_text_order(*a, *b));
        assert_eq!(ns.iter().map(u64::to_string).collect::<Vec<_>>(), texts);
    }
}
