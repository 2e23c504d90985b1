//! Expensive requests run off the HTTP threads: `/healthz` keeps answering at once while as many large ECL
//! expansions as there are HTTP threads run, on a real socket with the real thread-per-core listener.

use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A generated release of `concepts` concepts, imported (once per test binary).
fn store(concepts: usize) -> std::sync::Arc<snomed::Store> {
    static STORE: std::sync::OnceLock<(tempfile::TempDir, std::sync::Arc<snomed::Store>)> =
        std::sync::OnceLock::new();
    STORE
        .get_or_init(|| {
            let tmp = tempfile::tempdir().unwrap();
            let rf2 = tmp.path().join("rf2");
            snomed::synth::generate(&snomed::synth::SynthConfig { concepts, seed: 7 }, &rf2)
                .unwrap();
            let root = tmp.path().join("snomed");
            snomed::import(&[rf2], &root, &snomed::NoProgress).unwrap();
            let store = std::sync::Arc::new(snomed::Store::open(&root).unwrap());
            (tmp, store)
        })
        .1
        .clone()
}

/// One request on its own connection: the status line and the time to the whole answer.
async fn request(port: u16, path: &str) -> (String, Duration) {
    let started = Instant::now();
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    tcp.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut answer = Vec::new();
    tcp.read_to_end(&mut answer).await.unwrap();
    let status = String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    (status, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn healthz_answers_at_once_while_expensive_expansions_run() {
    const HTTP_THREADS: usize = 2;
    let mut state = server::AppState::new(server::ServerInfo::default());
    state.snomed = Some(store(20_000));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let options = server::HttpOptions {
        threads: Some(HTTP_THREADS),
        ..server::HttpOptions::default()
    };
    let served = tokio::spawn(server::serve_with_options(
        ([127, 0, 0, 1], port).into(),
        state,
        options,
        async move {
            let _ = stopped.await;
        },
    ));
    for _ in 0..100 {
        if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Every concept with its synonyms: tens of thousands of rows, a long computation in any build.
    let heavy = "/v1/snomed/expand?ecl=%2A";
    let (status, alone) = request(port, heavy).await;
    assert!(status.contains("200"), "{status}");
    let busy = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut expansions = Vec::new();
    for _ in 0..HTTP_THREADS {
        let busy = busy.clone();
        expansions.push(tokio::spawn(async move {
            let mut done = 0;
            while busy.load(std::sync::atomic::Ordering::Relaxed) {
                let (status, _) = request(port, heavy).await;
                assert!(status.contains("200"), "{status}");
                done += 1;
            }
            done
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut health = Vec::new();
    for _ in 0..20 {
        let (status, took) = request(port, "/healthz").await;
        assert!(status.contains("200"), "{status}");
        health.push(took);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    busy.store(false, std::sync::atomic::Ordering::Relaxed);
    let mut done = 0;
    for e in expansions {
        done += e.await.unwrap();
    }
    health.sort();
    let (median, worst) = (health[health.len() / 2], health[health.len() - 1]);
    assert!(done >= HTTP_THREADS, "the expansions ran ({done})");
    assert!(
        median < Duration::from_millis(50) && worst < alone.max(Duration::from_millis(100)),
        "/healthz took {median:?} (median), {worst:?} (worst) while expansions of {alone:?} each ran"
    );
    let _ = stop.send(());
    served.await.unwrap().unwrap();
}
