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
//! memory, and the connections already open keep being served. A few places past the cap are kept for health
//! checks ([`RESERVED_CONNECTIONS`]): a connection given one of them is answered once, must send its request
//! within [`RESERVE_TIMEOUT`] and is then closed, so that a load balancer's probe still gets through while a flood
//! holds every ordinary place, and the flood cannot hold the reserve for long. Each connection is bounded in time too
//! ([`ConnectionLimits`]): its request headers must arrive within a deadline however slowly they drip, a TLS
//! handshake likewise, and a connection on which nothing moves for a while is closed, so that idle or
//! trickling clients cannot hold the places of the others.
//!
//! Each thread serves its connections with hyper directly (rather than through `axum::serve`, which sets no
//! timer and so no header deadline): HTTP/1.1 and HTTP/2, with TLS when the server is given a certificate.

use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::response::Response;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tower::ServiceExt;

/// How many HTTP connections may be open at once (well under the usual 1,048,576-descriptor limit, and each
/// connection holds buffers).
pub(crate) const MAX_CONNECTIONS: usize = 10_000;

/// Places past [`MAX_CONNECTIONS`] for one short request each (a health check while the server is full).
pub(crate) const RESERVED_CONNECTIONS: usize = 64;

/// How long a connection in the reserve may take to send its request, and may then stay idle.
pub(crate) const RESERVE_TIMEOUT: Duration = Duration::from_secs(2);

/// Time bounds of one HTTP connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// A request's header block must be complete this long after the connection opened or, on a kept-alive
    /// connection, after the previous answer (a client sending a byte a second is closed, not waited for).
    pub header_timeout: Duration,
    /// A connection on which no byte moves either way, and no request is being answered, for this long is closed.
    pub idle_timeout: Duration,
    /// A TLS handshake must be done within this long.
    pub handshake_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            handshake_timeout: Duration::from_secs(10),
        }
    }
}

/// The nice value of the blocking pool's threads (the HTTP threads keep 0). Weight 110 against 1024 under Linux's
/// scheduler: when the cores are saturated, an HTTP thread woken by a request runs at once instead of waiting
/// behind expansions, and the expansions still get the cores whenever the HTTP threads are idle.
const BLOCKING_NICE: i32 = 10;

/// Run on each thread a connection thread's runtime starts: in a current-thread runtime those are only the
/// threads of its blocking pool (`spawn_blocking`, [`crate::offload`]), where the expensive work goes. The nice
/// value is per thread on Linux, so this lowers the priority of that thread alone; on failure (a sandbox that
/// forbids it) the thread simply keeps the normal priority.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: setpriority only reads its integer arguments; `who` 0 with PRIO_PROCESS names the calling
        // thread under Linux (the nice value is a per-thread attribute there).
        let failed = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, BLOCKING_NICE) } != 0;
        if failed {
            tracing::debug!("could not lower the priority of a blocking-pool thread");
        }
    }
}

/// A connection for a thread: the socket, its peer, its place, and whether the place is in the reserve.
type Handoff = (std::net::TcpStream, SocketAddr, Slot, bool);

/// One place among the open connections, given back when the connection is dropped.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A connection that holds its [`Slot`] for as long as it lives, and notes when a byte last moved on it.
pub(crate) struct Counted {
    tcp: TcpStream,
    _slot: Slot,
    activity: Arc<Activity>,
}

/// When a byte last moved on a connection, and how many of its requests are being answered.
struct Activity {
    started: Instant,
    /// Milliseconds since `started`.
    last: AtomicU64,
    in_flight: AtomicUsize,
}

impl Activity {
    fn touch(&self) {
        let now = self.started.elapsed().as_millis() as u64;
        self.last.store(now, Ordering::Relaxed);
    }

    fn idle_for(&self) -> Duration {
        let now = self.started.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last.load(Ordering::Relaxed)))
    }
}

/// A request being answered: counted from the call until its answer's head is ready.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn new(activity: &Arc<Activity>) -> InFlight {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(activity.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.tcp).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.tcp).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
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
        let polled = Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }
    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }
}

/// A connection's byte stream: plain, or TLS over it.
enum Stream {
    Plain(Counted),
    Tls(Box<tokio_rustls::server::TlsStream<Counted>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }
    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }
}

/// How a thread serves its connections.
#[derive(Clone)]
pub(crate) struct ServeOptions {
    pub(crate) max_connections: usize,
    pub(crate) reserved_connections: usize,
    pub(crate) limits: ConnectionLimits,
    pub(crate) tls: Option<Arc<rustls::ServerConfig>>,
    /// How long the requests in flight at shutdown may take (`None`: no bound).
    pub(crate) drain_timeout: Option<Duration>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_connections: MAX_CONNECTIONS,
            reserved_connections: RESERVED_CONNECTIONS,
            limits: ConnectionLimits::default(),
            tls: None,
            drain_timeout: None,
        }
    }
}

/// One thread's loop: takes the connections dealt to it until `stop`, then lets them finish what they are
/// answering (each is told to close after its current request) and returns when the last has gone.
async fn serve_thread<S>(
    mut rx: mpsc::UnboundedReceiver<Handoff>,
    app: S,
    options: ServeOptions,
    mut stop: watch::Receiver<bool>,
) where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    // Each connection holds a sender; `recv` ends once every one of them has been dropped.
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    let tls = options.tls.map(tokio_rustls::TlsAcceptor::from);
    loop {
        let handoff = tokio::select! {
            _ = stop.wait_for(|stop| *stop) => break,
            handoff = rx.recv() => handoff,
        };
        let Some((tcp, peer, slot, reserve)) = handoff else {
            // The accept loop has stopped: shutdown is under way.
            let _ = stop.wait_for(|stop| *stop).await;
            break;
        };
        // Registers the socket with this thread's runtime.
        let tcp = match TcpStream::from_std(tcp) {
            Ok(tcp) => tcp,
            Err(e) => {
                tracing::warn!(%peer, "cannot take over a connection: {e}");
                continue;
            }
        };
        let activity = Arc::new(Activity {
            started: Instant::now(),
            last: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
        });
        let io = Counted {
            tcp,
            _slot: slot,
            activity: activity.clone(),
        };
        tokio::spawn(connection(
            io,
            peer,
            activity,
            app.clone(),
            tls.clone(),
            options.limits,
            reserve,
            stop.clone(),
            alive_tx.clone(),
        ));
    }
    drop(alive_tx);
    let _ = alive_rx.recv().await;
}

/// Serves one connection until the client closes it, a limit closes it, or shutdown has let its current
/// request finish.
#[allow(clippy::too_many_arguments)]
async fn connection<S>(
    io: Counted,
    peer: SocketAddr,
    activity: Arc<Activity>,
    app: S,
    tls: Option<tokio_rustls::TlsAcceptor>,
    limits: ConnectionLimits,
    reserve: bool,
    mut stop: watch::Receiver<bool>,
    _alive: mpsc::Sender<()>,
) where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    let limits = if reserve {
        ConnectionLimits {
            header_timeout: limits.header_timeout.min(RESERVE_TIMEOUT),
            idle_timeout: limits.idle_timeout.min(RESERVE_TIMEOUT),
            handshake_timeout: limits.handshake_timeout.min(RESERVE_TIMEOUT),
        }
    } else {
        limits
    };
    let stream = match tls {
        None => Stream::Plain(io),
        Some(acceptor) => {
            match tokio::time::timeout(limits.handshake_timeout, acceptor.accept(io)).await {
                Ok(Ok(tls)) => Stream::Tls(Box::new(tls)),
                Ok(Err(e)) => {
                    tracing::debug!(%peer, "TLS handshake failed: {e}");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake not done in time");
                    return;
                }
            }
        }
    };
    // Each request: the body type axum's router takes, the peer's address as axum's `ConnectInfo` (the access
    // control of the message routes reads it), and counted while it is answered (the idle check spares it).
    let counted = activity.clone();
    let service = tower::service_fn(move |req: hyper::Request<Incoming>| {
        let mut req = req.map(Body::new);
        req.extensions_mut().insert(ConnectInfo(peer));
        let in_flight = InFlight::new(&counted);
        let call = app.clone().oneshot(req);
        async move {
            let answer = call.await;
            drop(in_flight);
            answer
        }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(!reserve);
    builder.http2().timer(TokioTimer::new());
    let conn = builder
        .serve_connection_with_upgrades(TokioIo::new(stream), TowerToHyperService::new(service));
    tokio::pin!(conn);
    let mut check =
        tokio::time::interval((limits.idle_timeout / 4).max(Duration::from_millis(100)));
    let mut stopping = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::trace!(%peer, "connection ended: {e}");
                }
                return;
            }
            _ = stop.wait_for(|stop| *stop), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
            _ = check.tick() => {
                if activity.in_flight.load(Ordering::Relaxed) == 0 && activity.idle_for() >= limits.idle_timeout {
                    tracing::debug!(%peer, "idle connection closed");
                    return;
                }
            }
        }
    }
}

/// Serves `app` on `listener` with `threads` threads until `shutdown` completes, then lets each thread finish
/// the requests in flight.
#[cfg(test)]
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
    serve_with(listener, app, threads, ServeOptions::default(), shutdown).await
}

/// [`serve`] with other options (connection cap, time limits, TLS).
pub(crate) async fn serve_with<S>(
    listener: TcpListener,
    app: S,
    threads: usize,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()>
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    let max_connections = options.max_connections;
    let drain_timeout = options.drain_timeout;
    let reserved = options.reserved_connections;
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut inboxes = Vec::new();
    let mut finished = Vec::new();
    for i in 0..threads.max(1) {
        let (tx, rx) = mpsc::unbounded_channel();
        let (done_tx, done_rx) = oneshot::channel::<()>();
        let app = app.clone();
        let stop = stop_rx.clone();
        let options = options.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .on_thread_start(lower_priority)
            .build()?;
        std::thread::Builder::new()
            .name(format!("http-{i}"))
            .spawn(move || {
                runtime.block_on(serve_thread(rx, app, options, stop));
                let _ = done_tx.send(());
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
        let now_open = open.load(Ordering::Relaxed);
        if now_open >= max_connections + reserved {
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
        let reserve = now_open >= max_connections;
        open.fetch_add(1, Ordering::Relaxed);
        let slot = Slot(open.clone());
        // Answers go out as soon as they are written: with Nagle's algorithm on, an answer can wait for the
        // client's delayed ACK of the previous one.
        let _ = tcp.set_nodelay(true);
        let mut handoff = match tcp.into_std() {
            Ok(tcp) => (tcp, peer, slot, reserve),
            Err(e) => {
                tracing::warn!(%peer, "cannot hand over a connection: {e}");
                continue;
            }
        };
        // In turn; a thread that has gone (it would have logged why) is skipped.
        for _ in 0..inboxes.len() {
            let Some(inbox) = inboxes.get(next % inboxes.len()) else {
                break;
            };
            next = next.wrapping_add(1);
            match inbox.send(handoff) {
                Ok(()) => break,
                Err(mpsc::error::SendError(back)) => handoff = back,
            }
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    let all_done = async {
        for done in finished {
            let _ = done.await;
        }
    };
    match drain_timeout {
        None => all_done.await,
        Some(bound) => {
            if tokio::time::timeout(bound, all_done).await.is_err() {
                // The threads are left to the process's exit: what they still answer is cut off.
                tracing::warn!(
                    drain_timeout_ms = bound.as_millis() as u64,
                    "requests still running at the drain deadline: their connections are dropped"
                );
            }
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
        let options = ServeOptions {
            max_connections: 2,
            reserved_connections: 1,
            ..ServeOptions::default()
        };
        let server = tokio::spawn(serve_with(listener, app, 2, options, async move {
            let _ = stop_rx.await;
        }));
        let mut a = TcpStream::connect(addr).await.unwrap();
        let mut b = TcpStream::connect(addr).await.unwrap();
        assert_eq!(get_body(&mut a, "/ok").await, "ok");
        assert_eq!(get_body(&mut b, "/ok").await, "ok");
        // The full server still answers one request on a place of the reserve (a health check), then closes.
        let mut probe = TcpStream::connect(addr).await.unwrap();
        probe
            .write_all(b"GET /ok HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), probe.read_to_end(&mut answer))
            .await
            .expect("answered and closed")
            .unwrap();
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.starts_with("HTTP/1.1 200") && answer.ends_with("ok"),
            "{answer}"
        );
        // A silent client on the reserve is closed after RESERVE_TIMEOUT.
        let mut silent = TcpStream::connect(addr).await.unwrap();
        let started = Instant::now();
        let mut one = [0u8; 1];
        let n = tokio::time::timeout(Duration::from_secs(10), silent.read(&mut one))
            .await
            .expect("closed in time")
            .unwrap_or(0);
        assert_eq!(n, 0);
        assert!(started.elapsed() < RESERVE_TIMEOUT + Duration::from_secs(2));
        // With the reserve held too, the next is accepted by the kernel, then closed without an answer. (The
        // silent one's place is given back just after its socket closes: a moment for that first.)
        tokio::time::sleep(Duration::from_millis(100)).await;
        let _held = TcpStream::connect(addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
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

    /// Reads until the connection closes (or `within` passes): the bytes read, and whether it closed.
    async fn read_until_closed(tcp: &mut TcpStream, within: Duration) -> (Vec<u8>, bool) {
        let mut out = Vec::new();
        let mut buf = [0u8; 1024];
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, tcp.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return (out, true),
                Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
                Err(_) => return (out, false),
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_headers_and_idle_connections_are_closed_and_others_keep_working() {
        let app = Router::new().route("/ok", get(|| async { "ok" }));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let options = ServeOptions {
            limits: ConnectionLimits {
                header_timeout: Duration::from_millis(800),
                idle_timeout: Duration::from_millis(1500),
                handshake_timeout: Duration::from_secs(1),
            },
            ..ServeOptions::default()
        };
        let server = tokio::spawn(serve_with(listener, app, 1, options, async move {
            let _ = stop_rx.await;
        }));
        // Headers at a byte every 100 ms: not complete after 800 ms, so the connection is closed then, not
        // held for as long as the client keeps dripping.
        let slow = TcpStream::connect(addr).await.unwrap();
        let started = Instant::now();
        let (mut reader, mut writer) = slow.into_split();
        let drip = tokio::spawn(async move {
            // 45 bytes: 4.5 s of dripping, far past the deadline.
            for b in b"GET /ok HTTP/1.1\r\nHost: t\r\nX-Slow: aaaaaaaaaaaaaaa" {
                if writer.write_all(&[*b]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        let mut answer = Vec::new();
        let closed =
            tokio::time::timeout(Duration::from_secs(4), reader.read_to_end(&mut answer)).await;
        assert!(
            closed.is_ok(),
            "a trickling client is closed, not served for as long as it drips"
        );
        assert!(
            started.elapsed() < Duration::from_millis(3000),
            "{:?}",
            started.elapsed()
        );
        assert!(!String::from_utf8_lossy(&answer).contains("200 OK"));
        drip.abort();
        // A kept-alive connection that goes quiet after a request is closed once idle for long enough...
        let mut idle = TcpStream::connect(addr).await.unwrap();
        assert_eq!(get_body(&mut idle, "/ok").await, "ok");
        let (_, closed) = read_until_closed(&mut idle, Duration::from_secs(5)).await;
        assert!(closed, "an idle connection is closed");
        // ... while a busy one is served throughout.
        let mut busy = TcpStream::connect(addr).await.unwrap();
        for _ in 0..10 {
            assert_eq!(get_body(&mut busy, "/ok").await, "ok");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        stop_tx.send(()).unwrap();
        let _ = tokio::time::timeout(Duration::from_secs(10), server).await;
    }
}
