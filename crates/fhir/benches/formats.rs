//! Criterion benchmarks of parsing and writing each format (JSON, XML, binary) on real-shaped inputs.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fhir::Resource;
use std::hint::black_box;

mod inputs;

fn formats(c: &mut Criterion) {
    for (name, json) in inputs::inputs() {
        let r = Resource::from_json(&json).expect("parse");
        let xml = r.to_xml(false).expect("xml");
        let pb = r.to_protobuf().expect("pb");
        // Benchmarks assert their results: every decoded form is the same resource.
        assert_eq!(Resource::from_xml(&xml).expect("xml parse"), r);
        assert_eq!(Resource::from_protobuf(&pb).expect("pb parse"), r);
        let mut g = c.benchmark_group(name);
        g.sample_size(20);
        g.throughput(Throughput::Bytes(json.len() as u64));
        g.bench_function("json_parse", |b| {
            b.iter(|| Resource::from_json(black_box(&json)).expect("parse"))
        });
        g.bench_function("json_write", |b| b.iter(|| black_box(&r).to_json()));
        g.bench_function("xml_parse", |b| {
            b.iter(|| Resource::from_xml(black_box(&xml)).expect("parse"))
        });
        g.bench_function("xml_write", |b| {
            b.iter(|| black_box(&r).to_xml(false).expect("xml"))
        });
        g.bench_function("pb_parse", |b| {
            b.iter(|| Resource::from_protobuf(black_box(&pb)).expect("parse"))
        });
        g.bench_function("pb_write", |b| {
            b.iter(|| black_box(&r).to_protobuf().expect("pb"))
        });
        g.finish();
    }
}

criterion_group!(benches, formats);
criterion_main!(benches);
