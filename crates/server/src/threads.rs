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
//!
//! Open connections are capped ([`MAX_CONNECTIONS`]): past the cap a new connection is closed as soon as it is
//! accepted, so that a client opening sockets without end runs the server out of neither file descriptors nor
//! memory, and the connections already open keep being served.

use axum::ServiceExt;
use axum::extract::Request;
use axum::response::Response;
use axum::serve::{Listener, ListenerExt};
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};

/// How many HTTP connections may be open at once (well under the usual 1,048,576-descriptor limit, and each
/// connection holds buffers).
pub(crate) const MAX_CONNECTIONS: usize = 10_000;

/// An accepted connection on its way to its thread.
type Handoff = (std::net::TcpStream, SocketAddr, Slot);

/// One place among the open connections, given back when the connection is dropped.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A connection that holds its [`Slot`] for as long as it lives.
pub(crate) struct Counted {
    tcp: TcpStream,
    _slot: Slot,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }
}

/// The connections of one thread: what `axum::serve` accepts from there.
struct Inbox {
    rx: mpsc::UnboundedReceiver<Handoff>,
    addr: SocketAddr,
}

impl Listener for Inbox {
    type Io = Counted;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Counted, SocketAddr) {
        loop {
            match self.rx.recv().await {
                // Registers the socket with this thread's runtime.
                Some((tcp, peer, slot)) => match TcpStream::from_std(tcp) {
                    Ok(tcp) => return (Counted { tcp, _slot: slot }, peer),
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
    serve_capped(listener, app, threads, MAX_CONNECTIONS, shutdown).await
}

/// [`serve`] with at most `max_connections` open connections.
pub(crate) async fn serve_capped<S>(
    listener: TcpListener,
    app: S,
    threads: usize,
    max_connections: usize,
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
                        // Tapped (doing nothing) because axum gives the peer address as `ConnectInfo` for a
                        // tapped listener of any kind, and for a plain one only if it is a `TcpListener`; the
                        // access control of the message routes needs the peer (see `auth`).
                        Inbox { rx, addr }.tap_io(|_| {}),
                        ServiceExt::<Request>::into_make_service_with_connect_info::<SocketAddr>(
                            app,
                        ),
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
    let open = Arc::new(AtomicUsize::new(0));
    let mut refused = 0u64;
    let mut last_warning: Option<Instant> = None;
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
        if open.load(Ordering::Relaxed) >= max_connections {
            // Closed at once (dropped); one warning a second at most, with the count since the last one.
            drop(tcp);
            refused += 1;
            if last_warning.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                tracing::warn!(
                    max_connections,
                    refused,
                    "HTTP connection limit reached: connections refused"
                );
                last_warning = Some(Instant::now());
                refused = 0;
            }
            continue;
        }
        open.fetch_add(1, Ordering::Relaxed);
        let slot = Slot(open.clone());
        // Answers go out as soon as they are written: with Nagle's algorithm on, an answer can wait for the
        // client's delayed ACK of the previous one.
        let _ = tcp.set_nodelay(true);
        let mut handoff = match tcp.into_std() {
            Ok(tcp) => (tcp, peer, slot),
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
    async fn connections_past_the_cap_are_closed_and_the_open_ones_keep_working() {
        let app = Router::new().route("/ok", get(|| async { "ok" }));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let server = tokio::spawn(serve_capped(listener, app, 2, 2, async move {
            let _ = stop_rx.await;
        }));
        let mut a = TcpStream::connect(addr).await.unwrap();
        let mut b = TcpStream::connect(addr).await.unwrap();
        assert_eq!(get_body(&mut a, "/ok").await, "ok");
        assert_eq!(get_body(&mut b, "/ok").await, "ok");
        // The third is accepted by the kernel, then closed without an answer.
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(b"GET /ok HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 64];
        let n = tokio::time::timeout(Duration::from_secs(5), c.read(&mut buf))
            .await
            .expect("closed, not left hanging")
            .unwrap_or(0);
        assert_eq!(n, 0, "no answer past the cap");
        assert_eq!(get_body(&mut a, "/ok").await, "ok");
        // A closed connection gives its place back.
        drop(b);
        let mut d = None;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let mut t = TcpStream::connect(addr).await.unwrap();
            t.write_all(b"GET /ok HTTP/1.1\r\nHost: t\r\n\r\n")
                .await
                .unwrap();
            let n = tokio::time::timeout(Duration::from_secs(5), t.read(&mut buf))
                .await
                .unwrap()
                .unwrap_or(0);
            if n > 0 {
                d = Some(n);
                break;
            }
        }
        assert!(
            d.is_some(),
            "a place freed by a closed connection is given to a new one"
        );
        stop_tx.send(()).unwrap();
        let _ = tokio::time::timeout(Duration::from_secs(10), server).await;
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
