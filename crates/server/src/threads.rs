//! The HTTP server's threads: one accept loop hands each connection, in turn, to one of N threads that each run
//! a single-threaded tokio runtime, and a connection stays on its thread for its whole life.
//!
//! Why not one multi-threaded runtime: there, a connection's task is woken on whichever worker the I/O driver
//! runs on and idle workers are woken to steal it, so on a few cores a large share of every short request goes to
//! waking threads (futexes and inter-processor interrupts, expensive under virtualisation). Measured on 2 cores
//! with `bench/terminology/cpu.sh`, a SNOMED CT `$lookup` caused 0.3 context switches per request in the server
//! against 0.03 at `/healthz`, and its p99 was 2-3 ms; with a thread per core the p99 fell to ~1 ms. Round robin
//! instead of `SO_REUSEPORT`: the kernel's hash can put most of a handful of keep-alive connections on one thread.
//! Work that takes long (expansions) still leaves the thread through `spawn_blocking`.

use axum::ServiceExt;
use axum::extract::Request;
use axum::response::Response;
use axum::serve::Listener;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};

/// An accepted connection on its way to its thread.
type Handoff = (std::net::TcpStream, SocketAddr);

/// The connections of one thread: what `axum::serve` accepts from there.
struct Inbox {
    rx: mpsc::UnboundedReceiver<Handoff>,
    addr: SocketAddr,
}

impl Listener for Inbox {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        loop {
            match self.rx.recv().await {
                // Registers the socket with this thread's runtime.
                Some((tcp, peer)) => match TcpStream::from_std(tcp) {
                    Ok(tcp) => return (tcp, peer),
                    Err(e) => tracing::warn!(%peer, "cannot take over a connection: {e}"),
                },
                // The accept loop has stopped: shutdown is under way and ends `serve` from the other side.
                None => std::future::pending::<()>().await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.addr)
    }
}

/// Serves `app` on `listener` with `threads` threads until `shutdown` completes, then lets each thread finish
/// the requests in flight.
pub(crate) async fn serve<S>(
    listener: TcpListener,
    app: S,
    threads: usize,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()>
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    let addr = listener.local_addr()?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut inboxes = Vec::new();
    let mut finished = Vec::new();
    for i in 0..threads.max(1) {
        let (tx, rx) = mpsc::unbounded_channel();
        let (done_tx, done_rx) = oneshot::channel();
        let app = app.clone();
        let mut stop = stop_rx.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        std::thread::Builder::new()
            .name(format!("http-{i}"))
            .spawn(move || {
                let result = runtime.block_on(
                    axum::serve(
                        Inbox { rx, addr },
                        ServiceExt::<Request>::into_make_service(app),
                    )
                    .with_graceful_shutdown(async move {
                        let _ = stop.wait_for(|stop| *stop).await;
                    })
                    .into_future(),
                );
                let _ = done_tx.send(result);
            })?;
        inboxes.push(tx);
        finished.push(done_rx);
    }

    tokio::pin!(shutdown);
    let mut next = 0usize;
    loop {
        let (tcp, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_error(e).await;
                    continue;
                }
            },
        };
        // Answers go out as soon as they are written: with Nagle's algorithm on, an answer can wait for the
        // client's delayed ACK of the previous one.
        let _ = tcp.set_nodelay(true);
        let mut handoff = match tcp.into_std() {
            Ok(tcp) => (tcp, peer),
            Err(e) => {
                tracing::warn!(%peer, "cannot hand over a connection: {e}");
                continue;
            }
        };
        // In turn; a thread that has gone (it would have logged why) is skipped.
        for _ in 0..inboxes.len() {
            let inbox = &inboxes[next % inboxes.len()];
            next = next.wrapping_add(1);
            match inbox.send(handoff) {
                Ok(()) => break,
                Err(mpsc::error::SendError(back)) => handoff = back,
            }
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    for done in finished {
        if let Ok(result) = done.await {
            result?;
        }
    }
    Ok(())
}

/// What `axum::serve` does on a failed accept: a connection that went away before it was accepted is nothing; any
/// other error (such as running out of file descriptors) is logged and retried after a pause, not a busy loop.
async fn accept_error(e: io::Error) {
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!("accept error: {e}");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// One keep-alive request on `tcp`: the body of the answer.
    async fn get_body(tcp: &mut TcpStream, path: &str) -> String {
        tcp.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 1024];
        loop {
            let n = tcp.read(&mut chunk).await.unwrap();
            assert!(n > 0, "connection closed early");
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let length: usize = text[..end]
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length: ")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .expect("content-length");
                if buf.len() >= end + 4 + length {
                    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
                    return text[end + 4..end + 4 + length].to_string();
                }
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connections_are_dealt_to_the_threads_in_turn_and_shutdown_finishes_them() {
        // The handler says which thread answered it.
        let app = Router::new().route(
            "/thread",
            get(|| async { std::thread::current().name().unwrap_or("?").to_string() }),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, app, 3, async move {
            let _ = stop_rx.await;
        }));

        let mut connections = Vec::new();
        let mut seen = Vec::new();
        for _ in 0..6 {
            let mut tcp = TcpStream::connect(addr).await.unwrap();
            seen.push(get_body(&mut tcp, "/thread").await);
            connections.push(tcp);
        }
        assert_eq!(
            seen,
            ["http-0", "http-1", "http-2", "http-0", "http-1", "http-2"]
        );
        // A connection keeps its thread for every later request.
        for (tcp, first) in connections.iter_mut().zip(&seen) {
            for _ in 0..3 {
                assert_eq!(&get_body(tcp, "/thread").await, first);
            }
        }

        stop_tx.send(()).unwrap();
        let result = tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .expect("the server stops after the signal")
            .unwrap();
        assert!(result.is_ok(), "{result:?}");
        assert!(
            TcpStream::connect(addr).await.is_err(),
            "the listener is closed"
        );
    }
}
