use std::sync::Arc;
use std::time::Duration;

/// What to do with bytes that arrive outside a frame (before a start block).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum JunkPolicy {
    /// Skip them and log a warning (whitespace between frames is skipped silently).
    #[default]
    Skip,
    /// Close the connection (whitespace between frames is still tolerated).
    Reject,
}

/// Framing and timing of one connection, shared by the listener and the client.
#[derive(Debug, Clone)]
pub struct FrameConfig {
    /// Largest accepted frame payload in bytes; larger frames are dropped and reported.
    pub max_frame: usize,
    /// What to do with bytes outside frames.
    pub junk: JunkPolicy,
    /// Close a connection on which no frame starts for this long (`None`: never).
    pub idle_timeout: Option<Duration>,
    /// Drop a partial frame when no byte of it arrives for this long (`None`: never). This is a gap between reads,
    /// not a deadline for the whole frame, so a slow but steady sender is never cut off.
    pub in_frame_timeout: Option<Duration>,
    /// Give up on writing a frame after this long.
    pub write_timeout: Option<Duration>,
}

impl Default for FrameConfig {
    fn default() -> Self {
        FrameConfig {
            max_frame: 16 * 1024 * 1024,
            junk: JunkPolicy::Skip,
            idle_timeout: Some(Duration::from_secs(600)),
            in_frame_timeout: Some(Duration::from_secs(60)),
            write_timeout: Some(Duration::from_secs(30)),
        }
    }
}

/// Options of a [`crate::Listener`].
#[derive(Debug, Clone)]
pub struct ListenerConfig {
    /// Framing and timeouts of each connection.
    pub frame: FrameConfig,
    /// Serve TLS with this configuration (see [`crate::server_tls_config`]); plain TCP when `None`.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// MLLP release 2: answer every frame with a commit acknowledgement (a frame holding the single byte 0x06 when
    /// the handler committed the message, 0x15 when not) before the handler's own reply, if any.
    pub commit_acks: bool,
    /// How long a graceful shutdown waits for connections to finish the message in hand.
    pub shutdown_grace: Duration,
    /// How many frames of one connection may be handled at the same time (a sender that pipelines); the
    /// connection stops reading when this many answers are owed.
    pub max_in_flight: usize,
    /// The longest a frame may take from its first byte to its end (`None`: no limit); a sender that drips a frame
    /// slower than this is disconnected. Unlike [`FrameConfig::in_frame_timeout`], steady bytes do not extend it.
    pub frame_deadline: Option<Duration>,
    /// How many connections may be open at once; further connections are closed as soon as they are accepted
    /// (with a warning), and the open ones keep working.
    pub max_connections: usize,
    /// Bytes outside frames are logged at most once per this interval per connection, with a count of what was
    /// skipped since the last warning (the first occurrence is logged at once).
    pub junk_log_interval: Duration,
}

impl Default for ListenerConfig {
    fn default() -> Self {
        ListenerConfig {
            frame: FrameConfig::default(),
            tls: None,
            commit_acks: false,
            shutdown_grace: Duration::from_secs(5),
            max_in_flight: 64,
            frame_deadline: Some(Duration::from_secs(60)),
            max_connections: 1024,
            junk_log_interval: Duration::from_secs(60),
        }
    }
}

/// Options of a [`crate::Client`].
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Framing and timeouts of the connection.
    pub frame: FrameConfig,
    /// Connect with TLS using this configuration (see [`crate::client_tls_config`]); plain TCP when `None`.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The name to check the server certificate against; defaults to the host part of the address.
    pub server_name: Option<String>,
    /// How long to wait for the TCP connection and the TLS handshake.
    pub connect_timeout: Duration,
    /// How long to wait for the answer to a frame.
    pub reply_timeout: Duration,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            frame: FrameConfig::default(),
            tls: None,
            server_name: None,
            connect_timeout: Duration::from_secs(10),
            reply_timeout: Duration::from_secs(30),
        }
    }
}
