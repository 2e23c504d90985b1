//! The engine's configuration, read from TOML (`thoth serve --config FILE`).

use crate::error::EngineError;
use crate::validation::ValidationConfig;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Everything the engine can be told. Every section and field is optional; the defaults are safe: ACK after
/// durable storage, duplicates kept in the store but not forwarded, ten delivery attempts.
///
/// ```toml
/// [ack]
/// timing = "after-durable"        # or "on-receipt", "after-processing"
///
/// [store]
/// durable = true                  # fdatasync the message log before acknowledging (group commit)
/// quick_repair = true             # checkpoints save redb's allocator state: instant reopen after a crash
/// log_segment_mib = 64            # largest message log segment
///
/// [duplicates]
/// window_secs = 86400             # same sender + MSH-10 within this window is a duplicate
/// action = "drop"                 # stored and counted but not routed; "keep" routes it too
///
/// [delivery]
/// max_attempts = 10               # then the delivery is dead-lettered
/// initial_backoff_ms = 500
/// max_backoff_ms = 60000
///
/// [mllp]
/// max_frame_bytes = 16777216
/// commit_acks = false             # MLLP release 2
/// [mllp.tls]                      # optional; client_ca turns on mutual TLS
/// cert = "server.pem"
/// key = "server.key"
/// client_ca = "clients-ca.pem"
///
/// [validation]
/// mode = "off"                    # or "warn", "reject" (answered AE/CE with ERR segments; still stored)
/// strict = false
/// [[validation.rule]]             # optional, repeatable: one rule's severity
/// rule = "table-value"
/// severity = "ignore"             # or "warning", "error"
/// message_type = "ADT^A01"        # optional: MSH-9-1 or MSH-9-1^MSH-9-2
/// sender = "LAB"                  # optional: MSH-3-1 or "APP@FACILITY"
///
/// [[route]]
/// name = "lab"
/// types = ["ORU"]                 # MSH-9-1; empty: any
/// triggers = ["R01"]              # MSH-9-2; empty: any
/// senders = ["LIS"]               # MSH-3-1 (or "APP@FACILITY"); empty: any
/// mllp = "10.0.0.5:2575"          # exactly one of mllp, http, dir, fhir
///
/// [[route]]
/// name = "fhir"
/// fhir = "http://fhir.example/fhir" # each message's Bundle (HL7 v2-to-FHIR guide) POSTed as a transaction
///
/// [[route]]
/// name = "bundles"
/// dir = "/var/spool/bundles"
/// format = "fhir-json"            # dir only: "hl7" (default, the message's bytes) or "fhir-json" (its Bundle)
///
/// [[route]]                       # Apache Kafka (the `kafka` cargo feature, on in the `thoth` binary)
/// name = "stream"
/// kafka = { brokers = "127.0.0.1:9092", topic = "hl7.adt", key = "control_id", value = "raw" }
///
/// [[kafka_source]]                # consume raw v2 messages from a topic into the same pipeline
/// brokers = "127.0.0.1:9092"
/// topic = "hl7.in"
/// group = "thoth"
///
/// [to_fhir]                       # v2 to FHIR (routes, /hl7/to-fhir, /messages/{id}/fhir)
/// time_zone = "America/Chicago"   # IANA zone of times sent without an offset; none: only their date is kept
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct EngineConfig {
    /// When acknowledgements are sent.
    pub ack: AckConfig,
    /// Durability of the store.
    pub store: StoreConfig,
    /// Duplicate detection.
    pub duplicates: DuplicateConfig,
    /// Retries and dead-lettering.
    pub delivery: DeliveryConfig,
    /// The MLLP listener.
    pub mllp: MllpConfig,
    /// Validation of received messages against their HL7 v2 definitions.
    pub validation: ValidationConfig,
    /// Where messages go.
    #[serde(rename = "route")]
    pub routes: Vec<RouteConfig>,
    /// Kafka topics messages are consumed from (each message as if received over MLLP).
    #[serde(rename = "kafka_source")]
    pub kafka_sources: Vec<KafkaSourceConfig>,
    /// Converting messages to FHIR Bundles.
    pub to_fhir: ToFhirConfig,
}

/// `[to_fhir]`: how messages become FHIR Bundles, wherever they do (`fhir` and `fhir-json` routes, Kafka's `fhir`
/// value, `POST /hl7/to-fhir`, `/messages/{id}/fhir`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct ToFhirConfig {
    /// The IANA name of the zone of times sent without a UTC offset (v2 reads them as the sender's local time).
    pub time_zone: Option<String>,
    /// `time_zone`, looked up when the configuration is read (an unknown name is a configuration error).
    #[serde(skip)]
    zone: Option<v2fhir::TimeZone>,
}

impl ToFhirConfig {
    /// The zone of times sent without an offset, when one is configured.
    pub fn zone(&self) -> Option<&v2fhir::TimeZone> {
        self.zone.as_ref()
    }
}

/// When a message is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum AckTiming {
    /// As soon as it is received, before it is stored (fastest; a crash can lose acknowledged messages).
    OnReceipt,
    /// Once it is durable in the store (the default).
    #[default]
    AfterDurable,
    /// Once it is durable and every matching route delivered it (or the processing timeout passed: then AE/CE).
    AfterProcessing,
}

/// `[ack]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AckConfig {
    /// When acknowledgements are sent.
    pub timing: AckTiming,
    /// With `after-processing`, how long to wait for deliveries before answering with an error code.
    pub processing_timeout_ms: u64,
}

impl Default for AckConfig {
    fn default() -> Self {
        AckConfig {
            timing: AckTiming::AfterDurable,
            processing_timeout_ms: 30_000,
        }
    }
}

/// `[store]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// Whether a message is acknowledged only once the message log is synced (`fdatasync`). Off, the log is
    /// written (to the page cache, which survives a crash of the process) but synced only at the checkpoint once
    /// a second, so a crash of the machine can lose the acknowledged messages of that last second.
    pub durable: bool,
    /// Whether each checkpoint (once a second) also saves redb's allocator state, so that opening the store after
    /// a crash takes milliseconds instead of a repair pass over the whole file (measured: ~6 s for a 2 GB store).
    /// It costs a second fsync per checkpoint, not per message.
    pub quick_repair: bool,
    /// The largest size of a message log segment, in MiB (segments start at 1 MiB and double up to it).
    pub log_segment_mib: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            durable: true,
            quick_repair: true,
            log_segment_mib: 64,
        }
    }
}

/// What happens to a duplicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum DuplicateAction {
    /// Store it (status `duplicate`), count it, acknowledge it, but do not route it.
    #[default]
    Drop,
    /// Store it, count it and route it like any other message.
    Keep,
}

/// `[duplicates]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DuplicateConfig {
    /// Two messages with the same sender and MSH-10 within this many seconds are duplicates (0: no detection).
    pub window_secs: u64,
    /// What to do with a duplicate.
    pub action: DuplicateAction,
}

impl Default for DuplicateConfig {
    fn default() -> Self {
        DuplicateConfig {
            window_secs: 24 * 3600,
            action: DuplicateAction::Drop,
        }
    }
}

/// `[delivery]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeliveryConfig {
    /// Attempts before a delivery is dead-lettered.
    pub max_attempts: u32,
    /// Wait after the first failure; doubles after each further failure.
    pub initial_backoff_ms: u64,
    /// Upper bound of the wait between attempts.
    pub max_backoff_ms: u64,
    /// Time limit of one attempt (connect, send, answer).
    pub attempt_timeout_ms: u64,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        DeliveryConfig {
            max_attempts: 10,
            initial_backoff_ms: 500,
            max_backoff_ms: 60_000,
            attempt_timeout_ms: 30_000,
        }
    }
}

impl DeliveryConfig {
    /// The wait after `failures` consecutive failures.
    pub(crate) fn backoff(&self, failures: u32) -> Duration {
        let factor = 1u64 << failures.saturating_sub(1).min(30);
        Duration::from_millis(
            self.initial_backoff_ms
                .saturating_mul(factor)
                .min(self.max_backoff_ms),
        )
    }
}

/// `[mllp]`: the listener of `thoth serve`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MllpConfig {
    /// Largest accepted frame; larger ones are answered AR/CR and not stored whole.
    pub max_frame_bytes: usize,
    /// Close connections with no frame for this long (0: never).
    pub idle_timeout_secs: u64,
    /// Drop a partial frame when no byte of it arrives for this long (0: never).
    pub in_frame_timeout_secs: u64,
    /// Give up writing an answer after this long.
    pub write_timeout_secs: u64,
    /// Close connections that send bytes outside frames (default: skip and log them).
    pub reject_junk: bool,
    /// MLLP release 2 commit acknowledgements.
    pub commit_acks: bool,
    /// The longest a frame may take from its first byte to its end, however steadily it drips (0: no limit).
    pub frame_deadline_secs: u64,
    /// Connections open at once; more are closed as they are accepted (with a warning).
    pub max_connections: usize,
    /// Bytes outside frames are logged at most once per this many seconds per connection.
    pub junk_log_interval_secs: u64,
    /// TLS, and mutual TLS with `client_ca`.
    pub tls: Option<TlsFiles>,
}

impl Default for MllpConfig {
    fn default() -> Self {
        let frame = mllp::FrameConfig::default();
        let listener = mllp::ListenerConfig::default();
        let secs = |d: Option<Duration>| d.map_or(0, |d| d.as_secs());
        MllpConfig {
            max_frame_bytes: frame.max_frame,
            idle_timeout_secs: secs(frame.idle_timeout),
            in_frame_timeout_secs: secs(frame.in_frame_timeout),
            write_timeout_secs: secs(frame.write_timeout),
            reject_junk: false,
            commit_acks: false,
            frame_deadline_secs: secs(listener.frame_deadline),
            max_connections: listener.max_connections,
            junk_log_interval_secs: listener.junk_log_interval.as_secs(),
            tls: None,
        }
    }
}

/// PEM files of a TLS listener.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFiles {
    /// Certificate chain.
    pub cert: PathBuf,
    /// Private key.
    pub key: PathBuf,
    /// Authorities whose client certificates are accepted; set, clients must present one (mutual TLS).
    pub client_ca: Option<PathBuf>,
}

/// `[[route]]`: a filter and a destination.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    /// A unique name, used in delivery records.
    pub name: String,
    /// Message types (MSH-9-1) to take; empty: any.
    #[serde(default)]
    pub types: Vec<String>,
    /// Trigger events (MSH-9-2) to take; empty: any.
    #[serde(default)]
    pub triggers: Vec<String>,
    /// Senders (MSH-3-1, or `APP@FACILITY` with MSH-4-1) to take; empty: any.
    #[serde(default)]
    pub senders: Vec<String>,
    /// Deliver to this MLLP listener (`host:port`).
    pub mllp: Option<String>,
    /// Deliver by HTTP POST to this URL.
    pub http: Option<String>,
    /// Deliver as one file per message into this directory.
    pub dir: Option<PathBuf>,
    /// Deliver each message's FHIR R4 Bundle (by the HL7 v2-to-FHIR guide) as a transaction, POSTed to this FHIR
    /// server's base URL.
    pub fhir: Option<String>,
    /// What a `dir` route writes: `hl7` (the message's bytes, the default) or `fhir-json` (its FHIR Bundle).
    pub format: Option<String>,
    /// Deliver to an Apache Kafka topic (idempotent producer, `acks=all`).
    pub kafka: Option<KafkaRouteConfig>,
}

/// A Kafka route's destination: `kafka = { brokers = "host:9092", topic = "hl7.adt", key = "control_id" }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaRouteConfig {
    /// Bootstrap servers, `host:port[,host:port...]`.
    pub brokers: String,
    /// The topic messages are produced to.
    pub topic: String,
    /// The record key.
    #[serde(default)]
    pub key: KafkaKey,
    /// The record value.
    #[serde(default)]
    pub value: KafkaValue,
    /// Further librdkafka producer settings (`"compression.type" = "zstd"`, security settings...); they cannot
    /// turn off idempotence or `acks=all`.
    #[serde(default)]
    pub properties: std::collections::BTreeMap<String, String>,
}

/// What a Kafka record's key is. The key picks the partition, so it also decides what keeps its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum KafkaKey {
    /// The sender and MSH-10, `SENDER/CONTROL-ID` (the default): the same message sent twice has the same key.
    #[default]
    ControlId,
    /// Thoth's message id (decimal): unique per stored message.
    MessageId,
    /// No key: records spread over the partitions.
    None,
}

/// What a Kafka record's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum KafkaValue {
    /// The message's bytes as received (the default).
    #[default]
    Raw,
    /// The message's JSON view (`thoth hl7 json`).
    Json,
    /// Its FHIR R4 Bundle by the HL7 v2-to-FHIR guide (a `message` Bundle, the same bytes a `fhir-json` dir
    /// route writes).
    Fhir,
}

/// `[[kafka_source]]`: a topic whose records are HL7 v2 messages (raw bytes), consumed into the engine as if they
/// had arrived over MLLP. An offset is committed only once the message it covers is durable in the store.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaSourceConfig {
    /// Bootstrap servers, `host:port[,host:port...]`.
    pub brokers: String,
    /// The topic to consume.
    pub topic: String,
    /// The consumer group (its committed offsets say where a restart resumes).
    pub group: String,
    /// Further librdkafka consumer settings; they cannot turn on automatic offset storing.
    #[serde(default)]
    pub properties: std::collections::BTreeMap<String, String>,
}

impl EngineConfig {
    /// Reads a TOML configuration.
    pub fn from_toml(text: &str) -> Result<EngineConfig, EngineError> {
        Self::parse(text, Path::new(""))
    }

    /// Reads a TOML configuration file.
    pub fn from_file(path: &Path) -> Result<EngineConfig, EngineError> {
        let text = std::fs::read_to_string(path).map_err(|e| EngineError::Config {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
        Self::parse(&text, path)
    }

    fn parse(text: &str, path: &Path) -> Result<EngineConfig, EngineError> {
        let bad = |detail: String| EngineError::Config {
            path: path.to_path_buf(),
            detail,
        };
        let mut config: EngineConfig = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        if let Some(name) = &config.to_fhir.time_zone {
            config.to_fhir.zone =
                Some(v2fhir::time_zone(name).map_err(|e| bad(format!("[to_fhir] {e}")))?);
        }
        let mut names = std::collections::HashSet::new();
        for route in &config.routes {
            if !names.insert(route.name.as_str()) {
                return Err(bad(format!("two routes are named {:?}", route.name)));
            }
            let targets = [
                route.mllp.is_some(),
                route.http.is_some(),
                route.dir.is_some(),
                route.fhir.is_some(),
                route.kafka.is_some(),
            ];
            if targets.iter().filter(|t| **t).count() != 1 {
                return Err(bad(format!(
                    "route {:?} needs exactly one of `mllp`, `http`, `dir`, `fhir`, `kafka`",
                    route.name
                )));
            }
            if let Some(k) = &route.kafka {
                check_kafka(&k.brokers, &k.topic, &k.properties)
                    .map_err(|e| bad(format!("route {:?}: {e}", route.name)))?;
            }
            match (&route.format, &route.dir) {
                (None, _) => {}
                (Some(f), Some(_)) if f == "hl7" || f == "fhir-json" => {}
                (Some(f), Some(_)) => {
                    return Err(bad(format!(
                        "route {:?}: format {f:?} is not one of \"hl7\", \"fhir-json\"",
                        route.name
                    )));
                }
                (Some(_), None) => {
                    return Err(bad(format!(
                        "route {:?}: `format` applies to `dir` routes only",
                        route.name
                    )));
                }
            }
        }
        for (i, source) in config.kafka_sources.iter().enumerate() {
            check_kafka(&source.brokers, &source.topic, &source.properties)
                .map_err(|e| bad(format!("kafka_source {}: {e}", i + 1)))?;
            if source.group.trim().is_empty() {
                return Err(bad(format!("kafka_source {}: `group` is empty", i + 1)));
            }
        }
        config.validation.check().map_err(bad)?;
        if config.delivery.max_attempts == 0 {
            return Err(bad("delivery.max_attempts must be at least 1".into()));
        }
        Ok(config)
    }

    /// Whether anything in this configuration needs the Kafka client.
    pub fn uses_kafka(&self) -> bool {
        !self.kafka_sources.is_empty() || self.routes.iter().any(|r| r.kafka.is_some())
    }

    /// The MLLP listener configuration, with TLS PEM files read.
    pub fn listener_config(&self) -> Result<mllp::ListenerConfig, EngineError> {
        let m = &self.mllp;
        let secs = |s: u64| (s > 0).then(|| Duration::from_secs(s));
        let tls = match &m.tls {
            None => None,
            Some(files) => {
                let read = |p: &PathBuf| {
                    std::fs::read(p).map_err(|e| EngineError::Config {
                        path: p.clone(),
                        detail: e.to_string(),
                    })
                };
                let ca = files.client_ca.as_ref().map(read).transpose()?;
                let config =
                    mllp::server_tls_config(&read(&files.cert)?, &read(&files.key)?, ca.as_deref())
                        .map_err(|e| EngineError::Config {
                            path: files.cert.clone(),
                            detail: e.to_string(),
                        })?;
                Some(config)
            }
        };
        Ok(mllp::ListenerConfig {
            frame: mllp::FrameConfig {
                max_frame: m.max_frame_bytes,
                junk: if m.reject_junk {
                    mllp::JunkPolicy::Reject
                } else {
                    mllp::JunkPolicy::Skip
                },
                idle_timeout: secs(m.idle_timeout_secs),
                in_frame_timeout: secs(m.in_frame_timeout_secs),
                write_timeout: secs(m.write_timeout_secs),
            },
            tls,
            commit_acks: m.commit_acks,
            frame_deadline: secs(m.frame_deadline_secs),
            max_connections: m.max_connections.max(1),
            junk_log_interval: Duration::from_secs(m.junk_log_interval_secs.max(1)),
            ..Default::default()
        })
    }
}

/// The checks a Kafka route and a Kafka source share; librdkafka would otherwise only say so at the first
/// delivery, or never (an empty topic name is retried forever).
fn check_kafka(
    brokers: &str,
    topic: &str,
    properties: &std::collections::BTreeMap<String, String>,
) -> Result<(), String> {
    if !cfg!(feature = "kafka") {
        return Err("this build of Thoth has no Kafka support (the `kafka` cargo feature)".into());
    }
    if brokers.trim().is_empty() {
        return Err("`brokers` is empty".into());
    }
    // Kafka's own rule for topic names.
    let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if topic.is_empty()
        || topic.len() > 249
        || !topic.chars().all(legal)
        || topic == "."
        || topic == ".."
    {
        return Err(format!(
            "topic {topic:?} is not a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -)"
        ));
    }
    // What the delivery guarantee rests on is not for a property to change.
    for fixed in [
        "enable.idempotence",
        "acks",
        "request.required.acks",
        "enable.auto.offset.store",
        "bootstrap.servers",
        "group.id",
    ] {
        if properties.contains_key(fixed) {
            return Err(format!(
                "property {fixed:?} is set by Thoth and cannot be changed"
            ));
        }
    }
    Ok(())
}
