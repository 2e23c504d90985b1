//! The binary encoding is Protocol Buffers that Google's own toolchain reads and writes: `thoth fhir
//! proto-schema` compiles with `protoc`, `protoc --decode` reads our files, and what `protoc --encode` writes back
//! (fields in number order, not ours) reads as the same resource. Needs `protoc` (Debian: protobuf-compiler,
//! installed by `scripts/test.sh`) and the official examples in `../shared`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn examples_package() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/fhir/packages/hl7.fhir.r4.examples-4.0.1.tgz");
    assert!(
        p.is_file(),
        "the official FHIR R4 examples are missing: expected {} (../shared beside the repository)",
        p.display()
    );
    p
}

/// Runs a command with `stdin`, panicking with its stderr when it fails.
fn run(program: &str, args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run {program}: {e} (protoc comes from Debian's protobuf-compiler; scripts/test.sh installs it)")
        });
    let mut input = child.stdin.take().unwrap();
    let bytes = stdin.to_vec();
    let writer = std::thread::spawn(move || input.write_all(&bytes));
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn thoth(args: &[&str], stdin: &[u8]) -> Vec<u8> {
    run(env!("CARGO_BIN_EXE_thoth"), args, stdin)
}

/// The first example of every other resource type (file names are `Type-id.json`): about 70 types, Bundles
/// included.
fn sample_examples() -> Vec<(String, Vec<u8>)> {
    let file = std::fs::File::open(examples_package()).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut all = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".json") && !name.ends_with("package.json") && !name.contains(".index") {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            all.push((name, bytes));
        }
    }
    all.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(all.len() > 5000, "expected the whole examples package");
    let type_of = |name: &str| {
        name.trim_start_matches("package/")
            .split('-')
            .next()
            .unwrap_or_default()
            .to_string()
    };
    all.dedup_by(|later, first| type_of(&later.0) == type_of(&first.0));
    all.into_iter().step_by(2).collect()
}

#[test]
fn protoc_reads_and_writes_the_binary_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("fhir.proto");
    std::fs::write(&schema, thoth(&["fhir", "proto-schema"], b"")).unwrap();
    let proto_path = format!("--proto_path={}", dir.path().display());
    let decode = ["--decode=thoth.fhir.r4.Resource", &proto_path, "fhir.proto"];
    let encode = ["--encode=thoth.fhir.r4.Resource", &proto_path, "fhir.proto"];

    let samples = sample_examples();
    let mut types = std::collections::BTreeSet::new();
    for (name, json) in &samples {
        let ours = thoth(&["fhir", "convert", "-", "--to", "pb"], json);
        let text = run("protoc", &decode, &ours);
        let text = String::from_utf8(text).unwrap();
        // The text format names the resource's oneof field first: `patient {`.
        let first = text.lines().next().unwrap_or_default();
        assert!(
            first.ends_with(" {"),
            "{name}: protoc decoded no resource: {text:.200}"
        );
        types.insert(first.trim_end_matches(" {").to_string());
        let theirs = run("protoc", &encode, text.as_bytes());
        let back = thoth(&["fhir", "convert", "-", "--to", "json"], &theirs);
        let want = thoth(&["fhir", "convert", "-", "--to", "json"], json);
        assert_eq!(
            String::from_utf8_lossy(&back),
            String::from_utf8_lossy(&want),
            "{name}: protoc's re-encoding reads back as a different resource"
        );
    }
    assert!(
        types.len() >= 50,
        "the sample should span many resource types, got {types:?}"
    );
}
