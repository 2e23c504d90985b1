//! The fast path of the single-code operations against the general path, over real content: every concept of
//! the SNOMED CT subset in ../shared/tx-ecosystem/tx-source/snomed, every LOINC code of the LOINC subset, and
//! every code of ICD-10-CM. Where the fast path answers, its bytes must be those of the general path's answer;
//! where the general path fails, the fast path must decline. Each shape also has to be answered by the fast
//! path for most codes, so that a fast path that always declined would fail here.

use crate::shared;
use serde_json::Value;
use std::sync::Arc;
use terminology::{
    CodeVerdict, Config, Kind, LoincProvider, Operation, Params, Registry, SnomedProvider,
    Terminology, import_icd10cm, import_loinc_store,
};

const SCT: &str = "http://snomed.info/sct";
const LOINC: &str = "http://loinc.org";
const ICD: &str = "http://hl7.org/fhir/sid/icd-10-cm";

struct Fixture {
    _dir: tempfile::TempDir,
    tx: Terminology,
    sct_codes: Vec<String>,
    loinc_codes: Vec<String>,
    icd_codes: Vec<String>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("snomed");
    let subset = shared().join("tx-ecosystem/tx-source/snomed");
    snomed::import_with(
        std::slice::from_ref(&subset),
        &root,
        &snomed::NoProgress,
        &snomed::ImportOptions::unpublished(),
    )
    .unwrap();
    let store = Arc::new(snomed::Store::open(&root).unwrap());
    let mut registry = Registry::new();
    // LOINC as served: the subset's store behind its provider.
    let loinc_path = dir.path().join("loinc.store");
    import_loinc_store(
        &shared().join("tx-ecosystem/tx-source/loinc"),
        Some("2.82"),
        &loinc_path,
    )
    .unwrap();
    let loinc = LoincProvider::open(&loinc_path).unwrap();
    for r in loinc.resources() {
        registry.add(r);
    }
    let loinc_codes: Vec<String> = (0..loinc.store().len() as u32)
        .map(|i| loinc.store().code(i).to_string())
        .collect();
    let (icd, _) =
        import_icd10cm(&shared().join("data/icd10cm/icd10c-tabular-April-1-2026.xml.gz")).unwrap();
    registry.add(icd);
    let codes_of = |registry: &Registry, url: &str| -> Vec<String> {
        registry.code_system_versions(url)[0]
            .concepts
            .iter()
            .map(|c| c.code.clone())
            .collect()
    };
    // All of ICD-10-CM's 98,000 codes (chapters, blocks, categories, codes with a 7th character).
    let icd_codes = codes_of(&registry, ICD);
    let concepts =
        std::fs::read_to_string(subset.join("Terminology/sct2_Concept_Snapshot_INT_20250909.txt"))
            .unwrap();
    let sct_codes: Vec<String> = concepts
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').next())
        .map(str::to_string)
        .collect();
    assert!(
        sct_codes.len() > 2000,
        "{} SNOMED CT concepts",
        sct_codes.len()
    );
    let tx = Terminology::new(registry, Config::default())
        .with_provider(SnomedProvider::new(store))
        .with_provider(loinc);
    Fixture {
        _dir: dir,
        tx,
        sct_codes,
        loinc_codes,
        icd_codes,
    }
}

/// Counts of one comparison: requests, and those the fast path answered.
#[derive(Default, Debug)]
struct Tally {
    asked: usize,
    fast: usize,
    /// `CodeSystem/$validate-code` verdicts of a code unknown to its code system.
    unknown: usize,
    /// `CodeSystem/$validate-code` verdicts given (valid or unknown code), whatever the whole fast answer did.
    verdicts: usize,
}

impl Fixture {
    /// Runs `query` both ways and compares.
    fn same(&self, op: Operation, query: &[(&str, &str)], tally: &mut Tally) {
        same(&self.tx, op, query, tally);
    }
}

/// Runs `query` both ways in `tx` and compares.
fn same(tx: &Terminology, op: Operation, query: &[(&str, &str)], tally: &mut Tally) {
    {
        let query: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let general = tx.run(op, &Params::from_query(&query), None);
        let fast = tx.run_fast(op, &query, None);
        if op == Operation::ValidateCs {
            // The verdict alone (what the v2-to-FHIR converter asks): a valid code exactly when the fast path
            // answers one, with the general answer's display; an unknown code with the general answer's message.
            let get = |name: &str| {
                query
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.as_str())
            };
            let verdict = tx.code_verdict_fast(get("url").unwrap_or(""), get("code").unwrap_or(""));
            let answer = general.as_ref().ok().map(Params::from_json);
            let valid = answer.as_ref().and_then(|a| a.bool("result")) == Some(true);
            match verdict {
                Some(CodeVerdict::Valid { display }) => {
                    tally.verdicts += 1;
                    // The verdict may answer where the whole fast answer declines (a draft code system: its
                    // status note is in neither the display nor the message).
                    assert!(valid, "{query:?}: valid by the verdict only");
                    assert_eq!(display, answer.and_then(|a| a.str("display")), "{query:?}");
                }
                Some(CodeVerdict::Unknown { message }) => {
                    tally.unknown += 1;
                    tally.verdicts += 1;
                    assert!(
                        !valid,
                        "{query:?}: unknown by the verdict, valid by the general path"
                    );
                    assert_eq!(
                        Some(message),
                        answer.and_then(|a| a.str("message")),
                        "{query:?}"
                    );
                }
                Some(CodeVerdict::UnknownSystem) => {
                    // What the converter's checker reads as "not loaded": an error, or an issue `not-found`.
                    let not_found = general
                        .as_ref()
                        .map_or(true, |g| g.to_string().contains(r#""code":"not-found""#));
                    assert!(
                        not_found,
                        "{query:?}: an unknown system by the verdict only: {general:?}"
                    );
                }
                None => assert!(
                    fast.is_none(),
                    "{query:?}: the fast path answers, not the verdict"
                ),
            }
        }
        tally.asked += 1;
        match (general, fast) {
            (Ok(g), Some(f)) => {
                tally.fast += 1;
                let g = serde_json::to_string(&g).unwrap();
                let f = String::from_utf8(f).unwrap();
                assert_eq!(f, g, "{op:?} {query:?}: the fast path answers differently");
                // And it is JSON.
                let _: Value = serde_json::from_str(&f).unwrap();
            }
            (Ok(_), None) => {}
            (Err(e), Some(f)) => panic!(
                "{op:?} {query:?}: the general path fails ({e}) but the fast path answers {}",
                String::from_utf8_lossy(&f)
            ),
            (Err(_), None) => {}
        }
    }
}

fn assert_mostly_fast(what: &str, t: &Tally, share: f64) {
    assert!(
        t.fast as f64 >= share * t.asked as f64,
        "{what}: the fast path answered {} of {} requests",
        t.fast,
        t.asked
    );
}

#[test]
fn the_fast_path_answers_byte_for_byte_as_the_general_path() {
    let f = fixture();
    // Codes nobody has, and texts that are not codes: the fast path must leave their errors to the general path.
    let bogus = [
        "",
        "0",
        "123456789",
        "not-a-code",
        "404684003 |finding|",
        "A00.0.0",
    ];

    // SNOMED CT: every concept of the subset.
    let mut t = Tally::default();
    for code in f.sct_codes.iter().map(String::as_str).chain(bogus) {
        f.same(
            Operation::Lookup,
            &[("system", SCT), ("code", code)],
            &mut t,
        );
    }
    assert_mostly_fast(
        "SNOMED CT lookup",
        &t,
        0.99 * f.sct_codes.len() as f64 / t.asked as f64,
    );

    let mut t = Tally::default();
    for code in f.sct_codes.iter().map(String::as_str).chain(bogus) {
        f.same(
            Operation::ValidateCs,
            &[("url", SCT), ("code", code)],
            &mut t,
        );
    }
    assert_mostly_fast("SNOMED CT CodeSystem/$validate-code", &t, 0.9);
    // "0", "123456789" and "A00.0.0" are unknown codes; the others are not SCTIDs, which the provider notes.
    assert!(
        t.unknown >= 1,
        "SNOMED CT: {} unknown-code verdicts",
        t.unknown
    );

    // Implicit value sets: is-a of the subset's hierarchies, all of SNOMED CT, and a refset (not a fast shape).
    let mut t = Tally::default();
    let isa: Vec<String> = [
        "404684003",
        "138875005",
        "71388002",
        "123037004",
        "363787002",
    ]
    .iter()
    .map(|c| format!("{SCT}?fhir_vs=isa/{c}"))
    .chain([format!("{SCT}?fhir_vs")])
    .collect();
    for vs in &isa {
        for code in f
            .sct_codes
            .iter()
            .step_by(3)
            .map(String::as_str)
            .chain(bogus)
        {
            f.same(
                Operation::ValidateVs,
                &[("url", vs), ("system", SCT), ("code", code)],
                &mut t,
            );
        }
    }
    assert_mostly_fast("SNOMED CT ValueSet/$validate-code", &t, 0.9);
    // Targets that are not concepts of the subset, one spelled with leading zeros: the same answers (errors,
    // mostly), whichever path gives them.
    for target in ["999999999", "00404684003", "404684003x"] {
        let vs = format!("{SCT}?fhir_vs=isa/{target}");
        for code in f.sct_codes.iter().step_by(50).map(String::as_str) {
            f.same(
                Operation::ValidateVs,
                &[("url", &vs), ("system", SCT), ("code", code)],
                &mut Tally::default(),
            );
        }
    }

    let mut t = Tally::default();
    for w in f.sct_codes.windows(2).step_by(2) {
        let (a, b) = (w[0].as_str(), w[1].as_str());
        for (x, y) in [(a, b), (b, a), (a, a), (a, "138875005"), ("138875005", a)] {
            f.same(
                Operation::Subsumes,
                &[("system", SCT), ("codeA", x), ("codeB", y)],
                &mut t,
            );
        }
    }
    assert_mostly_fast("SNOMED CT subsumes", &t, 0.9);

    // Implicit concept maps: the history associations of the subset (REPLACED BY and another one).
    let mut t = Tally::default();
    for map in ["900000000000526001", "734139008"] {
        let url = format!("{SCT}?fhir_cm={map}");
        for code in f.sct_codes.iter().map(String::as_str) {
            f.same(
                Operation::Translate,
                &[("url", &url), ("system", SCT), ("code", code)],
                &mut t,
            );
        }
    }
    assert_mostly_fast("SNOMED CT translate", &t, 0.9);

    // LOINC: every code of the subset (terms, parts, answer lists, answers), and some spelled in lower case
    // (found ignoring case, which the general path words).
    let lowered: Vec<String> = (f.loinc_codes.iter())
        .filter(|c| c.bytes().any(|b| b.is_ascii_uppercase()))
        .step_by(7)
        .map(|c| c.to_lowercase())
        .collect();
    assert!(
        lowered.len() > 10,
        "{} LOINC codes in lower case",
        lowered.len()
    );
    let (mut t, mut tv) = (Tally::default(), Tally::default());
    for code in (f.loinc_codes.iter().chain(&lowered))
        .map(String::as_str)
        .chain(bogus)
    {
        f.same(
            Operation::Lookup,
            &[("system", LOINC), ("code", code)],
            &mut t,
        );
        f.same(
            Operation::ValidateCs,
            &[("url", LOINC), ("code", code)],
            &mut tv,
        );
    }
    // Every code is written from the store.
    assert_mostly_fast(
        "LOINC lookup",
        &t,
        f.loinc_codes.len() as f64 / t.asked as f64,
    );
    // Deprecated terms (inactive) too, with their warning.
    assert_mostly_fast(
        "LOINC CodeSystem/$validate-code",
        &tv,
        f.loinc_codes.len() as f64 / tv.asked as f64,
    );
    assert!(
        tv.unknown >= 3,
        "LOINC: {} unknown-code verdicts",
        tv.unknown
    );
    let mut t = Tally::default();
    for code in f.loinc_codes.iter().map(String::as_str).chain(bogus) {
        f.same(
            Operation::ValidateVs,
            &[
                ("url", "http://loinc.org/vs"),
                ("system", LOINC),
                ("code", code),
            ],
            &mut t,
        );
    }
    assert_mostly_fast(
        "LOINC ValueSet/$validate-code",
        &t,
        f.loinc_codes.len() as f64 / t.asked as f64,
    );
    let mut t = Tally::default();
    for w in f.loinc_codes.windows(2).step_by(5) {
        f.same(
            Operation::Subsumes,
            &[("system", LOINC), ("codeA", &w[0]), ("codeB", &w[1])],
            &mut t,
        );
    }
    assert_mostly_fast("LOINC subsumes", &t, 0.9);

    // ICD-10-CM.
    let mut t = Tally::default();
    for code in f.icd_codes.iter().map(String::as_str).chain(bogus) {
        f.same(
            Operation::Lookup,
            &[("system", ICD), ("code", code)],
            &mut t,
        );
        f.same(
            Operation::ValidateCs,
            &[("url", ICD), ("code", code)],
            &mut t,
        );
    }
    assert_mostly_fast("ICD-10-CM lookup and validate-code", &t, 0.9);
    let mut t = Tally::default();
    for w in f.icd_codes.windows(2).step_by(23) {
        f.same(
            Operation::Subsumes,
            &[("system", ICD), ("codeA", &w[0]), ("codeB", &w[1])],
            &mut t,
        );
    }
    assert_mostly_fast("ICD-10-CM subsumes", &t, 0.9);
}

/// The code systems of the two FHIR packages (designations with uses, properties of every type, statuses,
/// abstract concepts, hierarchies by nesting and by `parent` property): `$lookup` and `$validate-code` of every
/// concept of every complete code system, and `ValueSet/$validate-code` of every value set that includes one
/// whole code system, over that system's codes.
#[test]
fn the_fast_path_answers_package_code_systems_as_the_general_path() {
    let registry = crate::both_packages();
    let mut systems: Vec<(String, Vec<String>)> = Vec::new();
    for r in registry.resources(Kind::CodeSystem) {
        let Some(url) = r["url"].as_str() else {
            continue;
        };
        let versions = registry.code_system_versions(url);
        // The newest version is the one a request without a version gets.
        if r["content"] != "complete" || systems.iter().any(|(u, _)| u == url) {
            continue;
        }
        let codes = versions
            .iter()
            .find(|cs| cs.resource["content"] == "complete")
            .map(|cs| cs.concepts.iter().map(|c| c.code.clone()).collect())
            .unwrap_or_default();
        systems.push((url.to_string(), codes));
    }
    let whole_system_sets: Vec<(String, String)> = registry
        .resources(Kind::ValueSet)
        .filter_map(|vs| {
            let include = vs["compose"]["include"].as_array()?;
            let [one] = include.as_slice() else {
                return None;
            };
            let keys: Vec<&String> = one.as_object()?.keys().collect();
            (keys == ["system"]).then(|| {
                (
                    vs["url"].as_str().unwrap_or_default().to_string(),
                    one["system"].as_str().unwrap_or_default().to_string(),
                )
            })
        })
        .collect();
    let tx = Terminology::new(registry, Config::default());
    let (mut lookups, mut validations) = (Tally::default(), Tally::default());
    let mut concepts = 0;
    let mut unknown = Tally::default();
    // Systems nobody loaded, among them v2 tables the packages do not define.
    for url in [
        "http://terminology.hl7.org/CodeSystem/v2-0125",
        "http://terminology.hl7.org/CodeSystem/v2-9999",
        "http://example.org/none",
        "urn:oid:1.2.3.4",
        "",
    ] {
        same(
            &tx,
            Operation::ValidateCs,
            &[("url", url), ("code", "x")],
            &mut unknown,
        );
    }
    for (url, _) in &systems {
        // A code none of them has.
        same(
            &tx,
            Operation::ValidateCs,
            &[("url", url), ("code", "no-such-code-zz")],
            &mut unknown,
        );
    }
    for (url, codes) in &systems {
        for code in codes {
            concepts += 1;
            same(
                &tx,
                Operation::Lookup,
                &[("system", url), ("code", code)],
                &mut lookups,
            );
            same(
                &tx,
                Operation::ValidateCs,
                &[("url", url), ("code", code)],
                &mut validations,
            );
        }
    }
    assert!(
        concepts > 10_000,
        "{concepts} concepts of package code systems"
    );
    assert_mostly_fast("package code system lookup", &lookups, 0.95);
    assert_mostly_fast("package CodeSystem/$validate-code", &validations, 0.75);
    // The verdict alone answers draft code systems too (R4's copies of THO's, which a request without a
    // version gets): 95% of the codes against the whole answer's 79%.
    assert!(
        validations.verdicts as f64 >= 0.9 * validations.asked as f64,
        "package CodeSystem/$validate-code: {} verdicts of {} codes",
        validations.verdicts,
        validations.asked
    );
    let author = tx.code_verdict_fast(
        "http://terminology.hl7.org/CodeSystem/provenance-participant-type",
        "author",
    );
    assert_eq!(
        author,
        Some(CodeVerdict::Valid {
            display: Some("Author".into())
        })
    );
    assert!(
        unknown.unknown >= systems.len() / 2,
        "{} unknown-code verdicts over {} package code systems",
        unknown.unknown,
        systems.len()
    );
    let mut t = Tally::default();
    for (vs, system) in &whole_system_sets {
        let Some((_, codes)) = systems.iter().find(|(u, _)| u == system) else {
            continue;
        };
        // A code of another system, to be outside the value set.
        for code in codes.iter().take(200).chain(systems[0].1.first()) {
            same(
                &tx,
                Operation::ValidateVs,
                &[("url", vs), ("system", system), ("code", code)],
                &mut t,
            );
        }
    }
    assert!(t.asked > 1000, "{} whole-system validations", t.asked);
    assert_mostly_fast("package ValueSet/$validate-code", &t, 0.55);
}

#[test]
fn the_fast_path_leaves_other_shapes_to_the_general_path() {
    let f = fixture();
    let q = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let code = ("code", "404684003");
    for (op, query, lang) in [
        // A display to check, a property list, a version, a language: the general path's.
        (
            Operation::ValidateCs,
            q(&[("url", SCT), code, ("display", "Clinical finding")]),
            None,
        ),
        (
            Operation::Lookup,
            q(&[("system", SCT), code, ("property", "parent")]),
            None,
        ),
        (
            Operation::Lookup,
            q(&[("system", SCT), code, ("version", "x")]),
            None,
        ),
        (Operation::Lookup, q(&[("system", SCT), code]), Some("de")),
        (
            Operation::Lookup,
            q(&[("system", SCT), code, ("code", "138875005")]),
            None,
        ),
        // An ECL value set is evaluated, not answered from the closure.
        (
            Operation::ValidateVs,
            q(&[
                ("url", &format!("{SCT}?fhir_vs=ecl/<< 404684003")),
                ("system", SCT),
                code,
            ]),
            None,
        ),
        // An expansion with designations, a display language, a version, or named by `url|version`.
        (
            Operation::Expand,
            q(&[
                ("url", &format!("{SCT}?fhir_vs=isa/404684003")),
                ("includeDesignations", "true"),
            ]),
            None,
        ),
        (
            Operation::Expand,
            q(&[("url", &format!("{SCT}?fhir_vs=isa/404684003"))]),
            Some("en"),
        ),
        (
            Operation::Expand,
            q(&[
                ("url", "http://hl7.org/fhir/ValueSet/observation-status"),
                ("displayLanguage", "de"),
            ]),
            None,
        ),
        (
            Operation::Expand,
            q(&[("url", "http://loinc.org/vs|2.82"), ("count", "10")]),
            None,
        ),
    ] {
        assert!(
            f.tx.run_fast(op, &query, lang).is_none(),
            "{op:?} {query:?} {lang:?} should take the general path"
        );
    }
    // Parameters named with `_` are the server's (`_format`), not the operation's.
    let with_format = q(&[("system", SCT), code, ("_format", "json")]);
    assert!(
        f.tx.run_fast(Operation::Lookup, &with_format, None)
            .is_some()
    );
}

/// An expansion's text with its identifier and timestamp (new for every answer) blanked.
fn without_instance(text: &str) -> String {
    let mut out = text.to_string();
    for (key, len) in [
        (r#""identifier":"urn:uuid:"#, Some(36)),
        (r#""timestamp":""#, None),
    ] {
        let Some(at) = out.find(key) else { continue };
        let start = at + key.len();
        let end = match len {
            Some(n) => start + n,
            None => start + out[start..].find('"').unwrap(),
        };
        out.replace_range(start..end, "-");
    }
    out
}

/// Runs the expansion `query` both ways in `tx` and compares the answers but for their identifier and
/// timestamp; `fast_first` runs the fast path first, so that it is the one to evaluate the value set (and fill
/// the expansion cache) as often as the general path is.
fn same_expansion(tx: &Terminology, query: &[(&str, &str)], fast_first: bool, tally: &mut Tally) {
    let query: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let general = || tx.run(Operation::Expand, &Params::from_query(&query), None);
    let (general, fast) = if fast_first {
        let f = tx.run_fast(Operation::Expand, &query, None);
        (general(), f)
    } else {
        let g = general();
        (g, tx.run_fast(Operation::Expand, &query, None))
    };
    tally.asked += 1;
    match (general, fast) {
        (Ok(g), Some(f)) => {
            tally.fast += 1;
            let f = String::from_utf8(f).unwrap();
            let parsed: Value = serde_json::from_str(&f).unwrap();
            assert!(
                parsed["expansion"]["identifier"]
                    .as_str()
                    .is_some_and(|i| i.starts_with("urn:uuid:") && i.len() == 45),
                "{f}"
            );
            assert_eq!(
                without_instance(&f),
                without_instance(&serde_json::to_string(&g).unwrap()),
                "{query:?}: the fast path expands differently"
            );
            // Again: a value set of the registry is answered from the text of the first answer, with an
            // identifier of its own.
            let again =
                String::from_utf8(tx.run_fast(Operation::Expand, &query, None).unwrap()).unwrap();
            assert_eq!(
                without_instance(&again),
                without_instance(&f),
                "{query:?}: again"
            );
            assert_ne!(
                again[..again.find(r#"","timestamp""#).unwrap()],
                f[..f.find(r#"","timestamp""#).unwrap()],
                "{query:?}: the same identifier twice"
            );
        }
        (Ok(_), None) => {}
        (Err(e), Some(f)) => panic!(
            "{query:?}: the general path fails ({e}) but the fast path answers {}",
            String::from_utf8_lossy(&f)
        ),
        (Err(_), None) => {}
    }
}

/// A prefix of the first word of each display among the expansion's codes (3-6 letters, as typed).
fn prefixes_of(answer: &Value, n: usize) -> Vec<String> {
    fn walk(list: &Value, out: &mut Vec<String>) {
        for c in list.as_array().into_iter().flatten() {
            if let Some(word) = c["display"]
                .as_str()
                .and_then(|d| d.split(|ch: char| !ch.is_alphanumeric()).next())
            {
                let word: String = word.chars().take(3 + out.len() % 4).collect();
                if word.chars().count() >= 3 && !out.contains(&word.to_lowercase()) {
                    out.push(word.to_lowercase());
                }
            }
            walk(&c["contains"], out);
        }
    }
    let mut out = Vec::new();
    walk(&answer["expansion"]["contains"], &mut out);
    out.truncate(n);
    out
}

/// `ValueSet/$expand` by GET with `count`, `offset` and `filter`, by both paths over the conformance content:
/// the implicit SNOMED CT value sets of the subset (`isa/`, `ecl/`, all of SNOMED CT, refsets) with text
/// filters taken from their displays, and every value set of the two FHIR packages, whole, paged and
/// filtered. Equal text but for the identifier and timestamp, a decline where the general path fails.
#[test]
fn the_fast_path_expands_as_the_general_path() {
    let f = fixture();
    let mut t = Tally::default();
    let mut urls: Vec<String> = [
        "404684003",
        "138875005",
        "71388002",
        "123037004",
        "363787002",
        "999999999",
    ]
    .iter()
    .map(|c| format!("{SCT}?fhir_vs=isa/{c}"))
    .collect();
    urls.extend(
        [
            "<< 404684003 : 363698007 = << 123037004",
            "< 71388002",
            "<< 404684003 |Clinical finding|",
            "^ 900000000000497000",
            "<< 404684003 : 999999999 = *",
            "not ecl",
        ]
        .map(|e| format!("{SCT}?fhir_vs=ecl/{e}")),
    );
    urls.push(format!("{SCT}?fhir_vs"));
    urls.push(format!("{SCT}?fhir_vs=refset"));
    let mut n = 0usize;
    for url in &urls {
        let first = f.tx.run(
            Operation::Expand,
            &Params::from_query(&[
                ("url".to_string(), url.clone()),
                ("count".to_string(), "100".to_string()),
            ]),
            None,
        );
        let prefixes = first.map(|a| prefixes_of(&a, 12)).unwrap_or_default();
        let mut queries: Vec<Vec<(&str, &str)>> = vec![
            vec![("url", url), ("count", "10")],
            vec![("url", url), ("count", "10"), ("offset", "10")],
            vec![("url", url), ("count", "100")],
            vec![("url", url), ("count", "0")],
            vec![("url", url), ("offset", "5"), ("count", "7")],
            vec![("url", url), ("count", "10"), ("filter", "zzzq")],
            vec![("url", url), ("count", "10"), ("filter", "12")],
        ];
        for p in &prefixes {
            queries.push(vec![("url", url), ("count", "10"), ("filter", p)]);
        }
        for q in &queries {
            n += 1;
            same_expansion(&f.tx, q, n.is_multiple_of(2), &mut t);
        }
    }
    assert_mostly_fast("SNOMED CT implicit value sets", &t, 0.7);

    // Every value set of the two packages, with the code systems they name where the packages have them (and
    // SNOMED CT's subset, LOINC's).
    let mut registry = crate::both_packages();
    let loinc_dir = tempfile::tempdir().unwrap();
    let loinc_path = loinc_dir.path().join("loinc.store");
    import_loinc_store(
        &shared().join("tx-ecosystem/tx-source/loinc"),
        Some("2.82"),
        &loinc_path,
    )
    .unwrap();
    let loinc = LoincProvider::open(&loinc_path).unwrap();
    for r in loinc.resources() {
        registry.add(r);
    }
    let store =
        f.tx.providers()
            .iter()
            .find(|p| p.system() == SCT)
            .cloned()
            .unwrap();
    let mut urls: Vec<String> = registry
        .resources(Kind::ValueSet)
        .filter_map(|vs| vs["url"].as_str().map(str::to_string))
        .collect();
    urls.sort();
    urls.dedup();
    let tx = Terminology::new(registry, Config::default())
        .with_provider(store)
        .with_provider(loinc);
    let (mut whole, mut paged) = (Tally::default(), Tally::default());
    for url in &urls {
        let first = tx.run(
            Operation::Expand,
            &Params::from_query(&[
                ("url".to_string(), url.clone()),
                ("count".to_string(), "50".to_string()),
            ]),
            None,
        );
        let prefixes = first.map(|a| prefixes_of(&a, 2)).unwrap_or_default();
        n += 1;
        same_expansion(&tx, &[("url", url)], n.is_multiple_of(2), &mut whole);
        let mut queries: Vec<Vec<(&str, &str)>> = vec![
            vec![("url", url), ("count", "10")],
            vec![("url", url), ("offset", "3"), ("count", "5")],
            vec![("url", url), ("offset", "2")],
        ];
        for p in &prefixes {
            queries.push(vec![("url", url), ("filter", p)]);
            queries.push(vec![("url", url), ("count", "10"), ("filter", p)]);
        }
        for q in &queries {
            n += 1;
            same_expansion(&tx, q, n.is_multiple_of(2), &mut paged);
        }
    }
    assert!(whole.asked > 3000, "{} package value sets", whole.asked);
    assert_mostly_fast("package value sets, whole", &whole, 0.5);
    assert_mostly_fast("package value sets, paged and filtered", &paged, 0.5);
}

/// `search_text` (what the HTTP lane answers GET searches with) against `search`'s Bundle, over the two
/// packages: by canonical URL (every value set's, code system's and concept map's, and unknown ones), the
/// catalogue pages, summaries, element lists, counts past the largest page, and the other search parameters.
#[test]
fn search_text_is_the_search_bundle() {
    let tx = Terminology::new(crate::both_packages(), Config::default());
    let q = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let mut queries: Vec<(Kind, Vec<(String, String)>)> = Vec::new();
    for kind in [Kind::ValueSet, Kind::CodeSystem, Kind::ConceptMap] {
        let urls: Vec<String> = tx
            .registry()
            .resources(kind)
            .filter_map(|r| r["url"].as_str().map(str::to_string))
            .collect();
        assert!(!urls.is_empty());
        for (n, url) in urls.iter().enumerate() {
            queries.push((kind, q(&[("url", url)])));
            if n.is_multiple_of(7) {
                queries.push((kind, q(&[("url", url), ("_summary", "true")])));
                queries.push((kind, q(&[("url", url), ("version", "4.0.1")])));
                queries.push((kind, q(&[("_elements", "url,name"), ("url", url)])));
            }
        }
        for pairs in [
            &[("url", "http://example.org/nothing")][..],
            &[("url", "")],
            &[],
            &[("_count", "10"), ("_summary", "true")],
            &[("_summary", "true"), ("_count", "10"), ("_offset", "20")],
            &[("_count", "0")],
            &[("_count", "5000")],
            &[("_count", "5000"), ("_summary", "count")],
            &[("_summary", "count")],
            &[("_count", "x"), ("_offset", "y")],
            &[("_offset", "999999")],
            &[("name", "obs"), ("_count", "10")],
            &[("title", "Observation")],
            &[("status", "active"), ("_count", "3")],
            &[("system", "http://loinc.org"), ("_count", "10")],
            &[("_id", "observation-status")],
            &[("_elements", "name"), ("_count", "3")],
            &[("other", "x"), ("_count", "2")],
        ] {
            queries.push((kind, q(pairs)));
        }
    }
    // Twice: the second time, the large resources' text comes from the cache the first time filled.
    let mut large = 0;
    for round in 0..2 {
        for (kind, query) in &queries {
            let value = serde_json::to_string(&tx.search(*kind, query, "/fhir")).unwrap();
            let text = String::from_utf8(tx.search_text(*kind, query, "/fhir")).unwrap();
            assert_eq!(text, value, "round {round}: {kind:?} {query:?}");
            large += usize::from(round == 1 && query.len() == 1 && text.len() > 64 * 1024);
        }
    }
    assert!(queries.len() > 3000, "{} searches", queries.len());
    assert!(large >= 10, "{large} searches of a resource over 64 KiB");
}

/// `expand_seen` answers an expansion only from the text kept by an earlier `run_fast` of the same request (what
/// the HTTP lane may do for an ECL value set without evaluating it), and then as `run_fast` answers it.
#[test]
fn an_expansion_seen_before_is_answered_without_evaluation_and_only_then() {
    let f = fixture();
    let ecl = format!("{SCT}?fhir_vs=ecl/<< 404684003 : 363698007 = *");
    let asked: Vec<(String, String)> = [("url", ecl.as_str()), ("count", "5"), ("offset", "2")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert!(
        f.tx.expand_seen(&asked, None).is_none(),
        "answered before any evaluation"
    );
    let first = f.tx.run_fast(Operation::Expand, &asked, None).unwrap();
    let seen = f.tx.expand_seen(&asked, None).expect("kept after run_fast");
    assert_eq!(
        without_instance(&String::from_utf8(seen).unwrap()),
        without_instance(&String::from_utf8(first).unwrap())
    );
    // Another page, another filter or a language is another request.
    let other_page: Vec<(String, String)> = [("url", ecl.as_str()), ("count", "5")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert!(f.tx.expand_seen(&other_page, None).is_none());
    assert!(f.tx.expand_seen(&asked, Some("en")).is_none());
}
