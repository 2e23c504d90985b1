//! [`EclSource`] over the memory-mapped [`Store`]: only active, non-stated relationships count.

use crate::consts::STATED_RELATIONSHIP;
use crate::{ConceptIdx, SctId, Store};

use super::source::{ConceptRow, ConcreteRel, Description, EclSource, Member, Rel, TypedEdge};

fn ids(list: &[ConceptIdx]) -> &[u32] {
    bytemuck::cast_slice(list)
}

impl Store {
    /// The dense index of `id`, searching forward from `cursor` (members come sorted by referenced component,
    /// so consecutive lookups are a few probes near the last hit instead of a binary search over every concept).
    fn index_from(&self, cursor: &mut u32, id: u64) -> Option<u32> {
        let n = Store::concept_count(self);
        let id_at = |i: u32| self.id_of(ConceptIdx(i)).get();
        if *cursor >= n || id_at(*cursor) > id {
            let found = self.index_of(SctId::new_unchecked(id)).map(|i| i.0);
            if let Some(i) = found {
                *cursor = i;
            }
            return found;
        }
        // Gallop: id_at(lo) <= id; find hi with id_at(hi) > id (or n).
        let mut lo = *cursor;
        let mut step = 1;
        let mut hi = lo + 1;
        while hi < n && id_at(hi) <= id {
            lo = hi;
            step *= 2;
            hi = lo.saturating_add(step).min(n);
        }
        // Binary search in (lo, hi): the last index with id_at <= id.
        let (mut a, mut b) = (lo, hi);
        while b - a > 1 {
            let mid = a + (b - a) / 2;
            if id_at(mid) <= id { a = mid } else { b = mid }
        }
        *cursor = a;
        (id_at(a) == id).then_some(a)
    }
}

impl EclSource for Store {
    fn concept_count(&self) -> u32 {
        Store::concept_count(self)
    }

    fn concept_index(&self, id: u64) -> Option<u32> {
        self.index_of(SctId::new_unchecked(id)).map(|i| i.0)
    }

    fn concept_id(&self, idx: u32) -> u64 {
        self.id_of(ConceptIdx(idx)).get()
    }

    fn concept(&self, idx: u32) -> ConceptRow {
        let c = Store::concept(self, ConceptIdx(idx));
        ConceptRow {
            active: c.active,
            module: c.module.get(),
            definition_status: c.definition_status.get(),
            effective: c.effective_time,
        }
    }

    fn parents(&self, idx: u32) -> &[u32] {
        ids(Store::parents(self, ConceptIdx(idx)))
    }

    fn children(&self, idx: u32) -> &[u32] {
        ids(Store::children(self, ConceptIdx(idx)))
    }

    fn ancestors(&self, idx: u32) -> &[u32] {
        ids(Store::ancestors(self, ConceptIdx(idx)))
    }

    fn descendants(&self, idx: u32) -> &[u32] {
        ids(Store::descendants(self, ConceptIdx(idx)))
    }

    fn relationships(&self, source: u32, f: &mut dyn FnMut(Rel)) {
        for r in Store::relationships(self, ConceptIdx(source)) {
            if let (true, Some(t), Some(d)) = (r.is_inferred_active(), r.type_idx, r.destination) {
                f(Rel {
                    type_idx: t.0,
                    other: d.0,
                    group: r.group,
                });
            }
        }
    }

    fn inbound(&self, destination: u32, f: &mut dyn FnMut(Rel)) {
        for r in self.relationships_to(ConceptIdx(destination)) {
            if let (true, Some(t)) = (r.is_inferred_active(), r.type_idx) {
                f(Rel {
                    type_idx: t.0,
                    other: r.source.0,
                    group: r.group,
                });
            }
        }
    }

    fn inbound_of_type(&self, destination: u32, type_idx: u32, f: &mut dyn FnMut(Rel)) {
        let type_id = self.id_of(ConceptIdx(type_idx));
        for r in self.relationships_to_of_type(ConceptIdx(destination), type_id) {
            if r.is_inferred_active() {
                f(Rel {
                    type_idx,
                    other: r.source.0,
                    group: r.group,
                });
            }
        }
    }

    fn edges_of_type(&self, type_idx: u32) -> Option<&[TypedEdge]> {
        Some(Store::edges_of_type(self, ConceptIdx(type_idx)))
    }

    /// `scheme` is an alias (ECL: letters, digits, dashes) of an identifier scheme concept that has alternate
    /// identifiers in the store. The alias names the scheme by one of its active descriptions, compared without
    /// case, spaces, dashes or underscores, with or without a trailing semantic tag: `LOINC` names a scheme
    /// whose FSN is "LOINC (qualifier value)", `LOINC-code` one with the synonym "LOINC code". An alias that
    /// names no such scheme is unknown (`None`); a known scheme without the code gives no concepts.
    fn alternate_identifier(&self, scheme: &str, code: &str) -> Option<Vec<u32>> {
        let fold = |s: &str| -> String {
            s.chars()
                .filter(|c| !matches!(c, ' ' | '-' | '_'))
                .flat_map(char::to_lowercase)
                .collect()
        };
        let alias = fold(scheme);
        let names_scheme = |s: SctId| {
            let Some(idx) = self.index_of(s) else {
                return false;
            };
            Store::descriptions(self, idx)
                .filter(|d| d.active)
                .any(|d| {
                    let term = match d.term.rfind(" (") {
                        Some(i) if d.term.ends_with(')') => &d.term[..i],
                        _ => d.term,
                    };
                    fold(term) == alias || fold(d.term) == alias
                })
        };
        let scheme = self
            .identifier_schemes()
            .into_iter()
            .find(|&s| names_scheme(s))?;
        Some(
            self.concepts_with_alternate_identifier(scheme, code)
                .into_iter()
                .map(|c| c.0)
                .collect(),
        )
    }

    fn concrete(&self, source: u32, f: &mut dyn FnMut(ConcreteRel<'_>)) {
        for c in self.concrete_values(ConceptIdx(source)) {
            if c.active
                && c.characteristic != STATED_RELATIONSHIP
                && let Some(t) = self.index_of(c.type_id)
            {
                f(ConcreteRel {
                    type_idx: t.0,
                    group: c.group,
                    value: c.raw,
                });
            }
        }
    }

    fn descriptions(&self, concept: u32, f: &mut dyn FnMut(&Description<'_>)) {
        let mut accept = Vec::new();
        for d in Store::descriptions(self, ConceptIdx(concept)) {
            accept.clear();
            accept.extend(
                self.acceptability(d.idx)
                    .map(|a| (a.refset.get(), a.preferred)),
            );
            let l = d.language.as_bytes();
            let lang = [
                l.first().map_or(b' ', u8::to_ascii_lowercase),
                l.get(1).map_or(b' ', u8::to_ascii_lowercase),
            ];
            f(&Description {
                id: d.id.get(),
                active: d.active,
                module: d.module.get(),
                effective: d.effective_time,
                type_id: d.type_id.get(),
                lang,
                term: d.term,
                acceptability: &accept,
            });
        }
    }

    fn members(&self, refset: u64, f: &mut dyn FnMut(&Member<'_>)) {
        let refset = SctId::new_unchecked(refset);
        let names = self
            .refset_fields(refset)
            .map(|r| r.names)
            .unwrap_or_default();
        let mut fields = Vec::with_capacity(names.len());
        let mut cursor = 0;
        for m in self.refset_members(refset) {
            fields.clear();
            fields.extend(names.iter().copied().zip(m.fields()));
            f(&Member {
                referenced: m.referenced_component,
                referenced_idx: self.index_from(&mut cursor, m.referenced_component),
                active: m.active,
                module: m.module.get(),
                effective: m.effective_time,
                fields: &fields,
            });
        }
    }
}
