//! Converts the bench's ORU^R01 (or ADT^A01 with `adt`, or the message in $MSGFILE with `file`) N times, the Bundle alone (with its report when the
//! third argument is `report`): a small binary for profilers
//! (`valgrind --tool=callgrind target/release/examples/convert_loop oru 2000`).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ADT: &[u8] = include_bytes!("../../../bench/hl7v2/messages/adt_a01.hl7");
const ORU: &[u8] = include_bytes!("../../../bench/hl7v2/messages/oru_r01.hl7");

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let file;
    let bytes = match args.get(1).map(String::as_str) {
        Some("adt") => ADT,
        // Any message: `file` reads the path in $MSGFILE.
        Some("file") => {
            file = std::fs::read(std::env::var("MSGFILE").expect("MSGFILE")).expect("MSGFILE");
            &file[..]
        }
        _ => ORU,
    };
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let report = args.get(3).is_some_and(|a| a == "report");
    let mut total = 0;
    for _ in 0..n {
        let msg = hl7v2::Message::parse(std::hint::black_box(bytes));
        total += if report {
            v2fhir::convert(&msg, &v2fhir::Options::default())
                .unwrap()
                .json
                .len()
        } else {
            v2fhir::convert_json(&msg, &v2fhir::Options::default())
                .unwrap()
                .len()
        };
    }
    println!("{total}");
}
