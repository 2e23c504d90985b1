//! Differential tests against HAPI FHIR 8.8.1, on every Bundle the converter writes for the shared corpora:
//! - each parses with HAPI's R4 JSON parser under `StrictErrorHandler` (unknown elements, wrong JSON types,
//!   invalid primitive values and the like are errors there, not log lines);
//! - HAPI's R4 instance validator (cardinalities, invariants, required bindings) finds no more errors of each kind
//!   than `validation-bounds.txt` allows, and no kind that is not there: the bounds only come down.
//!
//! HAPI runs on the same Bundles, through `tests/hapi-fhir/run.sh`.

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

/// Runs the harness on `input` (NDJSON) with `args` (none: the strict parser; `validate`: the instance
/// validator) and returns its verdict lines.
fn run_hapi_fhir(args: &[&str], input: Vec<u8>) -> Vec<String> {
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
        .args(args)
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

/// The Bundles of the shared corpora (FHIR-Converter's inputs and the trusted-intermediary messages), each with
/// its file and message index, and the same as NDJSON for the harness.
fn corpus_bundles() -> (Vec<(String, Vec<u8>)>, Vec<u8>) {
    let data = hl7_data();
    let mut paths = files(&data.join("fhir-converter"));
    paths.extend(files(&data.join("trusted-intermediary")));
    // (file and message index in the file, Bundle) in input order.
    let mut bundles = Vec::new();
    let mut input = Vec::new();
    // Times without an offset read in a zone, as a deployment sets it (`[to_fhir] time_zone`): without one a
    // Provenance's `recorded` (an instant) is left out when MSH-7 has no offset, which R4 does not allow.
    let zone = v2fhir::time_zone("America/New_York").unwrap();
    let options = v2fhir::Options {
        time_zone: Some(&zone),
        ..Default::default()
    };
    for path in &paths {
        let bytes = std::fs::read(path).unwrap();
        for (i, msg) in messages(&bytes).iter().enumerate() {
            let out = v2fhir::convert(msg, &options).unwrap();
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
    (bundles, input)
}

#[test]
// Codes outside a required value set are kept as the element's original text (see `convert.rs`), and impossible
// dates are not written: HAPI's strict parser rejected 185 of these Bundles before both.
fn every_bundle_parses_with_hapi_fhir_strict() {
    let (bundles, input) = corpus_bundles();
    let verdicts = run_hapi_fhir(&[], input);
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

/// A validator error as a kind: the resource type and the element path without item numbers, and the message
/// without the values it quotes. `Bundle.entry[3].resource/*Patient/5e1c…*/.telecom[1] :: Constraint failed:
/// cpt-2: '…'` is `Patient.telecom[] :: Constraint failed: cpt-2: 'X'`.
fn error_kind(error: &str) -> String {
    let (at, message) = error.split_once(" :: ").unwrap_or(("", error));
    let mut ty = "";
    let mut path = String::new();
    let mut rest = at;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("/*") {
            let (inside, after) = r.split_once("*/").unwrap_or((r, ""));
            ty = inside.split('/').next().unwrap_or("");
            path.clear();
            rest = after;
        } else if let Some(r) = rest.strip_prefix('[') {
            let (inside, after) = r.split_once(']').unwrap_or((r, ""));
            // Item numbers go; a slice's or extension's `[url='…']` stays as its kind.
            path.push_str(if inside.bytes().all(|b| b.is_ascii_digit()) {
                "[]"
            } else {
                "[…]"
            });
            rest = after;
        } else {
            let mut chars = rest.chars();
            path.extend(chars.next());
            rest = chars.as_str();
        }
    }
    let message = message.split(" (from http").next().unwrap_or(message);
    let mut masked = String::new();
    let mut quote = None;
    for c in message.chars() {
        match quote {
            Some(q) if c == q => {
                masked.push('X');
                masked.push(c);
                quote = None;
            }
            Some(_) => {}
            None if c == '\'' || c == '"' => {
                masked.push(c);
                quote = Some(c);
            }
            None => masked.push(c),
        }
    }
    format!("{ty}{path} :: {}", masked.trim())
}

#[test]
fn error_kinds_keep_the_element_and_drop_ids_items_and_values() {
    assert_eq!(
        error_kind(
            "Bundle.entry[3].resource/*Patient/5e1c-9*/.telecom[1] :: Constraint failed: cpt-2: 'A system is required' (from http://hl7.org/fhir/StructureDefinition/ContactPoint|4.0.1)"
        ),
        "Patient.telecom[] :: Constraint failed: cpt-2: 'X'"
    );
    assert_eq!(
        error_kind(
            "Bundle.entry[0].resource/*MessageHeader/ab*/ :: MessageHeader.source: minimum required = 1, but only found 0"
        ),
        "MessageHeader :: MessageHeader.source: minimum required = 1, but only found 0"
    );
}

/// Where the converter stands against FHIR R4's own rules. Each kind of error that HAPI's instance validator finds
/// in the corpus's Bundles has a bound in `validation-bounds.txt` (measured; see docs/CONFORMANCE.md for why each
/// remains): a kind may shrink, never grow, and a new kind fails the test. `UPDATE_VALIDATION=1` rewrites the file
/// after a fix, which its commit explains.
#[test]
fn hapi_fhir_validation_errors_stay_within_their_bounds() {
    let (bundles, input) = corpus_bundles();
    let verdicts = run_hapi_fhir(&["validate"], input);
    assert_eq!(verdicts.len(), bundles.len(), "one verdict per Bundle");
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut valid = 0;
    for verdict in &verdicts {
        let Some(errors) = verdict.strip_prefix("error\t") else {
            assert_eq!(verdict, "ok");
            valid += 1;
            continue;
        };
        for e in errors.split('\t') {
            *kinds.entry(error_kind(e)).or_default() += 1;
        }
    }
    let total: usize = kinds.values().sum();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/validation-bounds.txt");
    let table: String = kinds.iter().map(|(k, n)| format!("{n}\t{k}\n")).collect();
    eprintln!(
        "HAPI FHIR 8.8.1's validator: {valid} of {} Bundles valid, {total} errors of {} kinds",
        bundles.len(),
        kinds.len()
    );
    if std::env::var_os("UPDATE_VALIDATION").is_some() {
        let head = "# Errors of each kind that HAPI FHIR 8.8.1's R4 instance validator finds in the Bundles of the shared\n\
                    # corpora (tests/it/hapi_fhir.rs). Bounds: a kind may shrink, never grow. Rewritten with UPDATE_VALIDATION=1.\n";
        std::fs::write(&file, format!("{head}{table}")).unwrap();
        return;
    }
    let bounds: BTreeMap<String, usize> = std::fs::read_to_string(&file)
        .expect("tests/it/validation-bounds.txt")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (n, k) = l.split_once('\t')?;
            Some((k.to_owned(), n.parse().ok()?))
        })
        .collect();
    let over: Vec<String> = kinds
        .iter()
        .filter_map(|(k, &n)| match bounds.get(k) {
            Some(&b) if n <= b => None,
            Some(&b) => Some(format!("{n} (bound {b})\t{k}")),
            None => Some(format!("{n} (a new kind)\t{k}")),
        })
        .collect();
    assert!(
        over.is_empty(),
        "HAPI FHIR's validator finds more errors than the bounds allow:\n{}\n\nall kinds now:\n{table}",
        over.join("\n")
    );
}
