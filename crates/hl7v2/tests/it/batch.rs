//! Batch files and files of many messages.

use hl7v2::{BatchHeader, ChunkKind, Message};

#[test]
fn batch_file_round_trip() {
    let m1 = b"MSH|^~\\&|A||||1||ADT^A01|1|P|2.5\rPID|1\r";
    let m2 = b"MSH|^~\\&|A||||1||ADT^A01|2|P|2.5\rPID|2";
    let header = BatchHeader {
        sending_application: "Lab|1".into(),
        control_id: "F7".into(),
        ..Default::default()
    };
    let file = hl7v2::write_batch([&m1[..], &m2[..]], &header, true);
    assert!(file.starts_with(b"FHS|^~\\&|Lab\\F\\1||||||||F7\rBHS|"));
    let chunks: Vec<_> = hl7v2::split(&file).collect();
    let kinds: Vec<_> = chunks.iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        [
            ChunkKind::FileHeader,
            ChunkKind::BatchHeader,
            ChunkKind::Message,
            ChunkKind::Message,
            ChunkKind::BatchTrailer,
            ChunkKind::FileTrailer
        ]
    );
    assert_eq!(
        chunks
            .iter()
            .flat_map(|c| c.bytes.iter().copied())
            .collect::<Vec<_>>(),
        file
    );
    let fhs = chunks[0].parse();
    assert_eq!(fhs.get("FHS-3").as_deref(), Some("Lab|1"));
    assert_eq!(fhs.get("FHS-11").as_deref(), Some("F7"));
    assert_eq!(chunks[4].trailer_count(), Some(2));
    assert_eq!(chunks[5].trailer_count(), Some(1));
    let ids: Vec<_> = hl7v2::messages(&file)
        .map(|m| m.get("PID-1").unwrap().into_owned())
        .collect();
    assert_eq!(ids, ["1", "2"]);
}

#[test]
fn many_messages_with_mixed_terminators_and_junk() {
    let file = b"\xEF\xBB\xBFMSH|^~\\&|A||||1||ADT^A01|1|P|2.5\r\nPID|1\r\n\r\nMSH|^~\\&|A||||1||ADT^A01|2|P|2.5\nPID|2\n";
    let chunks: Vec<_> = hl7v2::split(file).collect();
    assert_eq!(chunks.len(), 2);
    assert_eq!(chunks[1].offset, 46);
    let first = chunks[0].parse();
    assert!(first.diagnostics().is_empty());
    assert_eq!(first.segment_count(), 2);
    let junk = b"hello\nMSH|^~\\&|A||||1||ADT^A01|1|P|2.5\r";
    let kinds: Vec<_> = hl7v2::split(junk).map(|c| c.kind).collect();
    assert_eq!(kinds, [ChunkKind::Other, ChunkKind::Message]);
}

#[test]
fn a_second_msh_in_one_buffer_numbers_fields_like_the_first() {
    let two = b"MSH|^~\\&|A||||1||ADT^A01|1|P|2.5\rMSH|^~\\&|B||||1||ADT^A01|2|P|2.5\r";
    let m = Message::parse(two);
    assert_eq!(m.get("MSH[2]-1").as_deref(), Some("|"));
    assert_eq!(m.get("MSH[2]-3").as_deref(), Some("B"));
    assert_eq!(hl7v2::MessageBuf::from(&m).encode(), two);
}
