//! How messages get stored, acknowledged and forwarded without loss: the interface engine behind `thoth serve`.
//!
//! Every inbound message is parsed leniently ([`hl7v2::Message::parse`]), stored as the exact bytes received in an
//! append-only message log with its header and indexes in an embedded redb database, and acknowledged only once
//! the log is synced (by default; see [`AckTiming`]). One writer thread logs and commits whatever is queued as one
//! batch, so concurrent connections share each `fdatasync` (group commit); after a crash the tables are brought up
//! to date from the log. Unparseable input is stored too and answered AR/CR with ERR segments; original or enhanced
//! acknowledgement mode follows MSH-15/MSH-16. The same sender and MSH-10 within a window is a duplicate: counted,
//! and dropped or routed by configuration. Routes from TOML ([`EngineConfig`]) deliver to MLLP, HTTP or a directory
//! with at-least-once semantics: retries with backoff, ACKs matched on MSA-2, dead-lettering after N failures; the
//! pending deliveries are in the store, so a restart resumes them.
//!
//! ```no_run
//! # async fn demo() -> Result<(), interface::EngineError> {
//! let config = interface::EngineConfig::from_toml(r#"
//!     [[route]]
//!     name = "archive"
//!     dir = "/var/lib/thoth/archive"
//! "#)?;
//! let engine = interface::Engine::open(std::path::Path::new("/var/lib/thoth/messages"), config)?;
//! let raw = bytes::Bytes::from_static(b"MSH|^~\\&|HIS|H|RIS|R|20240101||ADT^A01|C1|P|2.5\rPID|1\r");
//! let receipt = engine.receive(raw, "127.0.0.1:50000").await;
//! assert!(receipt.committed);
//! // To serve MLLP: mllp::Listener::bind(addr, config.listener_config()?).await?.serve(Arc::new(engine), stop)
//! # Ok(()) }
//! ```

mod config;
mod counters;
mod delivery;
mod engine;
mod error;
mod index;
#[cfg(feature = "kafka")]
mod kafka;
mod load;
mod log;
mod record;
mod route;
mod store;
mod validation;

pub use config::{
    AckConfig, AckTiming, DeliveryConfig, DuplicateAction, DuplicateConfig, EngineConfig, KafkaKey,
    KafkaRouteConfig, KafkaSourceConfig, KafkaValue, MllpConfig, RouteConfig, StoreConfig,
    TlsFiles,
};
pub use engine::{Engine, MAX_ELEMENTS, Receipt};
pub use error::EngineError;
#[cfg(feature = "kafka")]
/// The names of the record headers a Kafka route writes.
pub use kafka::header as kafka_header;
pub use load::{LoadOptions, LoadReport, load};
pub use record::{
    Attempt, Delivery, DeliveryStatus, Histogram, MessageId, MessageSummary, Page, Query,
    RouteStats, Stats, Status, StoredMessage,
};
pub use validation::{RuleOverride, RuleSeverity, ValidationConfig, ValidationMode};
