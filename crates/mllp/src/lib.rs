//! How HL7 v2 frames cross a socket: the MLLP codec, a tokio listener and client, TLS and mutual TLS.
//!
//! This crate knows bytes, not HL7: a frame is `0x0B payload 0x1C 0x0D`, and what the payload means is the
//! [`Handler`]'s business. The listener runs one task per connection with its own buffer: partial reads and
//! pipelined frames both work, bytes outside frames are skipped or rejected by [`JunkPolicy`], frames over the size
//! limit are dropped (the [`Handler`] gets their head to answer with a rejecting ACK) and decoding resumes at the
//! next frame end. Idle, in-frame and write timeouts are separate, so a slow sender keeps its partial frame and
//! never holds up other connections; a whole-frame deadline ([`ListenerConfig::frame_deadline`]) still disconnects a
//! sender that drips a frame byte by byte, the number of open connections is capped
//! ([`ListenerConfig::max_connections`]), and warnings about bytes outside frames are rate-limited per connection.
//! MLLP release 2 commit acknowledgements are an option.
//!
//! ```no_run
//! use std::sync::Arc;
//! struct Echo;
//! impl mllp::Handler for Echo {
//!     async fn handle(&self, inbound: mllp::Inbound, _peer: &mllp::Peer) -> mllp::Reply {
//!         let payload = match inbound {
//!             mllp::Inbound::Message(bytes) => Some(bytes),
//!             _ => None,
//!         };
//!         mllp::Reply { payload, committed: true }
//!     }
//! }
//! # async fn demo() -> Result<(), mllp::MllpError> {
//! let listener = mllp::Listener::bind("127.0.0.1:0".parse().unwrap(), Default::default()).await?;
//! let addr = listener.local_addr().to_string();
//! tokio::spawn(listener.serve(Arc::new(Echo), std::future::pending()));
//! let mut client = mllp::Client::connect(&addr, Default::default()).await?;
//! assert_eq!(&client.send(b"MSH|^~\\&|A").await?[..], b"MSH|^~\\&|A");
//! # Ok(()) }
//! ```
// Request paths must not panic on what a client sends (a panic there would be a 500, or a lost connection):
// no `unwrap`/`expect` and no unchecked indexing outside tests (clippy.toml allows them in tests).
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod client;
mod codec;
mod config;
mod conn;
mod error;
mod inflight;
mod server;
mod stream;
mod tls;

pub use client::Client;
pub use codec::{
    CARRIAGE_RETURN, END_BLOCK, Event, FrameDecoder, OVERSIZED_HEAD_LEN, START_BLOCK, encode_frame,
};
pub use config::{ClientConfig, FrameConfig, JunkPolicy, ListenerConfig};
pub use error::{MllpError, TimeoutPhase};
pub use server::{COMMIT_ACK, COMMIT_NAK, Handler, Inbound, Listener, Peer, Reply};
pub use tls::{client_tls_config, server_tls_config};
