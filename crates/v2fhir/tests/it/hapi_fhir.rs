//! Differential test against HAPI FHIR 8.8.1: every Bundle the converter writes for the shared corpora parses with
//! HAPI's R4 JSON parser under `StrictErrorHandler` (unknown elements, wrong JSON types, invalid primitive values
//! and the like are errors there, not log lines). HAPI runs on the same Bundles, through `tests/hapi-fhir/run.sh`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{files, hl7_data, messages};

/// One Bundle per line. Outside JSON strings a line break is only whitespace, and inside them it is always escaped,
/// so blanking CR and LF keeps the document byte for byte otherwise (re-serialising through serde_json would not:
/// it rewrites numbers such as `7.50`, which HAPI must see as written).
fn ndjson_line(json: &[u8]) -> Vec<u8> {
    json.iter()
        .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
        .collect()
}

/// Runs the harness on `input` (NDJSON) and returns its verdict lines.
fn run_hapi_fhir(input: Vec<u8>) -> Vec<String> {
    // Say so loudly rather than pass (or fail obscurely) on a machine without the tools.
    let java = Command::new("java").arg("-version").output();
    let mvn = Command::new("mvn").arg("-v").output();
    assert!(
        java.is_ok_and(|o| o.status.success()) && mvn.is_ok_and(|o| o.status.success()),
        "\n\n!!! The HAPI FHIR differential test needs a JDK 17 and Maven (`scripts/test.sh` installs them).\n\n"
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hapi-fhir/run.sh");
    let mut child = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running the HAPI FHIR harness");
    // Written from another thread: the harness answers while it reads, and a full stdout pipe would otherwise
    // block both sides.
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child
        .wait_with_output()
        .expect("waiting for the HAPI FHIR harness");
    writer
        .join()
        .unwrap()
        .expect("writing Bundles to the harness");
    assert!(
        out.status.success(),
        "HAPI FHIR harness failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8 verdicts")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The element and, where the message gives one, the value that a HAPI error names: `[element="use"] Invalid
/// attribute value "B"` gives (`use`, `B`), `Unknown element 'foo'` gives (`foo`, none).
fn named_element(error: &str) -> Option<(&str, Option<&str>)> {
    let between = |s: &'static str, end: char| {
        error
            .split_once(s)
            .and_then(|(_, rest)| rest.split_once(end))
            .map(|(x, _)| x)
    };
    let element = between("[element=\"", '"').or_else(|| between("Unknown element '", '\''))?;
    Some((element, between("Invalid attribute value \"", '"')))
}

/// Where in `v` each `element` (with `value`, if given) stands, FHIRPath-like:
/// `entry[3].resource(ServiceRequest).status`. HAPI names only the element, so an error may match several places
/// (`status` "Dc" in both Appointment.status and Appointment.participant.status): the report shows them all.
fn locate(
    v: &serde_json::Value,
    element: &str,
    value: Option<&str>,
    at: &str,
    out: &mut Vec<String>,
) {
    match v {
        serde_json::Value::Object(m) => {
            let here = match m.get("resourceType").and_then(|t| t.as_str()) {
                Some(t) if !at.is_empty() => format!("{at}({t})"),
                _ => at.to_owned(),
            };
            let dot = if here.is_empty() { "" } else { "." };
            for (k, x) in m {
                let path = format!("{here}{dot}{k}");
                if k == element && value.is_none_or(|want| x.as_str() == Some(want)) {
                    out.push(path.clone());
                }
                locate(x, element, value, &path, out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                locate(x, element, value, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[test]
// Codes outside a required value set are kept as the element's original text (see `convert.rs`), and impossible
// dates are not written: HAPI's strict parser rejected 185 of these Bundles before both.
fn every_bundle_parses_with_hapi_fhir_strict() {
    let data = hl7_data();
    let mut paths = files(&data.join("fhir-converter"));
    paths.extend(files(&data.join("trusted-intermediary")));
    // (file and message index in the file, Bundle) in input order.
    let mut bundles = Vec::new();
    let mut input = Vec::new();
    for path in &paths {
        let bytes = std::fs::read(path).unwrap();
        for (i, msg) in messages(&bytes).iter().enumerate() {
            let out = v2fhir::convert(msg, &v2fhir::Options::default()).unwrap();
            input.extend(ndjson_line(&out.json));
            input.push(b'\n');
            let name = path.strip_prefix(&data).unwrap_or(path).display();
            bundles.push((format!("{name} #{i}"), out.json));
        }
    }
    // The same count as corpus.rs: 271 files, one without an MSH segment.
    assert!(
        bundles.len() >= 270,
        "converted {} messages, expected the shared corpora's 270",
        bundles.len()
    );

    let verdicts = run_hapi_fhir(input);
    assert_eq!(
        verdicts.len(),
        bundles.len(),
        "the harness answered {} Bundles of {}",
        verdicts.len(),
        bundles.len()
    );
    // Each distinct error once (the strict parser's verdict first, then what else it would have thrown at), with
    // how many Bundles it hit and where in the first of them, so a converter fix can start from one example.
    let mut rejected = 0;
    let mut errors: BTreeMap<&str, (usize, String)> = BTreeMap::new();
    for (verdict, (from, json)) in verdicts.iter().zip(&bundles) {
        if verdict == "ok" {
            continue;
        }
        rejected += 1;
        let found = verdict.strip_prefix("error\t").unwrap_or(verdict);
        for error in found.split('\t') {
            let entry = errors.entry(error).or_insert_with(|| {
                let value: serde_json::Value = serde_json::from_slice(json).unwrap_or_default();
                let mut at = Vec::new();
                if let Some((element, v)) = named_element(error) {
                    locate(&value, element, v, "", &mut at);
                }
                // A few places are enough to find the mapping at fault.
                at.truncate(3);
                (0, format!("{from} {}", at.join(" or ")))
            });
            entry.0 += 1;
        }
    }
    let report: Vec<String> = errors
        .iter()
        .map(|(error, (n, first))| format!("{n:4} Bundles: {error}\n       e.g. {first}"))
        .collect();
    assert!(
        rejected == 0,
        "HAPI FHIR 8.8.1's strict parser rejects {rejected} of {} Bundles; {} distinct errors:\n{}",
        bundles.len(),
        errors.len(),
        report.join("\n")
    );
    eprintln!(
        "{} Bundles accepted by HAPI FHIR 8.8.1 (strict)",
        bundles.len()
    );
}
