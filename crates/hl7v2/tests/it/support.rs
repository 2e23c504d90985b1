//! Finding the shared corpora.

use std::path::{Path, PathBuf};

/// `../shared/data/hl7v2` beside the repository; panics loudly when it is missing.
pub fn hl7_data() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/hl7v2");
    assert!(
        dir.is_dir(),
        "the shared HL7 v2 corpora are missing: expected {} (../shared beside the repository)",
        dir.display()
    );
    dir
}

/// Every file under `dir` (recursively) whose name ends with `ext` (any file when `ext` is empty), sorted.
pub fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in
            std::fs::read_dir(&d).unwrap_or_else(|e| panic!("reading {}: {e}", d.display()))
        {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| {
                n.to_string_lossy().ends_with(ext) && !n.to_string_lossy().starts_with("LICENSE")
            }) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The 271 real messages: FHIR-Converter samples and CDC trusted-intermediary files.
pub fn corpus() -> Vec<PathBuf> {
    let data = hl7_data();
    let mut v = files(&data.join("fhir-converter"), ".hl7");
    v.extend(files(&data.join("trusted-intermediary"), ".hl7"));
    assert_eq!(
        v.len(),
        271,
        "expected the 271 real messages of the shared corpus"
    );
    v
}
