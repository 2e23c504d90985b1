//! `thoth hl7 json|get|fmt|ack|check|validate|describe` as a user runs them: the real binary on the shared corpus,
//! files and stdin.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use hl7v2::Message;

/// `../shared/data/hl7v2` beside the repository; panics loudly when it is missing.
fn hl7_data() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/hl7v2");
    assert!(
        dir.is_dir(),
        "the shared HL7 v2 corpora are missing: expected {} (../shared beside the repository)",
        dir.display()
    );
    dir
}

fn hl7_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hl7"))
        .collect();
    out.sort();
    out
}

fn thoth(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_thoth"))
        .arg("hl7")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("thoth runs");
    let mut input = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        input.write_all(bytes).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

#[test]
fn fmt_reproduces_every_fhir_converter_sample_byte_for_byte() {
    let files = hl7_files(&hl7_data().join("fhir-converter"));
    assert!(files.len() > 100, "expected the FHIR-Converter samples");
    for f in files {
        let out = thoth(&["fmt", f.to_str().unwrap()], None);
        assert!(out.status.success(), "{}: {out:?}", f.display());
        assert_eq!(
            out.stdout,
            std::fs::read(&f).unwrap(),
            "{} re-encodes differently",
            f.display()
        );
    }
}

#[test]
fn get_prints_one_value_per_message_of_a_multi_message_stream() {
    let files = hl7_files(&hl7_data().join("fhir-converter"));
    let picked = &files[..5];
    // Several messages in one stream on stdin, as a user would pipe a day's log.
    let mut stream = Vec::new();
    let mut expected = String::new();
    for f in picked {
        let bytes = std::fs::read(f).unwrap();
        let msg = Message::parse(&bytes);
        expected.push_str(&msg.get("MSH-10").unwrap_or_default());
        expected.push('\n');
        stream.extend_from_slice(&bytes);
        if !bytes.ends_with(b"\r") && !bytes.ends_with(b"\n") {
            stream.push(b'\r');
        }
    }
    let out = thoth(&["get", "-", "MSH-10"], Some(&stream));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
}

#[test]
fn fmt_set_edits_and_the_result_reads_back() {
    let f = &hl7_files(&hl7_data().join("fhir-converter"))[0];
    let out = thoth(
        &["fmt", f.to_str().unwrap(), "--set", "PID-5-1=O'BRIEN|X"],
        None,
    );
    assert!(out.status.success(), "{out:?}");
    let msg = Message::parse(&out.stdout);
    assert!(!msg.has_errors(), "{:?}", msg.diagnostics());
    // The field separator in the value is escaped on write and decoded on read.
    assert_eq!(msg.get("PID-5-1").as_deref(), Some("O'BRIEN|X"));
}

#[test]
fn ack_answers_each_message_with_its_control_id() {
    let f = &hl7_files(&hl7_data().join("fhir-converter"))[0];
    let bytes = std::fs::read(f).unwrap();
    let original = Message::parse(&bytes);
    let out = thoth(&["ack", f.to_str().unwrap(), "--code", "AE"], None);
    assert!(out.status.success(), "{out:?}");
    let ack = Message::parse_strict(&out.stdout).expect("the ACK parses strictly");
    assert_eq!(ack.get("MSA-1").as_deref(), Some("AE"));
    assert_eq!(ack.get("MSA-2"), original.get("MSH-10"));
    assert_eq!(ack.get("MSH-5"), original.get("MSH-3"));
    assert_eq!(ack.get("MSH-9-1").as_deref(), Some("ACK"));
}

#[test]
fn json_is_valid_json_with_every_segment() {
    let f = &hl7_files(&hl7_data().join("fhir-converter"))[0];
    let bytes = std::fs::read(f).unwrap();
    let out = thoth(&["json", "--compact", f.to_str().unwrap()], None);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let value: serde_json::Value =
        serde_json::from_str(text.lines().next().unwrap()).expect("one JSON object per line");
    let rendered = value.to_string();
    assert!(rendered.contains("\"MSH\""), "{rendered}");
    assert_eq!(
        Message::parse(&bytes).segment_count(),
        value["segments"].as_array().map_or(0, Vec::len),
        "{rendered}"
    );
}

#[test]
fn check_exits_nonzero_on_bad_input_and_zero_on_a_clean_file() {
    let good = &hl7_files(&hl7_data().join("fhir-converter"))[0];
    let out = thoth(&["check", good.to_str().unwrap()], None);
    assert!(out.status.success(), "{out:?}");
    let out = thoth(&["check", "-"], Some(b"this is not HL7\x00\x01"));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("error"),
        "{out:?}"
    );
    let out = thoth(&["check", "/nonexistent/file.hl7"], None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such file"));
}

/// A small ADT^A01 that validates under 2.5.1, with `pid` as its PID segment.
fn adt(control_id: &str, pid: &str) -> Vec<u8> {
    format!(
        "MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240101120000||ADT^A01^ADT_A01|{control_id}|P|2.5.1\r\
         EVN|A01|20240101120000\r{pid}\rPV1|1|I\r"
    )
    .into_bytes()
}

const GOOD_PID: &str = "PID|1||12345^^^HOSP^MR~777^^^OTHER^PI||DOE^JOHN||19800101|M";
/// PID-5 (patient name) is required.
const NAMELESS_PID: &str = "PID|1||12345^^^HOSP^MR||||19800101|M";

#[test]
fn get_prints_one_line_per_path_per_message_in_the_order_given() {
    // A real sample with LF line ends (as the corpus has them), then a small message: two messages, one stream.
    let oru = std::fs::read(hl7_data().join("fhir-converter/ORU-R01-01.hl7")).unwrap();
    let mut stream = oru.clone();
    if !stream.ends_with(b"\n") && !stream.ends_with(b"\r") {
        stream.push(b'\n');
    }
    stream.extend_from_slice(&adt("G2", GOOD_PID));
    let out = thoth(
        &[
            "get",
            "-",
            "PID-5-1",
            "/PATIENT_RESULT/PATIENT/PID-5-1",
            "PID-3(1)-1",
            "PID-3[2]-1",
            "PID-3(0)-4",
            "MSH-10",
            "--missing-ok",
        ],
        Some(&stream),
    );
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 12, "{text}");
    // The ORU: its patient by flat and by group path; PID-3 has one repetition, so the second is empty.
    let oru_id = Message::parse(&oru).get("MSH-10").unwrap().into_owned();
    assert_eq!(
        lines[..6],
        ["Finn", "Finn", "", "", "IA PHIMS Stage", &*oru_id]
    );
    // The ADT: `(1)` is 0-based, `[2]` 1-based: both the second repetition. Group path: PID is top-level in
    // ADT_A01, so `/PATIENT_RESULT/...` names nothing.
    assert_eq!(lines[6..], ["DOE", "", "777", "777", "HOSP", "G2"]);
    // Without --missing-ok, the same lines, and the absent values are named and fail the run.
    let strict = thoth(
        &["get", "-", "PID-5-1", "/PATIENT_RESULT/PATIENT/PID-5-1"],
        Some(&stream),
    );
    assert!(!strict.status.success());
    assert_eq!(String::from_utf8(strict.stdout).unwrap().lines().count(), 4);
    let stderr = String::from_utf8(strict.stderr).unwrap();
    assert!(
        stderr.contains("message 2: /PATIENT_RESULT/PATIENT/PID-5-1 has no value"),
        "{stderr}"
    );
}

#[test]
fn the_file_commands_take_many_files_and_get_takes_its_arguments_in_any_order() {
    let dir = hl7_data().join("fhir-converter");
    let (a, b) = (dir.join("ADT-A01-01.hl7"), dir.join("ORU-R01-01.hl7"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let id = |p: &str| {
        Message::parse(&std::fs::read(p).unwrap())
            .get("MSH-10")
            .unwrap()
            .into_owned()
    };
    // Paths first, files after (the order people type when they think "get X from F"): the same answer.
    for args in [["get", a, b, "MSH-10"], ["get", "MSH-10", a, b]] {
        let out = thoth(&args, None);
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text, format!("{a}:{}\n{b}:{}\n", id(a), id(b)));
    }
    // Neither a file nor a path: said so, by name.
    let out = thoth(&["get", "no-such.hl7", "MSH-10"], None);
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("no-such.hl7") && stderr.contains("neither a file nor a path"),
        "{stderr}"
    );
    // json, check, validate, ack and fmt: every file, in order.
    let out = thoth(&["json", "--compact", a, b], None);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 2);
    let out = thoth(&["check", a, b], None);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains(a) && stderr.contains(b), "{stderr}");
    let out = thoth(&["fmt", a, b], None);
    assert!(out.status.success());
    let expected = [std::fs::read(a).unwrap(), std::fs::read(b).unwrap()].concat();
    assert_eq!(
        out.stdout, expected,
        "fmt without edits is byte for byte, file after file"
    );
}

#[test]
fn validate_exit_code_follows_errors_and_json_names_the_missing_field() {
    let out = thoth(&["validate", "-"], Some(&adt("OK-1", GOOD_PID)));
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("\"OK-1\"") && text.contains("ADT_A01") && text.contains("valid"),
        "{text}"
    );

    let mut two = adt("OK-2", GOOD_PID);
    two.extend_from_slice(&adt("BAD-1", NAMELESS_PID));
    let out = thoth(&["validate", "--format", "json", "-"], Some(&two));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let reports: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(reports.len(), 2, "{text}");
    assert_eq!(reports[0]["control_id"], "OK-2");
    assert_eq!(reports[0]["valid"], true);
    assert_eq!(reports[0]["issues"], serde_json::json!([]));
    let bad = &reports[1];
    assert_eq!(bad["control_id"], "BAD-1");
    assert_eq!(bad["structure"], "ADT_A01");
    assert_eq!(bad["version"], "2.5.1");
    assert_eq!(bad["valid"], false);
    let issue = &bad["issues"][0];
    assert_eq!(issue["severity"], "error");
    assert_eq!(issue["code"], "101", "the code is a string: {issue}");
    assert_eq!(issue["path"], "/PID-5");
    assert!(
        issue["message"].as_str().unwrap().contains("PID-5"),
        "{issue}"
    );
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(summary.contains("2 message(s), 1 invalid"), "{summary}");

    // The text format: a line for the message, a line per issue.
    let out = thoth(&["validate", "-"], Some(&adt("BAD-2", NAMELESS_PID)));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().next().unwrap().contains("INVALID"), "{text}");
    assert!(
        text.lines().any(|l| l.contains("error 101 /PID-5")),
        "{text}"
    );
}

#[test]
fn validate_version_strict_and_rule_options_change_the_verdict() {
    // A Z-segment: a warning in the lenient profile, an error in the strict one.
    let mut z = adt("Z-1", GOOD_PID);
    z.extend_from_slice(b"ZPI|1|local\r");
    let out = thoth(&["validate", "-"], Some(&z));
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("warning 100"),
        "{out:?}"
    );
    let out = thoth(&["validate", "--strict", "-"], Some(&z));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let out = thoth(
        &["validate", "--strict", "--rule", "z-segment=ignore", "-"],
        Some(&z),
    );
    assert!(out.status.success(), "{out:?}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("ZPI"),
        "{out:?}"
    );

    // --version overrides MSH-12.
    let out = thoth(
        &["validate", "--format", "json", "--version", "2.3", "-"],
        Some(&z),
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["version"], "2.3", "{report}");
    let out = thoth(&["validate", "--version", "9.9", "-"], Some(&z));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("2.5.1"),
        "{out:?}"
    );
    let out = thoth(&["validate", "--rule", "no-such-rule=error", "-"], Some(&z));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("table-value"),
        "{out:?}"
    );

    // No message at all is an error, not a silent success.
    let out = thoth(&["validate", "-"], Some(b"this is not HL7"));
    assert!(!out.status.success(), "{out:?}");
}

#[test]
fn validate_reports_each_message_of_the_shared_corpus() {
    let files = hl7_files(&hl7_data().join("fhir-converter"));
    let mut stream = Vec::new();
    let mut ids = Vec::new();
    for f in &files[..20] {
        let bytes = std::fs::read(f).unwrap();
        ids.push(
            Message::parse(&bytes)
                .get("MSH-10")
                .unwrap_or_default()
                .into_owned(),
        );
        stream.extend_from_slice(&bytes);
        if !bytes.ends_with(b"\r") && !bytes.ends_with(b"\n") {
            stream.push(b'\n');
        }
    }
    let out = thoth(&["validate", "--format", "json", "-"], Some(&stream));
    let text = String::from_utf8(out.stdout).unwrap();
    let reports: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let got: Vec<_> = reports
        .iter()
        .map(|r| r["control_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(got, ids);
    // The exit code agrees with the reports.
    let any_invalid = reports.iter().any(|r| r["valid"] == false);
    assert_eq!(
        out.status.code(),
        Some(i32::from(any_invalid)),
        "{:?}",
        out.stderr
    );
    for r in &reports {
        assert!(
            r["structure"].is_string(),
            "every sample's structure resolves: {r}"
        );
        for i in r["issues"].as_array().unwrap() {
            assert!(i["code"].as_str().unwrap().parse::<u16>().is_ok(), "{i}");
            assert!(
                matches!(i["severity"].as_str(), Some("error" | "warning")),
                "{i}"
            );
        }
    }
}

#[test]
fn describe_prints_structures_segments_fields_and_data_types() {
    let out = thoth(&["describe", "ADT^A04"], None);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("ADT^A04: message structure ADT_A01 (HL7 v2.5.1)"),
        "{text}"
    );
    let line = |start: &str| {
        text.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line starting {start:?} in\n{text}"))
            .to_owned()
    };
    let pv1 = line("PV1 ");
    assert!(
        pv1.contains("[1..1]") && pv1.contains("Patient Visit"),
        "{pv1}"
    );
    assert!(line("PROCEDURE ").contains("[0..*]"), "{text}");
    // Group members are indented under their group.
    assert!(line("  PR1 ").contains("Procedures"), "{text}");

    let out = thoth(&["describe", "PID", "--version", "2.5.1"], None);
    let text = String::from_utf8(out.stdout).unwrap();
    let pid3 = text
        .lines()
        .find(|l| l.trim_start().starts_with("3 "))
        .unwrap();
    for part in ["Patient Identifier List", "CX", "[1..*]", "250"] {
        assert!(pid3.contains(part), "{pid3}");
    }
    let pid8 = text
        .lines()
        .find(|l| l.trim_start().starts_with("8 "))
        .unwrap();
    assert!(pid8.contains("0001"), "PID-8 names its table: {pid8}");

    let out = thoth(&["describe", "PID-11"], None);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("PID-11 Patient Address: XAD [0..*]"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("Street Address") && l.contains("SAD")),
        "{text}"
    );

    for unknown in ["XYZ^Q99", "PID-999", "NOPE"] {
        let out = thoth(&["describe", unknown], None);
        assert!(!out.status.success(), "{unknown}: {out:?}");
    }
}

#[test]
fn to_fhir_reports_a_message_past_the_memory_limit_and_converts_the_others() {
    // A file of three messages, the second of 3,000 OBX: past a limit of 1 MiB, within the default.
    let obx = "OBX|1|NM|6690-2^WBC^LN||7.5|10*3/uL|4.5-11.0|N|||F\r".repeat(3000);
    let big = format!(
        "MSH|^~\\&|LAB|H|EHR|H|20240315150000||ORU^R01^ORU_R01|BIG|P|2.5\rPID|1||MRN1^^^H^MR||DOE\rOBR|1|O1\r{obx}"
    );
    let mut file = adt("A1", GOOD_PID);
    file.extend_from_slice(big.as_bytes());
    file.extend_from_slice(&adt("A2", GOOD_PID));
    let out = thoth(&["to-fhir", "--max-memory", "1", "-"], Some(&file));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("message 2: the message is too large to convert"),
        "{stderr}"
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let ids: Vec<String> = stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["identifier"]["value"].to_string()
        })
        .collect();
    assert_eq!(ids, ["\"A1\"", "\"A2\""]);
    // Within the default limit the same file converts whole.
    let out = thoth(&["to-fhir", "-"], Some(&file));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().count(), 3);
}

#[test]
fn to_fhir_reads_times_without_an_offset_in_the_time_zone_given() {
    // MSH-7 20240101120000 (the test's messages) has no offset.
    let file = adt("Z1", GOOD_PID);
    let timestamp = |out: &Output| {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let bundle: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
        bundle["timestamp"].as_str().map(str::to_string)
    };
    let out = thoth(&["to-fhir", "--report", "-"], Some(&file));
    assert!(out.status.success());
    assert_eq!(timestamp(&out), None);
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(
        report.contains("MSH-7") && report.contains("no time zone"),
        "{report}"
    );
    let out = thoth(
        &["to-fhir", "--time-zone", "Australia/Adelaide", "-"],
        Some(&file),
    );
    assert!(out.status.success());
    // January is summer in Adelaide: ACDT, +10:30.
    assert_eq!(
        timestamp(&out).as_deref(),
        Some("2024-01-01T12:00:00+10:30")
    );
    let out = thoth(
        &["to-fhir", "--time-zone", "Nowhere/Town", "-"],
        Some(&file),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("Nowhere/Town"), "{stderr}");
}
