//! The 271 real messages: no error diagnostics, byte-exact encoding.

use hl7v2::{Message, Severity};

use crate::support::corpus;

#[test]
fn every_real_message_parses_without_errors() {
    let mut failures = Vec::new();
    for path in corpus() {
        let bytes = std::fs::read(&path).unwrap();
        if bytes.is_empty() {
            // trusted-intermediary/Test/Message/empty.hl7: a file of zero messages, not a broken message.
            continue;
        }
        let msg = Message::parse(&bytes);
        for d in msg
            .diagnostics()
            .iter()
            .filter(|d| d.severity() == Severity::Error)
        {
            failures.push(format!("{}: {d}", path.display()));
        }
        assert_eq!(msg.encode(), &bytes[..]);
    }
    assert!(
        failures.is_empty(),
        "{} error(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
