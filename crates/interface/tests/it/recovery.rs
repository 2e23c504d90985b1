use crate::{Harness, downstream, msa, sample, with_control_id};
use interface::{MessageId, Query, Status};

/// A crash after the log was synced (the messages were acknowledged) but before the tables' checkpoint: simulated
/// by putting back the database file as it was at an earlier checkpoint. Opening replays the log: the messages,
/// their indexes, the duplicate decision and the pending deliveries are all back, and new ids do not collide.
#[tokio::test]
async fn the_log_is_replayed_after_a_crash_between_log_sync_and_checkpoint() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let cfg = format!(
        "[delivery]\ninitial_backoff_ms = 50\nmax_backoff_ms = 100\nmax_attempts = 1000\n\
         [[route]]\nname = \"down\"\nmllp = \"{addr}\"\n"
    );
    let adt = sample("ADT-A01-01.hl7");
    let oru = sample("ORU-R01-01.hl7");
    let mut sent = Vec::new();

    // First run: five messages, checkpointed at the clean stop.
    let h = Harness::start(&cfg).await;
    let mut c = h.client().await;
    for i in 0..5 {
        let raw = with_control_id(&adt, &format!("REC-{i}"));
        assert_eq!(msa(&c.send(&raw).await.unwrap()).0, "AA");
        sent.push(raw);
    }
    drop(c);
    let dir = h.stop().await;
    let db = dir.path().join("store/messages.redb");
    let checkpoint = std::fs::read(&db).unwrap();

    // Second run: five more and a duplicate, acknowledged, so in the synced log.
    let h = Harness::start_in(dir, &cfg).await;
    let mut c = h.client().await;
    for i in 5..10 {
        let raw = with_control_id(&oru, &format!("REC-{i}"));
        // This sample asks for enhanced-mode acknowledgements.
        assert_eq!(msa(&c.send(&raw).await.unwrap()).0, "CA");
        sent.push(raw);
    }
    let dup = with_control_id(&adt, "REC-1");
    assert_eq!(msa(&c.send(&dup).await.unwrap()).0, "AA");
    drop(c);
    let dir = h.stop().await;

    // The crash: the tables lose everything after the first checkpoint.
    std::fs::write(&db, checkpoint).unwrap();
    let (_, down, _j) = downstream(&addr).await;
    let h = Harness::start_in(dir, &cfg).await;
    let all = h
        .engine
        .list(&Query {
            limit: 100,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(all.total, 11);
    // Indexes rebuilt from the log: by control ID, type and status.
    let id7 = h.id_of("REC-7");
    let m = h.engine.get(id7).unwrap().unwrap();
    assert_eq!(m.raw, sent[7]);
    assert_eq!(m.summary.message_type, "ORU");
    let oru_page = h
        .engine
        .list(&Query {
            message_type: Some("ORU".into()),
            limit: 100,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(oru_page.total, 5);
    let dups = h
        .engine
        .list(&Query {
            status: Some(Status::Duplicate),
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(dups.total, 1);
    let rec1 = h
        .engine
        .list(&Query {
            control_id: Some("REC-1".into()),
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(rec1.total, 2);
    assert_eq!(dups.items[0].id, rec1.items[0].id);
    assert_eq!(dups.items[0].duplicate_of, Some(rec1.items[1].id));
    // The pending deliveries of both runs are made, in order, once each (the duplicate is not routed).
    for id in 1..=10 {
        h.wait_status(MessageId(id), Status::Delivered).await;
    }
    assert_eq!(*down.received.lock().unwrap(), sent);
    // Duplicate detection still knows the replayed messages, and new ids follow the replayed ones.
    let first8 = h.id_of("REC-8");
    let mut c = h.client().await;
    let again = with_control_id(&oru, "REC-8");
    assert_eq!(msa(&c.send(&again).await.unwrap()).0, "CA");
    assert_eq!(h.engine.stats().duplicates, 1);
    let newest = h
        .engine
        .list(&Query {
            limit: 1,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(newest.items[0].id.0, 12);
    assert_eq!(newest.items[0].duplicate_of, Some(first8));
}
