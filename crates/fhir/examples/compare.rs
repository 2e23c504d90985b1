//! Times Thoth's parse and serialize of each format for the `bench/fhir` comparison with HAPI and
//! fhir.resources: `cargo run --release -p fhir --example compare -- DIR` prints TSV lines
//! `engine format op input median_ms` for every `*.json` input in DIR, plus the encoded sizes.

use fhir::Resource;
use std::time::{Duration, Instant};

/// Median time of `f` over enough runs to fill ~1.5 s (at least 5).
fn median(mut f: impl FnMut()) -> f64 {
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 5 || (start.elapsed() < Duration::from_millis(1500) && times.len() < 2000) {
        let t = Instant::now();
        f();
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    let dir = std::env::args().nth(1).expect("usage: compare DIR");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
    {
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("?");
        let json = std::fs::read(path).expect("read");
        let r = Resource::from_json(&json).expect("parse");
        let compact = r.to_json();
        let xml = r.to_xml(false).expect("xml");
        let pb = r.to_protobuf().expect("pb");
        let row = |fmt: &str, op: &str, ms: f64| println!("thoth\t{fmt}\t{op}\t{name}\t{ms:.4}");
        row(
            "json",
            "parse",
            median(|| drop(Resource::from_json(&compact).expect("parse"))),
        );
        row("json", "serialize", median(|| drop(r.to_json())));
        row(
            "xml",
            "parse",
            median(|| drop(Resource::from_xml(&xml).expect("parse"))),
        );
        row(
            "xml",
            "serialize",
            median(|| drop(r.to_xml(false).expect("xml"))),
        );
        row(
            "pb",
            "parse",
            median(|| drop(Resource::from_protobuf(&pb).expect("parse"))),
        );
        row(
            "pb",
            "serialize",
            median(|| drop(r.to_protobuf().expect("pb"))),
        );
    }
}
