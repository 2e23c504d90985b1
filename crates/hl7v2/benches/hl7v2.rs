//! Criterion benches of the hot paths: parse, parse + read 10 fields, parse + ACK, parse + encode (through the
//! editable model), on the ADT^A01 (316 B) and ORU^R01 (814 B) messages RS7 publishes numbers for, and ORU^R01
//! messages of 5 KB and 56 KB. The messages live in `bench/hl7v2/messages/`, shared with the cross-engine
//! comparison. Run: `cargo bench -p hl7v2 --bench hl7v2`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hl7v2::{AckCode, Message, MessageBuf, Path};

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
    "OBX(1)-3-1",
    "OBX(1)-5",
    "OBX(2)-5",
    "OBX(8)-5",
    "OBX(8)-8",
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
        g.finish();
    }
}

criterion_group!(hl7v2_benches, benches);
criterion_main!(hl7v2_benches);
