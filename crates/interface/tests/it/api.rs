use crate::{Harness, sample, with_control_id};
use interface::{Query, Status};

#[tokio::test]
async fn list_filters_pages_and_counts() {
    let h = Harness::start("").await;
    let mut c = h.client().await;
    let before = interface::Query::default();
    let _ = before;
    for i in 0..7 {
        c.send(&with_control_id(
            &sample("ADT-A01-01.hl7"),
            &format!("L-A-{i}"),
        ))
        .await
        .unwrap();
    }
    for i in 0..5 {
        c.send(&with_control_id(
            &sample("ORU-R01-01.hl7"),
            &format!("L-O-{i}"),
        ))
        .await
        .unwrap();
    }
    let all = h
        .engine
        .list(&Query {
            limit: 100,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(all.total, 12);
    assert_eq!(all.items[0].control_id, "L-O-4", "newest first");
    let page = h
        .engine
        .list(&Query {
            message_type: Some("ADT".into()),
            offset: 5,
            limit: 5,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(page.total, 7);
    assert_eq!(page.items.len(), 2);
    assert_eq!(page.items[1].control_id, "L-A-0");
    let oru = h
        .engine
        .list(&Query {
            trigger: Some("R01".into()),
            status: Some(Status::Stored),
            limit: 1,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(oru.total, 5);
    let sender = all.items[0].sender.clone();
    let by_sender = h
        .engine
        .list(&Query {
            sender: Some(sender),
            limit: 0,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(by_sender.total, 5);
    let t = all.items[0].received_ms;
    let later = h
        .engine
        .list(&Query {
            since_ms: Some(t + 1),
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(later.total, 0);
    assert!(h.engine.get(interface::MessageId(9999)).unwrap().is_none());
    assert!(h.engine.replay(interface::MessageId(9999)).await.is_err());
}

#[tokio::test]
async fn a_reopened_store_keeps_every_message_and_continues_ids() {
    let h = Harness::start("").await;
    let mut c = h.client().await;
    c.send(&with_control_id(&sample("ADT-A01-01.hl7"), "KEEP-1"))
        .await
        .unwrap();
    let first = h.id_of("KEEP-1");
    drop(c);
    let dir = h.stop().await;
    let h = Harness::start_in(dir, "").await;
    let mut c = h.client().await;
    c.send(&with_control_id(&sample("ADT-A01-01.hl7"), "KEEP-2"))
        .await
        .unwrap();
    assert!(h.id_of("KEEP-2") > first);
    assert_eq!(
        h.engine
            .list(&Query {
                limit: 10,
                ..Default::default()
            })
            .unwrap()
            .total,
        2
    );
}

/// Every filter combination answered from the indexes equals a filter over all messages by hand (the reference),
/// also after deliveries moved messages from `pending` to `delivered` or `dead` and with several pages.
#[tokio::test]
async fn indexed_queries_equal_a_full_scan() {
    let (addr, down, _j) = crate::downstream("127.0.0.1:0").await;
    // Every ADT goes to a receiver whose ACKs name another message: dead after 2 attempts.
    down.wrong_msa2
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let h = Harness::start(&format!(
        "[delivery]\nmax_attempts = 2\ninitial_backoff_ms = 5\n\
         [[route]]\nname = \"adt\"\ntypes = [\"ADT\"]\nmllp = \"{addr}\"\n\
         [[route]]\nname = \"files\"\ntriggers = [\"R01\"]\ndir = \"{}\"\n",
        tempfile::tempdir().unwrap().keep().display()
    ))
    .await;
    let mut c = h.client().await;
    let files = [
        "ADT-A01-01.hl7",
        "ORU-R01-01.hl7",
        "ADT-A08-01.hl7",
        "SIU-S12-01.hl7",
    ];
    for i in 0..24 {
        let raw = with_control_id(&sample(files[i % files.len()]), &format!("IX-{}", i % 10));
        c.send(&raw).await.unwrap();
    }
    c.send(b"not a message").await.unwrap();
    let everything = |h: &Harness| {
        h.engine
            .list(&Query {
                limit: 1000,
                ..Default::default()
            })
            .unwrap()
    };
    // Wait for the deliveries to settle.
    for _ in 0..500 {
        if everything(&h)
            .items
            .iter()
            .all(|m| m.status != Status::Pending)
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let all = everything(&h).items;
    assert_eq!(all.len(), 25);
    let statuses: std::collections::BTreeSet<_> = all.iter().map(|m| m.status.as_str()).collect();
    assert!(
        statuses.len() >= 4,
        "too few statuses to test: {statuses:?}"
    );
    let t_mid = all[all.len() / 2].received_ms;
    let mut queries = Vec::new();
    for status in [
        None,
        Some(Status::Dead),
        Some(Status::Delivered),
        Some(Status::Duplicate),
        Some(Status::Rejected),
    ] {
        for message_type in [None, Some("ADT"), Some("SIU")] {
            for control_id in [None, Some("IX-3")] {
                for since in [None, Some(t_mid)] {
                    queries.push(Query {
                        status,
                        message_type: message_type.map(Into::into),
                        control_id: control_id.map(Into::into),
                        since_ms: since,
                        ..Default::default()
                    });
                }
            }
        }
    }
    for trigger in ["R01", "A01", "S12", "none"] {
        for message_type in [None, Some("ADT")] {
            for since in [None, Some(t_mid)] {
                queries.push(Query {
                    trigger: Some(trigger.into()),
                    message_type: message_type.map(Into::into),
                    since_ms: since,
                    ..Default::default()
                });
            }
        }
    }
    queries.push(Query {
        sender: Some(all[0].sender.clone()),
        ..Default::default()
    });
    for q in queries {
        let want: Vec<_> = all
            .iter()
            .filter(|m| {
                q.status.is_none_or(|s| m.status == s)
                    && q.message_type
                        .as_deref()
                        .is_none_or(|t| m.message_type == t)
                    && q.trigger.as_deref().is_none_or(|t| m.trigger == t)
                    && q.control_id.as_deref().is_none_or(|c| m.control_id == c)
                    && q.sender.as_deref().is_none_or(|s| m.sender == s)
                    && q.since_ms.is_none_or(|t| m.received_ms >= t)
            })
            .map(|m| m.id)
            .collect();
        for (offset, limit) in [(0, 1000), (1, 2), (0, 0)] {
            let got = h
                .engine
                .list(&Query {
                    offset,
                    limit,
                    ..q.clone()
                })
                .unwrap();
            assert_eq!(got.total, want.len(), "total of {q:?}");
            let ids: Vec<_> = got.items.iter().map(|m| m.id).collect();
            let expected: Vec<_> = want.iter().copied().skip(offset).take(limit).collect();
            assert_eq!(ids, expected, "page {offset}+{limit} of {q:?}");
        }
    }
}
