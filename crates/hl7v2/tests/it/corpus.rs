//! The 271 real messages: no error diagnostics, byte-exact encoding (read-only and through the editable model).

use hl7v2::{ChunkKind, Message, MessageBuf, Severity};

use crate::support::corpus;

#[test]
fn every_real_file_parses_without_errors_and_encodes_byte_exact() {
    let mut failures = Vec::new();
    let mut messages = 0;
    let mut envelopes = 0;
    for path in corpus() {
        let bytes = std::fs::read(&path).unwrap();
        let mut out = Vec::with_capacity(bytes.len());
        for chunk in hl7v2::split(&bytes) {
            match chunk.kind {
                ChunkKind::Message => {
                    messages += 1;
                    let msg = chunk.parse();
                    for d in msg
                        .diagnostics()
                        .iter()
                        .filter(|d| d.severity() == Severity::Error)
                    {
                        failures.push(format!("{}: {d}", path.display()));
                    }
                    assert_eq!(msg.encode(), chunk.bytes);
                    let edit = MessageBuf::from(&msg);
                    let encoded = edit.encode();
                    if encoded != chunk.bytes {
                        failures.push(format!(
                            "{}: MessageBuf does not re-encode byte-exact",
                            path.display()
                        ));
                    }
                    out.extend_from_slice(&encoded);
                }
                ChunkKind::Other => {
                    failures.push(format!(
                        "{}: non-HL7 text at {}",
                        path.display(),
                        chunk.offset
                    ));
                    out.extend_from_slice(chunk.bytes);
                }
                _ => {
                    // Batch envelope segments (FHS, BHS, BTS, FTS).
                    envelopes += 1;
                    let seg = chunk.parse();
                    for d in seg
                        .diagnostics()
                        .iter()
                        .filter(|d| d.severity() == Severity::Error)
                    {
                        failures.push(format!("{}: {d}", path.display()));
                    }
                    out.extend_from_slice(chunk.bytes);
                }
            }
        }
        assert_eq!(
            out,
            bytes,
            "{}: chunks do not reproduce the file",
            path.display()
        );
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    // 270 non-empty files of one message each; one of them is a batch file (FHS and BHS, no trailers).
    assert_eq!((messages, envelopes), (270, 2));
}

#[test]
fn malformed_samples_of_the_corpus_give_warnings_not_errors() {
    let data = crate::support::hl7_data().join("trusted-intermediary/Test/Message");
    for (file, kind) in [
        (
            "msh_present_but_missing_msh-2.hl7",
            hl7v2::DiagnosticKind::MissingEncodingCharacters,
        ),
        (
            "msh_present_but_missing_all_fields.hl7",
            hl7v2::DiagnosticKind::MissingEncodingCharacters,
        ),
    ] {
        let bytes = std::fs::read(data.join(file)).unwrap();
        let msg = Message::parse(&bytes);
        assert!(
            msg.diagnostics().iter().any(|d| d.kind == kind),
            "{file}: {:?}",
            msg.diagnostics()
        );
        assert!(!msg.has_errors());
    }
    let empty = std::fs::read(data.join("empty.hl7")).unwrap();
    assert_eq!(hl7v2::messages(&empty).count(), 0);
}
