//! Property test: on generated releases, subsumption, ancestors and descendants agree with a naive graph walk
//! over the relationship file.

use crate::naive::{isa_parents, walk_up};
use crate::synthetic;
use proptest::prelude::*;
use snomed::{ConceptIdx, SctId};
use std::collections::HashSet;

fn check_release(concepts: usize, seed: u64, samples: usize) {
    let (_tmp, store, rf2) = synthetic(concepts, seed);
    let parents = isa_parents(&rf2);
    let n = store.concept_count();
    assert!(n as usize > concepts, "inactive concepts are generated too");
    let mut rng = seed;
    let mut next = || {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (rng >> 33) as u32 % n
    };
    for _ in 0..samples {
        let c = ConceptIdx(next());
        let id = store.id_of(c).get();
        let expected = walk_up(&parents, id);
        let got: HashSet<u64> = store
            .ancestors(c)
            .iter()
            .map(|&a| store.id_of(a).get())
            .collect();
        assert_eq!(got, expected, "ancestors of {id}");
        let direct: HashSet<u64> = store
            .parents(c)
            .iter()
            .map(|&a| store.id_of(a).get())
            .collect();
        let naive_direct: HashSet<u64> = parents
            .get(&id)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .collect();
        assert_eq!(direct, naive_direct, "parents of {id}");
        // Descendants are the inverse relation.
        for &d in store.descendants(c) {
            assert!(walk_up(&parents, store.id_of(d).get()).contains(&id));
        }
        for &ch in store.children(c) {
            assert!(store.parents(ch).contains(&c));
        }
        let other = ConceptIdx(next());
        let naive = c == other || walk_up(&parents, id).contains(&store.id_of(other).get());
        assert_eq!(store.is_a(c, other), naive);
        assert_eq!(
            store.subsumed_by(SctId::new(id).unwrap(), store.id_of(other)),
            Some(naive)
        );
    }
    // Descendant counts agree with a full inversion of the naive closure, for the root and top levels.
    let root = store.index_of(snomed::consts::ROOT).unwrap();
    let active_with_parents = (0..n)
        .map(ConceptIdx)
        .filter(|&c| store.is_active(c) && c != root)
        .count();
    assert_eq!(store.descendants(root).len(), active_with_parents);
    for &top in store.children(root) {
        let top_id = store.id_of(top).get();
        let naive = parents
            .keys()
            .filter(|&&c| walk_up(&parents, c).contains(&top_id))
            .count();
        assert_eq!(
            store.descendants(top).len(),
            naive,
            "descendants of {top_id}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3, ..ProptestConfig::default() })]
    #[test]
    fn closure_matches_a_naive_walk(seed in 0u64..1_000_000, concepts in 600usize..1500) {
        check_release(concepts, seed, 150);
    }
}

#[test]
fn generated_release_has_the_international_shape() {
    let (_tmp, store, _rf2) = synthetic(20_000, 11);
    let m = store.manifest();
    let active: Vec<ConceptIdx> = (0..store.concept_count())
        .map(ConceptIdx)
        .filter(|&c| store.is_active(c))
        .collect();
    let n = active.len() as f64;
    assert!((19_000.0..21_500.0).contains(&n), "{n} active concepts");
    let ratio = m.concepts as f64 / n;
    assert!(
        (1.35..1.5).contains(&ratio),
        "concept rows / active {ratio}"
    );
    let root = store.index_of(snomed::consts::ROOT).unwrap();
    assert_eq!(store.children(root).len(), 19);
    let parents: f64 = active
        .iter()
        .map(|&c| store.parents(c).len() as f64)
        .sum::<f64>()
        / n;
    let multi = active
        .iter()
        .filter(|&&c| store.parents(c).len() > 1)
        .count() as f64
        / n;
    let ancestors = active
        .iter()
        .map(|&c| store.ancestors(c).len() as f64)
        .sum::<f64>()
        / n;
    let mut fanout: Vec<usize> = active
        .iter()
        .map(|&c| store.children(c).len())
        .filter(|&k| k > 0)
        .collect();
    fanout.sort_unstable();
    let median = fanout[fanout.len() / 2];
    let max = *fanout.last().unwrap();
    assert!((1.3..1.7).contains(&parents), "mean parents {parents}");
    assert!((0.25..0.45).contains(&multi), "multi-parent share {multi}");
    assert!(ancestors >= 8.0, "mean ancestors {ancestors}");
    assert!(median <= 3, "median fan-out {median}");
    assert!(max >= 150, "max fan-out {max}");
    let descs_per_concept = m.descriptions as f64 / m.concepts as f64;
    assert!(
        (2.5..3.6).contains(&descs_per_concept),
        "{descs_per_concept}"
    );
    assert!(
        m.refsets
            .contains_key(&snomed::consts::ICD10_COMPLEX_MAP.to_string())
    );
    // Historical associations lead from inactive concepts to active ones.
    let inactive = (0..store.concept_count())
        .map(ConceptIdx)
        .find(|&c| !store.is_active(c))
        .unwrap();
    let assoc = store.historical_associations(store.id_of(inactive));
    assert_eq!(assoc.len(), 1);
    let target = SctId::new(assoc[0].field(0).unwrap().parse().unwrap()).unwrap();
    assert!(store.concept_by_id(target).unwrap().active);
}
