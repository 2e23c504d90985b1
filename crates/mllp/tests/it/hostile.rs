//! Bounded under hostile load: a slow-drip sender, a connection flood and a stream of junk.

use crate::start;
use mllp::{FrameConfig, ListenerConfig};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    mllp::encode_frame(payload, &mut out);
    out
}

/// Sends one frame and reads one answer frame on a raw socket.
async fn round_trip(tcp: &mut TcpStream, payload: &[u8]) -> Vec<u8> {
    tcp.write_all(&frame(payload)).await.unwrap();
    let mut dec = mllp::FrameDecoder::new(1 << 20);
    loop {
        if let Some(mllp::Event::Frame(b)) = dec.decode() {
            return b.to_vec();
        }
        let got = tokio::time::timeout(Duration::from_secs(10), tcp.read_buf(dec.buffer_mut()))
            .await
            .expect("answer in time")
            .unwrap();
        assert!(got > 0, "listener closed the connection");
    }
}

/// Waits until the listener closes `tcp` (end of stream or reset); panics after `limit`.
async fn closed_within(tcp: &mut TcpStream, limit: Duration) {
    let mut buf = [0u8; 256];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, tcp.read(&mut buf)).await {
            Err(_) => panic!("connection still open after {limit:?}"),
            Ok(Ok(0)) | Ok(Err(_)) => return,
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test]
async fn a_slow_drip_sender_is_disconnected_at_the_frame_deadline() {
    let cfg = ListenerConfig {
        frame: FrameConfig {
            // Each byte arrives well within the gap timeout: only the whole-frame deadline can end this.
            in_frame_timeout: Some(Duration::from_secs(5)),
            ..Default::default()
        },
        frame_deadline: Some(Duration::from_millis(300)),
        ..Default::default()
    };
    let (addr, echo) = start(cfg).await;
    let tcp = TcpStream::connect(&addr).await.unwrap();
    let (mut rd, mut wr) = tcp.into_split();
    let drip = tokio::spawn(async move {
        let _ = wr.write_all(b"\x0bMSH|").await;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if wr.write_all(b"x").await.is_err() {
                return;
            }
        }
    });
    let started = Instant::now();
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(3), rd.read(&mut buf))
        .await
        .expect("the dripping connection is closed well before its drip ends")
        .unwrap_or(0);
    assert_eq!(n, 0, "no answer expected, got {:?}", &buf[..n]);
    assert!(started.elapsed() >= Duration::from_millis(250));
    drip.abort();
    assert_eq!(echo.messages.load(std::sync::atomic::Ordering::SeqCst), 0);
    // A frame that arrives in pieces within the deadline is served, and so is the next frame on the connection.
    let mut tcp = TcpStream::connect(&addr).await.unwrap();
    let whole = frame(b"MSH|slow");
    tcp.write_all(&whole[..4]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    tcp.write_all(&whole[4..]).await.unwrap();
    let mut dec = mllp::FrameDecoder::new(1 << 20);
    let answer = loop {
        if let Some(mllp::Event::Frame(b)) = dec.decode() {
            break b.to_vec();
        }
        let got = tokio::time::timeout(Duration::from_secs(5), tcp.read_buf(dec.buffer_mut()))
            .await
            .unwrap()
            .unwrap();
        assert!(got > 0);
    };
    assert_eq!(answer, b"ACK:MSH|slow");
    // The deadline restarts with each frame: the connection outlives several deadlines.
    for i in 0..3 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let payload = format!("MSH|{i}");
        assert_eq!(
            round_trip(&mut tcp, payload.as_bytes()).await,
            format!("ACK:{payload}").into_bytes()
        );
    }
}

#[tokio::test]
async fn connections_beyond_the_cap_are_closed_while_open_ones_keep_working() {
    let cfg = ListenerConfig {
        max_connections: 2,
        ..Default::default()
    };
    let (addr, _) = start(cfg).await;
    let mut first = TcpStream::connect(&addr).await.unwrap();
    let mut second = TcpStream::connect(&addr).await.unwrap();
    assert_eq!(round_trip(&mut first, b"MSH|1").await, b"ACK:MSH|1");
    assert_eq!(round_trip(&mut second, b"MSH|2").await, b"ACK:MSH|2");
    for _ in 0..3 {
        let mut extra = TcpStream::connect(&addr).await.unwrap();
        let _ = extra.write_all(&frame(b"MSH|extra")).await;
        closed_within(&mut extra, Duration::from_secs(5)).await;
    }
    assert_eq!(round_trip(&mut first, b"MSH|1b").await, b"ACK:MSH|1b");
    assert_eq!(round_trip(&mut second, b"MSH|2b").await, b"ACK:MSH|2b");
    // A closed connection frees its place.
    drop(second);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut again = TcpStream::connect(&addr).await.unwrap();
        if again.write_all(&frame(b"MSH|3")).await.is_ok() {
            let mut dec = mllp::FrameDecoder::new(1 << 20);
            let got =
                tokio::time::timeout(Duration::from_secs(5), again.read_buf(dec.buffer_mut()))
                    .await
                    .unwrap()
                    .unwrap_or(0);
            if got > 0 {
                assert_eq!(
                    dec.decode(),
                    Some(mllp::Event::Frame(b"ACK:MSH|3"[..].into()))
                );
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the freed place was never reused"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Collects formatted log lines.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// The numbers after `key=` in the lines that mention `what`.
fn field_values(text: &str, what: &str, key: &str) -> Vec<usize> {
    text.lines()
        .filter(|l| l.contains(what))
        .map(|l| {
            let at = l.find(&format!("{key}=")).expect("field in the line") + key.len() + 1;
            l[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect()
}

// A current-thread runtime: the listener's tasks run on this thread, under the thread's default subscriber.
#[tokio::test(flavor = "current_thread")]
async fn a_megabyte_of_junk_is_logged_once_with_a_count() {
    let logs = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(logs.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let (addr, _) = start(ListenerConfig::default()).await;
    let mut tcp = TcpStream::connect(&addr).await.unwrap();
    let junk = vec![b'J'; 1 << 20];
    for chunk in junk.chunks(4096) {
        tcp.write_all(chunk).await.unwrap();
        tokio::task::yield_now().await;
    }
    assert_eq!(round_trip(&mut tcp, b"MSH|after").await, b"ACK:MSH|after");
    drop(tcp);
    // Let the connection task see the end of stream and log its summary.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
        let bytes = field_values(&text, "outside an MLLP frame", "bytes");
        if bytes.iter().sum::<usize>() == 1 << 20 {
            assert!(bytes.len() <= 2, "{} warnings:\n{text}", bytes.len());
            let chunks = field_values(&text, "outside an MLLP frame", "chunks");
            assert_eq!(chunks[0], 1);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "junk not fully reported:\n{text}"
        );
    }
}
