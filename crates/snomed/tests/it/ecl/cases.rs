//! Every operator on the hand-built fixture, with the expected concepts written out by hand.

use std::sync::OnceLock;

use snomed::Store;
use snomed::ecl_eval::{EclError, Limits, concept_ids, evaluate_str};

use super::fixture::*;

fn store() -> &'static Store {
    static STORE: OnceLock<(tempfile::TempDir, Store)> = OnceLock::new();
    &STORE.get_or_init(|| release().import()).1
}

fn eval(ecl: &str) -> Result<Vec<u64>, EclError> {
    let s = store();
    let mut ids = concept_ids(s, &evaluate_str(s, ecl, &Limits::default())?);
    ids.sort_unstable();
    Ok(ids)
}

/// Evaluates each expression and compares with the expected concepts.
fn check(cases: &[(&str, &[u64])]) {
    let mut failures = Vec::new();
    for (ecl, expected) in cases {
        let mut want = expected.to_vec();
        want.sort_unstable();
        match eval(ecl) {
            Ok(got) if got == want => {}
            Ok(got) => failures.push(format!("{ecl}\n   expected {want:?}\n   got      {got:?}")),
            Err(e) => failures.push(format!("{ecl}\n   error: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

const FINDINGS: &[u64] = &[
    DISEASE,
    LUNG_DISORDER,
    PNEUMONIA,
    ASTHMA,
    ALLERGIC_ASTHMA,
    MI,
    FRACTURE,
    EDEMA_TRUNK,
];

#[test]
fn hierarchy_operators() {
    check(&[
        ("404684003 |Clinical finding|", &[FINDING]),
        ("< 404684003", FINDINGS),
        (
            "<< 19829001",
            &[LUNG_DISORDER, PNEUMONIA, ASTHMA, ALLERGIC_ASTHMA],
        ),
        ("<! 64572001", &[LUNG_DISORDER, MI]),
        ("<<! 64572001", &[DISEASE, LUNG_DISORDER, MI]),
        (
            "> 389145006",
            &[ASTHMA, LUNG_DISORDER, DISEASE, FINDING, ROOT],
        ),
        (
            ">> 389145006",
            &[
                ALLERGIC_ASTHMA,
                ASTHMA,
                LUNG_DISORDER,
                DISEASE,
                FINDING,
                ROOT,
            ],
        ),
        (">! 389145006", &[ASTHMA]),
        (">>! 389145006", &[ASTHMA, ALLERGIC_ASTHMA]),
        ("!!> (<< 19829001)", &[LUNG_DISORDER]),
        ("!!< (<< 64572001)", &[PNEUMONIA, ALLERGIC_ASTHMA, MI]),
        ("!!< (> 389145006 OR 22298006)", &[ASTHMA, MI]),
        (
            "<< (<! 64572001)",
            &[LUNG_DISORDER, PNEUMONIA, ASTHMA, ALLERGIC_ASTHMA, MI],
        ),
        (
            "descendantOf 19829001",
            &[PNEUMONIA, ASTHMA, ALLERGIC_ASTHMA],
        ),
        ("* {{ C active = 0 }}", &[OLD_ASTHMA, OLD_PNEUMONIA]),
        ("<< 155574008", &[OLD_ASTHMA]),
        ("<< 1003002", &[]),
    ]);
    assert_eq!(eval("*").unwrap().len(), 44, "* is every active concept");
    assert_eq!(eval("ANY MINUS << 138875005").unwrap(), Vec::<u64>::new());
}

#[test]
fn member_of_and_member_filters() {
    check(&[
        ("^ 723264001", &[LUNG, HEART]),
        ("^ 723264001 {{ M active = 0 }}", &[BONE]),
        ("^ (< 446609009)", &[LUNG, HEART]),
        ("^ 447562003 {{ M mapTarget = \"J45.9\" }}", &[ASTHMA]),
        ("^ 447562003 {{ M mapTarget = \"j45.9\" }}", &[ASTHMA]),
        (
            "^ 447562003 {{ M mapTarget = wild:\"J45*\" }}",
            &[ASTHMA, ALLERGIC_ASTHMA],
        ),
        ("^ 447562003 {{ M mapTarget != wild:\"J*\" }}", &[MI]),
        ("^ 447562003 {{ M mapGroup = #2 }}", &[MI]),
        (
            "^ 447562003 {{ M mapGroup = #1, mapPriority = #1 }}",
            &[ASTHMA, ALLERGIC_ASTHMA, PNEUMONIA],
        ),
        (
            "^ 447562003 {{ M mapGroup = #1 }} {{ M mapPriority > #1 }}",
            &[MI],
        ),
        (
            "^ 447562003 {{ M referencedComponentId = << 19829001 }}",
            &[ASTHMA, ALLERGIC_ASTHMA, PNEUMONIA],
        ),
        ("^ [targetComponentId] 900000000000527005", &[ASTHMA]),
        (
            "^ [targetComponentId] (< 900000000000522004)",
            &[ASTHMA, PNEUMONIA],
        ),
        (
            "^ [referencedComponentId, targetComponentId] 900000000000527005",
            &[ASTHMA, OLD_ASTHMA],
        ),
        (
            "^ 900000000000527005 {{ M targetComponentId = << 64572001 }}",
            &[OLD_ASTHMA],
        ),
        (
            "^ 900000000000527005 {{ M moduleId = 900000000000207008, effectiveTime = \"20250101\" }}",
            &[OLD_ASTHMA],
        ),
        (
            "<< 404684003 AND ^ 447562003",
            &[ASTHMA, ALLERGIC_ASTHMA, PNEUMONIA, MI],
        ),
        ("<< (^ 723264001)", &[LUNG, HEART]),
        ("> (^ 723264001)", &[ANATOMICAL, BODY, ROOT]),
    ]);
}

#[test]
fn refinements() {
    check(&[
        (
            "< 404684003 : 363698007 = 39607008",
            &[
                LUNG_DISORDER,
                PNEUMONIA,
                ASTHMA,
                ALLERGIC_ASTHMA,
                FRACTURE,
                EDEMA_TRUNK,
            ],
        ),
        (
            "< 404684003 : 363698007 = << 91723000",
            &[
                LUNG_DISORDER,
                PNEUMONIA,
                ASTHMA,
                ALLERGIC_ASTHMA,
                FRACTURE,
                EDEMA_TRUNK,
                MI,
            ],
        ),
        (
            "<< 404684003 : 116676008 = 23583003",
            &[PNEUMONIA, ASTHMA, ALLERGIC_ASTHMA],
        ),
        ("< 404684003 : << 47429007 = *", &[ALLERGIC_ASTHMA]),
        ("< 404684003 : 47429007 = *", &[]),
        ("< 404684003 : * = 80891009", &[MI, EDEMA_TRUNK]),
        ("* : 363698007 = 80891009", &[MI, EDEMA_TRUNK]),
        (
            "< 404684003 : 363698007 != 39607008",
            &[MI, FRACTURE, EDEMA_TRUNK],
        ),
        ("< 404684003 : [0..0] 363698007 = 39607008", &[DISEASE, MI]),
        (
            "< 404684003 : [0..0] 363698007 != 39607008",
            &[DISEASE, LUNG_DISORDER, PNEUMONIA, ASTHMA, ALLERGIC_ASTHMA],
        ),
        (
            "< 404684003 : [2..*] 363698007 = *",
            &[FRACTURE, EDEMA_TRUNK],
        ),
        (
            "< 404684003 : [1..1] 363698007 = *",
            &[LUNG_DISORDER, PNEUMONIA, ASTHMA, ALLERGIC_ASTHMA, MI],
        ),
        (
            "< 404684003 : [0..1] 363698007 = *",
            &[
                DISEASE,
                LUNG_DISORDER,
                PNEUMONIA,
                ASTHMA,
                ALLERGIC_ASTHMA,
                MI,
            ],
        ),
        (
            "< 404684003 : 363698007 = 272673000, 363698007 = 39607008",
            &[FRACTURE],
        ),
        (
            "< 404684003 : 363698007 = 272673000 OR 116676008 = 55641003",
            &[FRACTURE, MI],
        ),
        ("< 404684003 : 116680003 = 19829001", &[PNEUMONIA, ASTHMA]),
        (
            "< 404684003 : 363698007 = (< 91723000 MINUS 39607008)",
            &[MI, FRACTURE, EDEMA_TRUNK],
        ),
        (
            "( << 64572001 OR << 125605004 ) : 363698007 = 272673000",
            &[FRACTURE],
        ),
        (
            "< 404684003 : 363698007 = (^ 723264001)",
            &[
                LUNG_DISORDER,
                PNEUMONIA,
                ASTHMA,
                ALLERGIC_ASTHMA,
                FRACTURE,
                EDEMA_TRUNK,
                MI,
            ],
        ),
        (
            "< 404684003 : (363698007 = 80891009, 116676008 = 55641003) OR 246075003 = *",
            &[MI, ALLERGIC_ASTHMA],
        ),
    ]);
}

#[test]
fn attribute_groups() {
    check(&[
        (
            "< 404684003 : { 363698007 = 80891009, 116676008 = 79654002 }",
            &[EDEMA_TRUNK],
        ),
        (
            "< 404684003 : { 363698007 = 39607008, 116676008 = 55641003 }",
            &[],
        ),
        (
            "< 404684003 : { 363698007 = 272673000, 363698007 = 39607008 }",
            &[],
        ),
        (
            "< 404684003 : [2..2] { 363698007 = * }",
            &[FRACTURE, EDEMA_TRUNK],
        ),
        (
            "< 404684003 : [0..0] { 363698007 = 39607008 }",
            &[DISEASE, MI],
        ),
        (
            "< 404684003 : [1..1] { 363698007 = 39607008 }",
            &[
                LUNG_DISORDER,
                PNEUMONIA,
                ASTHMA,
                ALLERGIC_ASTHMA,
                FRACTURE,
                EDEMA_TRUNK,
            ],
        ),
        (
            "< 404684003 : { 363698007 = 39607008 } OR { 363698007 = 80891009 }",
            &[
                LUNG_DISORDER,
                PNEUMONIA,
                ASTHMA,
                ALLERGIC_ASTHMA,
                FRACTURE,
                EDEMA_TRUNK,
                MI,
            ],
        ),
        (
            "< 404684003 : { 363698007 = 39607008, 116676008 = 23583003 }, 246075003 = 387517004",
            &[ALLERGIC_ASTHMA],
        ),
        ("< 404684003 : { [2..*] 363698007 = * }", &[]),
        (
            "< 404684003 : { 363698007 = 80891009 OR 116676008 = 23583003 }",
            &[PNEUMONIA, ASTHMA, ALLERGIC_ASTHMA, MI, EDEMA_TRUNK],
        ),
    ]);
}

#[test]
fn reverse_and_dotted_attributes() {
    check(&[
        ("< 91723000 : R 363698007 = 22298006", &[HEART]),
        ("* : R 363698007 = << 64572001", &[LUNG, HEART]),
        ("< 91723000 : [2..*] R 363698007 = *", &[LUNG, HEART]),
        ("< 91723000 : [1..1] R 363698007 = *", &[BONE]),
        ("< 105590001 : R 127489000 = < 373873005", &[PARACETAMOL]),
        ("< 64572001 . 363698007", &[LUNG, HEART]),
        ("<< 404684003 . 116676008", &[INFLAMMATION, INFARCT, EDEMA]),
        ("(< 19829001 . 363698007) . 116680003", &[ANATOMICAL]),
        ("< 19829001 . 363698007 . 116680003", &[ANATOMICAL]),
        ("< 404684003 . << 47429007", &[PARACETAMOL]),
        ("< 91723000 AND (< 125605004 . 363698007)", &[]),
        ("< 91723000 AND (125605004 . 363698007)", &[BONE, LUNG]),
    ]);
}

#[test]
fn concrete_values() {
    check(&[
        ("< 373873005 : 1142135004 >= #500", &[TABLET_500, TABLET_1G]),
        ("< 373873005 : 1142135004 > #500", &[TABLET_1G]),
        ("< 373873005 : 1142135004 = #500", &[TABLET_500]),
        ("< 373873005 : 1142135004 = #500.0", &[TABLET_500]),
        ("< 373873005 : 1142135004 < #600", &[TABLET_500]),
        ("< 373873005 : 1142135004 != #500", &[TABLET_1G]),
        ("< 373873005 : [0..0] 1142135004 > #600", &[TABLET_500]),
        ("< 373873005 : 1002007 = \"PANADOL\"", &[TABLET_500]),
        ("< 373873005 : 1002007 = \"panadol\"", &[]),
        (
            "< 373873005 : 1002007 = wild:\"pana*\"",
            &[TABLET_500, TABLET_1G],
        ),
        ("< 373873005 : 1002007 != \"PANADOL\"", &[TABLET_1G]),
        (
            "< 373873005 : 1002007 = (\"PANADOL\" \"Panamax\")",
            &[TABLET_500, TABLET_1G],
        ),
        (
            "< 373873005 : { 127489000 = 387517004, 1142135004 = #1000 }",
            &[TABLET_1G],
        ),
        ("< 373873005 : 1142135004 = \"500\"", &[]),
    ]);
}

#[test]
fn compound_and_nested() {
    check(&[
        (
            "<< 19829001 MINUS << 195967001",
            &[LUNG_DISORDER, PNEUMONIA],
        ),
        (
            "<< 19829001 OR 22298006",
            &[LUNG_DISORDER, PNEUMONIA, ASTHMA, ALLERGIC_ASTHMA, MI],
        ),
        (
            "(<< 19829001 OR 22298006) AND ^ 447562003",
            &[ASTHMA, ALLERGIC_ASTHMA, PNEUMONIA, MI],
        ),
        (
            "< 404684003 AND < 64572001 AND < 19829001",
            &[PNEUMONIA, ASTHMA, ALLERGIC_ASTHMA],
        ),
        (
            "< 404684003 , > 389145006",
            &[DISEASE, LUNG_DISORDER, ASTHMA],
        ),
        (
            "(< 404684003 MINUS < 64572001) MINUS 125605004",
            &[DISEASE, EDEMA_TRUNK],
        ),
        ("<< (< 64572001 : 363698007 = 80891009)", &[MI]),
        ("((22298006))", &[MI]),
    ]);
}

#[test]
fn description_filters() {
    check(&[
        ("< 64572001 {{ term = \"heart att\" }}", &[MI]),
        ("< 64572001 {{ term = \"att heart\" }}", &[MI]),
        ("< 64572001 {{ term = match:\"heart att\" }}", &[MI]),
        (
            "< 404684003 {{ term = \"lung\" }}",
            &[LUNG_DISORDER, PNEUMONIA],
        ),
        (
            "< 404684003 {{ term = wild:\"*asthma*\" }}",
            &[ASTHMA, ALLERGIC_ASTHMA],
        ),
        (
            "< 404684003 {{ term = (\"myocard\" \"pneum\") }}",
            &[MI, PNEUMONIA],
        ),
        (
            "< 404684003 {{ term = \"heart\", term = \"attack\" }}",
            &[MI],
        ),
        (
            "< 404684003 {{ term = \"asthma\" }} {{ term = \"allergic\" }}",
            &[ALLERGIC_ASTHMA],
        ),
        (
            "< 404684003 {{ term != \"a\" }}",
            &[DISEASE, LUNG_DISORDER, PNEUMONIA, MI, FRACTURE, EDEMA_TRUNK],
        ),
        ("< 404684003 {{ term = \"broken\" }}", &[]),
        (
            "< 404684003 {{ term = \"broken\", active = false }}",
            &[FRACTURE],
        ),
        ("< 404684003 {{ language = sv }}", &[MI]),
        ("< 404684003 {{ term = \"hjärt\", language = sv }}", &[MI]),
        ("< 404684003 {{ term = \"hjärt\", language = en }}", &[]),
        ("< 404684003 {{ term = \"heart\", type = fsn }}", &[]),
        ("< 404684003 {{ term = \"heart\", type = syn }}", &[MI]),
        (
            "< 404684003 {{ term = \"heart\", typeId = 900000000000013009 |Synonym| }}",
            &[MI],
        ),
        (
            "< 404684003 {{ term = \"heart\", type = (syn fsn) }}",
            &[MI],
        ),
        (
            "< 404684003 {{ dialect = en-gb (accept) }}",
            &[MI, PNEUMONIA],
        ),
        ("< 404684003 {{ dialect = en-us (accept) }}", &[MI, ASTHMA]),
        (
            "< 404684003 {{ term = \"inflammation\", dialect = en-us }}",
            &[],
        ),
        (
            "< 404684003 {{ term = \"inflammation\", dialect = en-gb }}",
            &[PNEUMONIA],
        ),
        (
            "< 404684003 {{ dialectId = 900000000000508004 (900000000000549004 |Acceptable|) }}",
            &[MI, PNEUMONIA],
        ),
        (
            "< 404684003 {{ dialect = (en-gb (accept) en-us (accept)) }}",
            &[MI, PNEUMONIA, ASTHMA],
        ),
        (
            "< 404684003 {{ dialectId = (900000000000508004 900000000000509007) (accept) }}",
            &[MI, PNEUMONIA, ASTHMA],
        ),
        (
            "< 404684003 {{ term = \"attack\", dialect = en-gb (prefer) }}",
            &[],
        ),
        (
            "<< 404684003 {{ term = \"heart\" }} {{ language = sv }}",
            &[MI],
        ),
        (
            "< 404684003 {{ D term = \"disorder\", moduleId = 900000000000207008 }}",
            &[
                LUNG_DISORDER,
                ASTHMA,
                PNEUMONIA,
                ALLERGIC_ASTHMA,
                MI,
                FRACTURE,
                DISEASE,
            ],
        ),
        (
            "< 404684003 {{ term = \"disorder\", effectiveTime = \"20250101\" }}",
            &[
                LUNG_DISORDER,
                ASTHMA,
                PNEUMONIA,
                ALLERGIC_ASTHMA,
                MI,
                FRACTURE,
                DISEASE,
            ],
        ),
    ]);
}

#[test]
fn description_id_filter() {
    let s = store();
    let d = s
        .descriptions(s.index_of(snomed::SctId::new(MI).unwrap()).unwrap())
        .find(|d| d.term == "Heart attack")
        .unwrap();
    check(&[
        (&format!("< 404684003 {{{{ id = {} }}}}", d.id), &[MI]),
        (
            &format!("< 404684003 {{{{ id = ({} 1234567) }}}}", d.id),
            &[MI],
        ),
    ]);
}

#[test]
fn concept_filters() {
    check(&[
        (
            "< 404684003 {{ C definitionStatus = defined }}",
            &[PNEUMONIA, ALLERGIC_ASTHMA, MI],
        ),
        (
            "< 404684003 {{ C definitionStatus != defined }}",
            &[DISEASE, LUNG_DISORDER, ASTHMA, FRACTURE, EDEMA_TRUNK],
        ),
        (
            "< 404684003 {{ C definitionStatusId = 900000000000074008 }}",
            &[DISEASE, LUNG_DISORDER, ASTHMA, FRACTURE, EDEMA_TRUNK],
        ),
        (
            "< 404684003 {{ C effectiveTime >= \"20200731\" }}",
            &[PNEUMONIA, ALLERGIC_ASTHMA, MI],
        ),
        ("< 404684003 {{ C effectiveTime = \"20250101\" }}", &[MI]),
        (
            "< 404684003 {{ C effectiveTime = (\"20250101\" \"20200731\") }}",
            &[PNEUMONIA, ALLERGIC_ASTHMA, MI],
        ),
        (
            "< 404684003 {{ C effectiveTime != (\"20250101\" \"20200731\") }}",
            &[DISEASE, LUNG_DISORDER, ASTHMA, FRACTURE, EDEMA_TRUNK],
        ),
        (
            "< 900000000000455006 {{ C moduleId = 900000000000012004 }}",
            &[
                SIMPLE_TYPE,
                LATERALIZABLE,
                HISTORICAL,
                SAME_AS,
                REPLACED_BY,
                ICD10_MAP,
            ],
        ),
        (
            "< 900000000000441003 {{ C moduleId != 900000000000012004 }}",
            &[],
        ),
        ("< 404684003 {{ C active = 1 }}", FINDINGS),
        (
            "< 404684003 {{ C active = 1, definitionStatus = defined }} {{ D term = \"heart\" }}",
            &[MI],
        ),
        ("^ 900000000000527005 {{ C active = false }}", &[OLD_ASTHMA]),
    ]);
}

#[test]
fn history_supplements() {
    check(&[
        (
            "<< 195967001 {{ +HISTORY-MIN }}",
            &[ASTHMA, ALLERGIC_ASTHMA, OLD_ASTHMA],
        ),
        (
            "<< 19829001 {{ +HISTORY-MIN }}",
            &[
                LUNG_DISORDER,
                PNEUMONIA,
                ASTHMA,
                ALLERGIC_ASTHMA,
                OLD_ASTHMA,
            ],
        ),
        (
            "<< 19829001 {{ +HISTORY-MOD }}",
            &[
                LUNG_DISORDER,
                PNEUMONIA,
                ASTHMA,
                ALLERGIC_ASTHMA,
                OLD_ASTHMA,
                OLD_PNEUMONIA,
            ],
        ),
        (
            "<< 19829001 {{ +HISTORY-MAX }}",
            &[
                LUNG_DISORDER,
                PNEUMONIA,
                ASTHMA,
                ALLERGIC_ASTHMA,
                OLD_ASTHMA,
                OLD_PNEUMONIA,
            ],
        ),
        (
            "<< 19829001 {{ +HISTORY }}",
            &[
                LUNG_DISORDER,
                PNEUMONIA,
                ASTHMA,
                ALLERGIC_ASTHMA,
                OLD_ASTHMA,
                OLD_PNEUMONIA,
            ],
        ),
        (
            "<< 19829001 {{ +HISTORY (900000000000526001) }}",
            &[
                LUNG_DISORDER,
                PNEUMONIA,
                ASTHMA,
                ALLERGIC_ASTHMA,
                OLD_PNEUMONIA,
            ],
        ),
        ("<< 22298006 {{ +HISTORY }}", &[MI]),
    ]);
}

#[test]
fn limits_and_errors_are_clear() {
    let s = store();
    let tiny = Limits {
        max_results: 10,
        ..Limits::default()
    };
    match evaluate_str(s, "*", &tiny) {
        Err(EclError::TooLarge {
            size: 44,
            limit: 10,
        }) => {}
        other => panic!("expected TooLarge, got {other:?}"),
    }
    let no_time = Limits {
        timeout: std::time::Duration::ZERO,
        ..Limits::default()
    };
    match evaluate_str(
        s,
        "<< (< 138875005 : * = *) AND * {{ D term = wild:\"*a*\" }}",
        &no_time,
    ) {
        Err(EclError::Timeout(_)) | Ok(_) => {}
        other => panic!("expected a timeout or a result, got {other:?}"),
    }
    assert!(matches!(eval("<< ORPHA#558"), Err(EclError::UnknownScheme(s)) if s == "ORPHA"));
    assert!(matches!(
        eval("* {{ dialect = xx-yy }}"),
        Err(EclError::UnknownDialect(_))
    ));
    assert!(matches!(eval("< 404684003 AND"), Err(EclError::Parse(_))));
}

#[test]
fn every_official_example_evaluates() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/ecl/examples");
    assert!(
        dir.is_dir(),
        "the official ECL examples are missing: expected them at {}",
        dir.display()
    );
    let mut count = 0;
    for group in std::fs::read_dir(&dir).unwrap() {
        for f in std::fs::read_dir(group.unwrap().path()).unwrap() {
            let path = f.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            count += 1;
            match evaluate_str(store(), &text, &Limits::default()) {
                Ok(_) => {}
                Err(EclError::UnknownScheme(_)) if text.contains("LOINC#") => {}
                Err(e) => panic!("{}: {e}", path.display()),
            }
        }
    }
    assert_eq!(count, 121);
}

#[test]
fn alternate_identifiers() {
    check(&[
        ("LOINC#54486-6", &[ASTHMA]),
        ("<< LOINC#54486-6", &[ASTHMA, ALLERGIC_ASTHMA]),
        ("loinc#54486-6 |Asthma|", &[ASTHMA]),
        // inactive identifier rows identify nothing
        ("LOINC#11111-1", &[]),
        // the newest row of a (scheme, code) wins
        ("LOINC#22222-2", &[EDEMA_TRUNK]),
        ("LOINC#99999-9", &[]),
        ("LOINC#54486-6 OR LOINC#22222-2", &[ASTHMA, EDEMA_TRUNK]),
    ]);
    assert!(matches!(eval("ORPHA#558"), Err(EclError::UnknownScheme(_))));
}
