//! Integration tests of the interface engine over real loopback sockets, on real messages from ../shared.
#![allow(missing_docs)]

mod ack;
mod api;
mod duplicates;
mod group_commit;
mod recovery;
mod restart;
mod routes;
mod validation;

use bytes::Bytes;
use interface::{Engine, EngineConfig, MessageId, Status};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `shared/data/hl7v2/fhir-converter/<name>`, with its line ends turned into the CR that HL7 v2 requires.
pub fn sample(name: &str) -> Vec<u8> {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/hl7v2/fhir-converter");
    let path = dir.join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "test data {} is missing ({e}): the tests need ../shared beside the checkout",
            path.display()
        )
    });
    let text = String::from_utf8_lossy(&bytes)
        .replace("\r\n", "\r")
        .replace('\n', "\r");
    text.trim_end_matches('\r')
        .to_string()
        .into_bytes()
        .into_iter()
        .chain([b'\r'])
        .collect()
}

/// An editable copy of `raw`.
pub fn edit(raw: &[u8]) -> hl7v2::MessageBuf<'static> {
    hl7v2::MessageBuf::from(&hl7v2::Message::parse(raw)).into_owned()
}

/// `raw` with MSH-10 set to `id`.
pub fn with_control_id(raw: &[u8], id: &str) -> Vec<u8> {
    let mut buf = crate::edit(raw);
    buf.set("MSH-10", id).expect("MSH-10 is settable");
    buf.encode()
}

/// An engine in a temporary directory, serving MLLP on a free loopback port.
pub struct Harness {
    pub engine: Engine,
    pub addr: String,
    pub dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    listener: Option<tokio::task::JoinHandle<()>>,
}

impl Harness {
    pub async fn start(config: &str) -> Harness {
        Self::start_in(tempfile::tempdir().unwrap(), config).await
    }

    pub async fn start_in(dir: tempfile::TempDir, config: &str) -> Harness {
        let config = EngineConfig::from_toml(config).expect("valid test configuration");
        let engine = Engine::open(&dir.path().join("store"), config.clone()).expect("engine opens");
        let listener = mllp::Listener::bind(
            "127.0.0.1:0".parse().unwrap(),
            config.listener_config().unwrap(),
        )
        .await
        .unwrap();
        let addr = listener.local_addr().to_string();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let handle = tokio::spawn(listener.serve(Arc::new(engine.clone()), async {
            let _ = rx.await;
        }));
        Harness {
            engine,
            addr,
            dir,
            stop: Some(tx),
            listener: Some(handle),
        }
    }

    pub async fn client(&self) -> mllp::Client {
        mllp::Client::connect(&self.addr, mllp::ClientConfig::default())
            .await
            .unwrap()
    }

    /// Stops the listener and the engine; returns the directory so that a test can restart on it.
    pub async fn stop(mut self) -> tempfile::TempDir {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.listener.take() {
            let _ = h.await;
        }
        self.engine.shutdown().await;
        self.dir
    }

    /// Waits until message `id` reaches `status` (or panics after 10 s).
    pub async fn wait_status(&self, id: MessageId, status: Status) -> interface::StoredMessage {
        for _ in 0..1000 {
            let m = self.engine.get(id).unwrap().expect("stored");
            if m.summary.status == status {
                return m;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let m = self.engine.get(id).unwrap().unwrap();
        panic!(
            "message {id} stayed {:?} (deliveries {:?})",
            m.summary.status, m.deliveries
        );
    }

    /// The id of the newest stored message with this MSH-10.
    pub fn id_of(&self, control_id: &str) -> MessageId {
        let page = self
            .engine
            .list(&interface::Query {
                control_id: Some(control_id.into()),
                limit: 1,
                ..Default::default()
            })
            .unwrap();
        page.items
            .first()
            .unwrap_or_else(|| panic!("{control_id} not stored"))
            .id
    }
}

/// MSA-1 and MSA-2 of an ACK.
pub fn msa(ack: &[u8]) -> (String, String) {
    let m = hl7v2::Message::parse(ack);
    (
        m.get("MSA-1").unwrap_or_default().into_owned(),
        m.get("MSA-2").unwrap_or_default().into_owned(),
    )
}

/// A downstream MLLP receiver that records what it gets and answers AA (or AE for the first `fail_first`
/// messages, or an ACK naming another control ID when `wrong_msa2`).
#[derive(Default)]
pub struct Downstream {
    pub received: Mutex<Vec<Vec<u8>>>,
    pub fail_first: std::sync::atomic::AtomicUsize,
    pub wrong_msa2: std::sync::atomic::AtomicBool,
}

impl mllp::Handler for Downstream {
    async fn handle(&self, inbound: mllp::Inbound, _peer: &mllp::Peer) -> mllp::Reply {
        use std::sync::atomic::Ordering;
        let mllp::Inbound::Message(raw) = inbound else {
            return mllp::Reply::default();
        };
        let msg = hl7v2::Message::parse(&raw);
        let failing = self
            .fail_first
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        let ack = if self.wrong_msa2.load(Ordering::SeqCst) {
            let other = with_control_id(&raw, "SOMETHING-ELSE");
            hl7v2::Message::parse(&other)
                .ack(hl7v2::AckCode::AA)
                .build()
        } else if failing {
            msg.ack(hl7v2::AckCode::AE).text("try again").build()
        } else {
            self.received.lock().unwrap().push(raw.to_vec());
            msg.ack(hl7v2::AckCode::AA).build()
        };
        mllp::Reply {
            payload: Some(Bytes::from(ack)),
            committed: true,
        }
    }
}

/// Starts a [`Downstream`] on `addr` (`127.0.0.1:0` for any port); returns its address.
pub async fn downstream(addr: &str) -> (String, Arc<Downstream>, tokio::task::JoinHandle<()>) {
    let listener = mllp::Listener::bind(addr.parse().unwrap(), Default::default())
        .await
        .unwrap();
    let addr = listener.local_addr().to_string();
    let d = Arc::new(Downstream::default());
    let handle = tokio::spawn(listener.serve(d.clone(), std::future::pending()));
    (addr, d, handle)
}
