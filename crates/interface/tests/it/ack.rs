use crate::{Harness, msa, sample, with_control_id};
use interface::Status;

#[tokio::test]
async fn original_mode_ack_names_the_message_and_follows_durable_storage() {
    let h = Harness::start("").await;
    let mut c = h.client().await;
    let raw = sample("ADT-A01-01.hl7");
    let ack = c.send(&raw).await.unwrap();
    let (code, control) = msa(&ack);
    assert_eq!(code, "AA");
    let expected = hl7v2::Message::parse(&raw)
        .get("MSH-10")
        .unwrap()
        .into_owned();
    assert_eq!(control, expected);
    // Acknowledged means stored, byte for byte.
    let stored = h.engine.get(h.id_of(&expected)).unwrap().unwrap();
    assert_eq!(stored.raw, raw);
    assert_eq!(stored.summary.message_type, "ADT");
    assert_eq!(stored.summary.trigger, "A01");
    assert_eq!(stored.summary.status, Status::Stored);
}

#[tokio::test]
async fn enhanced_mode_answers_with_commit_codes() {
    let h = Harness::start("").await;
    let mut c = h.client().await;
    let mut buf = crate::edit(&sample("ORU-R01-01.hl7"));
    buf.set("MSH-10", "ENH-1").unwrap();
    buf.set("MSH-15", "AL").unwrap();
    buf.set("MSH-16", "NE").unwrap();
    let ack = c.send(&buf.encode()).await.unwrap();
    assert_eq!(msa(&ack), ("CA".into(), "ENH-1".into()));

    // MSH-15 = ER: no accept acknowledgement for a success.
    let mut buf = crate::edit(&sample("ORU-R01-01.hl7"));
    buf.set("MSH-10", "ENH-2").unwrap();
    buf.set("MSH-15", "ER").unwrap();
    let receipt = h.engine.receive(buf.encode().into(), "test").await;
    assert!(receipt.ack.is_none(), "ER asks for no ACK on success");
    assert!(receipt.committed);

    // A broken message in enhanced mode: CR with an ERR segment.
    let broken = b"MSH|^^\\&|A|B|C|D|20240101||ORU^R01|ENH-3|P|2.5.1|||AL|NE\rPID|1\r".to_vec();
    let ack = c.send(&broken).await.unwrap();
    assert_eq!(msa(&ack), ("CR".into(), "ENH-3".into()));
    assert!(
        hl7v2::Message::parse(&ack)
            .find_segment(b"ERR", 1)
            .is_some()
    );
}

#[tokio::test]
async fn unparseable_input_is_stored_and_rejected_with_err() {
    let h =
        Harness::start("[[route]]\nname = \"all\"\ndir = \"/nonexistent-never-written\"\n").await;
    let mut c = h.client().await;
    for (i, payload) in [
        b"this is not HL7 at all".to_vec(),
        b"MSH|^~~&|A|B|C|D|20240101||ADT^A01|BAD-1|P|2.5\rPID|1\r".to_vec(),
    ]
    .into_iter()
    .enumerate()
    {
        let ack = c.send(&payload).await.unwrap();
        let parsed = hl7v2::Message::parse(&ack);
        assert_eq!(
            parsed.get("MSA-1").as_deref(),
            Some("AR"),
            "payload {i}: {:?}",
            String::from_utf8_lossy(&ack)
        );
        assert!(
            parsed.find_segment(b"ERR", 1).is_some(),
            "payload {i} has no ERR"
        );
        // Stored exactly, marked rejected, never routed.
        let page = h
            .engine
            .list(&interface::Query {
                status: Some(Status::Rejected),
                limit: 10,
                ..Default::default()
            })
            .unwrap();
        assert!(
            page.items
                .iter()
                .any(|m| h.engine.get(m.id).unwrap().unwrap().raw == payload)
        );
    }
    let page = h
        .engine
        .list(&interface::Query {
            status: Some(Status::Rejected),
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(page.total, 2);
    assert!(
        h.engine
            .get(page.items[0].id)
            .unwrap()
            .unwrap()
            .deliveries
            .is_empty()
    );
}

#[tokio::test]
async fn oversized_message_is_rejected_naming_its_control_id() {
    let h = Harness::start("[mllp]\nmax_frame_bytes = 2048\n").await;
    let mut c = h.client().await;
    let raw = with_control_id(&sample("ADT-A01-01.hl7"), "HUGE-1");
    assert!(raw.len() > 2048);
    let ack = c.send(&raw).await.unwrap();
    assert_eq!(msa(&ack), ("AR".into(), "HUGE-1".into()));
    let stored = h.engine.get(h.id_of("HUGE-1")).unwrap().unwrap();
    assert_eq!(stored.summary.status, Status::Rejected);
    assert_eq!(stored.summary.size, raw.len() as u64);
    assert!(
        raw.starts_with(&stored.raw),
        "the stored head is the frame's beginning"
    );
    // The connection resynchronised: the next message is served.
    let small = b"MSH|^~\\&|A|B|C|D|20240101||ADT^A01|SMALL-1|P|2.5\rPID|1\r";
    assert_eq!(
        msa(&c.send(small).await.unwrap()),
        ("AA".into(), "SMALL-1".into())
    );
}

#[tokio::test]
async fn a_message_of_too_many_fields_is_stored_whole_and_rejected_unparsed() {
    let h =
        Harness::start("[[route]]\nname = \"all\"\ndir = \"/nonexistent-never-written\"\n").await;
    let mut c = h.client().await;
    // One segment of more separators than the engine parses: about a megabyte, far below the frame limit.
    let head = with_control_id(&sample("ADT-A01-01.hl7"), "MANY-1");
    let mut raw = head.clone();
    raw.extend_from_slice(b"ZZZ");
    raw.extend(std::iter::repeat_n(b'|', interface::MAX_ELEMENTS));
    raw.push(b'\r');
    assert!(hl7v2::element_count(&raw) > interface::MAX_ELEMENTS);
    let ack = c.send(&raw).await.unwrap();
    assert_eq!(msa(&ack), ("AR".into(), "MANY-1".into()));
    let parsed = hl7v2::Message::parse(&ack);
    let err = String::from_utf8_lossy(&ack).into_owned();
    assert!(parsed.find_segment(b"ERR", 1).is_some(), "{err}");
    assert!(err.contains("fields and segments"), "{err}");
    let stored = h.engine.get(h.id_of("MANY-1")).unwrap().unwrap();
    assert_eq!(stored.summary.status, Status::Rejected);
    assert_eq!(stored.raw, raw, "stored as received, every byte");
    assert!(
        stored.deliveries.is_empty(),
        "a refused message is not routed"
    );
    assert_eq!(stored.summary.message_type, "ADT", "the header was read");

    // As long a message of few elements (an attachment) is parsed and accepted.
    let mut raw = with_control_id(&sample("ADT-A01-01.hl7"), "LONG-1");
    raw.extend_from_slice(b"NTE|1||");
    raw.extend(std::iter::repeat_n(b'A', interface::MAX_ELEMENTS + 10));
    raw.push(b'\r');
    let ack = c.send(&raw).await.unwrap();
    assert_eq!(msa(&ack), ("AA".into(), "LONG-1".into()));
}

#[tokio::test]
async fn ack_on_receipt_and_after_processing() {
    let h = Harness::start("[ack]\ntiming = \"on-receipt\"\n").await;
    let mut c = h.client().await;
    let ack = c
        .send(&with_control_id(&sample("ADT-A01-01.hl7"), "RCPT-1"))
        .await
        .unwrap();
    assert_eq!(msa(&ack), ("AA".into(), "RCPT-1".into()));

    let (addr, down, _j) = crate::downstream("127.0.0.1:0").await;
    down.fail_first
        .store(100, std::sync::atomic::Ordering::SeqCst);
    let cfg = format!(
        "[ack]\ntiming = \"after-processing\"\nprocessing_timeout_ms = 3000\n[delivery]\nmax_attempts = 2\ninitial_backoff_ms = 10\n[[route]]\nname = \"down\"\nmllp = \"{addr}\"\n"
    );
    let h2 = Harness::start(&cfg).await;
    let mut c2 = h2.client().await;
    // The downstream rejects: after processing, the sender learns it (AE).
    let ack = c2
        .send(&with_control_id(&sample("ADT-A01-01.hl7"), "PROC-1"))
        .await
        .unwrap();
    assert_eq!(msa(&ack), ("AE".into(), "PROC-1".into()));
    down.fail_first
        .store(0, std::sync::atomic::Ordering::SeqCst);
    let ack = c2
        .send(&with_control_id(&sample("ADT-A01-01.hl7"), "PROC-2"))
        .await
        .unwrap();
    assert_eq!(msa(&ack), ("AA".into(), "PROC-2".into()));
    assert_eq!(down.received.lock().unwrap().len(), 1);
}
