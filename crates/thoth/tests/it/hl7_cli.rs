//! `thoth hl7 json|get|fmt|ack|check` as a user runs them: the real binary on the shared corpus, files and stdin.

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
