//! Integration tests over real loopback sockets.

mod hostile;
mod socket;
mod tls;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Answers `ACK:` + the payload, and `REJECT:<len>:` + the head of an oversized frame; counts what it saw.
#[derive(Default)]
pub struct Echo {
    /// Complete messages handled.
    pub messages: AtomicUsize,
    /// Oversized frames handled.
    pub oversized: AtomicUsize,
}

impl mllp::Handler for Echo {
    async fn handle(&self, inbound: mllp::Inbound, _peer: &mllp::Peer) -> mllp::Reply {
        let payload = match inbound {
            mllp::Inbound::Message(bytes) => {
                self.messages.fetch_add(1, Ordering::SeqCst);
                [b"ACK:".as_slice(), &bytes].concat()
            }
            mllp::Inbound::Oversized { head, len } => {
                self.oversized.fetch_add(1, Ordering::SeqCst);
                [
                    format!("REJECT:{len}:").as_bytes(),
                    &head[..head.len().min(16)],
                ]
                .concat()
            }
            _ => panic!("unexpected inbound"),
        };
        mllp::Reply {
            payload: Some(payload.into()),
            committed: true,
        }
    }
}

/// Starts a listener with `cfg` on a free loopback port; returns its address and the handler.
pub async fn start(cfg: mllp::ListenerConfig) -> (String, Arc<Echo>) {
    let listener = mllp::Listener::bind("127.0.0.1:0".parse().unwrap(), cfg)
        .await
        .expect("bind");
    let addr = listener.local_addr().to_string();
    let echo = Arc::new(Echo::default());
    tokio::spawn(listener.serve(echo.clone(), std::future::pending()));
    (addr, echo)
}
