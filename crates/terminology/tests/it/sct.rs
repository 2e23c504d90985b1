//! SNOMED CT through the FHIR operations, over the conformance suites' real subset
//! (`../shared/tx-ecosystem/tx-source/snomed`, imported as the unpublished release it is). Expected values are
//! computed from the RF2 files themselves, not copied from our answers.

use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;
use terminology::{Config, Operation, Params, Registry, SnomedProvider, Terminology};

const SCT: &str = "http://snomed.info/sct";
const VERSION: &str = "http://snomed.info/xsct/31000003106/version/20250909";
const IS_A: &str = "116680003";
const INFERRED: &str = "900000000000011006";

struct Fixture {
    _dir: tempfile::TempDir,
    tx: Terminology,
    /// The same content with no practical size limit, so that whole expansions can be compared with pages.
    unlimited: Terminology,
    rf2: Rf2,
}

/// The rows of the subset the tests check against.
struct Rf2 {
    /// Active inferred IS-A: child -> parents.
    parents: HashMap<String, Vec<String>>,
    /// Active inferred IS-A: parent -> children.
    children: HashMap<String, Vec<String>>,
    /// Every concept id, and the active ones.
    concepts: Vec<String>,
    /// Active association refset rows: (refset, referenced, target).
    associations: Vec<(String, String, String)>,
}

/// Every code reached from `code` (itself excluded) by following `links`.
fn reachable(links: &HashMap<String, Vec<String>>, code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![code.to_string()];
    while let Some(c) = stack.pop() {
        for next in links.get(&c).into_iter().flatten() {
            if out.insert(next.clone()) {
                stack.push(next.clone());
            }
        }
    }
    out
}

fn rows(rel: &str) -> Vec<Vec<String>> {
    let path = crate::shared()
        .join("tx-ecosystem/tx-source/snomed")
        .join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .skip(1)
        .filter(|l| !l.is_empty())
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

impl Rf2 {
    fn read() -> Rf2 {
        let mut parents: HashMap<String, Vec<String>> = HashMap::new();
        let mut children: HashMap<String, Vec<String>> = HashMap::new();
        for r in rows("Terminology/sct2_Relationship_Snapshot_INT_20250909.txt") {
            if r[2] == "1" && r[7] == IS_A && r[8] == INFERRED {
                parents.entry(r[4].clone()).or_default().push(r[5].clone());
                children.entry(r[5].clone()).or_default().push(r[4].clone());
            }
        }
        let concepts = rows("Terminology/sct2_Concept_Snapshot_INT_20250909.txt")
            .into_iter()
            .map(|r| r[0].clone())
            .collect();
        let associations = rows("Refset/der2_cRefset_AssociationSnapshot_INT_20250909.txt")
            .into_iter()
            .filter(|r| r[2] == "1")
            .map(|r| (r[4].clone(), r[5].clone(), r[6].clone()))
            .collect();
        Rf2 {
            parents,
            children,
            concepts,
            associations,
        }
    }

    /// `code` and everything below it.
    fn descendants_or_self(&self, code: &str) -> BTreeSet<String> {
        let mut out = reachable(&self.children, code);
        out.insert(code.to_string());
        out
    }

    /// Everything above `code`.
    fn ancestors(&self, code: &str) -> BTreeSet<String> {
        reachable(&self.parents, code)
    }

    fn sorted(&self, map: &HashMap<String, Vec<String>>, code: &str) -> BTreeSet<String> {
        map.get(code).into_iter().flatten().cloned().collect()
    }
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("snomed");
        let subset = crate::shared().join("tx-ecosystem/tx-source/snomed");
        snomed::import_with(
            &[subset],
            &root,
            &snomed::NoProgress,
            &snomed::ImportOptions::unpublished(),
        )
        .unwrap();
        let store = std::sync::Arc::new(snomed::Store::open(&root).unwrap());
        let tx = Terminology::new(Registry::new(), Config::default())
            .with_provider(SnomedProvider::new(store.clone()));
        let unlimited = Terminology::new(
            Registry::new(),
            Config {
                max_expansion: usize::MAX,
                ..Config::default()
            },
        )
        .with_provider(SnomedProvider::new(store));
        Fixture {
            _dir: dir,
            tx,
            unlimited,
            rf2: Rf2::read(),
        }
    })
}

fn run(op: Operation, params: Value) -> Result<Value, terminology::TxError> {
    fixture().tx.run(op, &Params::from_json(&params), None)
}

fn parameters(pairs: &[Value]) -> Value {
    json!({"resourceType": "Parameters", "parameter": pairs})
}

fn param<'a>(answer: &'a Value, name: &str) -> Option<&'a Value> {
    answer["parameter"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)
}

fn property_values(answer: &Value, code: &str) -> BTreeSet<String> {
    answer["parameter"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "property")
        .filter(|p| p["part"][0]["valueCode"] == code)
        .filter_map(|p| {
            p["part"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["name"] == "value")
                .and_then(|v| v["valueCode"].as_str())
                .map(str::to_string)
        })
        .collect()
}

fn isa_value_set(code: &str) -> Value {
    json!({"resourceType": "ValueSet", "url": "http://example.org/vs/isa", "version": "1", "status": "active",
        "compose": {"include": [{"system": SCT, "version": VERSION,
            "filter": [{"property": "concept", "op": "is-a", "value": code}]}]}})
}

fn ecl_value_set(ecl: &str) -> Value {
    json!({"resourceType": "ValueSet", "url": "http://example.org/vs/ecl", "version": "1", "status": "active",
        "compose": {"include": [{"system": SCT, "version": VERSION,
            "filter": [{"property": "constraint", "op": "=", "value": ecl}]}]}})
}

fn codes_of(expansion: &Value) -> BTreeSet<String> {
    expansion["expansion"]["contains"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["code"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_subset_is_served_under_its_unpublished_version_uri() {
    let tx = &fixture().tx;
    let sct: Vec<_> = tx
        .providers()
        .iter()
        .filter(|p| p.system() == "http://snomed.info/sct")
        .collect();
    assert_eq!(sct.len(), 1);
    assert_eq!(sct[0].version(), VERSION);
}

#[test]
fn lookup_gives_display_parents_and_children_from_the_release() {
    let code = "367430006";
    let answer = run(
        Operation::Lookup,
        parameters(&[
            json!({"name": "system", "valueUri": SCT}),
            json!({"name": "version", "valueString": VERSION}),
            json!({"name": "code", "valueCode": code}),
        ]),
    )
    .unwrap();
    let rf2 = &fixture().rf2;
    assert_eq!(
        param(&answer, "display").unwrap()["valueString"],
        "Repair of tendon of hand"
    );
    assert_eq!(
        property_values(&answer, "parent"),
        rf2.sorted(&rf2.parents, code)
    );
    assert_eq!(
        property_values(&answer, "child"),
        rf2.sorted(&rf2.children, code)
    );
    assert_eq!(param(&answer, "version").unwrap()["valueString"], VERSION);
    // An unknown code is an error, not an empty answer.
    assert!(
        run(
            Operation::Lookup,
            parameters(&[
                json!({"name": "system", "valueUri": SCT}),
                json!({"name": "code", "valueCode": "99999999"}),
            ]),
        )
        .is_err()
    );
}

/// The outcome of `$subsumes` of SNOMED CT codes (or expressions) `a` and `b`.
fn subsumes(a: &str, b: &str) -> Result<String, terminology::TxError> {
    run(
        Operation::Subsumes,
        parameters(&[
            json!({"name": "system", "valueUri": SCT}),
            json!({"name": "codeA", "valueCode": a}),
            json!({"name": "codeB", "valueCode": b}),
        ]),
    )
    .map(|r| r["parameter"][0]["valueCode"].as_str().unwrap().to_string())
}

#[test]
fn subsumes_follows_the_inferred_hierarchy() {
    let rf2 = &fixture().rf2;
    let below = rf2.descendants_or_self("128241005");
    let child = below.iter().find(|c| *c != "128241005").unwrap().clone();
    let outcome = |a: &str, b: &str| subsumes(a, b).unwrap();
    assert_eq!(outcome("128241005", &child), "subsumes");
    assert_eq!(outcome(&child, "128241005"), "subsumed-by");
    assert_eq!(outcome("128241005", "128241005"), "equivalent");
    assert_eq!(outcome("128241005", "10200004"), "not-subsumed");
}

#[test]
fn is_a_expansion_equals_the_release_closure() {
    let expansion = run(
        Operation::Expand,
        parameters(&[json!({"name": "valueSet", "resource": isa_value_set("10200004")})]),
    )
    .unwrap();
    let expected = fixture().rf2.descendants_or_self("10200004");
    assert_eq!(codes_of(&expansion), expected);
    assert_eq!(expansion["expansion"]["total"], expected.len());
    // Everything below the root is more than an expansion may return.
    let err = run(
        Operation::Expand,
        parameters(&[json!({"name": "valueSet", "resource": isa_value_set("138875005")})]),
    )
    .unwrap_err();
    assert_eq!(err.issues[0].code, "too-costly");
}

#[test]
fn ecl_children_and_exclusion_match_the_release() {
    let rf2 = &fixture().rf2;
    let children = run(
        Operation::Expand,
        parameters(&[json!({"name": "valueSet", "resource": ecl_value_set("<! 10200004")})]),
    )
    .unwrap();
    assert_eq!(codes_of(&children), rf2.sorted(&rf2.children, "10200004"));
    let minus = run(
        Operation::Expand,
        parameters(&[json!({"name": "valueSet", "resource":
            ecl_value_set("<< 10200004 MINUS << 119216005")})]),
    )
    .unwrap();
    let expected: BTreeSet<String> = rf2
        .descendants_or_self("10200004")
        .difference(&rf2.descendants_or_self("119216005"))
        .cloned()
        .collect();
    assert_eq!(codes_of(&minus), expected);
}

#[test]
fn invalid_ecl_and_unknown_concepts_are_client_errors() {
    for ecl in [
        "<< abc",
        "< 99999999",
        "<< 10200004 AND << 64572001 OR << 119216005",
    ] {
        let err = run(
            Operation::Expand,
            parameters(&[json!({"name": "valueSet", "resource": ecl_value_set(ecl)})]),
        )
        .unwrap_err();
        assert_eq!(err.kind, terminology::ErrorKind::Invalid, "{ecl}");
        assert!(
            err.issues[0].text.contains(ecl),
            "{ecl}: {}",
            err.issues[0].text
        );
    }
}

#[test]
fn validate_code_in_an_implicit_value_set_and_with_expressions() {
    let rf2 = &fixture().rf2;
    let inside = rf2.descendants_or_self("10200004");
    let member = inside.iter().find(|c| *c != "10200004").unwrap();
    let outside = rf2.concepts.iter().find(|c| !inside.contains(*c)).unwrap();
    let validate = |code: &str| {
        let a = run(
            Operation::ValidateVs,
            parameters(&[
                json!({"name": "url", "valueUri": format!("{SCT}?fhir_vs=isa/10200004")}),
                json!({"name": "system", "valueUri": SCT}),
                json!({"name": "code", "valueCode": code}),
            ]),
        )
        .unwrap();
        param(&a, "result").unwrap()["valueBoolean"]
            .as_bool()
            .unwrap()
    };
    assert!(validate(member));
    assert!(!validate(outside));
    // A post-coordinated expression refines its focus concept: in the value set when its focus is.
    assert!(validate(&format!("{member}:{{272741003=24028007}}")));
    assert!(!validate(&format!("{outside}:{{272741003=24028007}}")));
    // An implicit value set of an unknown concept does not exist.
    assert!(
        run(
            Operation::ValidateVs,
            parameters(&[
                json!({"name": "url", "valueUri": format!("{SCT}?fhir_vs=isa/4106070063")}),
                json!({"name": "system", "valueUri": SCT}),
                json!({"name": "code", "valueCode": member}),
            ]),
        )
        .is_err()
    );
}

#[test]
fn an_inactive_description_is_a_warning_and_a_wrong_display_an_error() {
    let validate = |display: &str| {
        run(
            Operation::ValidateCs,
            parameters(&[
                json!({"name": "url", "valueUri": SCT}),
                json!({"name": "code", "valueCode": "42463004"}),
                json!({"name": "display", "valueString": display}),
            ]),
        )
        .unwrap()
    };
    // `Genus: Opisthorchis` (1788015016) is an inactive description of 42463004 in the release.
    let a = validate("Genus: Opisthorchis");
    assert_eq!(param(&a, "result").unwrap()["valueBoolean"], true);
    let text = param(&a, "issues").unwrap()["resource"]["issue"][0]["details"]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.contains("no longer considered a correct display"),
        "{text}"
    );
    let b = validate("Opisthorchis species");
    assert_eq!(param(&b, "result").unwrap()["valueBoolean"], true);
    let c = validate("Liver");
    assert_eq!(param(&c, "result").unwrap()["valueBoolean"], false);
}

#[test]
fn expressions_are_checked_against_the_release() {
    let check = |code: &str| {
        run(
            Operation::ValidateCs,
            parameters(&[
                json!({"name": "url", "valueUri": SCT}),
                json!({"name": "code", "valueCode": code}),
            ]),
        )
        .unwrap()
    };
    let good = check("128241005:{363698007=181268008}");
    assert_eq!(param(&good, "result").unwrap()["valueBoolean"], true);
    assert_eq!(
        param(&good, "display").unwrap()["valueString"],
        "128241005|Inflammatory disease of liver|:{363698007|Finding site|=181268008|Entire liver|}"
    );
    // 240280071 is not a concept of the release; 24028007 |Right| is not an attribute.
    for bad in [
        "367430006:{272741003=240280071}",
        "367430006:{24028007=272741003}",
    ] {
        assert_eq!(
            param(&check(bad), "result").unwrap()["valueBoolean"],
            false,
            "{bad}"
        );
    }
}

#[test]
fn history_association_map_translates_to_the_replacement() {
    let (_, source, target) = fixture()
        .rf2
        .associations
        .iter()
        .find(|(r, _, _)| r == "900000000000526001")
        .expect("an active REPLACED BY row")
        .clone();
    let answer = run(
        Operation::Translate,
        parameters(&[
            json!({"name": "url", "valueUri": format!("{SCT}?fhir_cm=900000000000526001")}),
            json!({"name": "system", "valueUri": SCT}),
            json!({"name": "code", "valueCode": source}),
        ]),
    )
    .unwrap();
    assert_eq!(param(&answer, "result").unwrap()["valueBoolean"], true);
    let m = param(&answer, "match").unwrap();
    assert_eq!(m["part"][1]["valueCoding"]["code"], target.as_str());
}

/// The generic text filter of `$expand`: the code, or a word of the display, starts with the filter.
fn filter_keeps(code: &str, display: &str, filter: &str) -> bool {
    let (d, f) = (display.to_lowercase(), filter.to_lowercase());
    code.starts_with(&f)
        || d.starts_with(&f)
        || d.split(|c: char| !c.is_alphanumeric())
            .any(|w| w.starts_with(&f))
}

#[test]
fn text_filtered_expansion_loses_nothing_to_the_search_index() {
    // The unfiltered expansion, filtered here by the generic rule, against the server's filtered expansion
    // (which first narrows the selection through the store's search index).
    let vs = isa_value_set("10200004");
    let all = run(
        Operation::Expand,
        parameters(&[json!({"name": "valueSet", "resource": vs.clone()})]),
    )
    .unwrap();
    let contains = all["expansion"]["contains"].as_array().unwrap().clone();
    assert!(contains.len() > 20, "expected a sizeable subtree");
    let mut filters: Vec<String> = contains
        .iter()
        .step_by(7)
        .filter_map(|c| c["display"].as_str())
        .filter_map(|d| d.split(' ').nth(1).or(d.split(' ').next()))
        .filter(|w| w.len() >= 4 && w.chars().all(char::is_alphabetic))
        .map(|w| w[..4].to_string())
        .collect();
    filters.extend(["infl".to_string(), "zzzq".to_string()]);
    for f in &filters {
        let expected: BTreeSet<String> = contains
            .iter()
            .filter(|c| {
                filter_keeps(
                    c["code"].as_str().unwrap(),
                    c["display"].as_str().unwrap_or_default(),
                    f,
                )
            })
            .map(|c| c["code"].as_str().unwrap().to_string())
            .collect();
        let got = run(
            Operation::Expand,
            parameters(&[
                json!({"name": "valueSet", "resource": vs.clone()}),
                json!({"name": "filter", "valueString": f}),
            ]),
        )
        .unwrap();
        assert_eq!(codes_of(&got), expected, "filter {f}");
    }
    // Below the root everything is too many to expand, but a text filter narrows it through the index first.
    let word = &filters[0];
    let root = run(
        Operation::Expand,
        parameters(&[
            json!({"name": "valueSet", "resource": isa_value_set("138875005")}),
            json!({"name": "filter", "valueString": word}),
        ]),
    )
    .unwrap();
    let found = root["expansion"]["contains"].as_array().unwrap();
    assert!(!found.is_empty(), "filter {word} below the root");
    for c in found {
        assert!(
            filter_keeps(
                c["code"].as_str().unwrap(),
                c["display"].as_str().unwrap(),
                word
            ),
            "{c}"
        );
    }
}

/// `$expand` of `url` with `extra` parameters on the fixture without a size limit.
fn expand_unlimited(url: &str, extra: &[Value]) -> Value {
    let mut p = vec![json!({"name": "url", "valueUri": url})];
    p.extend(extra.iter().cloned());
    fixture()
        .unlimited
        .run(Operation::Expand, &Params::from_json(&parameters(&p)), None)
        .unwrap_or_else(|e| panic!("{url} {extra:?}: {e:?}"))
}

fn contains_of(expansion: &Value) -> Vec<Value> {
    expansion["expansion"]["contains"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn paged_expansions_are_slices_of_the_whole_expansion() {
    // Pages come from the provider (only the page is compiled); the whole expansion from the general path
    // (every selected concept compiled, then filtered). Both must agree code for code and element for element.
    let ecl = |e: &str| format!("{SCT}?fhir_vs=ecl/{e}");
    let cases: Vec<(String, Vec<Value>)> = vec![
        (format!("{SCT}?fhir_vs"), vec![]),
        (
            format!("{SCT}?fhir_vs"),
            vec![json!({"name": "filter", "valueString": "dis"})],
        ),
        (
            format!("{SCT}?fhir_vs"),
            vec![json!({"name": "filter", "valueString": "inflammation"})],
        ),
        (
            format!("{SCT}?fhir_vs"),
            vec![json!({"name": "activeOnly", "valueBoolean": true})],
        ),
        (
            format!("{SCT}?fhir_vs"),
            vec![
                json!({"name": "filter", "valueString": "str"}),
                json!({"name": "activeOnly", "valueBoolean": true}),
                json!({"name": "includeDesignations", "valueBoolean": true}),
            ],
        ),
        (format!("{SCT}?fhir_vs=isa/10200004"), vec![]),
        (
            format!("{SCT}?fhir_vs=isa/10200004"),
            vec![json!({"name": "displayLanguage", "valueCode": "en-US"})],
        ),
        (
            format!("{SCT}?fhir_vs"),
            vec![
                json!({"name": "filter", "valueString": "dis"}),
                json!({"name": "displayLanguage", "valueCode": "en-GB"}),
            ],
        ),
        (
            format!("{SCT}?fhir_vs=isa/10200004"),
            vec![
                json!({"name": "filter", "valueString": "inf"}),
                json!({"name": "displayLanguage", "valueCode": "fr,en;q=0.5"}),
            ],
        ),
        (ecl("<< 404684003 : 363698007 = << 123037004"), vec![]),
        (
            ecl("< 138875005"),
            vec![json!({"name": "filter", "valueString": "pro"})],
        ),
        (ecl("<< 10200004 MINUS << 119216005"), vec![]),
        // One-word filters are answered from the display words: a single letter (a wide range of words),
        // upper case, and under is-a with activeOnly; a phrase and a hyphenated word take the search index.
        (
            format!("{SCT}?fhir_vs"),
            vec![json!({"name": "filter", "valueString": "s"})],
        ),
        (
            format!("{SCT}?fhir_vs"),
            vec![json!({"name": "filter", "valueString": "DISOR"})],
        ),
        (
            format!("{SCT}?fhir_vs=isa/404684003"),
            vec![
                json!({"name": "filter", "valueString": "ab"}),
                json!({"name": "activeOnly", "valueBoolean": true}),
            ],
        ),
        (
            format!("{SCT}?fhir_vs"),
            vec![json!({"name": "filter", "valueString": "disorder of"})],
        ),
    ];
    for (url, extra) in &cases {
        let whole = expand_unlimited(url, extra);
        let all = contains_of(&whole);
        let total = whole["expansion"]["total"].as_u64().unwrap() as usize;
        assert_eq!(all.len(), total, "{url} {extra:?}");
        assert!(total > 0, "{url} {extra:?} selects nothing: a useless case");
        for (offset, count) in [
            (0, 10),
            (0, 1),
            (3, 7),
            (total.saturating_sub(2), 5),
            (total + 5, 10),
            (0, 0),
        ] {
            let mut p = extra.clone();
            p.push(json!({"name": "count", "valueInteger": count}));
            p.push(json!({"name": "offset", "valueInteger": offset}));
            let page = expand_unlimited(url, &p);
            let what = format!("{url} {extra:?} offset {offset} count {count}");
            assert_eq!(page["expansion"]["total"], total, "{what}");
            assert_eq!(page["expansion"]["offset"], offset, "{what}");
            let want: Vec<Value> = all.iter().skip(offset).take(count).cloned().collect();
            assert_eq!(contains_of(&page), want, "{what}");
            // The same page through the size-limited service: paging is not refused.
            let limited = fixture()
                .tx
                .run(
                    Operation::Expand,
                    &Params::from_json(&parameters(
                        &[vec![json!({"name": "url", "valueUri": url})], p.clone()].concat(),
                    )),
                    None,
                )
                .unwrap();
            assert_eq!(contains_of(&limited), want, "{what} (limited)");
        }
    }
}

#[test]
fn cached_pages_equal_the_first_answer() {
    // The second request of the same include is served from the provider's cache of evaluated includes.
    let url = format!("{SCT}?fhir_vs=ecl/<< 404684003");
    let p = [
        json!({"name": "count", "valueInteger": 5}),
        json!({"name": "offset", "valueInteger": 2}),
        json!({"name": "filter", "valueString": "dis"}),
    ];
    let first = expand_unlimited(&url, &p);
    let again = expand_unlimited(&url, &p);
    assert_eq!(first["expansion"]["total"], again["expansion"]["total"]);
    assert_eq!(contains_of(&first), contains_of(&again));
    assert!(!contains_of(&first).is_empty());
}

/// A refinement as sets: the ungrouped (type, value) pairs and the role groups, whatever their order.
type Definition = (
    BTreeSet<(String, String)>,
    BTreeSet<BTreeSet<(String, String)>>,
);

/// The focus concepts and the refinement of a terse normal form (`a+b:t=v,{t=v,t=v}`; values are ids, `#n` or
/// quoted strings without commas, as the subset's are).
fn parse_terse(text: &str) -> (BTreeSet<String>, Definition) {
    let (focus, refinement) = text.split_once(':').unwrap_or((text, ""));
    let pair = |a: &str| {
        let (t, v) = a.split_once('=').unwrap_or_else(|| panic!("{text}: {a}"));
        (t.to_string(), v.to_string())
    };
    let (mut ungrouped, mut groups) = (BTreeSet::new(), BTreeSet::new());
    let mut rest = refinement;
    while !rest.is_empty() {
        rest = rest.trim_start_matches(',');
        if let Some(r) = rest.strip_prefix('{') {
            let (group, after) = r.split_once('}').unwrap();
            groups.insert(group.split(',').map(pair).collect());
            rest = after;
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            ungrouped.insert(pair(&rest[..end]));
            rest = &rest[end..];
        }
    }
    (
        focus.split('+').map(str::to_string).collect(),
        (ungrouped, groups),
    )
}

#[test]
fn normal_forms_follow_the_release_definitions() {
    const DEFINED: &str = "900000000000073002";
    let concepts = rows("Terminology/sct2_Concept_Snapshot_INT_20250909.txt");
    let active: Vec<&Vec<String>> = concepts.iter().filter(|r| r[2] == "1").collect();
    let defined: BTreeSet<&str> = active
        .iter()
        .filter(|r| r[4] == DEFINED)
        .map(|r| r[0].as_str())
        .collect();
    // concept -> group -> (type, value), from the inferred relationships and concrete values.
    let mut attributes: HashMap<String, HashMap<String, BTreeSet<(String, String)>>> =
        HashMap::new();
    let rels = rows("Terminology/sct2_Relationship_Snapshot_INT_20250909.txt");
    let concrete = rows("Terminology/sct2_RelationshipConcreteValues_Snapshot_INT_20250909.txt");
    for r in rels.iter().chain(&concrete) {
        if r[2] == "1" && r[7] != IS_A && r[8] == INFERRED {
            attributes
                .entry(r[4].clone())
                .or_default()
                .entry(r[6].clone())
                .or_default()
                .insert((r[7].clone(), r[5].clone()));
        }
    }
    let rf2 = &fixture().rf2;
    let mut checked = 0;
    let mut with_groups = 0;
    for code in active.iter().map(|r| &r[0]) {
        let answer = run(
            Operation::Lookup,
            parameters(&[
                json!({"name": "system", "valueUri": SCT}),
                json!({"name": "code", "valueCode": code}),
                json!({"name": "property", "valueCode": "normalFormTerse"}),
                json!({"name": "property", "valueCode": "normalForm"}),
            ]),
        )
        .unwrap();
        let string_property = |name: &str| -> String {
            let p = answer["parameter"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == "property" && p["part"][0]["valueCode"] == name)
                .unwrap_or_else(|| panic!("{code}: no {name}: {answer}"));
            p["part"][1]["valueString"].as_str().unwrap().to_string()
        };
        let terse = string_property("normalFormTerse");
        let (focus, (ungrouped, groups)) = parse_terse(&terse);
        // The focus: the concept when primitive, else its primitive ancestors that no other one specialises.
        let expected_focus: BTreeSet<String> = if defined.contains(code.as_str()) {
            let primitive: BTreeSet<String> = rf2
                .ancestors(code)
                .into_iter()
                .filter(|a| !defined.contains(a.as_str()))
                .collect();
            primitive
                .iter()
                .filter(|p| !primitive.iter().any(|q| rf2.ancestors(q).contains(*p)))
                .cloned()
                .collect()
        } else {
            BTreeSet::from([code.clone()])
        };
        assert_eq!(focus, expected_focus, "{code}: {terse}");
        let mut expected = attributes.get(code).cloned().unwrap_or_default();
        let expected_ungrouped = expected.remove("0").unwrap_or_default();
        let expected_groups: BTreeSet<_> = expected.into_values().collect();
        assert_eq!(ungrouped, expected_ungrouped, "{code}: {terse}");
        assert_eq!(groups, expected_groups, "{code}: {terse}");
        with_groups += usize::from(!groups.is_empty());
        // With terms: the same expression, each concept followed by its display.
        let full = string_property("normalForm");
        let display = param(&answer, "display").unwrap()["valueString"]
            .as_str()
            .unwrap();
        if !defined.contains(code.as_str()) {
            assert!(
                full.starts_with(&format!("{code}|{display}|")),
                "{code}: {full}"
            );
        }
        // And it is an expression this server accepts as a code.
        let valid = run(
            Operation::ValidateCs,
            parameters(&[
                json!({"name": "url", "valueUri": SCT}),
                json!({"name": "code", "valueCode": terse}),
            ]),
        )
        .unwrap();
        assert_eq!(
            param(&valid, "result").unwrap()["valueBoolean"],
            true,
            "{terse}: {valid}"
        );
        checked += 1;
    }
    assert!(
        checked > 2000 && with_groups > 300,
        "{checked} concepts, {with_groups} with role groups"
    );
}

/// The text filter of `$expand` goes through the store's search index, whose cost grows with the words: beyond
/// the search's limit of 32 words the expansion is too costly, in the paged path and the whole one alike. (A
/// single word, however long, is looked up in the sorted display words at no cost to speak of.)
#[test]
fn a_text_filter_beyond_the_search_limits_is_too_costly() {
    let long = vec!["infl"; 5_000].join(" ");
    for filter in [long.as_str()] {
        for count in [None, Some(10)] {
            let mut params = vec![
                json!({"name": "valueSet", "resource": isa_value_set("138875005")}),
                json!({"name": "filter", "valueString": filter}),
            ];
            if let Some(n) = count {
                params.push(json!({"name": "count", "valueInteger": n}));
            }
            let err = run(Operation::Expand, parameters(&params)).unwrap_err();
            assert_eq!(err.kind, terminology::ErrorKind::TooCostly, "{count:?}");
            assert!(
                err.issues[0].text.contains("more than the limit"),
                "{}",
                err.issues[0].text
            );
        }
    }
    let within = vec!["infl"; 32].join(" ");
    run(
        Operation::Expand,
        parameters(&[
            json!({"name": "valueSet", "resource": isa_value_set("138875005")}),
            json!({"name": "filter", "valueString": within}),
        ]),
    )
    .unwrap();
}

/// `$subsumes` with post-coordinated expressions: each concept is equivalent to its own normal form, a concept
/// with an attribute added is subsumed by the concept and by its parents, and unrelated codes are not subsumed.
/// The concepts and attributes are read from the RF2 relationships, not from our answers.
#[test]
fn subsumes_compares_expressions_through_their_normal_forms() {
    let outcome = subsumes;
    let rf2 = &fixture().rf2;
    let rels = rows("Terminology/sct2_Relationship_Snapshot_INT_20250909.txt");
    // (concept, attribute type) of active inferred attributes, for concepts with a parent in the subset.
    let attributed: Vec<(String, String)> = rels
        .iter()
        .filter(|r| r[2] == "1" && r[7] != IS_A && r[8] == INFERRED)
        .filter(|r| rf2.parents.get(&r[4]).is_some_and(|p| !p.is_empty()))
        .map(|r| (r[4].clone(), r[7].clone()))
        .collect();
    assert!(
        attributed.len() >= 20,
        "{} attributed concepts",
        attributed.len()
    );
    let mut checked = 0;
    for (concept, attribute) in attributed.iter().step_by(attributed.len() / 20) {
        let terse = run(
            Operation::Lookup,
            parameters(&[
                json!({"name": "system", "valueUri": SCT}),
                json!({"name": "code", "valueCode": concept}),
                json!({"name": "property", "valueCode": "normalFormTerse"}),
            ]),
        )
        .unwrap()["parameter"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "property" && p["part"][0]["valueCode"] == "normalFormTerse")
            .map(|p| p["part"][1]["valueString"].as_str().unwrap().to_string())
            .unwrap();
        assert_eq!(
            outcome(concept, &terse).unwrap(),
            "equivalent",
            "{concept} vs {terse}"
        );
        assert_eq!(
            outcome(&terse, concept).unwrap(),
            "equivalent",
            "{terse} vs {concept}"
        );
        // The concept refined by an attribute whose value is the concept itself: narrower than the concept
        // (no concept of the subset has itself as an attribute value).
        let refined = format!("{concept}:{attribute}={concept}");
        assert_eq!(outcome(concept, &refined).unwrap(), "subsumes", "{refined}");
        assert_eq!(
            outcome(&refined, concept).unwrap(),
            "subsumed-by",
            "{refined}"
        );
        let parent = &rf2.parents[concept][0];
        assert_eq!(
            outcome(parent, &refined).unwrap(),
            "subsumes",
            "{parent} vs {refined}"
        );
        // A concept neither above nor below it.
        let ancestors = rf2.ancestors(concept);
        let below = rf2.descendants_or_self(concept);
        let unrelated = rf2
            .concepts
            .iter()
            .find(|c| {
                !ancestors.contains(*c) && !below.contains(*c) && rf2.parents.contains_key(*c)
            })
            .unwrap();
        assert_eq!(
            outcome(&refined, unrelated).unwrap(),
            "not-subsumed",
            "{refined} vs {unrelated}"
        );
        checked += 1;
    }
    assert!(checked >= 20);
    // An invalid expression is an unknown code, not a guess.
    assert!(outcome("128241005", "128241005:").is_err());
    assert!(outcome("128241005", "128241005:99999999=128241005").is_err());
}
