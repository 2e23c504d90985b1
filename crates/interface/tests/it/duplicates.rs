use crate::{Harness, msa, sample, with_control_id};
use interface::Status;

#[tokio::test]
async fn duplicates_are_counted_stored_and_not_routed_by_default() {
    let out = tempfile::tempdir().unwrap();
    let h = Harness::start(&format!(
        "[[route]]\nname = \"files\"\ndir = {:?}\n",
        out.path()
    ))
    .await;
    let mut c = h.client().await;
    let raw = with_control_id(&sample("ADT-A04-01.hl7"), "DUP-1");
    for _ in 0..3 {
        // The sender resends because it did not get our ACK: it must get AA every time.
        assert_eq!(
            msa(&c.send(&raw).await.unwrap()),
            ("AA".into(), "DUP-1".into())
        );
    }
    assert_eq!(h.engine.stats().duplicates, 2);
    let page = h
        .engine
        .list(&interface::Query {
            control_id: Some("DUP-1".into()),
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(page.total, 3, "every copy is stored");
    let first = page.items.last().unwrap().id;
    for dup in &page.items[..2] {
        assert_eq!(dup.status, Status::Duplicate);
        assert_eq!(dup.duplicate_of, Some(first));
    }
    h.wait_status(first, Status::Delivered).await;
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        1,
        "delivered once"
    );

    // Another sender with the same control ID is not a duplicate.
    let mut other = crate::edit(&raw);
    other.set("MSH-3", "OTHERAPP").unwrap();
    c.send(&other.encode()).await.unwrap();
    assert_eq!(h.engine.stats().duplicates, 2);
}

#[tokio::test]
async fn duplicates_are_routed_when_kept() {
    let out = tempfile::tempdir().unwrap();
    let h = Harness::start(&format!(
        "[duplicates]\naction = \"keep\"\n[[route]]\nname = \"files\"\ndir = {:?}\n",
        out.path()
    ))
    .await;
    let mut c = h.client().await;
    let raw = with_control_id(&sample("ADT-A04-01.hl7"), "DUP-2");
    c.send(&raw).await.unwrap();
    c.send(&raw).await.unwrap();
    assert_eq!(h.engine.stats().duplicates, 1);
    let page = h
        .engine
        .list(&interface::Query {
            control_id: Some("DUP-2".into()),
            limit: 10,
            ..Default::default()
        })
        .unwrap();
    for m in &page.items {
        h.wait_status(m.id, Status::Delivered).await;
    }
    assert_eq!(page.items[0].duplicate_of, Some(page.items[1].id));
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 2);
}
