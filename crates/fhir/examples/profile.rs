//! Repeats one parse or serialize of one input, for profilers: `cargo run --release -p fhir --example
//! profile -- FILE.json json|xml|pb parse|serialize N` prints the minimum and median time of the N
//! operations. The input is converted to the format first; only `run` does the measured work, so
//! `valgrind --tool=callgrind --toggle-collect='*profile*run*'` counts exactly N operations (instruction
//! counts are repeatable on a loaded machine, wall time is not).

use fhir::Resource;
use std::hint::black_box;

#[inline(never)]
fn run(format: &str, op: &str, r: &Resource, encoded: &[u8], n: usize) -> usize {
    let mut bytes = 0;
    for _ in 0..n {
        bytes += match (format, op) {
            ("json", "parse") => {
                black_box(Resource::from_json(black_box(encoded)).map(drop)).is_ok() as usize
            }
            ("xml", "parse") => {
                black_box(Resource::from_xml(black_box(encoded)).map(drop)).is_ok() as usize
            }
            ("pb", "parse") => {
                black_box(Resource::from_protobuf(black_box(encoded)).map(drop)).is_ok() as usize
            }
            ("json", _) => black_box(r).to_json().len(),
            ("xml", _) => black_box(r).to_xml(false).map_or(0, |v| v.len()),
            _ => black_box(r).to_protobuf().map_or(0, |v| v.len()),
        };
    }
    bytes
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, format, op, n] = &args[..] else {
        eprintln!("usage: profile FILE.json json|xml|pb parse|serialize N");
        std::process::exit(2);
    };
    let json = std::fs::read(file).expect("read FILE");
    let r = Resource::from_json(&json).expect("FILE is a FHIR JSON resource");
    let encoded = match format.as_str() {
        "json" => r.to_json(),
        "xml" => r.to_xml(false).expect("xml"),
        "pb" => r.to_protobuf().expect("pb"),
        _ => panic!("format is json, xml or pb"),
    };
    let n: usize = n.parse().expect("N is a number");
    // Each operation timed on its own: on a shared machine the minimum is the operation's own cost (an
    // operation longer than a scheduler slice is preempted in most runs, which skews means and medians).
    let mut times: Vec<f64> = (0..n)
        .map(|_| {
            let start = std::time::Instant::now();
            run(format, op, &r, &encoded, 1);
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "{format} {op} {file}: min {:.2} µs, median {:.2} µs per operation",
        times[0],
        times[n / 2]
    );
}
