//! Finding the shared corpora and reading Bundles.

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

/// Every `.hl7` file under `dir`, recursively, sorted.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in
            std::fs::read_dir(&d).unwrap_or_else(|e| panic!("reading {}: {e}", d.display()))
        {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "hl7") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The messages of a file (a file may hold several, or a batch).
pub fn messages(bytes: &[u8]) -> Vec<hl7v2::Message<'_>> {
    hl7v2::messages(bytes).collect()
}

/// Every `reference` string in a JSON value.
pub fn references(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                if k == "reference"
                    && let Some(s) = x.as_str()
                {
                    out.push(s.to_string());
                } else {
                    references(x, out);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| references(x, out)),
        _ => {}
    }
}
