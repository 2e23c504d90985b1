//! The hand-built fixture: a small release shaped like the International Edition, readable at a glance, with
//! every construct ECL can ask about (hierarchy, grouped attributes, concrete values, refsets with fields,
//! language refsets, history associations, inactive concepts and descriptions).
//!
//! ```text
//! 138875005 SNOMED CT Concept
//! ├─ 404684003 Clinical finding
//! │  ├─ 64572001 Disease
//! │  │  ├─ 19829001 Disorder of lung ........... FS=Lung (ungrouped)
//! │  │  │  ├─ 233604007 Pneumonia* .............. {FS=Lung, AM=Inflammation}
//! │  │  │  └─ 195967001 Asthma .................. {FS=Lung, AM=Inflammation}
//! │  │  │     └─ 389145006 Allergic asthma* ..... {FS=Lung, AM=Inflammation}, CA=Paracetamol (ungrouped)
//! │  │  └─ 22298006 Myocardial infarction* ...... {FS=Heart, AM=Infarct}
//! │  ├─ 125605004 Fracture of bone .............. {FS=Bone}, {FS=Lung}
//! │  └─ 301867009 Edema of trunk ................ {FS=Lung, AM=Edema}, {FS=Heart, AM=Edema}
//! ├─ 123037004 Body structure
//! │  ├─ 91723000 Anatomical structure ─ 39607008 Lung, 80891009 Heart, 272673000 Bone
//! │  └─ 49755003 Morphologically abnormal structure ─ 79654002 Edema, 23583003 Inflammation, 55641003 Infarct
//! ├─ 71388002 Procedure
//! ├─ 105590001 Substance ─ 387517004 Paracetamol
//! ├─ 373873005 Pharmaceutical / biologic product
//! │  ├─ 322236009 Paracetamol 500 mg tablet ..... {HAI=Paracetamol, strength=#500}, brand="PANADOL"
//! │  └─ 1001000 Paracetamol 1 g tablet .......... {HAI=Paracetamol, strength=#1000}, brand="Panamax"
//! ├─ 410662002 Concept model attribute ─ 246061005 Attribute ─ FS, AM, HAI, is-a, strength, brand,
//! │                                                            47429007 Associated with ─ 246075003 CA
//! └─ 900000000000441003 Model component ─ 900000000000455006 Reference set
//!    ├─ 446609009 Simple type ─ 723264001 Lateralizable (Lung, Heart; Bone inactive member)
//!    ├─ 900000000000522004 Historical association ─ 900000000000527005 SAME AS, 900000000000526001 REPLACED BY
//!    └─ 447562003 ICD-10 complex map
//! inactive: 155574008 Asthma (old) SAME AS Asthma; 266398009 Pneumonia (old) REPLACED BY Pneumonia
//! 705114005 LOINC Code System (< Model component): the identifier scheme "LOINC" (54486-6 = Asthma,
//! 22222-2 = Edema of trunk)
//! * defined; the rest primitive
//! ```

use super::release::*;

pub const ROOT: u64 = 138875005;
pub const FINDING: u64 = 404684003;
pub const DISEASE: u64 = 64572001;
pub const LUNG_DISORDER: u64 = 19829001;
pub const PNEUMONIA: u64 = 233604007;
pub const ASTHMA: u64 = 195967001;
pub const ALLERGIC_ASTHMA: u64 = 389145006;
pub const MI: u64 = 22298006;
pub const FRACTURE: u64 = 125605004;
pub const EDEMA_TRUNK: u64 = 301867009;
pub const BODY: u64 = 123037004;
pub const ANATOMICAL: u64 = 91723000;
pub const LUNG: u64 = 39607008;
pub const HEART: u64 = 80891009;
pub const BONE: u64 = 272673000;
pub const MORPHOLOGY: u64 = 49755003;
pub const EDEMA: u64 = 79654002;
pub const INFLAMMATION: u64 = 23583003;
pub const INFARCT: u64 = 55641003;
pub const PROCEDURE: u64 = 71388002;
pub const SUBSTANCE: u64 = 105590001;
pub const PARACETAMOL: u64 = 387517004;
pub const PRODUCT: u64 = 373873005;
pub const TABLET_500: u64 = 322236009;
pub const TABLET_1G: u64 = 1001000;
pub const MODEL_ATTRIBUTE: u64 = 410662002;
pub const ATTRIBUTE: u64 = 246061005;
pub const FINDING_SITE: u64 = 363698007;
pub const ASSOCIATED_MORPHOLOGY: u64 = 116676008;
pub const ASSOCIATED_WITH: u64 = 47429007;
pub const CAUSATIVE_AGENT: u64 = 246075003;
pub const HAS_ACTIVE_INGREDIENT: u64 = 127489000;
pub const STRENGTH: u64 = 1142135004;
pub const BRAND: u64 = 1002007;
pub const MODEL_COMPONENT: u64 = 900000000000441003;
pub const REFSET: u64 = 900000000000455006;
pub const SIMPLE_TYPE: u64 = 446609009;
pub const LATERALIZABLE: u64 = 723264001;
pub const HISTORICAL: u64 = 900000000000522004;
pub const SAME_AS: u64 = 900000000000527005;
pub const REPLACED_BY: u64 = 900000000000526001;
pub const ICD10_MAP: u64 = 447562003;
pub const OLD_ASTHMA: u64 = 155574008;
pub const OLD_PNEUMONIA: u64 = 266398009;
/// 705114005 |LOINC Code System|, an identifier scheme with the synonym "LOINC" (alternate identifiers).
pub const LOINC_SCHEME: u64 = 705114005;

const MODEL_MODULE: u64 = 900000000000012004;

/// (id, fully specified name, parent, defined, effective time)
const CONCEPTS: &[(u64, &str, u64, bool, u32)] = &[
    (
        ROOT,
        "SNOMED CT Concept (SNOMED RT+CTV3)",
        0,
        false,
        20020131,
    ),
    (FINDING, "Clinical finding (finding)", ROOT, false, 20020131),
    (DISEASE, "Disease (disorder)", FINDING, false, 20020131),
    (
        LUNG_DISORDER,
        "Disorder of lung (disorder)",
        DISEASE,
        false,
        20020131,
    ),
    (
        PNEUMONIA,
        "Pneumonia (disorder)",
        LUNG_DISORDER,
        true,
        20200731,
    ),
    (ASTHMA, "Asthma (disorder)", LUNG_DISORDER, false, 20020131),
    (
        ALLERGIC_ASTHMA,
        "Allergic asthma (disorder)",
        ASTHMA,
        true,
        20200731,
    ),
    (
        MI,
        "Myocardial infarction (disorder)",
        DISEASE,
        true,
        20250101,
    ),
    (
        FRACTURE,
        "Fracture of bone (disorder)",
        FINDING,
        false,
        20020131,
    ),
    (
        EDEMA_TRUNK,
        "Edema of trunk (finding)",
        FINDING,
        false,
        20020131,
    ),
    (
        BODY,
        "Body structure (body structure)",
        ROOT,
        false,
        20020131,
    ),
    (
        ANATOMICAL,
        "Anatomical structure (body structure)",
        BODY,
        false,
        20020131,
    ),
    (
        LUNG,
        "Lung structure (body structure)",
        ANATOMICAL,
        false,
        20020131,
    ),
    (
        HEART,
        "Heart structure (body structure)",
        ANATOMICAL,
        false,
        20020131,
    ),
    (
        BONE,
        "Bone structure (body structure)",
        ANATOMICAL,
        false,
        20020131,
    ),
    (
        MORPHOLOGY,
        "Morphologically abnormal structure (morphologic abnormality)",
        BODY,
        false,
        20020131,
    ),
    (
        EDEMA,
        "Edema (morphologic abnormality)",
        MORPHOLOGY,
        false,
        20020131,
    ),
    (
        INFLAMMATION,
        "Inflammation (morphologic abnormality)",
        MORPHOLOGY,
        false,
        20020131,
    ),
    (
        INFARCT,
        "Infarct (morphologic abnormality)",
        MORPHOLOGY,
        false,
        20020131,
    ),
    (PROCEDURE, "Procedure (procedure)", ROOT, false, 20020131),
    (SUBSTANCE, "Substance (substance)", ROOT, false, 20020131),
    (
        PARACETAMOL,
        "Paracetamol (substance)",
        SUBSTANCE,
        false,
        20020131,
    ),
    (
        PRODUCT,
        "Pharmaceutical / biologic product (product)",
        ROOT,
        false,
        20020131,
    ),
    (
        TABLET_500,
        "Paracetamol 500 mg oral tablet (clinical drug)",
        PRODUCT,
        true,
        20200731,
    ),
    (
        TABLET_1G,
        "Paracetamol 1 g oral tablet (clinical drug)",
        PRODUCT,
        true,
        20200731,
    ),
    (
        MODEL_ATTRIBUTE,
        "Concept model attribute (attribute)",
        ROOT,
        false,
        20020131,
    ),
    (
        ATTRIBUTE,
        "Attribute (attribute)",
        MODEL_ATTRIBUTE,
        false,
        20020131,
    ),
    (
        FINDING_SITE,
        "Finding site (attribute)",
        ATTRIBUTE,
        false,
        20020131,
    ),
    (
        ASSOCIATED_MORPHOLOGY,
        "Associated morphology (attribute)",
        ATTRIBUTE,
        false,
        20020131,
    ),
    (
        ASSOCIATED_WITH,
        "Associated with (attribute)",
        ATTRIBUTE,
        false,
        20020131,
    ),
    (
        CAUSATIVE_AGENT,
        "Causative agent (attribute)",
        ASSOCIATED_WITH,
        false,
        20020131,
    ),
    (
        HAS_ACTIVE_INGREDIENT,
        "Has active ingredient (attribute)",
        ATTRIBUTE,
        false,
        20020131,
    ),
    (IS_A, "Is a (attribute)", ATTRIBUTE, false, 20020131),
    (
        STRENGTH,
        "Has presentation strength numerator value (attribute)",
        ATTRIBUTE,
        false,
        20020131,
    ),
    (
        BRAND,
        "Has brand name (attribute)",
        ATTRIBUTE,
        false,
        20020131,
    ),
    (
        MODEL_COMPONENT,
        "SNOMED CT Model Component (metadata)",
        ROOT,
        false,
        20020131,
    ),
    (
        REFSET,
        "Reference set (foundation metadata concept)",
        MODEL_COMPONENT,
        false,
        20020131,
    ),
    (
        SIMPLE_TYPE,
        "Simple type reference set (foundation metadata concept)",
        REFSET,
        false,
        20020131,
    ),
    (
        LATERALIZABLE,
        "Lateralizable body structure reference set (foundation metadata concept)",
        SIMPLE_TYPE,
        false,
        20020131,
    ),
    (
        HISTORICAL,
        "Historical association (foundation metadata concept)",
        REFSET,
        false,
        20020131,
    ),
    (
        SAME_AS,
        "SAME AS association reference set (foundation metadata concept)",
        HISTORICAL,
        false,
        20020131,
    ),
    (
        REPLACED_BY,
        "REPLACED BY association reference set (foundation metadata concept)",
        HISTORICAL,
        false,
        20020131,
    ),
    (
        ICD10_MAP,
        "ICD-10 complex map reference set (foundation metadata concept)",
        REFSET,
        false,
        20020131,
    ),
];

/// Inactive concepts: (id, fully specified name).
const INACTIVE: &[(u64, &str)] = &[
    (OLD_ASTHMA, "Asthma (old) (disorder)"),
    (OLD_PNEUMONIA, "Pneumonia (old) (disorder)"),
];

/// Defining relationships other than is-a: (source, type, destination, group).
const ATTRIBUTES: &[(u64, u64, u64, u32)] = &[
    (LUNG_DISORDER, FINDING_SITE, LUNG, 0),
    (PNEUMONIA, FINDING_SITE, LUNG, 1),
    (PNEUMONIA, ASSOCIATED_MORPHOLOGY, INFLAMMATION, 1),
    (ASTHMA, FINDING_SITE, LUNG, 1),
    (ASTHMA, ASSOCIATED_MORPHOLOGY, INFLAMMATION, 1),
    (ALLERGIC_ASTHMA, FINDING_SITE, LUNG, 1),
    (ALLERGIC_ASTHMA, ASSOCIATED_MORPHOLOGY, INFLAMMATION, 1),
    (ALLERGIC_ASTHMA, CAUSATIVE_AGENT, PARACETAMOL, 0),
    (MI, FINDING_SITE, HEART, 1),
    (MI, ASSOCIATED_MORPHOLOGY, INFARCT, 1),
    (FRACTURE, FINDING_SITE, BONE, 1),
    (FRACTURE, FINDING_SITE, LUNG, 2),
    (EDEMA_TRUNK, FINDING_SITE, LUNG, 1),
    (EDEMA_TRUNK, ASSOCIATED_MORPHOLOGY, EDEMA, 1),
    (EDEMA_TRUNK, FINDING_SITE, HEART, 2),
    (EDEMA_TRUNK, ASSOCIATED_MORPHOLOGY, EDEMA, 2),
    (TABLET_500, HAS_ACTIVE_INGREDIENT, PARACETAMOL, 1),
    (TABLET_1G, HAS_ACTIVE_INGREDIENT, PARACETAMOL, 1),
];

pub fn release() -> Release {
    let mut r = Release::default();
    let mut next_desc = 0u64;
    let mut desc = |r: &mut Release,
                    concept: u64,
                    lang: &'static str,
                    type_id: u64,
                    term: &str,
                    active: bool,
                    acc: Vec<(u64, bool)>| {
        next_desc += 1;
        r.descriptions.push(Desc {
            id: snomed::SctId::generate(100_000 + next_desc, None, snomed::Partition::Description)
                .get(),
            concept,
            lang,
            type_id,
            term: term.to_owned(),
            active,
            acceptability: acc,
        });
    };
    let both = || vec![(US, true), (GB, true)];
    for &(id, fsn, parent, defined, effective) in CONCEPTS {
        let metadata = [
            MODEL_COMPONENT,
            REFSET,
            SIMPLE_TYPE,
            LATERALIZABLE,
            HISTORICAL,
            SAME_AS,
            REPLACED_BY,
            ICD10_MAP,
        ];
        let module = if metadata.contains(&id) {
            MODEL_MODULE
        } else {
            CORE
        };
        r.concepts.push(Concept {
            id,
            active: true,
            defined,
            module,
            effective,
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
        let synonym = fsn.rsplit_once(" (").map_or(fsn, |(s, _)| s);
        desc(&mut r, id, "en", FSN, fsn, true, both());
        desc(&mut r, id, "en", SYNONYM, synonym, true, both());
    }
    for &(id, fsn) in INACTIVE {
        r.concepts.push(Concept {
            id,
            active: false,
            defined: false,
            module: CORE,
            effective: 20230131,
        });
        desc(&mut r, id, "en", FSN, fsn, true, both());
    }
    for &(source, type_id, dest, group) in ATTRIBUTES {
        r.relationships.push(Rel {
            source,
            type_id,
            dest,
            group,
            active: true,
            stated: false,
        });
    }
    // Noise the evaluator must ignore: a stated-only and an inactive relationship.
    r.relationships.push(Rel {
        source: PROCEDURE,
        type_id: FINDING_SITE,
        dest: HEART,
        group: 0,
        active: true,
        stated: true,
    });
    r.relationships.push(Rel {
        source: PROCEDURE,
        type_id: FINDING_SITE,
        dest: LUNG,
        group: 0,
        active: false,
        stated: false,
    });
    // Alternate identifiers in the LOINC scheme: one live code per concept, an inactive one, and a code moved
    // from Fracture to Edema of trunk by a newer row.
    r.concepts.push(Concept {
        id: LOINC_SCHEME,
        active: true,
        defined: false,
        module: MODEL_MODULE,
        effective: 20200131,
    });
    r.relationships.push(Rel {
        source: LOINC_SCHEME,
        type_id: IS_A,
        dest: MODEL_COMPONENT,
        group: 0,
        active: true,
        stated: false,
    });
    desc(
        &mut r,
        LOINC_SCHEME,
        "en",
        FSN,
        "LOINC Code System (qualifier value)",
        true,
        both(),
    );
    desc(&mut r, LOINC_SCHEME, "en", SYNONYM, "LOINC", true, both());
    r.identifiers = vec![
        (LOINC_SCHEME, "54486-6".into(), ASTHMA, true, 20240101),
        (LOINC_SCHEME, "11111-1".into(), MI, false, 20240101),
        (LOINC_SCHEME, "22222-2".into(), FRACTURE, true, 20230101),
        (LOINC_SCHEME, "22222-2".into(), EDEMA_TRUNK, true, 20240101),
    ];
    r.concrete = vec![
        Concrete {
            source: TABLET_500,
            type_id: STRENGTH,
            value: "#500".into(),
            group: 1,
        },
        Concrete {
            source: TABLET_1G,
            type_id: STRENGTH,
            value: "#1000".into(),
            group: 1,
        },
        Concrete {
            source: TABLET_500,
            type_id: BRAND,
            value: "\"PANADOL\"".into(),
            group: 0,
        },
        Concrete {
            source: TABLET_1G,
            type_id: BRAND,
            value: "\"Panamax\"".into(),
            group: 0,
        },
    ];
    desc(
        &mut r,
        MI,
        "en",
        SYNONYM,
        "Heart attack",
        true,
        vec![(US, false), (GB, false)],
    );
    desc(&mut r, MI, "sv", SYNONYM, "Hjärtinfarkt", true, vec![]);
    desc(
        &mut r,
        FRACTURE,
        "en",
        SYNONYM,
        "Broken bone",
        false,
        vec![],
    );
    desc(
        &mut r,
        ASTHMA,
        "en",
        SYNONYM,
        "Asthmatic disorder",
        true,
        vec![(US, false)],
    );
    desc(
        &mut r,
        PNEUMONIA,
        "en",
        SYNONYM,
        "Lung inflammation",
        true,
        vec![(GB, false)],
    );
    r.simple = vec![
        (LATERALIZABLE, LUNG, true),
        (LATERALIZABLE, HEART, true),
        (LATERALIZABLE, BONE, false),
    ];
    r.associations = vec![
        (SAME_AS, OLD_ASTHMA, ASTHMA),
        (REPLACED_BY, OLD_PNEUMONIA, PNEUMONIA),
    ];
    r.maps = vec![
        (ICD10_MAP, ASTHMA, 1, 1, "J45.9".into()),
        (ICD10_MAP, ALLERGIC_ASTHMA, 1, 1, "J45.0".into()),
        (ICD10_MAP, PNEUMONIA, 1, 1, "J18.9".into()),
        (ICD10_MAP, MI, 1, 2, "I21.3".into()),
        (ICD10_MAP, MI, 2, 1, "I21.9".into()),
    ];
    r
}
