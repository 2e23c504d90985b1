use crate::{Harness, msa, sample, with_control_id};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A sender that pipelines: 64 frames in one write. Every frame is answered, in order, and the frames share
/// commits (group commit across the frames of one connection, not one fsync each).
#[tokio::test]
async fn pipelined_frames_of_one_connection_share_commits_and_are_acked_in_order() {
    let h = Harness::start("").await;
    let adt = sample("ADT-A01-01.hl7");
    let ids: Vec<String> = (0..64).map(|i| format!("PIPE-{i}")).collect();
    let mut wire = Vec::new();
    for id in &ids {
        wire.push(0x0b);
        wire.extend(with_control_id(&adt, id));
        wire.extend([0x1c, 0x0d]);
    }
    let mut tcp = tokio::net::TcpStream::connect(&h.addr).await.unwrap();
    tcp.write_all(&wire).await.unwrap();
    let mut decoder = mllp::FrameDecoder::new(1 << 20);
    let mut acks = Vec::new();
    while acks.len() < ids.len() {
        if let Some(event) = decoder.decode() {
            if let mllp::Event::Frame(payload) = event {
                acks.push(msa(&payload));
            }
            continue;
        }
        let buf = decoder.buffer_mut();
        buf.reserve(4096);
        let n = tcp.read_buf(buf).await.unwrap();
        assert!(n > 0, "closed after {} ACKs", acks.len());
    }
    let expected: Vec<(String, String)> = ids.iter().map(|id| ("AA".into(), id.clone())).collect();
    assert_eq!(acks, expected);
    let s = h.engine.stats();
    assert_eq!(s.store_latency.count, 64);
    assert!(
        s.durable_commits < 64,
        "64 pipelined frames took {} durable commits",
        s.durable_commits
    );
    // Stored in frame order.
    let page = h
        .engine
        .list(&interface::Query {
            limit: 64,
            ..Default::default()
        })
        .unwrap();
    let stored: Vec<String> = page
        .items
        .iter()
        .rev()
        .map(|m| m.control_id.clone())
        .collect();
    assert_eq!(stored, ids);
}
