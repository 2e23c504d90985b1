//! What the v2-to-FHIR converter's code checks cost, in process: parse + `v2fhir::convert_json` of the bench
//! ADT^A01 and ORU^R01 (`bench/hl7v2/messages/`) with the server's [`server::TerminologyChecker`] over a real
//! [`Terminology`], beside the same conversion without a checker, so that the difference is the checks' cost.
//!
//! The terminology is what `thoth serve` loads with no arguments (the two FHIR packages of its open content, read
//! from `../shared/data/fhir/packages`, and the guide's vocabulary maps) plus LOINC served from its store, as
//! `thoth import loinc` makes it, in two variants:
//!
//! - `valid`: the nine LOINC terms of the ORU (`benches/loinc-cbc`, a subset with LOINC's names): every code is
//!   valid and its display is filled, the common case;
//! - `unknown`: the conformance suite's LOINC subset (`../shared/tx-ecosystem/tx-source/loinc`), which lacks
//!   them: each LOINC code is reported (an OperationOutcome issue), the error path.
//!
//! ```sh
//! cargo bench -p server --bench v2fhir_checks
//! ```
//!
//! Before criterion's groups it prints `paired ...` lines: the checks' cost as the median of differences between
//! rounds of unchecked and checked conversions run alternately (see [`paired`]), the number docs/PERFORMANCE.md
//! records, as it holds steady on a machine other work shares.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use hl7v2::Message;
use serde_json::Value;
use terminology::{Config, LoincProvider, Registry, Terminology, import_loinc_store};

// The binary's allocator (see `thoth`'s main.rs): the conversion's small allocations cost what they cost there.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ADT: &[u8] = include_bytes!("../../../bench/hl7v2/messages/adt_a01.hl7");
const ORU: &[u8] = include_bytes!("../../../bench/hl7v2/messages/oru_r01.hl7");

/// The ORU's LOINC codes and the displays the `valid` terminology fills in.
const ORU_LOINC: [(&str, &str); 9] = [
    ("58410-2", "CBC panel - Blood by Automated count"),
    (
        "6690-2",
        "Leukocytes [#/volume] in Blood by Automated count",
    ),
    (
        "789-8",
        "Erythrocytes [#/volume] in Blood by Automated count",
    ),
    ("718-7", "Hemoglobin [Mass/volume] in Blood"),
    (
        "4544-3",
        "Hematocrit [Volume Fraction] of Blood by Automated count",
    ),
    ("787-2", "MCV [Entitic volume] by Automated count"),
    ("785-6", "MCH [Entitic mass] by Automated count"),
    ("786-4", "MCHC [Mass/volume] by Automated count"),
    ("777-3", "Platelets [#/volume] in Blood by Automated count"),
];

fn shared() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    assert!(
        p.join("data/fhir/packages").is_dir(),
        "../shared (the FHIR packages) is missing beside the repository: {}",
        p.display()
    );
    p
}

/// `thoth serve`'s terminology without SNOMED CT, with LOINC imported from the release directory `loinc`.
fn terminology(loinc: &Path, store: &Path) -> Arc<Terminology> {
    let mut registry = Registry::new();
    for package in [
        "hl7.fhir.r4.examples-4.0.1.tgz",
        "hl7.terminology.r4-7.0.1.tgz",
    ] {
        let path = shared().join("data/fhir/packages").join(package);
        terminology::load_package(&path, &mut registry)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    import_loinc_store(loinc, Some("2.82"), store).expect("the LOINC subset imports");
    let loinc = LoincProvider::open(store).expect("the LOINC store opens");
    for r in loinc.resources() {
        registry.add(r);
    }
    for cm in v2fhir::concept_maps() {
        registry.add(serde_json::from_slice(&cm).expect("a guide ConceptMap is JSON"));
    }
    Arc::new(Terminology::new(registry, Config::default()).with_provider(loinc))
}

/// The Bundle's LOINC codings (code, display) and its OperationOutcome's diagnostics.
fn read(json: &[u8]) -> (Vec<(String, Option<String>)>, Vec<String>) {
    fn walk(v: &Value, out: &mut Vec<(String, Option<String>)>) {
        match v {
            Value::Object(o) => {
                if o.get("system").and_then(Value::as_str) == Some("http://loinc.org") {
                    let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
                    out.push((s("code").unwrap_or_default(), s("display")));
                }
                o.values().for_each(|v| walk(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let v: Value = serde_json::from_slice(json).expect("the Bundle is JSON");
    let mut codings = Vec::new();
    walk(&v, &mut codings);
    let issues = v["entry"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["resource"]["resourceType"] == "OperationOutcome")
        .flat_map(|e| {
            e["resource"]["issue"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|i| i["diagnostics"].as_str().map(str::to_string))
        .collect();
    (codings, issues)
}

fn convert(bytes: &[u8], checker: Option<&server::TerminologyChecker>) -> Vec<u8> {
    let msg = Message::parse(bytes);
    let options = v2fhir::Options {
        checker: checker.map(|c| c as &dyn v2fhir::CodeChecker),
        ..Default::default()
    };
    v2fhir::convert_json(&msg, &options).expect("the bench messages convert")
}

/// What each variant must give before it is timed, so that a checker that answers nothing (every system "not
/// loaded") cannot pass for a fast one.
fn assert_results(valid: &server::TerminologyChecker, unknown: &server::TerminologyChecker) {
    // The message sends its own displays (`6690-2^WBC^LN`), which are kept: the checks' answer is seen in the
    // checker's verdicts and in the Bundle's issues.
    for (code, display) in ORU_LOINC {
        let verdict = v2fhir::CodeChecker::check(valid, "http://loinc.org", code);
        assert_eq!(
            verdict,
            v2fhir::CodeCheck::Valid {
                display: Some(display.to_string())
            },
            "valid: {code}"
        );
    }
    let (codings, issues) = read(&convert(ORU, Some(valid)));
    assert!(
        ORU_LOINC
            .iter()
            .all(|(code, _)| codings.iter().any(|(c, _)| c == code)),
        "valid: the Bundle lacks LOINC codings: {codings:?}"
    );
    assert!(
        !issues.iter().any(|i| i.contains("http://loinc.org")),
        "valid: LOINC codes reported: {issues:?}"
    );
    let (_, issues) = read(&convert(ORU, Some(unknown)));
    for (code, _) in ORU_LOINC {
        let reported = format!("code \"{code}\" is not valid in http://loinc.org: Unknown code");
        assert!(
            issues.iter().any(|i| i.contains(&reported)),
            "unknown: {code} not reported in {issues:?}"
        );
    }
}

/// The checks' cost measured in pairs: rounds of `ITER` conversions without checks, then as many with them (the
/// order alternating), and the median over rounds of the per-conversion difference. Another process's burst
/// slows both halves of a round alike, so on a shared machine this is steadier than the difference of two
/// criterion estimates taken a minute apart. Returns (unchecked, checked, difference) in µs.
fn paired(bytes: &[u8], checker: &server::TerminologyChecker) -> (f64, f64, f64) {
    const ROUNDS: usize = 201;
    const ITER: u32 = 40;
    let time = |checker: Option<&server::TerminologyChecker>| {
        let t = std::time::Instant::now();
        for _ in 0..ITER {
            black_box(convert(black_box(bytes), checker));
        }
        t.elapsed().as_secs_f64() * 1e6 / f64::from(ITER)
    };
    let (mut plain, mut checked, mut diff) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let (p, c) = if round % 2 == 0 {
            let p = time(None);
            (p, time(Some(checker)))
        } else {
            let c = time(Some(checker));
            (time(None), c)
        };
        plain.push(p);
        checked.push(c);
        diff.push(c - p);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (median(&mut plain), median(&mut checked), median(&mut diff))
}

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/loinc-cbc");
    let valid = server::TerminologyChecker(terminology(&fixture, &dir.path().join("valid.store")));
    let conformance = shared().join("tx-ecosystem/tx-source/loinc");
    let unknown =
        server::TerminologyChecker(terminology(&conformance, &dir.path().join("unknown.store")));
    assert_results(&valid, &unknown);
    // For profilers: `V2FHIR_CHECKS_LOOP=N` converts the ORU^R01 N times with the valid checker (the unknown one
    // with `V2FHIR_CHECKS_LOOP=N,unknown`, no checker with `N,none`) and stops
    // (`valgrind --tool=callgrind --toggle-collect='*TerminologyChecker*check*' target/release/deps/v2fhir_checks-*`).
    if let Ok(spec) = std::env::var("V2FHIR_CHECKS_LOOP") {
        let (n, variant) = spec.split_once(',').unwrap_or((&spec, "valid"));
        let n: u32 = n
            .parse()
            .expect("V2FHIR_CHECKS_LOOP=N, N,unknown or N,none");
        let checker = match variant {
            "unknown" => Some(&unknown),
            "none" => None,
            _ => Some(&valid),
        };
        for _ in 0..n {
            black_box(convert(black_box(ORU), checker));
        }
        return;
    }
    if std::env::args().any(|a| a == "--bench") {
        for (name, bytes) in [("adt_a01_316B", ADT), ("oru_r01_814B", ORU)] {
            for (variant, checker) in [("valid", &valid), ("unknown", &unknown)] {
                let (p, c, d) = paired(bytes, checker);
                eprintln!(
                    "paired {name} {variant}: unchecked {p:.1} µs, checked {c:.1} µs, the checks {d:.1} µs (median of per-round differences)"
                );
            }
        }
    }
    for (name, bytes) in [("adt_a01_316B", ADT), ("oru_r01_814B", ORU)] {
        let mut g = c.benchmark_group(format!("v2fhir_checks/{name}"));
        g.bench_function("unchecked", |b| b.iter(|| convert(black_box(bytes), None)));
        g.bench_function("checked_valid", |b| {
            b.iter(|| convert(black_box(bytes), Some(&valid)))
        });
        g.bench_function("checked_unknown", |b| {
            b.iter(|| convert(black_box(bytes), Some(&unknown)))
        });
        g.finish();
    }
}

criterion_group!(checks, benches);
criterion_main!(checks);
