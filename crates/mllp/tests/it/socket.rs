use crate::start;
use mllp::{Client, ClientConfig, FrameConfig, JunkPolicy, ListenerConfig};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    mllp::encode_frame(payload, &mut out);
    out
}

/// Reads `n` answer frames from a raw socket.
async fn read_frames(tcp: &mut TcpStream, n: usize) -> Vec<Vec<u8>> {
    let mut dec = mllp::FrameDecoder::new(1 << 20);
    let mut out = Vec::new();
    while out.len() < n {
        if let Some(ev) = dec.decode() {
            match ev {
                mllp::Event::Frame(b) => out.push(b.to_vec()),
                other => panic!("unexpected {other:?}"),
            }
            continue;
        }
        let read = tcp.read_buf(dec.buffer_mut());
        let got = tokio::time::timeout(Duration::from_secs(10), read)
            .await
            .expect("answer in time")
            .unwrap();
        assert!(got > 0, "listener closed after {} answers", out.len());
    }
    out
}

#[tokio::test]
async fn pipelined_frames_in_one_write_are_answered_in_order() {
    let (addr, echo) = start(ListenerConfig::default()).await;
    let mut tcp = TcpStream::connect(&addr).await.unwrap();
    let mut all = Vec::new();
    for i in 0..50 {
        all.extend(frame(format!("MSH|{i}").as_bytes()));
    }
    tcp.write_all(&all).await.unwrap();
    let answers = read_frames(&mut tcp, 50).await;
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a, format!("ACK:MSH|{i}").as_bytes());
    }
    assert_eq!(echo.messages.load(Ordering::SeqCst), 50);
}

#[tokio::test]
async fn frame_split_across_many_writes() {
    let (addr, _) = start(ListenerConfig::default()).await;
    let mut tcp = TcpStream::connect(&addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let payload = "MSH|^~\\&|SPLIT|".repeat(40);
    let bytes = frame(payload.as_bytes());
    for chunk in bytes.chunks(7) {
        tcp.write_all(chunk).await.unwrap();
        tcp.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let answers = read_frames(&mut tcp, 1).await;
    assert_eq!(
        answers[0],
        [b"ACK:".as_slice(), payload.as_bytes()].concat()
    );
}

#[tokio::test]
async fn oversized_frame_is_rejected_and_the_next_frame_still_served() {
    let cfg = ListenerConfig {
        frame: FrameConfig {
            max_frame: 1000,
            ..Default::default()
        },
        ..Default::default()
    };
    let (addr, echo) = start(cfg).await;
    let mut tcp = TcpStream::connect(&addr).await.unwrap();
    let big = format!("MSH|^~\\&|BIG|{}", "X".repeat(100_000));
    let mut bytes = frame(big.as_bytes());
    bytes.extend(frame(b"MSH|small"));
    for chunk in bytes.chunks(8192) {
        tcp.write_all(chunk).await.unwrap();
    }
    let answers = read_frames(&mut tcp, 2).await;
    assert_eq!(
        answers[0],
        format!("REJECT:{}:MSH|^~\\&|BIG|XXX", big.len()).as_bytes()
    );
    assert_eq!(answers[1], b"ACK:MSH|small");
    assert_eq!(echo.oversized.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn garbage_between_frames_is_skipped() {
    let (addr, _) = start(ListenerConfig::default()).await;
    let mut tcp = TcpStream::connect(&addr).await.unwrap();
    let mut bytes = b"GET / HTTP/1.1\r\n".to_vec();
    bytes.extend(frame(b"MSH|one"));
    bytes.extend(b"\r\n\x00\xffnoise");
    bytes.extend(frame(b"MSH|two"));
    tcp.write_all(&bytes).await.unwrap();
    let answers = read_frames(&mut tcp, 2).await;
    assert_eq!(
        answers,
        vec![b"ACK:MSH|one".to_vec(), b"ACK:MSH|two".to_vec()]
    );
}

#[tokio::test]
async fn garbage_closes_the_connection_under_the_reject_policy() {
    let cfg = ListenerConfig {
        frame: FrameConfig {
            junk: JunkPolicy::Reject,
            ..Default::default()
        },
        ..Default::default()
    };
    let (addr, echo) = start(cfg).await;
    let mut tcp = TcpStream::connect(&addr).await.unwrap();
    let mut bytes = b"junk".to_vec();
    bytes.extend(frame(b"MSH|one"));
    tcp.write_all(&bytes).await.unwrap();
    let mut buf = Vec::new();
    let n = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut buf))
        .await
        .expect("closed in time")
        .unwrap_or(0);
    assert_eq!(n, 0, "no answer expected, got {buf:?}");
    assert_eq!(echo.messages.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_one_byte_per_interval_sender_does_not_slow_the_others() {
    let cfg = ListenerConfig {
        frame: FrameConfig {
            // Shorter than the whole slow frame takes, longer than the gap between its bytes.
            in_frame_timeout: Some(Duration::from_millis(1500)),
            ..Default::default()
        },
        ..Default::default()
    };
    let (addr, _) = start(cfg).await;
    let slow_addr = addr.clone();
    let slow = tokio::spawn(async move {
        let mut tcp = TcpStream::connect(&slow_addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        for b in frame(b"MSH|slow") {
            tcp.write_all(&[b]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        read_frames(&mut tcp, 1).await
    });
    // Meanwhile a fast client gets through hundreds of round trips.
    let started = Instant::now();
    let mut client = Client::connect(&addr, ClientConfig::default())
        .await
        .unwrap();
    let mut done = 0;
    while started.elapsed() < Duration::from_secs(2) {
        let ack = client.send(b"MSH|fast").await.unwrap();
        assert_eq!(&ack[..], b"ACK:MSH|fast");
        done += 1;
    }
    assert!(done > 200, "fast client served only {done} messages in 2 s");
    let slow_answer = slow.await.unwrap();
    assert_eq!(slow_answer[0], b"ACK:MSH|slow");
}

#[tokio::test]
async fn abrupt_disconnect_mid_frame_leaves_the_listener_serving() {
    let (addr, echo) = start(ListenerConfig::default()).await;
    {
        let mut tcp = TcpStream::connect(&addr).await.unwrap();
        tcp.write_all(b"\x0bMSH|half a message").await.unwrap();
        // Reset instead of a clean close.
        #[allow(deprecated)]
        tcp.set_linger(Some(Duration::ZERO)).unwrap();
    }
    let mut client = Client::connect(&addr, ClientConfig::default())
        .await
        .unwrap();
    assert_eq!(
        &client.send(b"MSH|after").await.unwrap()[..],
        b"ACK:MSH|after"
    );
    assert_eq!(
        echo.messages.load(Ordering::SeqCst),
        1,
        "the half message must not be handled"
    );
}

#[tokio::test]
async fn idle_timeout_closes_a_silent_connection() {
    let cfg = ListenerConfig {
        frame: FrameConfig {
            idle_timeout: Some(Duration::from_millis(200)),
            ..Default::default()
        },
        ..Default::default()
    };
    let (addr, _) = start(cfg).await;
    let mut tcp = TcpStream::connect(&addr).await.unwrap();
    let mut buf = [0u8; 8];
    let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
        .await
        .expect("closed in time");
    assert!(matches!(n, Ok(0) | Err(_)));
}

#[tokio::test]
async fn release_2_commit_acknowledgements_precede_the_reply() {
    let cfg = ListenerConfig {
        commit_acks: true,
        ..Default::default()
    };
    let (addr, _) = start(cfg).await;
    let mut client = Client::connect(&addr, ClientConfig::default())
        .await
        .unwrap();
    client.write(b"MSH|r2").await.unwrap();
    assert_eq!(&client.read_reply().await.unwrap()[..], mllp::COMMIT_ACK);
    assert_eq!(&client.read_reply().await.unwrap()[..], b"ACK:MSH|r2");
}

#[tokio::test]
async fn graceful_shutdown_finishes_and_stops_accepting() {
    let listener = mllp::Listener::bind("127.0.0.1:0".parse().unwrap(), ListenerConfig::default())
        .await
        .unwrap();
    let addr = listener.local_addr().to_string();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(
        listener.serve(std::sync::Arc::new(crate::Echo::default()), async {
            let _ = rx.await;
        }),
    );
    let mut client = Client::connect(&addr, ClientConfig::default())
        .await
        .unwrap();
    assert_eq!(&client.send(b"MSH|x").await.unwrap()[..], b"ACK:MSH|x");
    tx.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), handle)
        .await
        .expect("stops in time")
        .unwrap();
    assert!(
        TcpStream::connect(&addr).await.is_err(),
        "still accepting after shutdown"
    );
}

/// Sleeps longer for earlier frames (payload = the delay in ms), so that later frames finish first; records the
/// order calls started in and how many ran at once.
#[derive(Default)]
struct Staggered {
    started: std::sync::Mutex<Vec<u64>>,
    running: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
}

impl mllp::Handler for Staggered {
    async fn handle(&self, inbound: mllp::Inbound, _peer: &mllp::Peer) -> mllp::Reply {
        let mllp::Inbound::Message(bytes) = inbound else {
            panic!("unexpected inbound")
        };
        let ms: u64 = std::str::from_utf8(&bytes).unwrap().parse().unwrap();
        self.started.lock().unwrap().push(ms);
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        mllp::Reply {
            payload: Some(bytes),
            committed: true,
        }
    }
}

#[tokio::test]
async fn pipelined_frames_are_handled_concurrently_and_answered_in_frame_order() {
    let cfg = ListenerConfig {
        max_in_flight: 4,
        ..Default::default()
    };
    let listener = mllp::Listener::bind("127.0.0.1:0".parse().unwrap(), cfg)
        .await
        .unwrap();
    let addr = listener.local_addr();
    let handler = std::sync::Arc::new(Staggered::default());
    tokio::spawn(listener.serve(handler.clone(), std::future::pending()));
    // 12 frames sleeping 120, 110, ..., 10 ms: 780 ms one after the other.
    let delays: Vec<u64> = (1..=12).rev().map(|i| i * 10).collect();
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let mut all = Vec::new();
    for d in &delays {
        all.extend(frame(d.to_string().as_bytes()));
    }
    let began = std::time::Instant::now();
    tcp.write_all(&all).await.unwrap();
    let answers = read_frames(&mut tcp, delays.len()).await;
    let took = began.elapsed();
    let expected: Vec<Vec<u8>> = delays.iter().map(|d| d.to_string().into_bytes()).collect();
    assert_eq!(answers, expected, "answers out of frame order");
    assert_eq!(
        *handler.started.lock().unwrap(),
        delays,
        "calls started out of frame order"
    );
    assert_eq!(
        handler.most.load(Ordering::SeqCst),
        4,
        "max_in_flight not honoured"
    );
    assert!(
        took < Duration::from_millis(600),
        "frames were not handled concurrently: {took:?}"
    );
}
