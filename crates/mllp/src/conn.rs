//! A framed connection: the decoder, the socket, the three timeouts and the frame deadline.

use crate::codec::{Event, FrameDecoder, encode_frame};
use crate::config::FrameConfig;
use crate::error::{MllpError, TimeoutPhase};
use crate::stream::Stream;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

pub(crate) struct Connection {
    io: Stream,
    decoder: FrameDecoder,
    cfg: FrameConfig,
    pub(crate) peer: String,
    out: Vec<u8>,
    /// The longest a frame may take from its first byte to its end (`None`: no limit).
    frame_deadline: Option<Duration>,
    /// When the frame in progress started (its first byte was seen), if one is in progress.
    frame_started: Option<Instant>,
}

impl Connection {
    pub(crate) fn new(io: Stream, cfg: FrameConfig, peer: String) -> Self {
        Connection {
            io,
            decoder: FrameDecoder::new(cfg.max_frame),
            cfg,
            peer,
            out: Vec::with_capacity(4096),
            frame_deadline: None,
            frame_started: None,
        }
    }

    /// Bounds the time from the first byte of a frame to its end, however steadily its bytes arrive.
    pub(crate) fn set_frame_deadline(&mut self, deadline: Option<Duration>) {
        self.frame_deadline = deadline;
    }

    /// Whether a frame is partly received.
    pub(crate) fn in_frame(&self) -> bool {
        self.decoder.in_frame()
    }

    /// Whether a complete event may already be buffered (no read needed).
    pub(crate) fn has_buffered(&self) -> bool {
        self.decoder.buffered() > 0
    }

    /// The next event, `Ok(None)` when the peer closed the connection cleanly between frames. Cancel-safe: bytes
    /// already read stay in the decoder.
    pub(crate) async fn next_event(&mut self) -> Result<Option<Event>, MllpError> {
        loop {
            if let Some(event) = self.decoder.decode() {
                if !matches!(event, Event::Junk { .. }) {
                    // The frame in progress ended (complete, oversized or restarted): the next one gets its own
                    // deadline.
                    self.frame_started = None;
                }
                return Ok(Some(event));
            }
            let (phase, limit, reported) = if self.decoder.in_frame() {
                let started = *self.frame_started.get_or_insert_with(Instant::now);
                let gap = self.cfg.in_frame_timeout;
                match self.frame_deadline {
                    Some(deadline) => {
                        let left = deadline.saturating_sub(started.elapsed());
                        if left.is_zero() {
                            return Err(MllpError::Timeout {
                                phase: TimeoutPhase::FrameDeadline,
                                after: deadline,
                                peer: self.peer.clone(),
                            });
                        }
                        match gap {
                            Some(gap) if gap < left => (TimeoutPhase::InFrame, Some(gap), gap),
                            _ => (TimeoutPhase::FrameDeadline, Some(left), deadline),
                        }
                    }
                    None => (TimeoutPhase::InFrame, gap, gap.unwrap_or_default()),
                }
            } else {
                let idle = self.cfg.idle_timeout;
                (TimeoutPhase::Idle, idle, idle.unwrap_or_default())
            };
            let buf = self.decoder.buffer_mut();
            buf.reserve(16 * 1024);
            let read = self.io.read_buf(buf);
            let n = match limit {
                Some(after) => {
                    tokio::time::timeout(after, read)
                        .await
                        .map_err(|_| MllpError::Timeout {
                            phase,
                            after: reported,
                            peer: self.peer.clone(),
                        })?
                }
                None => read.await,
            }
            .map_err(|source| MllpError::Io {
                op: "reading from",
                peer: self.peer.clone(),
                source,
            })?;
            if n == 0 {
                if self.decoder.in_frame() {
                    return Err(MllpError::ClosedMidFrame {
                        peer: self.peer.clone(),
                        buffered: self.decoder.buffered(),
                    });
                }
                return Ok(None);
            }
        }
    }

    /// Writes one frame around `payload` and flushes it, within the write timeout.
    pub(crate) async fn write_frame(&mut self, payload: &[u8]) -> Result<(), MllpError> {
        self.out.clear();
        encode_frame(payload, &mut self.out);
        self.write_out().await
    }

    /// Writes several frames in one system call where possible.
    pub(crate) async fn write_frames(&mut self, payloads: &[&[u8]]) -> Result<(), MllpError> {
        self.out.clear();
        for p in payloads {
            encode_frame(p, &mut self.out);
        }
        self.write_out().await
    }

    async fn write_out(&mut self) -> Result<(), MllpError> {
        let io = &mut self.io;
        let out = &self.out;
        let write = async move {
            io.write_all(out).await?;
            io.flush().await
        };
        with_timeout(
            self.cfg.write_timeout,
            TimeoutPhase::Write,
            &self.peer,
            write,
        )
        .await?
        .map_err(|source| MllpError::Io {
            op: "writing to",
            peer: self.peer.clone(),
            source,
        })
    }

    pub(crate) async fn shutdown(&mut self) {
        let _ = self.io.shutdown().await;
    }
}

pub(crate) async fn with_timeout<T>(
    limit: Option<Duration>,
    phase: TimeoutPhase,
    peer: &str,
    fut: impl Future<Output = T>,
) -> Result<T, MllpError> {
    match limit {
        Some(after) => tokio::time::timeout(after, fut)
            .await
            .map_err(|_| MllpError::Timeout {
                phase,
                after,
                peer: peer.to_string(),
            }),
        None => Ok(fut.await),
    }
}

impl Connection {
    /// Writes bytes as they are (no framing), within the write timeout.
    pub(crate) async fn write_raw(&mut self, bytes: &[u8]) -> Result<(), MllpError> {
        self.out.clear();
        self.out.extend_from_slice(bytes);
        self.write_out().await
    }
}
