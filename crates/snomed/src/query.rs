//! Search requests over a store: text, filters and the ranking walk.

use crate::error::SearchError;
use crate::id::{ConceptIdx, SctId};
use crate::store::{DescriptionIdx, DescriptionKind, Store};
use roaring::RoaringBitmap;
use std::collections::HashSet;

/// What to search for. Defaults follow Hermes: active concepts only, active and inactive descriptions,
/// 10 hits, no fuzziness.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SearchRequest<'a> {
    /// The text typed; every token matches as a prefix. Empty: list concepts of the filter instead.
    pub text: &'a str,
    /// Maximum hits returned.
    pub max_hits: usize,
    /// Edit distance (0-2) allowed per token.
    pub fuzzy: u8,
    /// Edit distance for a second try when the first finds nothing (0 = no second try).
    pub fallback_fuzzy: u8,
    /// Include descriptions of inactive concepts.
    pub inactive_concepts: bool,
    /// Include inactive descriptions.
    pub inactive_descriptions: bool,
    /// Drop hits with the same concept and term as an earlier hit.
    pub remove_duplicates: bool,
    /// Only concepts that are one of these or their descendants (any of them).
    pub is_a: Vec<SctId>,
    /// Only concepts that are active members of one of these refsets.
    pub refsets: Vec<SctId>,
    /// Only concepts in this bitmap of dense indexes (an evaluated ECL constraint).
    pub constraint: Option<&'a RoaringBitmap>,
    /// Only these description kinds (empty: FSNs and synonyms, not definitions).
    pub kinds: Vec<DescriptionKind>,
    /// Only the descriptions in this bitmap of dense indexes (the preferred terms of a language, say).
    pub descriptions: Option<&'a RoaringBitmap>,
}

impl<'a> SearchRequest<'a> {
    /// A request for `text` with the defaults.
    pub fn new(text: &'a str) -> SearchRequest<'a> {
        SearchRequest {
            text,
            max_hits: 10,
            fuzzy: 0,
            fallback_fuzzy: 0,
            inactive_concepts: false,
            inactive_descriptions: true,
            remove_duplicates: false,
            is_a: Vec::new(),
            refsets: Vec::new(),
            constraint: None,
            kinds: Vec::new(),
            descriptions: None,
        }
    }
}

/// One search result: a description and its concept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchHit {
    /// The matching description.
    pub description: DescriptionIdx,
    /// Its id.
    pub description_id: SctId,
    /// The concept.
    pub concept: ConceptIdx,
    /// The concept id.
    pub concept_id: SctId,
}

impl Store {
    /// Searches descriptions; see [`SearchRequest`] for the options. Results come shortest term first.
    pub fn search(&self, req: &SearchRequest<'_>) -> Result<Vec<SearchHit>, SearchError> {
        let is_a: Vec<ConceptIdx> = req
            .is_a
            .iter()
            .filter_map(|&id| self.index_of(id))
            .collect();
        if !req.is_a.is_empty() && is_a.is_empty() {
            return Ok(Vec::new());
        }
        let index = self.search_index();
        // Checked on the raw words too: the analyzer drops over-long tokens, which would otherwise pass unseen.
        crate::check_search_words(&req.text.split_whitespace().collect::<Vec<_>>())?;
        let tokens = index.tokenize(req.text);
        crate::check_search_words(&tokens)?;
        if tokens.is_empty() {
            return Ok(self.list_filtered(req, &is_a));
        }
        let mut hits = self.search_with(req, &is_a, &tokens, req.fuzzy)?;
        if hits.is_empty() && req.fuzzy == 0 && req.fallback_fuzzy > 0 {
            hits = self.search_with(req, &is_a, &tokens, req.fallback_fuzzy)?;
        }
        Ok(hits)
    }

    fn concept_passes(&self, c: ConceptIdx, req: &SearchRequest<'_>, is_a: &[ConceptIdx]) -> bool {
        (req.inactive_concepts || self.is_active(c))
            && req.constraint.is_none_or(|b| b.contains(c.0))
            && (is_a.is_empty() || is_a.iter().any(|&a| self.is_a(c, a)))
            && (req.refsets.is_empty()
                || req.refsets.iter().any(|&r| {
                    self.refset_members_for(r, self.id_of(c).get())
                        .any(|m| m.active)
                }))
    }

    fn search_with(
        &self,
        req: &SearchRequest<'_>,
        is_a: &[ConceptIdx],
        tokens: &[String],
        fuzzy: u8,
    ) -> Result<Vec<SearchHit>, SearchError> {
        let mut hits = Vec::with_capacity(req.max_hits.min(1024));
        let mut seen: HashSet<(u32, String)> = HashSet::new();
        let descs = self.descs();
        self.search_index().walk(tokens, fuzzy, req.max_hits, |d| {
            // The raw record decides; the term is decoded only to drop duplicates (a search without early exit
            // visits every matching description).
            if req.descriptions.is_some_and(|b| !b.contains(d.0)) {
                return false;
            }
            let rec = &descs[d.0 as usize];
            let kind = match rec.kind {
                0 => DescriptionKind::Fsn,
                1 => DescriptionKind::Synonym,
                2 => DescriptionKind::Definition,
                _ => DescriptionKind::Other,
            };
            let kind_ok = if req.kinds.is_empty() {
                matches!(kind, DescriptionKind::Fsn | DescriptionKind::Synonym)
            } else {
                req.kinds.contains(&kind)
            };
            let concept = ConceptIdx(rec.concept);
            if !kind_ok
                || !(req.inactive_descriptions || rec.active == 1)
                || !self.concept_passes(concept, req, is_a)
            {
                return false;
            }
            if req.remove_duplicates
                && !seen.insert((concept.0, self.description(d).term.to_lowercase()))
            {
                return false;
            }
            hits.push(SearchHit {
                description: d,
                description_id: SctId::new_unchecked(rec.id),
                concept,
                concept_id: self.id_of(concept),
            });
            true
        })?;
        Ok(hits)
    }

    /// With no text: the preferred synonyms of the first `max_hits` concepts that pass the filters.
    fn list_filtered(&self, req: &SearchRequest<'_>, is_a: &[ConceptIdx]) -> Vec<SearchHit> {
        let candidates: Box<dyn Iterator<Item = u32>> = match (req.constraint, is_a.first()) {
            (Some(b), _) => Box::new(b.iter()),
            (None, Some(&a)) => {
                Box::new(std::iter::once(a.0).chain(self.descendants(a).iter().map(|c| c.0)))
            }
            (None, None) if !req.refsets.is_empty() => {
                let mut b = RoaringBitmap::new();
                for &r in &req.refsets {
                    b |= self.refset_concepts(r);
                }
                Box::new(b.into_iter())
            }
            (None, None) => return Vec::new(),
        };
        let defaults = self.default_refsets();
        candidates
            .map(ConceptIdx)
            .filter(|&c| self.concept_passes(c, req, is_a))
            .filter_map(|c| self.preferred_synonym(c, &defaults))
            .take(req.max_hits)
            .map(|d| SearchHit {
                description: d.idx,
                description_id: d.id,
                concept: d.concept,
                concept_id: d.concept_id,
            })
            .collect()
    }
}
