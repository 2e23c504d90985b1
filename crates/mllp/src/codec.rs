//! The MLLP frame codec: `0x0B payload 0x1C 0x0D`, over a per-connection buffer.

use bytes::{Buf, Bytes, BytesMut};

/// Start block: the byte that opens a frame.
pub const START_BLOCK: u8 = 0x0B;
/// End block: the first of the two bytes that close a frame.
pub const END_BLOCK: u8 = 0x1C;
/// Carriage return: the second byte that closes a frame.
pub const CARRIAGE_RETURN: u8 = 0x0D;

/// How many leading bytes of an oversized frame are kept, so that the caller can still read its MSH segment
/// (and MSH-10) to answer with a rejecting ACK.
pub const OVERSIZED_HEAD_LEN: usize = 4096;

/// What the decoder found in the byte stream.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A complete frame; the payload excludes the start and end blocks.
    Frame(Bytes),
    /// A frame longer than the configured maximum. Its bytes were discarded up to the next frame end; `head` holds
    /// the first [`OVERSIZED_HEAD_LEN`] bytes so that the caller can identify the message.
    Oversized {
        /// The first bytes of the frame's payload.
        head: Bytes,
        /// The whole payload length.
        len: usize,
    },
    /// Bytes outside any frame (before a start block), skipped.
    Junk {
        /// How many bytes were skipped.
        len: usize,
        /// Whether they were only whitespace (CR, LF, space, tab), which many senders add after a frame.
        whitespace: bool,
    },
    /// A start block arrived inside an unfinished frame: the sender started over, and the unfinished bytes were
    /// dropped.
    Restarted {
        /// How many bytes of the unfinished frame were dropped.
        dropped: usize,
    },
}

#[derive(Debug)]
enum State {
    /// Outside any frame, looking for a start block.
    Seeking,
    /// Inside a frame; `scanned` bytes of the buffer are known not to hold a frame end.
    InFrame { scanned: usize },
    /// Inside a frame that exceeded the maximum: bytes are dropped until the next frame end.
    Discarding { head: Bytes, len: usize },
}

/// Splits a byte stream into MLLP frames. Feed bytes with [`FrameDecoder::buffer_mut`] (or
/// [`FrameDecoder::extend`]) and take events with [`FrameDecoder::decode`] until it returns `None`.
///
/// Partial frames wait in the buffer for more bytes; several frames in one read come out one by one; bytes outside
/// frames are reported as [`Event::Junk`]; a frame longer than the maximum is dropped (the buffer never grows past
/// the maximum) and reported as [`Event::Oversized`], and decoding resumes at the next frame end.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: BytesMut,
    state: State,
    max_frame: usize,
}

impl FrameDecoder {
    /// A decoder that accepts frames of at most `max_frame` payload bytes.
    pub fn new(max_frame: usize) -> Self {
        FrameDecoder {
            buf: BytesMut::with_capacity(16 * 1024),
            state: State::Seeking,
            max_frame: max_frame.max(1),
        }
    }

    /// The buffer to read into (e.g. with `AsyncReadExt::read_buf`).
    pub fn buffer_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Appends bytes to the buffer.
    pub fn extend(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Whether a frame has started and not yet ended (bytes of it may be buffered or discarded).
    pub fn in_frame(&self) -> bool {
        !matches!(self.state, State::Seeking)
    }

    /// How many bytes are buffered and not yet decoded into an event.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The next event from the buffered bytes, or `None` when more bytes are needed.
    pub fn decode(&mut self) -> Option<Event> {
        loop {
            match &mut self.state {
                State::Seeking => {
                    if self.buf.is_empty() {
                        return None;
                    }
                    match memchr::memchr(START_BLOCK, &self.buf) {
                        Some(0) => {
                            self.buf.advance(1);
                            self.state = State::InFrame { scanned: 0 };
                        }
                        Some(i) => {
                            let whitespace = is_whitespace(self.buf.get(..i).unwrap_or_default());
                            self.buf.advance(i + 1);
                            self.state = State::InFrame { scanned: 0 };
                            return Some(Event::Junk { len: i, whitespace });
                        }
                        None => {
                            let len = self.buf.len();
                            let whitespace = is_whitespace(&self.buf);
                            self.buf.clear();
                            return Some(Event::Junk { len, whitespace });
                        }
                    }
                }
                State::InFrame { scanned } => {
                    let from = *scanned;
                    match find_boundary(&self.buf, from) {
                        Boundary::End(j) => {
                            let payload = self.buf.split_to(j).freeze();
                            self.buf.advance(2);
                            self.state = State::Seeking;
                            if payload.len() > self.max_frame {
                                return Some(oversized(&payload, payload.len()));
                            }
                            return Some(Event::Frame(payload));
                        }
                        Boundary::Start(k) => {
                            self.buf.advance(k + 1);
                            self.state = State::InFrame { scanned: 0 };
                            return Some(Event::Restarted { dropped: k });
                        }
                        Boundary::NeedMore(next) => {
                            if self.buf.len() > self.max_frame {
                                // Keep only the head; a trailing end block may pair with a CR not yet read.
                                let keep = usize::from(self.buf.last() == Some(&END_BLOCK));
                                let len = self.buf.len() - keep;
                                let head = Bytes::copy_from_slice(head_of(&self.buf));
                                self.buf.advance(len);
                                self.state = State::Discarding { head, len };
                            } else {
                                self.state = State::InFrame { scanned: next };
                                return None;
                            }
                        }
                    }
                }
                State::Discarding { head, len } => match find_boundary(&self.buf, 0) {
                    Boundary::End(j) => {
                        let event = Event::Oversized {
                            head: head.clone(),
                            len: *len + j,
                        };
                        self.buf.advance(j + 2);
                        self.state = State::Seeking;
                        return Some(event);
                    }
                    Boundary::Start(k) => {
                        // The sender gave up on the oversized frame and started a new one.
                        let event = Event::Oversized {
                            head: head.clone(),
                            len: *len + k,
                        };
                        self.buf.advance(k + 1);
                        self.state = State::InFrame { scanned: 0 };
                        return Some(event);
                    }
                    Boundary::NeedMore(_) => {
                        let keep = usize::from(self.buf.last() == Some(&END_BLOCK));
                        let drop = self.buf.len() - keep;
                        *len += drop;
                        self.buf.advance(drop);
                        return None;
                    }
                },
            }
        }
    }
}

fn oversized(payload: &[u8], len: usize) -> Event {
    Event::Oversized {
        head: Bytes::copy_from_slice(head_of(payload)),
        len,
    }
}

fn is_whitespace(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .all(|b| matches!(b, b'\r' | b'\n' | b' ' | b'\t'))
}

enum Boundary {
    /// A frame end (0x1C 0x0D) starts at this offset.
    End(usize),
    /// A start block at this offset interrupts the frame.
    Start(usize),
    /// Neither yet; scanning may resume at this offset.
    NeedMore(usize),
}

/// The first bytes of an oversized frame, kept for the store and the log.
fn head_of(payload: &[u8]) -> &[u8] {
    payload
        .get(..payload.len().min(OVERSIZED_HEAD_LEN))
        .unwrap_or_default()
}

/// Finds the first frame end or stray start block at or after `from`. An end block not followed by CR is payload.
fn find_boundary(buf: &[u8], from: usize) -> Boundary {
    let mut at = from;
    while let Some(i) = memchr::memchr2(END_BLOCK, START_BLOCK, buf.get(at..).unwrap_or_default()) {
        let j = at + i;
        if buf.get(j) == Some(&START_BLOCK) {
            return Boundary::Start(j);
        }
        match buf.get(j + 1) {
            Some(&CARRIAGE_RETURN) => return Boundary::End(j),
            Some(_) => at = j + 1,
            None => return Boundary::NeedMore(j),
        }
    }
    Boundary::NeedMore(buf.len())
}

/// Appends `payload` wrapped in MLLP start and end blocks to `out`.
pub fn encode_frame(payload: &[u8], out: &mut Vec<u8>) {
    out.reserve(payload.len() + 3);
    out.push(START_BLOCK);
    out.extend_from_slice(payload);
    out.push(END_BLOCK);
    out.push(CARRIAGE_RETURN);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(dec: &mut FrameDecoder) -> Vec<Event> {
        std::iter::from_fn(|| dec.decode()).collect()
    }

    #[test]
    fn byte_by_byte_equals_whole() {
        let mut stream = Vec::new();
        encode_frame(b"MSH|a", &mut stream);
        stream.extend_from_slice(b"\r\n");
        encode_frame(b"MSH|b\x1cX", &mut stream);
        let mut whole = FrameDecoder::new(100);
        whole.extend(&stream);
        let expected = all(&mut whole);
        assert_eq!(
            expected,
            vec![
                Event::Frame(Bytes::from_static(b"MSH|a")),
                Event::Junk {
                    len: 2,
                    whitespace: true
                },
                Event::Frame(Bytes::from_static(b"MSH|b\x1cX")),
            ]
        );
        // Byte by byte, junk comes in pieces but frames are identical.
        let mut split = FrameDecoder::new(100);
        let mut frames = Vec::new();
        let mut junk = 0;
        for b in &stream {
            split.extend(std::slice::from_ref(b));
            for ev in all(&mut split) {
                match ev {
                    Event::Junk { len, .. } => junk += len,
                    other => frames.push(other),
                }
            }
        }
        assert_eq!(junk, 2);
        assert_eq!(frames, vec![expected[0].clone(), expected[2].clone()]);
    }

    #[test]
    fn oversized_resyncs_and_never_buffers_past_max() {
        let mut dec = FrameDecoder::new(10);
        let mut stream = Vec::new();
        encode_frame(b"MSH|0123456789ABCDEF", &mut stream);
        encode_frame(b"ok", &mut stream);
        let mut got = Vec::new();
        for chunk in stream.chunks(3) {
            dec.extend(chunk);
            got.extend(all(&mut dec));
            assert!(dec.buffered() <= 13);
        }
        assert_eq!(got.len(), 2, "{got:?}");
        match &got[0] {
            Event::Oversized { head, len } => {
                assert!(head.starts_with(b"MSH|012345"), "{head:?}");
                assert_eq!(*len, 20);
            }
            other => panic!("expected oversized, got {other:?}"),
        }
        assert_eq!(got[1], Event::Frame(Bytes::from_static(b"ok")));
    }

    #[test]
    fn start_block_inside_frame_restarts() {
        let mut dec = FrameDecoder::new(100);
        dec.extend(b"\x0bMSH|par\x0bMSH|full\x1c\x0d");
        assert_eq!(
            all(&mut dec),
            vec![
                Event::Restarted { dropped: 7 },
                Event::Frame(Bytes::from_static(b"MSH|full"))
            ]
        );
    }
}
