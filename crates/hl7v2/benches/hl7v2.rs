//! Criterion benches of the hot paths: parse, parse + read 10 fields, parse + ACK, parse + encode (through the
//! editable model), on the ADT^A01 (316 B) and ORU^R01 (814 B) messages RS7 publishes numbers for, and ORU^R01
//! messages of 5 KB and 56 KB. The messages live in `bench/hl7v2/messages/`, shared with the cross-engine
//! comparison. Run: `cargo bench -p hl7v2 --bench hl7v2`.
//!
//! Message structures, on the same messages: parse + group tree, parse + validation (lenient profile), parse + 10
//! group-path reads (the tree is built by the first read) and the same 10 reads on a message whose tree is built.
//! Run: `cargo bench -p hl7v2 --bench hl7v2 -- 'parse$|tree|validate|group'`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hl7v2::{AckCode, Message, MessageBuf, Path, Profile, validate};

const ADT: &[u8] = include_bytes!("../../../bench/hl7v2/messages/adt_a01.hl7");
const ORU: &[u8] = include_bytes!("../../../bench/hl7v2/messages/oru_r01.hl7");
const ORU_5K: &[u8] = include_bytes!("../../../bench/hl7v2/messages/oru_5k.hl7");
const ORU_56K: &[u8] = include_bytes!("../../../bench/hl7v2/messages/oru_56k.hl7");

const ADT_PATHS: [&str; 10] = [
    "MSH-9-1", "MSH-9-2", "MSH-10", "MSH-12", "PID-3-1", "PID-5-1", "PID-5-2", "PID-7", "PID-8",
    "PV1-2",
];
const ORU_PATHS: [&str; 10] = [
    "MSH-9-2",
    "MSH-10",
    "PID-3-1",
    "PID-5-1",
    "OBR-4-1",
    "OBX[1]-3-1",
    "OBX[1]-5",
    "OBX[2]-5",
    "OBX[8]-5",
    "OBX[8]-8",
];

/// The same 10 values through group paths (HAPI Terser syntax, 0-based parentheses): each segment named where
/// the 2.5 message structure puts it. The ADT^A01's segments stand at the message level.
const ADT_GROUP_PATHS: [&str; 10] = [
    "/MSH-9-1", "/MSH-9-2", "/MSH-10", "/MSH-12", "/PID-3-1", "/PID-5-1", "/PID-5-2", "/PID-7",
    "/PID-8", "/PV1-2",
];
const ORU_GROUP_PATHS: [&str; 10] = [
    "/MSH-9-2",
    "/MSH-10",
    "/PATIENT_RESULT/PATIENT/PID-3-1",
    "/PATIENT_RESULT/PATIENT/PID-5-1",
    "/PATIENT_RESULT/ORDER_OBSERVATION/OBR-4-1",
    "/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION(0)/OBX-3-1",
    "/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION(0)/OBX-5",
    "/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION(1)/OBX-5",
    "/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION(7)/OBX-5",
    "/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION(7)/OBX-8",
];

/// The ADT^A01 of issue 2 has no EVN (required in ADT_A01) and two values longer than 2.5 allows (PV1-16 "VIP",
/// and a timestamp in PV1-41, an IS of 2 characters); the ORU^R01 messages are clean.
const ADT_ISSUES: [&str; 3] = [
    "error:missing-segment:/EVN",
    "warning:length:/PV1-16",
    "warning:length:/PV1-41",
];

/// The benches measure correct work: each message must parse cleanly and read the expected values.
fn check(name: &str, bytes: &[u8], paths: &[Path]) {
    let msg = Message::parse(bytes);
    assert!(
        msg.diagnostics().is_empty(),
        "{name}: {:?}",
        msg.diagnostics()
    );
    for p in paths {
        assert!(
            msg.get(p).is_some_and(|v| !v.is_empty()),
            "{name}: {p} is empty"
        );
    }
    assert_eq!(MessageBuf::from(&msg).encode(), bytes);
}

/// The structure benches measure correct work too: the expected structure with every segment in place, the
/// group paths reading what the flat paths read, and the expected validation report.
fn check_structure(name: &str, bytes: &[u8], paths: &[Path], group: &[Path]) {
    let msg = Message::parse(bytes);
    let tree = msg.group_tree();
    let adt = name.starts_with("adt");
    let structure = if adt { "ADT_A01" } else { "ORU_R01" };
    assert_eq!(tree.structure_id(), Some(structure), "{name}");
    assert!(
        tree.unexpected().is_empty(),
        "{name}: {:?}",
        tree.unexpected()
    );
    for (flat, grouped) in paths.iter().zip(group) {
        assert_eq!(
            msg.get(grouped),
            msg.get(flat),
            "{name}: {grouped} vs {flat}"
        );
    }
    let report = validate(&msg, &Profile::lenient());
    let issues: Vec<String> = report
        .issues
        .iter()
        .map(|i| format!("{}:{}:{}", i.severity.as_str(), i.rule.name(), i.path))
        .collect();
    let want: &[&str] = if adt { &ADT_ISSUES } else { &[] };
    assert_eq!(issues, want, "{name}: validation report");
    assert_eq!(report.is_valid(), !adt, "{name}");
}

fn benches(c: &mut Criterion) {
    let cases = [
        ("adt_a01_316B", ADT, &ADT_PATHS),
        ("oru_r01_814B", ORU, &ORU_PATHS),
        ("oru_r01_5KB", ORU_5K, &ORU_PATHS),
        ("oru_r01_56KB", ORU_56K, &ORU_PATHS),
    ];
    for (name, bytes, paths) in cases {
        let paths: Vec<Path> = paths.iter().map(|p| Path::parse(p).unwrap()).collect();
        check(name, bytes, &paths);
        let group_paths = if name.starts_with("adt") {
            &ADT_GROUP_PATHS
        } else {
            &ORU_GROUP_PATHS
        };
        let group: Vec<Path> = group_paths
            .iter()
            .map(|p| Path::parse(p).unwrap())
            .collect();
        check_structure(name, bytes, &paths, &group);
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function("parse", |b| {
            b.iter(|| Message::parse(black_box(bytes)).segment_count())
        });
        g.bench_function("parse+get10", |b| {
            b.iter(|| {
                let msg = Message::parse(black_box(bytes));
                paths
                    .iter()
                    .map(|p| msg.get(p).map_or(0, |v| v.len()))
                    .sum::<usize>()
            })
        });
        g.bench_function("parse+ack", |b| {
            b.iter(|| {
                let msg = Message::parse(black_box(bytes));
                msg.ack(AckCode::AA)
                    .timestamp("20240315143001")
                    .control_id("ACK1")
                    .build()
            })
        });
        g.bench_function("parse+encode", |b| {
            b.iter(|| MessageBuf::from(&Message::parse(black_box(bytes))).encode())
        });
        g.bench_function("parse+set+encode", |b| {
            b.iter(|| {
                let msg = Message::parse(black_box(bytes));
                let mut buf = MessageBuf::from(&msg);
                buf.set(&paths[3], "ROE").unwrap();
                buf.encode()
            })
        });
        g.bench_function("parse+tree", |b| {
            b.iter(|| {
                let msg = Message::parse(black_box(bytes));
                msg.group_tree().unexpected().len()
            })
        });
        g.bench_function("parse+validate", |b| {
            b.iter(|| {
                let msg = Message::parse(black_box(bytes));
                validate(&msg, &Profile::lenient()).issues.len()
            })
        });
        g.bench_function("parse+get10-group", |b| {
            b.iter(|| {
                let msg = Message::parse(black_box(bytes));
                group
                    .iter()
                    .map(|p| msg.get(p).map_or(0, |v| v.len()))
                    .sum::<usize>()
            })
        });
        let built = Message::parse(bytes);
        built.group_tree();
        g.bench_function("get10-group (tree built)", |b| {
            b.iter(|| {
                let msg = black_box(&built);
                group
                    .iter()
                    .map(|p| msg.get(p).map_or(0, |v| v.len()))
                    .sum::<usize>()
            })
        });
        g.finish();
    }
}

criterion_group!(hl7v2_benches, benches);
criterion_main!(hl7v2_benches);
