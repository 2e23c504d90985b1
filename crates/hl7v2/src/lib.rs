//! HL7 v2 messages: a zero-copy model over borrowed bytes, parser with diagnostics, encoder, escapes, paths, ACKs, batches.
