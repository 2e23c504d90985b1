//! Differential test against python-hl7 (PyPI `hl7`): every field, repetition, component and subcomponent of the
//! 271 real files must read the same raw value.

use std::process::Command;

use hl7v2::{ChunkKind, Level, Value};
use serde_json::Value as Json;

use crate::support::corpus;

/// Our canonical nesting of a field: repetitions → components → subcomponents, raw text.
fn nest(field: Value<'_>) -> Json {
    if field.level() == Level::Verbatim {
        return serde_json::json!([[[String::from_utf8_lossy(field.raw())]]]);
    }
    let reps = field.parts().map(|rep| {
        let comps = rep.parts().map(|c| {
            let subs = c.parts().map(|s| {
                // A run of line breaks kept inside a value compares as one LF (hl7_fields.py drops blank lines).
                let mut text = String::from_utf8_lossy(s.raw()).replace('\r', "\n");
                while text.contains("\n\n") {
                    text = text.replace("\n\n", "\n");
                }
                Json::from(text)
            });
            Json::Array(subs.collect())
        });
        Json::Array(comps.collect())
    });
    Json::Array(reps.collect())
}

#[test]
fn field_values_agree_with_python_hl7() {
    let probe = Command::new("python3").args(["-c", "import hl7"]).output();
    // A missing reference fails the test: a comparison that did not run must not pass.
    assert!(
        probe.is_ok_and(|o| o.status.success()),
        "\n\n!!! The python-hl7 differential test needs the Python package `hl7`: `python3 -c 'import hl7'` \
         failed.\n!!! Install it with: python3 -m pip install -r .ci/requirements.txt (scripts/test.sh does).\n\n"
    );
    let files = corpus();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/hl7_fields.py");
    let out = Command::new("python3")
        .arg(&script)
        .args(&files)
        .output()
        .expect("running python3");
    assert!(
        out.status.success(),
        "python-hl7 failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference: Json = serde_json::from_slice(&out.stdout).expect("python-hl7 JSON");

    let mut compared = 0usize;
    let mut mismatches = Vec::new();
    let mut python_rejected = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let theirs = reference[path.to_str().unwrap()]
            .as_array()
            .expect("one entry per file");
        let ours: Vec<_> = hl7v2::split(&bytes)
            .filter(|c| c.kind == ChunkKind::Message)
            .map(|c| c.parse())
            .collect();
        if ours.len() != theirs.len() {
            mismatches.push(format!(
                "{}: {} messages vs python {}",
                path.display(),
                ours.len(),
                theirs.len()
            ));
            continue;
        }
        for (m, (msg, their_msg)) in ours.iter().zip(theirs).enumerate() {
            let Some(their_segs) = their_msg.as_array() else {
                python_rejected.push(path.file_name().unwrap().to_string_lossy().into_owned());
                continue;
            };
            if msg.segment_count() != their_segs.len() {
                mismatches.push(format!(
                    "{} message {m}: {} segments vs python {}",
                    path.display(),
                    msg.segment_count(),
                    their_segs.len()
                ));
                continue;
            }
            let last_seg = msg.segment_count() - 1;
            for (s, (seg, their_seg)) in msg.segments().zip(their_segs).enumerate() {
                let their_fields = their_seg.as_array().unwrap();
                let mut ours: Vec<Json> = vec![serde_json::json!([[[seg.id()]]])];
                ours.extend(seg.fields().map(nest));
                // python-hl7 strips trailing whitespace from the whole message (parse() calls str.strip()):
                // the only place where the raw values legitimately differ.
                if s == last_seg
                    && let Some(Json::String(last)) = ours.last_mut().and_then(|f| {
                        f.as_array_mut()?
                            .last_mut()?
                            .as_array_mut()?
                            .last_mut()?
                            .as_array_mut()?
                            .last_mut()
                    })
                {
                    *last = last.trim_end().to_owned();
                }
                if ours.len() != their_fields.len() {
                    mismatches.push(format!(
                        "{} {}: {} fields vs python {}",
                        path.display(),
                        seg.id(),
                        ours.len() - 1,
                        their_fields.len() - 1
                    ));
                    continue;
                }
                for (f, (a, b)) in ours.iter().zip(their_fields).enumerate() {
                    compared += 1;
                    if a != b {
                        mismatches.push(format!(
                            "{} {}-{f}: ours {a} python {b}",
                            path.display(),
                            seg.id()
                        ));
                    }
                }
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatch(es):\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    // python-hl7 raises on `MSH|` alone; we read it with default delimiters and a warning (see
    // corpus::malformed_samples_of_the_corpus_give_warnings_not_errors).
    assert_eq!(
        python_rejected,
        ["msh_present_but_missing_all_fields.hl7"],
        "python-hl7 rejected other files"
    );
    assert!(compared > 20_000, "compared only {compared} fields");
    eprintln!("python-hl7 agrees on {compared} fields");
}
