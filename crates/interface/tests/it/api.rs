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
