//! `thoth hl7 validate` (lenient profile) against hl7apy's strict validation on the shared corpora: every
//! message where the two verdicts differ, and every message hl7apy refuses to parse, must fall in a category
//! explained in docs/CONFORMANCE.md ("HL7 v2 validation against hl7apy"). Each category is a check over both
//! engines' messages, so a new kind of disagreement fails the test.
//!
//! Needs python3 with the hl7apy pinned in .ci/requirements.txt (`python3 -m pip install -r .ci/requirements.txt`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `.hl7` files under `dir`, recursively, sorted.
fn hl7_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| {
        panic!(
            "the shared HL7 v2 corpora are missing: reading {} failed ({e}); ../shared must sit beside the repository",
            dir.display()
        )
    });
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            hl7_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "hl7") {
            out.push(p);
        }
    }
}

/// The hl7apy version pinned in .ci/requirements.txt.
fn pinned_hl7apy() -> String {
    let reqs = std::fs::read_to_string(root().join(".ci/requirements.txt")).unwrap();
    reqs.lines()
        .find_map(|l| l.trim().strip_prefix("hl7apy=="))
        .expect(".ci/requirements.txt pins hl7apy")
        .trim()
        .to_owned()
}

/// hl7apy's verdict per file (`bench/hl7v2/python/hl7apy_validate.py`).
fn hl7apy(files: &[PathBuf]) -> BTreeMap<PathBuf, Value> {
    let pinned = pinned_hl7apy();
    let probe = Command::new("python3")
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('hl7apy'))",
        ])
        .output();
    let installed = probe
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    assert!(
        installed.as_deref() == Some(pinned.as_str()),
        "\n\n*** this test needs python3 with hl7apy=={pinned} (found: {installed:?}).\n*** Install it with: \
         python3 -m pip install -r .ci/requirements.txt   (scripts/test.sh does this)\n\n"
    );
    let out = Command::new("python3")
        .arg(root().join("bench/hl7v2/python/hl7apy_validate.py"))
        .args(files)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "hl7apy_validate.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdicts: BTreeMap<PathBuf, Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (PathBuf::from(v["file"].as_str().unwrap()), v)
        })
        .collect();
    assert_eq!(verdicts.len(), files.len(), "one hl7apy verdict per file");
    verdicts
}

/// Thoth's report per file (`thoth hl7 validate FILE --format json`): `None` when the file holds no message.
fn thoth(files: &[PathBuf]) -> BTreeMap<PathBuf, Option<Value>> {
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get().min(8));
    let chunk = files.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|f| {
                            let out = Command::new(env!("CARGO_BIN_EXE_thoth"))
                                .args(["hl7", "validate", "--format", "json"])
                                .arg(f)
                                .output()
                                .expect("thoth runs");
                            let text = String::from_utf8(out.stdout).unwrap();
                            let mut reports: Vec<Value> = text
                                .lines()
                                .map(|l| serde_json::from_str(l).unwrap())
                                .collect();
                            assert!(reports.len() <= 1, "{}: one message a file", f.display());
                            (f.clone(), reports.pop())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

fn issues(report: &Value) -> &[Value] {
    report["issues"].as_array().map_or(&[], Vec::as_slice)
}

fn errors(report: &Value) -> impl Iterator<Item = &Value> {
    issues(report).iter().filter(|i| i["severity"] == "error")
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

/// `SEG-N` at the end of a Thoth path (`/PATIENT/PID-40`, `/ORDER(1)/OBX(2)-19`), without repetition indexes.
fn field_of(path: &str) -> Option<(String, String)> {
    let last = path.rsplit('/').next()?;
    let mut parts = last.split('-');
    let seg = parts.next()?;
    let seg = seg.split('(').next()?.to_owned();
    Some((seg, parts.next()?.to_owned()))
}

/// The HL7 table and value of a Thoth `table-value-id` issue: `... "N" is not in HL7 table 0103 (...)`.
fn table_value(message: &str) -> Option<(String, String)> {
    let start = message.find(") \"")? + 3;
    let rest = &message[start..];
    let end = rest.find("\" is not in HL7 table ")?;
    let table = rest[end + 22..].split_whitespace().next()?.to_owned();
    Some((rest[..end].to_owned(), table))
}

/// A disagreement category: a name, the reason (as in docs/CONFORMANCE.md), and the check that a message
/// belongs to it.
struct Category {
    name: &'static str,
    reason: &'static str,
    applies: fn(thoth: &Value, apy: &Value) -> bool,
}

/// hl7apy's refusal message.
fn refusal(apy: &Value) -> &str {
    apy["errors"][0].as_str().unwrap_or("")
}

/// Refusals (hl7apy's strict parser raises): why, checked against what Thoth reports at the same place.
const REFUSALS: &[Category] = &[
    Category {
        name: "structure-without-msh-9-3",
        reason: "hl7apy names the structure TYPE_EVENT when MSH-9.3 is empty and has no event-to-structure map \
                 (ADT_A04, MDM_T05, bare ACK...); Thoth resolves it (ADT_A04 -> ADT_A01)",
        applies: |thoth, apy| {
            let e = refusal(apy);
            let Some(at) = e.split("(at structure ").nth(1) else {
                return false;
            };
            let tried = at.split_whitespace().next().unwrap_or("");
            e.starts_with("OperationNotAllowed")
                && thoth["structure"].as_str().is_some_and(|s| s != tried)
        },
    },
    Category {
        name: "withdrawn-or-extra-field",
        reason: "hl7apy refuses a value in a field its version does not define (EVN-1, PID-2... withdrawn in 2.7+, \
                 or beyond the segment's last field); Thoth reports the same field as `withdrawn`/`extra-field`, \
                 a warning in the lenient profile",
        applies: |thoth, apy| {
            let e = refusal(apy);
            let Some(at) = e.split("(at ").nth(1) else {
                return false;
            };
            let Some((seg, n)) = at.split(':').next().and_then(|s| s.split_once('_')) else {
                return false;
            };
            e.starts_with("OperationNotAllowed")
                && issues(thoth).iter().any(|i| {
                    matches!(text(i, "rule"), "withdrawn" | "extra-field")
                        && field_of(text(i, "path")) == Some((seg.to_owned(), n.to_owned()))
                })
        },
    },
    Category {
        name: "over-length",
        reason: "hl7apy's strict parser refuses any value (field or component) longer than its maximum; Thoth \
                 checks field lengths (2.1-2.6) as warnings, not component lengths",
        applies: |thoth, apy| {
            let e = refusal(apy);
            let Some(rest) = e.strip_prefix("MaxLengthReached: The value ") else {
                return false;
            };
            let Some((value, max)) = rest.split_once(" exceed the max length: ") else {
                return false;
            };
            let max: usize = max
                .split_whitespace()
                .next()
                .and_then(|m| m.parse().ok())
                .unwrap_or(usize::MAX);
            value.chars().count() > max && !errors(thoth).any(|i| i["rule"] == "length")
        },
    },
    Category {
        name: "extra-components",
        reason: "hl7apy refuses a value with more components (or subcomponents) than its data type defines \
                 (PID-8 `F^Female^HL70001` in an IS field, CE_9...); Thoth does not check component counts",
        applies: |_, apy| {
            let e = refusal(apy);
            let structured = e
                .split("(at ")
                .nth(1)
                .is_some_and(|at| at.contains('^') || at.contains('&') || at.contains("CM_MSG"));
            let too_many = e.starts_with("MaxChildLimitReached: Cannot add <Component")
                || e.starts_with("MaxChildLimitReached: Cannot add <SubComponent");
            let unknown_component = e.starts_with("InvalidName: Invalid name for Component: ");
            (too_many && structured) || unknown_component
        },
    },
    Category {
        name: "bad-primitive",
        reason: "hl7apy's parser rejects a malformed NM/DT/TN value; Thoth reports the same NM/DT value as a \
                 `data-type` error (it does not check TN)",
        applies: |thoth, apy| {
            let e = refusal(apy);
            let Some(rest) = e.strip_prefix("ValueError: ") else {
                return false;
            };
            if rest.starts_with("Invalid value for TN data") {
                return true;
            }
            let value = rest.split(" is not an HL7 valid").next().unwrap_or("");
            errors(thoth).any(|i| {
                i["rule"] == "data-type" && text(i, "message").contains(&format!("\"{value}\""))
            })
        },
    },
    Category {
        name: "group-overflow",
        reason: "hl7apy's group finder cannot place a repeated segment and refuses; Thoth reports the segment as \
                 `unexpected-segment` (an error)",
        applies: |thoth, apy| {
            refusal(apy).starts_with("MaxChildLimitReached: Cannot add <Group")
                && errors(thoth).any(|i| i["rule"] == "unexpected-segment")
        },
    },
    Category {
        name: "broken-header",
        reason: "negative tests: no MSH, MSH without encoding characters, or an empty MSH-9: hl7apy refuses, Thoth \
                 finds no message or reports errors (a required MSH field is empty)",
        applies: |thoth, apy| {
            let e = refusal(apy);
            let header = e.starts_with("ParserError: Invalid message")
                || e.starts_with("InvalidEncodingChars")
                || e.contains("(at structure None ") && thoth["structure"].is_null();
            header && (thoth.is_null() || errors(thoth).next().is_some())
        },
    },
];

/// Thoth invalid where hl7apy validates: every Thoth error must be explained by one of these.
const THOTH_ONLY: &[Category] = &[
    Category {
        name: "id-table-value-hl7apy-warns",
        reason: "an ID value not in its HL7 table: an error for Thoth, only a warning for hl7apy (which reports \
                 every table value as a warning)",
        applies: |issue, apy| {
            let Some((value, table)) = table_value(text(issue, "message")) else {
                return false;
            };
            issue["rule"] == "table-value-id"
                && apy["warnings"].as_array().is_some_and(|w| {
                    w.iter().any(|w| {
                        let w = w.as_str().unwrap_or("");
                        w.starts_with(&format!("Value {value} not in table HL7{table}"))
                    })
                })
        },
    },
    Category {
        name: "id-table-value-no-hl7apy-table",
        reason: "an ID value not in its HL7 table, in a 2.3 message: hl7apy 1.3.5 ships no tables for 2.3",
        applies: |issue, apy| {
            issue["rule"] == "table-value-id"
                && apy["version"] == "2.3"
                && apy["warnings"] == serde_json::json!([])
        },
    },
    Category {
        name: "id-table-value-trailing-space",
        reason: "an ID value with a trailing space at the end of its segment (`N `): hl7apy strips each segment's \
                 whitespace before parsing, Thoth keeps the value as written",
        applies: |issue, _| {
            issue["rule"] == "table-value-id"
                && table_value(text(issue, "message")).is_some_and(|(v, _)| v.ends_with(' '))
        },
    },
    Category {
        name: "timestamp-before-2.5",
        reason: "a malformed timestamp (TS-1) in a 2.1-2.4 message: hl7apy 1.3.5 types TS-1 as ST before 2.5 and \
                 does not check it",
        applies: |issue, apy| {
            issue["rule"] == "data-type"
                && text(issue, "message").contains("is not a timestamp")
                && matches!(
                    apy["version"].as_str(),
                    Some("2.1" | "2.2" | "2.3" | "2.3.1" | "2.4")
                )
        },
    },
    Category {
        name: "segment-order",
        reason: "a segment out of order (DG1 after GT1 in ADT_A01): hl7apy files each segment under its name and \
                 does not check order",
        applies: |issue, _| {
            issue["rule"] == "unexpected-segment"
                && text(issue, "message").contains("is not allowed here")
        },
    },
];

#[test]
fn hl7apy_and_thoth_disagree_only_for_explained_reasons() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/hl7v2");
    let mut files = Vec::new();
    hl7_files(&data.join("fhir-converter"), &mut files);
    hl7_files(&data.join("trusted-intermediary"), &mut files);
    files.sort();
    assert!(
        files.len() > 250,
        "expected the fhir-converter and trusted-intermediary corpora"
    );
    let apy = hl7apy(&files);
    let thoth = thoth(&files);

    let mut table: BTreeMap<&str, usize> = BTreeMap::new();
    let mut categories: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut unexplained = Vec::new();
    for f in &files {
        let a = &apy[f];
        // Some checks need the message's version (as Thoth read it); hl7apy's line does not carry it.
        let mut a = a.clone();
        let report = thoth[f].clone().unwrap_or(Value::Null);
        a["version"] = report["version"].clone();
        let thoth_valid = report["valid"] == true;
        let verdict = a["verdict"].as_str().unwrap();
        let row = match (thoth_valid, verdict) {
            (true, "valid") => "both valid",
            (false, "invalid") => "both invalid",
            (false, "valid") => "Thoth-only invalid",
            (true, "invalid") => "hl7apy-only invalid",
            (true, _) => "hl7apy refused, Thoth valid",
            (false, _) => "hl7apy refused, Thoth invalid",
        };
        *table.entry(row).or_default() += 1;
        let name = f.strip_prefix(&data).unwrap_or(f).display().to_string();
        match row {
            "hl7apy refused, Thoth valid" | "hl7apy refused, Thoth invalid" => {
                match REFUSALS.iter().find(|c| (c.applies)(&report, &a)) {
                    Some(c) => *categories.entry(("refused", c.name)).or_default() += 1,
                    None => unexplained.push(format!("{name}: hl7apy refused: {}", refusal(&a))),
                }
            }
            "Thoth-only invalid" => {
                for e in errors(&report) {
                    match THOTH_ONLY.iter().find(|c| (c.applies)(e, &a)) {
                        Some(c) => {
                            *categories.entry(("Thoth-only error", c.name)).or_default() += 1
                        }
                        None => unexplained.push(format!(
                            "{name}: Thoth error hl7apy does not report: {} {} {}",
                            text(e, "rule"),
                            text(e, "path"),
                            text(e, "message")
                        )),
                    }
                }
            }
            "hl7apy-only invalid" => {
                unexplained.push(format!("{name}: only hl7apy finds errors: {}", a["errors"]))
            }
            _ => {}
        }
    }

    eprintln!(
        "verdicts (Thoth lenient profile vs hl7apy strict), {} messages:",
        files.len()
    );
    for (row, n) in &table {
        eprintln!("  {n:4}  {row}");
    }
    eprintln!("explained:");
    for ((kind, name), n) in &categories {
        let reason = REFUSALS
            .iter()
            .chain(THOTH_ONLY)
            .find(|c| c.name == *name)
            .map_or("", |c| c.reason);
        eprintln!("  {n:4}  {kind}: {name}: {reason}");
    }
    assert!(
        unexplained.is_empty(),
        "{} disagreement(s) between Thoth and hl7apy fall in no explained category (see docs/CONFORMANCE.md, \
         \"HL7 v2 validation against hl7apy\"); explain them there and here, or fix the bug:\n{}",
        unexplained.len(),
        unexplained.join("\n")
    );
}
