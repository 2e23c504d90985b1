//! The JSON text of a SNOMED CT `$lookup` answer, written straight from the store for the fast path: the same
//! bytes the general path's `serde_json::Value` gives (`tests/it/fast.rs` compares them over the test edition),
//! without a `Value`, a compiled code system or a string per property.

use super::{SCT, SnomedProvider};
use crate::fast::{json_number, json_string, json_string_of};
use snomed::{ConceptIdx, DescriptionKind, consts};

/// One property of the answer, before it is written, with the displays it names.
enum Property<'s> {
    /// A defining attribute: its type and value concepts.
    Attribute {
        type_id: u64,
        type_display: Option<&'s str>,
        value: u64,
        value_display: Option<&'s str>,
    },
    /// `parent`, `child` or `module`: a concept named by a fixed code.
    Related {
        code: Named,
        value: u64,
        display: Option<&'s str>,
    },
    EffectiveTime,
    Inactive,
}

/// The properties with a name for a code, declared in the order of their names as text (a test checks).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Named {
    Child,
    EffectiveTime,
    Inactive,
    Module,
    Parent,
}

impl Named {
    fn code(self) -> &'static str {
        match self {
            Named::Child => "child",
            Named::EffectiveTime => "effectiveTime",
            Named::Inactive => "inactive",
            Named::Module => "module",
            Named::Parent => "parent",
        }
    }
}

impl Property<'_> {
    /// Where the general path puts the property: by code, then by value, both compared as text (a concept id as
    /// its decimal digits, which sort before the letters of a name; no value before any value). Integers only,
    /// so that sorting compares no strings.
    fn order(&self) -> PropertyOrder {
        let (code, value) = match *self {
            Property::Attribute { type_id, value, .. } => (Err(type_id), Some(value)),
            Property::Related { code, value, .. } => (Ok(code), Some(value)),
            Property::EffectiveTime => (Ok(Named::EffectiveTime), None),
            Property::Inactive => (Ok(Named::Inactive), None),
        };
        let code = match code {
            Err(id) => (None, decimal_text_key(id)),
            Ok(name) => (Some(name), 0),
        };
        (code, value.map(decimal_text_key))
    }
}

/// ((the name code, or None for an id code; the id code's [`decimal_text_key`]), the value's key)
type PropertyOrder = ((Option<Named>, u128), Option<u128>);

/// A key that orders numbers as their decimal texts do ("12" < "120" < "13"): the digits scaled to twenty places,
/// then the number of digits, so that a text sorts before the longer texts it begins.
fn decimal_text_key(n: u64) -> u128 {
    let digits = n.checked_ilog10().unwrap_or(0);
    ((u128::from(n) * 10u128.pow(19 - digits)) << 5) | u128::from(digits)
}

impl SnomedProvider {
    /// The `$lookup` answer of the concept `code` (a plain id) in the default language, or None when the
    /// code is not a concept of this edition.
    pub(super) fn lookup_answer(&self, code: &str) -> Option<Vec<u8>> {
        let store = &*self.store;
        let focus = self.idx(code)?;
        store.prefetch_concept(focus);
        let concept = store.concept(focus);
        let attributes: Vec<(u64, u64, Option<ConceptIdx>, Option<ConceptIdx>)> = {
            let mut rows: Vec<_> = store
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
            rows.sort_unstable();
            rows.dedup();
            rows
        };
        let (parents, children) = (store.parents(focus), store.children(focus));
        let module = concept.module.get();
        let module_idx = self.idx_of_id(module);
        // Every concept the answer names, read together (see `Store::ids_and_default_terms`): the focus, then
        // each attribute's type and value, the parents, the children and the module.
        let mut named =
            Vec::with_capacity(1 + 2 * attributes.len() + parents.len() + children.len() + 1);
        named.push(focus);
        for &(_, _, type_idx, value_idx) in &attributes {
            named.extend(type_idx.into_iter().chain(value_idx));
        }
        named.extend_from_slice(parents);
        named.extend_from_slice(children);
        named.extend(module_idx);
        let cards = store.ids_and_default_terms(&named);
        // The designations after the cards: their terms and the cards then load together.
        let mut descs: Vec<_> = store
            .descriptions(focus)
            .filter(|d| d.active && d.kind != DescriptionKind::Definition)
            .collect();
        descs.sort_by_key(|d| d.id.get());
        // Answers run to about 4 kB, more for a concept with many children.
        let mut out = Vec::with_capacity(8192);
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
        let mut cards = cards.into_iter();
        let mut next_display = |idx: Option<ConceptIdx>| idx.and_then(|_| cards.next()?.1);
        let focus_display = next_display(Some(focus));
        // Each with its place computed once (no two properties have the same code and value).
        let mut ordered: Vec<(PropertyOrder, Property)> = Vec::with_capacity(named.len() + 2);
        let mut add = |p| ordered.push((Property::order(&p), p));
        for (type_id, value, type_idx, value_idx) in attributes {
            add(Property::Attribute {
                type_id,
                type_display: next_display(type_idx),
                value,
                value_display: next_display(value_idx),
            });
        }
        for (code, n) in [
            (Named::Parent, parents.len()),
            (Named::Child, children.len()),
        ] {
            for _ in 0..n {
                if let Some((id, display)) = cards.next() {
                    add(Property::Related {
                        code,
                        value: id.get(),
                        display,
                    });
                }
            }
        }
        add(Property::Related {
            code: Named::Module,
            value: module,
            display: module_idx.and_then(|_| cards.next()?.1),
        });
        add(Property::EffectiveTime);
        add(Property::Inactive);
        ordered.sort_unstable_by_key(|(order, _)| *order);

        out.extend_from_slice(br#",{"name":"display","valueString":"#);
        json_string(&mut out, focus_display.unwrap_or_default());
        out.extend_from_slice(br#"},{"name":"name","valueString":"#);
        json_string_of(&mut out, &[SCT, "|", &self.version]);
        out.push(b'}');
        for (_, p) in &ordered {
            out.extend_from_slice(br#",{"name":"property","part":[{"name":"code","valueCode":""#);
            match *p {
                Property::Attribute {
                    type_id,
                    type_display,
                    value,
                    value_display,
                } => {
                    json_number(&mut out, type_id);
                    out.push(b'"');
                    out.push(b'}');
                    if let Some(d) = type_display {
                        out.extend_from_slice(br#",{"name":"code-display","valueString":"#);
                        json_string(&mut out, d);
                        out.push(b'}');
                    }
                    related_value(&mut out, value, value_display);
                }
                Property::Related {
                    code,
                    value,
                    display,
                } => {
                    out.extend_from_slice(code.code().as_bytes());
                    out.extend_from_slice(b"\"}");
                    related_value(&mut out, value, display);
                }
                Property::EffectiveTime => {
                    out.extend_from_slice(br#"effectiveTime"},{"name":"value","valueDateTime":"#);
                    json_date(&mut out, concept.effective_time);
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

/// Appends an RF2 effective time (`YYYYMMDD` as a number) as the JSON string `"YYYY-MM-DD"`, as
/// `snomed::format_date` writes it, without the formatting machinery.
fn json_date(out: &mut Vec<u8>, t: u32) {
    let digit = |n: u32| b'0' + (n % 10) as u8;
    let (y, m, d) = (t / 10000 % 10000, t / 100 % 100, t % 100);
    out.extend_from_slice(&[
        b'"',
        digit(y / 1000),
        digit(y / 100),
        digit(y / 10),
        digit(y),
        b'-',
        digit(m / 10),
        digit(m),
        b'-',
        digit(d / 10),
        digit(d),
        b'"',
    ]);
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
    fn named_codes_are_declared_in_the_order_of_their_text() {
        const ALL: [Named; 5] = [
            Named::Child,
            Named::EffectiveTime,
            Named::Inactive,
            Named::Module,
            Named::Parent,
        ];
        let mut by_text = ALL;
        by_text.sort_by_key(|n| n.code());
        assert_eq!(by_text, ALL);
        let mut by_order = ALL;
        by_order.reverse();
        by_order.sort();
        assert_eq!(by_order, ALL);
    }

    #[test]
    fn dates_are_written_as_format_date_writes_them() {
        for t in [20250101u32, 20020131, 19991231, 0, 10000101] {
            let mut out = Vec::new();
            json_date(&mut out, t);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                format!("\"{}\"", snomed::format_date(t))
            );
        }
    }

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
        ns.sort_by_key(|&n| decimal_text_key(n));
        assert_eq!(ns.iter().map(u64::to_string).collect::<Vec<_>>(), texts);
    }
}
