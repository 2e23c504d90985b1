//! `thoth dev gen-snomed` (the synthetic generator) places its attribute concepts as the International Edition
//! does, so that ECL refinements, which must name concept model attributes, work on its releases.

use snomed::ecl_eval::{EclError, Limits, evaluate_str};
use snomed::{ConceptIdx, SctId, Store, consts};

use crate::synthetic;

fn idx(store: &Store, id: SctId) -> ConceptIdx {
    store
        .index_of(id)
        .unwrap_or_else(|| panic!("{id} is missing"))
}

fn parents(store: &Store, id: SctId) -> Vec<SctId> {
    store
        .parents(idx(store, id))
        .iter()
        .map(|&p| store.id_of(p))
        .collect()
}

#[test]
fn synthetic_attributes_sit_under_the_concept_model_attribute() {
    let (_tmp, store, _rf2) = synthetic(2_000, 21);
    // The chain of the International Edition (2025-09): model component > linkage concept > attribute >
    // concept model attribute > object/data attribute > the attributes; is-a beside 410662002.
    assert_eq!(
        parents(&store, consts::LINKAGE_CONCEPT),
        [consts::MODEL_COMPONENT]
    );
    assert_eq!(
        parents(&store, consts::ATTRIBUTE),
        [consts::LINKAGE_CONCEPT]
    );
    assert_eq!(
        parents(&store, consts::CONCEPT_MODEL_ATTRIBUTE),
        [consts::ATTRIBUTE]
    );
    assert_eq!(parents(&store, consts::IS_A), [consts::ATTRIBUTE]);
    assert_eq!(
        parents(&store, SctId::new(363698007).unwrap()),
        [consts::CONCEPT_MODEL_OBJECT_ATTRIBUTE]
    );
    assert_eq!(
        parents(&store, snomed::synth::strength_attribute_id()),
        [consts::CONCEPT_MODEL_DATA_ATTRIBUTE]
    );
    // Every attribute type the release uses (but is-a) is a descendant of 410662002.
    let model = idx(&store, consts::CONCEPT_MODEL_ATTRIBUTE);
    let mut types = std::collections::BTreeSet::new();
    for c in 0..store.concept_count() {
        for r in store.relationships(ConceptIdx(c)) {
            if r.is_inferred_active() && r.type_id != consts::IS_A {
                types.insert(r.type_id);
            }
        }
        for v in store.concrete_values(ConceptIdx(c)) {
            types.insert(v.type_id);
        }
    }
    assert!(types.len() >= 7, "{types:?}");
    for t in types {
        assert!(
            store.ancestors(idx(&store, t)).contains(&model),
            "{t} is not under 410662002"
        );
    }
    // So refinements evaluate, and a refinement on a non-attribute is refused.
    let found = evaluate_str(
        &store,
        "< 404684003 : 363698007 = < 123037004",
        &Limits::default(),
    )
    .unwrap();
    assert!(!found.is_empty());
    let via_parent =
        evaluate_str(&store, "< 404684003 : << 762705008 = *", &Limits::default()).unwrap();
    assert!(via_parent.len() >= found.len());
    assert!(matches!(
        evaluate_str(&store, "< 404684003 : 71388002 = *", &Limits::default()),
        Err(EclError::NotAnAttribute { id: 71388002, .. })
    ));
}
