//! Shared helpers: where ../shared is, and semantic JSON comparison with decimals compared lexically.

use std::path::PathBuf;

/// `../shared` beside the repository root; panics loudly when it is missing.
pub fn shared() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    assert!(
        p.join("data/fhir").is_dir(),
        "test corpora missing: expected {} (../shared beside the checkout)",
        p.display()
    );
    p
}

/// The first Synthea bundle (JSON) of the shared corpus, by file name.
pub fn synthea_sample() -> Vec<u8> {
    let dir = shared().join("data/fhir/synthea");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let p = files
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a bundle");
    std::fs::read(p).expect("read")
}

/// Every number token of a JSON text, in order (decimals compared lexically, not as floats).
pub fn number_tokens(json: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let (mut i, mut in_str) = (0, false);
    while i < json.len() {
        let c = json[i];
        if in_str {
            match c {
                b'\\' => i += 1,
                b'"' => in_str = false,
                _ => {}
            }
            i += 1;
        } else if c == b'"' {
            in_str = true;
            i += 1;
        } else if c == b'-' || c.is_ascii_digit() {
            let s = i;
            while i < json.len()
                && matches!(json[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
            {
                i += 1;
            }
            out.push(&json[s..i]);
        } else {
            i += 1;
        }
    }
    out
}

/// Every object member name of a JSON text, in document order.
pub fn member_names(json: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < json.len() {
        if json[i] == b'"' {
            let s = i + 1;
            i += 1;
            while i < json.len() && json[i] != b'"' {
                i += if json[i] == b'\\' { 2 } else { 1 };
            }
            let name = &json[s..i.min(json.len())];
            i += 1;
            let mut j = i;
            while j < json.len() && json[j].is_ascii_whitespace() {
                j += 1;
            }
            if json.get(j) == Some(&b':') {
                out.push(name);
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Same JSON value (object member order ignored) and the same number lexemes.
pub fn same_json(a: &[u8], b: &[u8]) -> Result<(), String> {
    let va: serde_json::Value =
        serde_json::from_slice(a).map_err(|e| format!("left is not JSON: {e}"))?;
    let vb: serde_json::Value =
        serde_json::from_slice(b).map_err(|e| format!("right is not JSON: {e}"))?;
    if va != vb {
        return Err(
            first_difference(&va, &vb, String::new()).unwrap_or_else(|| "values differ".into())
        );
    }
    let (mut na, mut nb) = (number_tokens(a), number_tokens(b));
    na.sort();
    nb.sort();
    if na != nb {
        return Err("number lexical forms differ".into());
    }
    Ok(())
}

fn first_difference(a: &serde_json::Value, b: &serde_json::Value, path: String) -> Option<String> {
    use serde_json::Value::*;
    match (a, b) {
        (Object(x), Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    None => return Some(format!("{path}.{k} missing on the right")),
                    Some(w) => {
                        if let Some(d) = first_difference(v, w, format!("{path}.{k}")) {
                            return Some(d);
                        }
                    }
                }
            }
            y.keys()
                .find(|k| !x.contains_key(*k))
                .map(|k| format!("{path}.{k} missing on the left"))
        }
        (Array(x), Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (v, w))| first_difference(v, w, format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{path}: {a} != {b}")),
    }
}
