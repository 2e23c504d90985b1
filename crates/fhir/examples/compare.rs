//! Times Thoth's parse and serialize of each format for the `bench/fhir` comparison with HAPI and
//! fhir.resources: `cargo run --release -p fhir --example compare -- DIR` prints TSV lines
//! `engine format op input median_ms` for every `*.json` input in DIR, plus `size` lines with the bytes of each
//! encoding, plain and gzipped. With `--write-inputs` it first writes the benchmark inputs (built from
//! ../shared, see benches/inputs.rs) into DIR.

use fhir::Resource;
use std::io::Write;
use std::time::{Duration, Instant};

#[path = "../benches/inputs.rs"]
mod inputs;

fn gzip_len(b: &[u8]) -> usize {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(b).expect("gzip");
    e.finish().expect("gzip").len()
}

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
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .expect("usage: compare [--write-inputs] DIR")
        .clone();
    if args.iter().any(|a| a == "--write-inputs") {
        std::fs::create_dir_all(&dir).expect("create DIR");
        for (name, json) in inputs::inputs() {
            std::fs::write(
                std::path::Path::new(&dir).join(format!("{name}.json")),
                json,
            )
            .expect("write input");
        }
    }
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
        let sizes = [
            ("json-pretty", r.to_json_pretty()),
            ("json", compact.clone()),
            ("xml", xml.clone()),
            ("pb", pb.clone()),
        ];
        for (enc, b) in &sizes {
            println!("size\t{enc}\tplain\t{name}\t{}", b.len());
            println!("size\t{enc}\tgzip\t{name}\t{}", gzip_len(b));
        }
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
