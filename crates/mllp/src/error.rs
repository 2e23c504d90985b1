use std::time::Duration;

/// Which timeout expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeoutPhase {
    /// No frame started for the idle timeout.
    Idle,
    /// A frame started but no byte of it arrived for the in-frame timeout.
    InFrame,
    /// A frame did not end within the frame deadline after its first byte (a sender dripping bytes).
    FrameDeadline,
    /// Writing a frame did not finish within the write timeout.
    Write,
    /// The peer did not answer a frame within the reply timeout (client side).
    Reply,
    /// The TCP or TLS handshake did not finish in time.
    Connect,
}

/// Every way an MLLP connection can fail.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MllpError {
    /// An I/O error from the socket.
    #[error("{op} {peer}: {source}")]
    Io {
        /// What we were doing.
        op: &'static str,
        /// The remote address, as text.
        peer: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A timeout expired.
    #[error("{phase:?} timeout after {after:?} with {peer}")]
    Timeout {
        /// Which timeout.
        phase: TimeoutPhase,
        /// Its length.
        after: Duration,
        /// The remote address, as text.
        peer: String,
    },
    /// The peer closed the connection in the middle of a frame; the partial frame was dropped.
    #[error(
        "{peer} closed the connection mid-frame ({buffered} bytes of an unfinished frame dropped)"
    )]
    ClosedMidFrame {
        /// The remote address, as text.
        peer: String,
        /// Bytes of the unfinished frame that were buffered.
        buffered: usize,
    },
    /// The peer closed the connection before answering (client side).
    #[error("{peer} closed the connection before answering")]
    ClosedBeforeReply {
        /// The remote address, as text.
        peer: String,
    },
    /// Bytes outside a frame, with [`crate::JunkPolicy::Reject`] in force.
    #[error("{peer} sent {len} bytes outside a frame; connection closed by policy")]
    JunkRejected {
        /// The remote address, as text.
        peer: String,
        /// How many bytes.
        len: usize,
    },
    /// The peer's answer was larger than the maximum frame size (client side).
    #[error("{peer} answered with an oversized frame ({len} bytes)")]
    OversizedReply {
        /// The remote address, as text.
        peer: String,
        /// Its length.
        len: usize,
    },
    /// TLS configuration (certificates, keys, server name) is unusable.
    #[error("TLS configuration: {0}")]
    TlsConfig(String),
}
