//! Text search: prefixes, ranking, accent folding, fuzziness and filters.

use crate::{import, shared, synthetic};
use snomed::{SctId, SearchRequest, consts};

#[test]
fn every_token_matches_as_a_prefix_and_shorter_terms_come_first() {
    let dir = shared().join("tx-ecosystem/tx-source/snomed");
    let (_tmp, store, _) = import(std::slice::from_ref(&dir));
    let mut req = SearchRequest::new("diab mell");
    req.max_hits = 50;
    let hits = store.search(&req).unwrap();
    assert!(!hits.is_empty());
    let terms: Vec<&str> = hits
        .iter()
        .map(|h| store.description(h.description).term)
        .collect();
    for t in &terms {
        let lower = t.to_lowercase();
        assert!(
            lower
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| w.starts_with("diab"))
                && lower
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|w| w.starts_with("mell")),
            "{t}"
        );
    }
    let lens: Vec<usize> = terms.iter().map(|t| t.chars().count()).collect();
    assert!(lens.windows(2).all(|w| w[0] <= w[1]), "{terms:?}");
    assert!(hits.iter().all(|h| store.is_active(h.concept)));
}

#[test]
fn accents_fold_and_fuzzy_matching_forgives_typos() {
    let dir = shared().join("tx-ecosystem/tx-source/snomed");
    let (_tmp, store, _) = import(std::slice::from_ref(&dir));
    let folded = store.search(&SearchRequest::new("strumpell")).unwrap();
    assert!(
        folded
            .iter()
            .any(|h| store.description(h.description).term.contains("Strümpell")),
        "accent folding"
    );
    let accented = store.search(&SearchRequest::new("strümp")).unwrap();
    assert_eq!(
        accented,
        folded[..accented.len().min(folded.len())].to_vec()
    );

    assert!(
        store
            .search(&SearchRequest::new("diabetis"))
            .unwrap()
            .is_empty()
    );
    let mut fuzzy = SearchRequest::new("diabetis");
    fuzzy.fallback_fuzzy = 2;
    let hits = store.search(&fuzzy).unwrap();
    assert!(!hits.is_empty());
}

#[test]
fn filters_restrict_hits_to_a_subtree_a_refset_or_a_bitmap() {
    let (_tmp, store, _rf2) = synthetic(3_000, 5);
    let finding = SctId::parse("404684003").unwrap();
    let finding_idx = store.index_of(finding).unwrap();
    // Take a word from some finding's term and search it everywhere, then only under findings.
    let some = store.descendants(finding_idx)[10];
    let word: String = store
        .preferred_synonym(some, &[consts::US_ENGLISH])
        .unwrap()
        .term
        .split(' ')
        .next()
        .unwrap()
        .chars()
        .take(4)
        .collect();
    let mut all = SearchRequest::new(&word);
    all.max_hits = 1000;
    let everywhere = store.search(&all).unwrap();
    let mut under = all.clone();
    under.is_a = vec![finding];
    let findings = store.search(&under).unwrap();
    assert!(!findings.is_empty());
    assert!(findings.len() < everywhere.len());
    assert!(findings.iter().all(|h| store.is_a(h.concept, finding_idx)));
    // Constraint bitmap: only the one concept.
    let mut bitmap = roaring::RoaringBitmap::new();
    bitmap.insert(some.0);
    let mut constrained = all.clone();
    constrained.constraint = Some(&bitmap);
    let one = store.search(&constrained).unwrap();
    assert!(!one.is_empty() && one.iter().all(|h| h.concept == some));
    // Refset filter: members of the generated simple refset only.
    let mut in_refset = all.clone();
    in_refset.refsets = vec![snomed::synth::simple_refset_id()];
    let members = store.refset_concepts(snomed::synth::simple_refset_id());
    for h in store.search(&in_refset).unwrap() {
        assert!(members.contains(h.concept.0));
    }
    // Inactive concepts only when asked.
    let mut with_inactive = all.clone();
    with_inactive.inactive_concepts = true;
    with_inactive.max_hits = 5000;
    let n_all = store.search(&with_inactive).unwrap().len();
    assert!(n_all >= everywhere.len());
    // Remove duplicates keeps one hit per (concept, term).
    let mut dedup = all.clone();
    dedup.remove_duplicates = true;
    let hits = store.search(&dedup).unwrap();
    let mut seen = std::collections::HashSet::new();
    for h in &hits {
        assert!(seen.insert((
            h.concept,
            store.description(h.description).term.to_lowercase()
        )));
    }
}

#[test]
fn accept_language_picks_the_dialect() {
    let (_tmp, store, _rf2) = synthetic(3_000, 9);
    let us = store.language_refsets_for(Some("en-US"));
    let gb = store.language_refsets_for(Some("en-GB,en;q=0.5"));
    assert_eq!(us[0], consts::US_ENGLISH);
    assert_eq!(gb[0], consts::GB_ENGLISH);
    // Some concepts have a GB spelling preferred in GB only.
    let differs = (0..store.concept_count())
        .map(snomed::ConceptIdx)
        .filter(|&c| store.is_active(c))
        .any(|c| {
            store.preferred_synonym(c, &us).map(|d| d.term)
                != store.preferred_synonym(c, &gb).map(|d| d.term)
        });
    assert!(differs);
}
