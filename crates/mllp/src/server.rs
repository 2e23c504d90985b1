//! The listener: accepts connections (plain or TLS) and runs each on its own task.

use crate::codec::Event;
use crate::config::ListenerConfig;
use crate::conn::{Connection, with_timeout};
use crate::error::{MllpError, TimeoutPhase};
use crate::inflight::InFlight;
use crate::stream::Stream;
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// The payload of an MLLP release 2 commit acknowledgement (ACK).
pub const COMMIT_ACK: &[u8] = &[0x06];
/// The payload of an MLLP release 2 negative commit acknowledgement (NAK).
pub const COMMIT_NAK: &[u8] = &[0x15];

/// Who sent a frame.
#[derive(Debug, Clone)]
pub struct Peer {
    /// The remote address.
    pub addr: SocketAddr,
    /// Whether the connection is TLS.
    pub tls: bool,
}

/// What arrived on a connection, for the [`Handler`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Inbound {
    /// A complete frame's payload.
    Message(Bytes),
    /// A frame over the size limit, already discarded; `head` holds its first bytes so that the handler can read
    /// the message header and answer with a rejecting acknowledgement.
    Oversized {
        /// The first bytes of the payload.
        head: Bytes,
        /// The full payload length.
        len: usize,
    },
}

/// The handler's answer to one inbound frame.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    /// A payload to send back in its own frame (an HL7 ACK), if any.
    pub payload: Option<Bytes>,
    /// Whether the message was safely committed; sent as the MLLP release 2 commit acknowledgement when those are
    /// enabled.
    pub committed: bool,
}

/// Application logic behind a [`Listener`]: called once per inbound frame, in order per connection. When a sender
/// pipelines, the calls for its later frames start before the earlier ones finish (each call is polled once as
/// soon as its frame is read, so whatever it does before its first wait happens in frame order), and the answers
/// are written back in frame order.
pub trait Handler: Send + Sync + 'static {
    /// Handles one frame and says what to answer.
    fn handle(&self, inbound: Inbound, peer: &Peer) -> impl Future<Output = Reply> + Send;
}

/// A bound MLLP listener.
pub struct Listener {
    tcp: TcpListener,
    cfg: Arc<ListenerConfig>,
}

impl Listener {
    /// Binds `addr`.
    pub async fn bind(addr: SocketAddr, cfg: ListenerConfig) -> Result<Listener, MllpError> {
        let tcp = TcpListener::bind(addr)
            .await
            .map_err(|source| MllpError::Io {
                op: "binding",
                peer: addr.to_string(),
                source,
            })?;
        Ok(Listener {
            tcp,
            cfg: Arc::new(cfg),
        })
    }

    /// The bound address (useful after binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        // A bound listener has an address; the unspecified one stands in should the OS ever not say.
        self.tcp
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// Accepts connections until `shutdown` completes, then lets each connection finish the message in hand (up to
    /// the configured grace period) and returns.
    pub async fn serve<H: Handler>(self, handler: Arc<H>, shutdown: impl Future<Output = ()>) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let acceptor = self.cfg.tls.clone().map(tokio_rustls::TlsAcceptor::from);
        let mut tasks = JoinSet::new();
        let slots = Arc::new(Semaphore::new(self.cfg.max_connections.max(1)));
        let mut refusals = Throttle::new(Duration::from_secs(1));
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                accepted = self.tcp.accept() => match accepted {
                    Ok((tcp, addr)) => {
                        let Ok(slot) = slots.clone().try_acquire_owned() else {
                            // At the cap: close at once (dropping the socket), so that the open connections keep
                            // their share of the process.
                            drop(tcp);
                            if let Some((refused, _)) = refusals.note(1, Instant::now()) {
                                tracing::warn!(
                                    peer = %addr,
                                    refused,
                                    max_connections = self.cfg.max_connections,
                                    "MLLP connection refused: too many open connections"
                                );
                            }
                            continue;
                        };
                        let cfg = self.cfg.clone();
                        let handler = handler.clone();
                        let acceptor = acceptor.clone();
                        let stop = stop_rx.clone();
                        tasks.spawn(async move {
                            let _slot = slot;
                            if let Err(e) = run_connection(tcp, addr, acceptor, cfg, handler, stop).await {
                                tracing::warn!(peer = %addr, "MLLP connection ended: {e}");
                            }
                        });
                    }
                    Err(e) => {
                        // Usually out of file descriptors: back off instead of spinning.
                        tracing::error!("MLLP accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            }
        }
        let _ = stop_tx.send(true);
        let drain = async { while tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(self.cfg.shutdown_grace, drain)
            .await
            .is_err()
        {
            tracing::warn!("MLLP connections still busy after the grace period; closing them");
            tasks.abort_all();
        }
    }
}

async fn run_connection<H: Handler>(
    tcp: TcpStream,
    addr: SocketAddr,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    cfg: Arc<ListenerConfig>,
    handler: Arc<H>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), MllpError> {
    // Replies are small and latency matters more than packet count.
    let _ = tcp.set_nodelay(true);
    let peer_text = addr.to_string();
    let stream = match &acceptor {
        Some(acceptor) => {
            let handshake = acceptor.accept(tcp);
            let limit = cfg.frame.in_frame_timeout.or(Some(Duration::from_secs(30)));
            let tls = with_timeout(limit, TimeoutPhase::Connect, &peer_text, handshake)
                .await?
                .map_err(|source| MllpError::Io {
                    op: "TLS handshake with",
                    peer: peer_text.clone(),
                    source,
                })?;
            Stream::ServerTls(Box::new(tls))
        }
        None => Stream::Plain(tcp),
    };
    let peer = Peer {
        addr,
        tls: acceptor.is_some(),
    };
    tracing::debug!(%addr, tls = peer.tls, "MLLP connection accepted");
    let mut conn = Connection::new(stream, cfg.frame.clone(), peer_text);
    conn.set_frame_deadline(cfg.frame_deadline);
    let mut junk_log = Throttle::new(cfg.junk_log_interval);
    let result = serve_connection(
        &mut conn,
        addr,
        &cfg,
        &*handler,
        &peer,
        &mut stop,
        &mut junk_log,
    )
    .await;
    if let Some((chunks, bytes)) = junk_log.pending() {
        tracing::warn!(%addr, bytes, chunks, "bytes outside an MLLP frame skipped since the last warning");
    }
    result
}

/// The read-handle-answer loop of one connection.
async fn serve_connection<H: Handler>(
    conn: &mut Connection,
    addr: SocketAddr,
    cfg: &ListenerConfig,
    handler: &H,
    peer: &Peer,
    stop: &mut watch::Receiver<bool>,
    junk_log: &mut Throttle,
) -> Result<(), MllpError> {
    let max_in_flight = cfg.max_in_flight.max(1);
    let mut in_flight = InFlight::default();
    loop {
        let idle = !conn.in_frame() && !conn.has_buffered();
        if *stop.borrow() && idle {
            // Shutting down: answer what is in hand, read nothing more.
            while !in_flight.is_empty() {
                let replies = in_flight.ready().await;
                write_replies(conn, cfg.commit_acks, &replies).await?;
            }
            break;
        }
        // Read the next frame while earlier ones are still being handled (a pipelining sender), up to the limit;
        // write answers as soon as the oldest ones are ready.
        let event = if in_flight.len() >= max_in_flight {
            None
        } else if in_flight.is_empty() {
            tokio::select! {
                biased;
                event = conn.next_event() => match event? {
                    Some(event) => Some(event),
                    None => break,
                },
                _ = stop.changed(), if idle => break,
            }
        } else {
            tokio::select! {
                biased;
                replies = in_flight.ready() => {
                    write_replies(conn, cfg.commit_acks, &replies).await?;
                    continue;
                }
                event = conn.next_event() => match event {
                    Ok(Some(event)) => Some(event),
                    // The peer closed or broke the connection: answer what it already sent, if it still listens.
                    end => {
                        while !in_flight.is_empty() {
                            let replies = in_flight.ready().await;
                            if write_replies(conn, cfg.commit_acks, &replies).await.is_err() {
                                break;
                            }
                        }
                        end?;
                        break;
                    }
                },
            }
        };
        let Some(event) = event else {
            let replies = in_flight.ready().await;
            write_replies(conn, cfg.commit_acks, &replies).await?;
            continue;
        };
        let inbound = match event {
            Event::Frame(payload) => Inbound::Message(payload),
            Event::Oversized { head, len } => {
                tracing::warn!(%addr, len, max = cfg.frame.max_frame, "oversized MLLP frame discarded");
                Inbound::Oversized { head, len }
            }
            Event::Junk { len, whitespace } => {
                if whitespace {
                    tracing::trace!(%addr, len, "whitespace between MLLP frames skipped");
                    continue;
                }
                if cfg.frame.junk == crate::JunkPolicy::Reject {
                    return Err(MllpError::JunkRejected {
                        peer: conn.peer.clone(),
                        len,
                    });
                }
                if let Some((chunks, bytes)) = junk_log.note(len, Instant::now()) {
                    if chunks == 1 && junk_log.first() {
                        tracing::warn!(
                            %addr,
                            bytes,
                            chunks,
                            "bytes outside an MLLP frame skipped (further ones on this connection are counted and logged at most every {:?})",
                            cfg.junk_log_interval
                        );
                    } else {
                        tracing::warn!(%addr, bytes, chunks, "bytes outside an MLLP frame skipped since the last warning");
                    }
                }
                continue;
            }
            Event::Restarted { dropped } => {
                tracing::warn!(%addr, dropped, "MLLP start block inside a frame: unfinished frame dropped");
                continue;
            }
        };
        in_flight.push(Box::pin(handler.handle(inbound, peer)));
    }
    conn.shutdown().await;
    Ok(())
}

/// Writes the answers to several frames, in order, in as few system calls as possible.
async fn write_replies(
    conn: &mut Connection,
    commit_acks: bool,
    replies: &[Reply],
) -> Result<(), MllpError> {
    let mut frames: Vec<&[u8]> = Vec::with_capacity(replies.len() * 2);
    for reply in replies {
        if commit_acks {
            frames.push(if reply.committed {
                COMMIT_ACK
            } else {
                COMMIT_NAK
            });
        }
        if let Some(payload) = &reply.payload {
            frames.push(payload);
        }
    }
    if frames.is_empty() {
        return Ok(());
    }
    conn.write_frames(&frames).await
}

/// Rate-limits a repeated warning: the first occurrence is reported at once, later ones at most once per interval,
/// summed.
pub(crate) struct Throttle {
    interval: Duration,
    last: Option<Instant>,
    logged: usize,
    events: usize,
    amount: usize,
}

impl Throttle {
    pub(crate) fn new(interval: Duration) -> Self {
        Throttle {
            interval,
            last: None,
            logged: 0,
            events: 0,
            amount: 0,
        }
    }

    /// Counts one occurrence of `amount`; returns the (occurrences, amount) to report now, if it is time.
    pub(crate) fn note(&mut self, amount: usize, now: Instant) -> Option<(usize, usize)> {
        self.events += 1;
        self.amount = self.amount.saturating_add(amount);
        if self
            .last
            .is_some_and(|last| now.duration_since(last) < self.interval)
        {
            return None;
        }
        self.last = Some(now);
        self.logged += 1;
        self.pending()
    }

    /// Whether the report just returned by [`Throttle::note`] was the first.
    pub(crate) fn first(&self) -> bool {
        self.logged == 1
    }

    /// Takes what was counted and not yet reported.
    pub(crate) fn pending(&mut self) -> Option<(usize, usize)> {
        let taken = (self.events, self.amount);
        self.events = 0;
        self.amount = 0;
        (taken.0 > 0).then_some(taken)
    }
}
