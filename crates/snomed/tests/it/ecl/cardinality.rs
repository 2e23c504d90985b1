//! Attribute cardinality counts non-redundant attributes (ECL specification, "Attribute cardinality"), per group
//! or distinct across groups (`AttributeCounting`), and the attribute of a refinement must be a concept model
//! attribute. A small release with the International Edition's
//! concept model (106237007 > 246061005 > 410662002 > 762705008 > the attributes; 116680003 under 246061005) and
//! findings whose definitions repeat, vary and group their finding sites:
//!
//! ```text
//! SAME_SITE_TWICE  {FS=Bone, AM=Edema} {FS=Bone, AM=Inflammation}   one finding site, in two groups
//! TWO_SITES        {FS=Lung} {FS=Heart}                             two finding sites
//! ONE_SITE         {FS=Heart, AM=Edema}
//! SITE_G0_G1       FS=Lung (ungrouped), {FS=Lung}                   one finding site, twice
//! TWO_IN_ONE       {FS=Lung, FS=Heart}                              two finding sites in one group
//! NO_SITE          (no attributes)
//! ```

use std::sync::OnceLock;

use snomed::ecl_eval::{AttributeCounting, EclError, Options, concept_ids, evaluate_str_with};
use snomed::{Partition, SctId, Store};

use super::release::*;

const ROOT: u64 = 138875005;
const FINDING: u64 = 404684003;
const BODY: u64 = 123037004;
const ANATOMICAL: u64 = 91723000;
const LUNG: u64 = 39607008;
const HEART: u64 = 80891009;
const BONE: u64 = 272673000;
const MORPHOLOGY: u64 = 49755003;
const EDEMA: u64 = 79654002;
const INFLAMMATION: u64 = 23583003;
const MODEL_COMPONENT: u64 = 900000000000441003;
const LINKAGE: u64 = 106237007;
const ATTRIBUTE: u64 = 246061005;
const MODEL_ATTRIBUTE: u64 = 410662002;
const OBJECT_ATTRIBUTE: u64 = 762705008;
const FS: u64 = 363698007;
const AM: u64 = 116676008;

fn finding(n: u64) -> u64 {
    SctId::generate(n, None, Partition::Concept).get()
}

fn same_site_twice() -> u64 {
    finding(7_001)
}
fn two_sites() -> u64 {
    finding(7_002)
}
fn one_site() -> u64 {
    finding(7_003)
}
fn site_g0_g1() -> u64 {
    finding(7_004)
}
fn two_in_one() -> u64 {
    finding(7_005)
}
fn no_site() -> u64 {
    finding(7_006)
}

fn release() -> Release {
    let mut r = Release::default();
    let concepts: Vec<(u64, &str, u64)> = vec![
        (ROOT, "SNOMED CT Concept (SNOMED RT+CTV3)", 0),
        (FINDING, "Clinical finding (finding)", ROOT),
        (BODY, "Body structure (body structure)", ROOT),
        (ANATOMICAL, "Anatomical structure (body structure)", BODY),
        (LUNG, "Lung structure (body structure)", ANATOMICAL),
        (HEART, "Heart structure (body structure)", ANATOMICAL),
        (BONE, "Bone structure (body structure)", ANATOMICAL),
        (
            MORPHOLOGY,
            "Morphologically abnormal structure (morphologic abnormality)",
            BODY,
        ),
        (EDEMA, "Edema (morphologic abnormality)", MORPHOLOGY),
        (
            INFLAMMATION,
            "Inflammation (morphologic abnormality)",
            MORPHOLOGY,
        ),
        (
            MODEL_COMPONENT,
            "SNOMED CT Model Component (metadata)",
            ROOT,
        ),
        (
            LINKAGE,
            "Linkage concept (linkage concept)",
            MODEL_COMPONENT,
        ),
        (ATTRIBUTE, "Attribute (attribute)", LINKAGE),
        (
            MODEL_ATTRIBUTE,
            "Concept model attribute (attribute)",
            ATTRIBUTE,
        ),
        (IS_A, "Is a (attribute)", ATTRIBUTE),
        (
            OBJECT_ATTRIBUTE,
            "Concept model object attribute (attribute)",
            MODEL_ATTRIBUTE,
        ),
        (FS, "Finding site (attribute)", OBJECT_ATTRIBUTE),
        (AM, "Associated morphology (attribute)", OBJECT_ATTRIBUTE),
        (same_site_twice(), "Same site twice (finding)", FINDING),
        (two_sites(), "Two sites (finding)", FINDING),
        (one_site(), "One site (finding)", FINDING),
        (
            site_g0_g1(),
            "Site ungrouped and grouped (finding)",
            FINDING,
        ),
        (two_in_one(), "Two sites in one group (finding)", FINDING),
        (no_site(), "No site (finding)", FINDING),
    ];
    for (i, (id, fsn, parent)) in concepts.into_iter().enumerate() {
        r.concepts.push(Concept {
            id,
            active: true,
            defined: false,
            module: CORE,
            effective: 20250101,
        });
        if parent != 0 {
            r.relationships.push(Rel {
                source: id,
                type_id: IS_A,
                dest: parent,
                group: 0,
                active: true,
                stated: false,
            });
        }
        r.descriptions.push(Desc {
            id: SctId::generate(200_000 + i as u64, None, Partition::Description).get(),
            concept: id,
            lang: "en",
            type_id: FSN,
            term: fsn.to_owned(),
            active: true,
            acceptability: vec![(US, true), (GB, true)],
        });
    }
    let attributes = [
        (same_site_twice(), FS, BONE, 1),
        (same_site_twice(), AM, EDEMA, 1),
        (same_site_twice(), FS, BONE, 2),
        (same_site_twice(), AM, INFLAMMATION, 2),
        (two_sites(), FS, LUNG, 1),
        (two_sites(), FS, HEART, 2),
        (one_site(), FS, HEART, 1),
        (one_site(), AM, EDEMA, 1),
        (site_g0_g1(), FS, LUNG, 0),
        (site_g0_g1(), FS, LUNG, 1),
        (two_in_one(), FS, LUNG, 1),
        (two_in_one(), FS, HEART, 1),
    ];
    for (source, type_id, dest, group) in attributes {
        r.relationships.push(Rel {
            source,
            type_id,
            dest,
            group,
            active: true,
            stated: false,
        });
    }
    r
}

fn store() -> &'static Store {
    static STORE: OnceLock<(tempfile::TempDir, Store)> = OnceLock::new();
    &STORE.get_or_init(|| release().import()).1
}

fn eval_with(ecl: &str, counting: AttributeCounting) -> Result<Vec<u64>, EclError> {
    let s = store();
    let options = Options {
        counting,
        ..Options::default()
    };
    let mut ids = concept_ids(s, &evaluate_str_with(s, ecl, &options)?);
    ids.sort_unstable();
    Ok(ids)
}

fn eval(ecl: &str) -> Result<Vec<u64>, EclError> {
    eval_with(ecl, AttributeCounting::PerGroup)
}

fn check_with(counting: AttributeCounting, cases: &[(&str, Vec<u64>)]) {
    let mut failures = Vec::new();
    for (ecl, expected) in cases {
        let mut want = expected.clone();
        want.sort_unstable();
        match eval_with(ecl, counting) {
            Ok(got) if got == want => {}
            Ok(got) => failures.push(format!("{ecl}\n   expected {want:?}\n   got      {got:?}")),
            Err(e) => failures.push(format!("{ecl}\n   error: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{counting:?}:\n{}",
        failures.join("\n")
    );
}

/// Cases whose answer does not depend on how an attribute repeated across groups counts.
fn check(cases: &[(&str, Vec<u64>)]) {
    check_with(AttributeCounting::PerGroup, cases);
    check_with(AttributeCounting::Distinct, cases);
}

/// The specification's own example: two or more finding sites "irrespective of the attribute group in which
/// they are contained". Counting distinct values (Hermes, the `/v1/snomed` API): the same site in two groups
/// is one finding site, two different sites are two.
#[test]
fn distinct_counting_counts_a_value_repeated_across_groups_once() {
    check_with(
        AttributeCounting::Distinct,
        &[
            (
                "< 404684003 |Clinical finding|: [2..*] 363698007 |Finding site| = < 91723000 |Anatomical structure|",
                vec![two_sites(), two_in_one()],
            ),
            (
                "< 404684003 : [1..1] 363698007 = < 91723000",
                vec![same_site_twice(), one_site(), site_g0_g1()],
            ),
            (
                "< 404684003 : [0..1] 363698007 = *",
                vec![same_site_twice(), one_site(), site_g0_g1(), no_site()],
            ),
            // `!=` counts the attributes whose value is not in the set.
            (
                "< 404684003 : [1..1] 363698007 != 80891009",
                vec![same_site_twice(), two_sites(), site_g0_g1(), two_in_one()],
            ),
            // Reverse: a finding with Bone as its site in two groups is one finding pointing at Bone.
            ("< 91723000 : [1..1] R 363698007 = *", vec![BONE]),
            ("< 91723000 : [3..3] R 363698007 = *", vec![LUNG, HEART]),
            ("< 91723000 : [0..1] R 363698007 = < 404684003", vec![BONE]),
        ],
    );
}

/// Counting per group (`/fhir` and the engine's default, as the official FHIR terminology conformance suite
/// requires): the same site in two groups is two finding sites; a repeated row is still one.
#[test]
fn per_group_counting_counts_a_value_once_per_group() {
    check_with(
        AttributeCounting::PerGroup,
        &[
            (
                "< 404684003 |Clinical finding|: [2..*] 363698007 |Finding site| = < 91723000 |Anatomical structure|",
                vec![same_site_twice(), two_sites(), site_g0_g1(), two_in_one()],
            ),
            (
                "< 404684003 : [1..1] 363698007 = < 91723000",
                vec![one_site()],
            ),
            (
                "< 404684003 : [0..1] 363698007 = *",
                vec![one_site(), no_site()],
            ),
            (
                "< 404684003 : [1..1] 363698007 != 80891009",
                vec![two_sites(), two_in_one()],
            ),
            ("< 91723000 : [1..1] R 363698007 = *", vec![]),
            ("< 91723000 : [2..2] R 363698007 = *", vec![BONE]),
            ("< 91723000 : [3..3] R 363698007 = *", vec![HEART]),
            ("< 91723000 : [0..1] R 363698007 = < 404684003", vec![]),
        ],
    );
}

/// What both countings agree on: absent attributes, two different values, `[1..*]`.
#[test]
fn both_countings_agree_on_different_values() {
    check(&[
        ("< 404684003 : [0..0] 363698007 = *", vec![no_site()]),
        // Two different morphologies (one per group) are two attributes; one morphology is one.
        (
            "< 404684003 : [2..2] 116676008 = *",
            vec![same_site_twice()],
        ),
        ("< 404684003 : [1..1] 116676008 = *", vec![one_site()]),
        (
            "< 404684003 : 363698007 = 272673000",
            vec![same_site_twice()],
        ),
        ("< 49755003 : [2..2] R 116676008 = *", vec![EDEMA]),
        ("< 49755003 : [1..1] R 116676008 = *", vec![INFLAMMATION]),
    ]);
}

/// Group cardinality counts groups (every ungrouped relationship a group of its own); cardinality inside a
/// group counts within that group. Both countings agree here.
#[test]
fn group_cardinality_and_cardinality_within_groups() {
    check(&[
        (
            "< 404684003 : [2..*] { 363698007 = < 91723000 }",
            vec![same_site_twice(), two_sites(), site_g0_g1()],
        ),
        ("< 404684003 : { [2..2] 363698007 = * }", vec![two_in_one()]),
        (
            "< 404684003 : [1..1] { [1..1] 363698007 = * }",
            vec![one_site()],
        ),
        (
            "< 404684003 : [0..0] { 363698007 = 80891009 }",
            vec![same_site_twice(), site_g0_g1(), no_site()],
        ),
        (
            "< 404684003 : [2..2] { 363698007 = 272673000, 116676008 = * }",
            vec![same_site_twice()],
        ),
        (
            "< 404684003 : { 363698007 = 80891009, 116676008 = 79654002 }",
            vec![one_site()],
        ),
    ]);
}

/// The attribute of a refinement must be 410662002 or a descendant (or is-a); anything else is refused with
/// an error naming the concept.
#[test]
fn attribute_names_must_be_concept_model_attributes() {
    for ecl in [
        "< 404684003 : 404684003 = *",
        "< 404684003 : { 404684003 = * }",
        "< 404684003 : [0..0] 404684003 = 39607008",
        "< 91723000 : R 404684003 = *",
    ] {
        match eval(ecl) {
            Err(e @ EclError::NotAnAttribute { id: FINDING, .. }) => {
                let text = e.to_string();
                assert!(
                    text.contains("404684003 |Clinical finding (finding)|")
                        && text.contains("410662002 |Concept model attribute|"),
                    "{ecl}: {text}"
                );
            }
            other => panic!("{ecl}: expected NotAnAttribute, got {other:?}"),
        }
    }
    // `<< 246061005 |Attribute|` selects 246061005 itself, which is not a concept model attribute.
    match eval("< 404684003 : << 246061005 = *") {
        Err(EclError::NotAnAttribute { id, also, .. }) => {
            assert_eq!(id, ATTRIBUTE);
            assert!(also.is_empty(), "{also}");
        }
        other => panic!("expected NotAnAttribute, got {other:?}"),
    }
    // Concept model attributes, is-a and the wildcard are accepted.
    check(&[
        (
            "< 404684003 : << 410662002 = 39607008",
            vec![two_sites(), site_g0_g1(), two_in_one()],
        ),
        ("< 404684003 : 762705008 = *", vec![]),
        (
            "< 404684003 : 116680003 = 404684003",
            vec![
                same_site_twice(),
                two_sites(),
                one_site(),
                site_g0_g1(),
                two_in_one(),
                no_site(),
            ],
        ),
        (
            "< 404684003 : * = 80891009",
            vec![two_sites(), one_site(), two_in_one()],
        ),
        // An attribute id the release does not have selects nothing (as any unknown concept does).
        ("< 404684003 : 246075003 = *", vec![]),
    ]);
}
