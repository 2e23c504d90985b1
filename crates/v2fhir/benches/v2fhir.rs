//! Criterion bench of the converter's hot path: parse + convert to FHIR JSON bytes, on the ADT^A01 (316 B) and
//! ORU^R01 (814 B) messages the hl7v2 benches use (`bench/hl7v2/messages/`, shared with the cross-engine
//! comparisons). `bench/v2fhir/run.sh` runs it beside LinuxForHealth's converter on the same bytes.
//! Run: `cargo bench -p v2fhir --bench v2fhir`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hl7v2::Message;

// The binary's allocator (see `thoth`'s main.rs), so that the conversion's many small allocations cost what they
// cost in `thoth serve` and `thoth hl7 to-fhir`.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ADT: &[u8] = include_bytes!("../../../bench/hl7v2/messages/adt_a01.hl7");
const ORU: &[u8] = include_bytes!("../../../bench/hl7v2/messages/oru_r01.hl7");

/// What the Bundle must hold before it is timed, so that a conversion that silently drops the message (an early
/// return, an empty Bundle) cannot pass for a fast one. LinuxForHealth's side checks the same patient.
fn check(name: &str, bytes: &[u8], resources: &[&str]) {
    let json = v2fhir::convert(&Message::parse(bytes), &v2fhir::Options::default())
        .unwrap()
        .json;
    let v: serde_json::Value = serde_json::from_slice(&json).expect("the Bundle is JSON");
    assert_eq!(v["resourceType"], "Bundle", "{name}");
    let types: Vec<&str> = v["entry"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|e| e["resource"]["resourceType"].as_str())
                .collect()
        })
        .unwrap_or_default();
    for r in resources {
        assert!(types.contains(r), "{name}: no {r} in {types:?}");
    }
    assert!(
        String::from_utf8_lossy(&json).contains("MRN12345"),
        "{name}: the patient's identifier is missing"
    );
}

fn benches(c: &mut Criterion) {
    let cases: [(&str, &[u8], &[&str]); 2] = [
        (
            "adt_a01_316B",
            ADT,
            &["MessageHeader", "Patient", "Encounter"],
        ),
        (
            "oru_r01_814B",
            ORU,
            &[
                "MessageHeader",
                "Patient",
                "DiagnosticReport",
                "Observation",
            ],
        ),
    ];
    for (name, bytes, resources) in cases {
        check(name, bytes, resources);
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        // The Bundle's JSON bytes, what LinuxForHealth's side produces too.
        g.bench_function("parse+convert", |b| {
            b.iter(|| {
                let msg = Message::parse(black_box(bytes));
                v2fhir::convert_json(&msg, &v2fhir::Options::default()).unwrap()
            })
        });
        // The same with the conversion report (information notes formatted).
        g.bench_function("parse+convert+report", |b| {
            b.iter(|| {
                let msg = Message::parse(black_box(bytes));
                v2fhir::convert(&msg, &v2fhir::Options::default()).unwrap()
            })
        });
        g.finish();
    }
}

criterion_group!(v2fhir_benches, benches);
criterion_main!(v2fhir_benches);
