//! The client: sends frames and reads the answers.

use crate::codec::Event;
use crate::config::ClientConfig;
use crate::conn::{Connection, with_timeout};
use crate::error::{MllpError, TimeoutPhase};
use crate::stream::Stream;
use bytes::Bytes;
use tokio::net::TcpStream;

/// An MLLP connection to a listener, plain or TLS.
///
/// [`Client::send`] writes one frame and waits for one answer; [`Client::write`] and [`Client::read_reply`] let a
/// caller pipeline several frames before reading the answers.
pub struct Client {
    conn: Connection,
    cfg: ClientConfig,
}

impl Client {
    /// Connects to `addr` (`host:port`).
    pub async fn connect(addr: &str, cfg: ClientConfig) -> Result<Client, MllpError> {
        let connect = TcpStream::connect(addr);
        let tcp = with_timeout(
            Some(cfg.connect_timeout),
            TimeoutPhase::Connect,
            addr,
            connect,
        )
        .await?
        .map_err(|source| MllpError::Io {
            op: "connecting to",
            peer: addr.to_string(),
            source,
        })?;
        let _ = tcp.set_nodelay(true);
        let stream = match &cfg.tls {
            None => Stream::Plain(tcp),
            Some(tls) => {
                let host = cfg.server_name.clone().unwrap_or_else(|| host_of(addr));
                let name = rustls::pki_types::ServerName::try_from(host.clone())
                    .map_err(|e| MllpError::TlsConfig(format!("server name {host:?}: {e}")))?;
                let handshake = tokio_rustls::TlsConnector::from(tls.clone()).connect(name, tcp);
                let tls = with_timeout(
                    Some(cfg.connect_timeout),
                    TimeoutPhase::Connect,
                    addr,
                    handshake,
                )
                .await?
                .map_err(|source| MllpError::Io {
                    op: "TLS handshake with",
                    peer: addr.to_string(),
                    source,
                })?;
                Stream::ClientTls(Box::new(tls))
            }
        };
        Ok(Client {
            conn: Connection::new(stream, cfg.frame.clone(), addr.to_string()),
            cfg,
        })
    }

    /// Sends `payload` in one frame and returns the payload of the answer frame.
    pub async fn send(&mut self, payload: &[u8]) -> Result<Bytes, MllpError> {
        self.write(payload).await?;
        self.read_reply().await
    }

    /// Sends `payload` in one frame without waiting for an answer.
    pub async fn write(&mut self, payload: &[u8]) -> Result<(), MllpError> {
        self.conn.write_frame(payload).await
    }

    /// Sends raw bytes as they are, without framing (to test listeners against malformed input).
    pub async fn write_raw(&mut self, bytes: &[u8]) -> Result<(), MllpError> {
        self.conn.write_raw(bytes).await
    }

    /// Reads the next answer frame within the reply timeout, skipping bytes outside frames.
    pub async fn read_reply(&mut self) -> Result<Bytes, MllpError> {
        let peer = self.conn.peer.clone();
        let conn = &mut self.conn;
        let read = async {
            loop {
                match conn.next_event().await? {
                    Some(Event::Frame(payload)) => return Ok(payload),
                    Some(Event::Oversized { len, .. }) => {
                        return Err(MllpError::OversizedReply {
                            peer: conn.peer.clone(),
                            len,
                        });
                    }
                    Some(_) => continue,
                    None => {
                        return Err(MllpError::ClosedBeforeReply {
                            peer: conn.peer.clone(),
                        });
                    }
                }
            }
        };
        with_timeout(
            Some(self.cfg.reply_timeout),
            TimeoutPhase::Reply,
            &peer,
            read,
        )
        .await?
    }

    /// Closes the connection cleanly.
    pub async fn close(mut self) {
        self.conn.shutdown().await;
    }
}

/// `host` of `host:port` (and of `[v6]:port`).
fn host_of(addr: &str) -> String {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_string()
}
