//! The validation reports over the shared corpus are pinned, so that speed work cannot change a byte of them: per
//! file, the number of issues and a digest of every issue (severity, rule, path, message, ERR-2 location) under
//! the message's own version and each of the twelve versions forced, in three profiles, and of ten reads by path.
//!
//! When a change of the reports is meant, regenerate the expectations and say why in the commit:
//! `UPDATE_REPORTS=1 cargo test -p hl7v2 --test it reports` (the test names the files whose reports changed).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use hl7v2::{IssueSeverity, Message, ParseOptions, Profile, Rule, TreeOptions, Version, validate};

use crate::support::{corpus, files, hl7_data};

/// The expectations, one line per file: path (under `../shared/data/hl7v2`, or `bench/` for the bench messages),
/// issue count, digest.
const EXPECTED: &str = "tests/it/reports.tsv";

/// Reads by path (flat, rooted, group and searching forms; MSH-1 and MSH-2, repetitions, subcomponents).
const READS: [&str; 10] = [
    "/MSH-9-1",
    "/PID-5-1",
    "/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION(1)/OBX-5",
    "/.OBX(2)-5-2",
    "PID-3(1)-4",
    "OBX[2]-5",
    "MSH-1",
    "MSH-2",
    "PID-11-1-2",
    "/PATIENT/PID-3-1",
];

/// FNV-1a, 64 bits: stable across Rust releases, unlike `DefaultHasher`.
fn fnv(hash: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *hash ^= u64::from(b);
        *hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
}

/// The issue count and digest of one file's reports.
fn digest(bytes: &[u8]) -> (usize, u64) {
    let profiles = [
        Profile::lenient(),
        Profile::strict(),
        Profile::lenient()
            .with(Rule::Length, None)
            .with(Rule::TableValue, Some(IssueSeverity::Error)),
    ];
    let versions = std::iter::once(None).chain(Version::ALL.into_iter().map(Some));
    let (mut count, mut hash) = (0, 0xcbf2_9ce4_8422_2325);
    let mut line = String::new();
    for version in versions {
        let options = ParseOptions::default().with_tree_options(TreeOptions {
            force_version: version,
            ..TreeOptions::default()
        });
        let msg = Message::parse_with(bytes, &options);
        for profile in &profiles {
            let report = validate(&msg, profile);
            line.clear();
            let _ = writeln!(line, "{:?} {:?}", report.structure, report.version);
            fnv(&mut hash, line.as_bytes());
            for i in &report.issues {
                count += 1;
                line.clear();
                let _ = writeln!(
                    line,
                    "{}|{}|{}|{}|{:?}",
                    i.severity.as_str(),
                    i.rule.name(),
                    i.path,
                    i.message,
                    i.location
                );
                fnv(&mut hash, line.as_bytes());
            }
        }
        if version.is_none() {
            for path in READS {
                line.clear();
                let _ = writeln!(line, "{path} {:?}", msg.get(path));
                fnv(&mut hash, line.as_bytes());
            }
        }
    }
    (count, hash)
}

#[test]
fn validation_reports_are_unchanged() {
    let data = hl7_data();
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/hl7v2/messages");
    let mut inputs = corpus();
    inputs.extend(files(&data.join("bad-inputs"), ""));
    let bench_files = files(&bench, ".hl7");
    assert_eq!(bench_files.len(), 4, "the bench messages");
    inputs.extend(bench_files);

    let mut got = BTreeMap::new();
    for file in &inputs {
        let name = match file.strip_prefix(&data) {
            Ok(rel) => rel.display().to_string(),
            Err(_) => format!("bench/{}", file.file_name().unwrap().to_string_lossy()),
        };
        let bytes = std::fs::read(file).unwrap();
        let (count, hash) = digest(&bytes);
        got.insert(name, format!("{count}\t{hash:016x}"));
    }
    let text: String = got.iter().map(|(k, v)| format!("{k}\t{v}\n")).collect();
    let expected_path = Path::new(env!("CARGO_MANIFEST_DIR")).join(EXPECTED);
    if std::env::var_os("UPDATE_REPORTS").is_some() {
        std::fs::write(&expected_path, &text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
    let want: BTreeMap<&str, &str> = expected
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .collect();
    let changed: Vec<String> = got
        .iter()
        .filter(|(k, v)| want.get(k.as_str()) != Some(&v.as_str()))
        .map(|(k, v)| format!("{k}: {v} (was {:?})", want.get(k.as_str())))
        .chain(
            want.keys()
                .filter(|k| !got.contains_key(**k))
                .map(|k| format!("{k}: gone")),
        )
        .collect();
    assert!(
        changed.is_empty(),
        "{} of {} files have different validation reports (or reads by path) than {EXPECTED} records; if that is \
         meant, run UPDATE_REPORTS=1 cargo test -p hl7v2 --test it reports and say why in the commit:\n{}",
        changed.len(),
        got.len(),
        changed.join("\n")
    );
}
