//! The engine: receive (parse, store, acknowledge), route, and answer queries.

use crate::config::{AckTiming, DuplicateAction, EngineConfig};
use crate::counters::Counters;
use crate::delivery;
use crate::error::EngineError;
use crate::record::{MessageId, Page, Query, Stats, StoredMessage};
use crate::route::{Header, Route};
use crate::store::{Inserted, MetaRecord, NewMessage, Store, now_ms};
use crate::validation::ValidationMode;
use bytes::Bytes;
use hl7v2::{AckCode, AckError, AckMode, ErrorCode, ErrorLocation, IssueSeverity, Message, Report};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, watch};

/// The fields and segments a received message may have to be parsed. The parser's index takes about 8 bytes a
/// field: a 16 MiB frame of separators alone would take some 130 MB while it is parsed and validated, per
/// connection. No real message comes near (a large message is an attachment: a few hundred fields); one that
/// passes is stored whole, as received, and rejected (AR/CR) with its header read for the acknowledgement.
pub const MAX_ELEMENTS: usize = 1_000_000;

/// The bytes of `raw` that hold its header segment, at most 64 KiB of them: what a message refused before
/// parsing is read by for its acknowledgement (MSH-10, the sender, the acknowledgement mode).
fn header_bytes(raw: &[u8]) -> &[u8] {
    let head = &raw[..raw.len().min(64 << 10)];
    let end = memchr::memchr2(b'\r', b'\n', head).unwrap_or(head.len());
    &head[..end]
}

fn too_many_text(elements: usize) -> String {
    format!(
        "the message has {elements} fields and segments; at most {MAX_ELEMENTS} are parsed (it is stored as \
         received)"
    )
}

/// The interface engine: a durable store, duplicate detection, routes and their delivery workers.
///
/// Cheap to clone (an `Arc`). [`Engine::open`] must run inside a tokio runtime: it starts one delivery task per
/// route, which first resumes the deliveries a previous run left pending.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) store: Store,
    pub(crate) config: EngineConfig,
    pub(crate) routes: Vec<Route>,
    queues: HashMap<String, mpsc::UnboundedSender<MessageId>>,
    pub(crate) counters: Arc<Counters>,
    /// Receivers waiting for a delivery's outcome (`after-processing` acknowledgements).
    waiters: Mutex<Waiters>,
    stop: watch::Sender<bool>,
    workers: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Inner {
    /// The exact bytes of a stored message, read on the blocking pool: a read is up to 16 MiB from the log with
    /// its checksum, long enough to stall the other tasks of an async worker.
    pub(crate) async fn raw_off_runtime(
        self: &Arc<Self>,
        id: MessageId,
    ) -> Result<Option<Vec<u8>>, EngineError> {
        let inner = Arc::clone(self);
        tokio::task::spawn_blocking(move || inner.store.raw(id))
            .await
            .map_err(|e| EngineError::store("read", e))?
    }
}

/// Who waits for the outcome of each (message, route) delivery.
type Waiters = HashMap<(MessageId, String), Vec<oneshot::Sender<bool>>>;

/// What [`Engine::receive`] did with a message.
#[derive(Debug, Clone)]
pub struct Receipt {
    /// The acknowledgement to send back (`None` when MSH-15/16 ask for none).
    pub ack: Option<Vec<u8>>,
    /// The store's id, once it is known (with `on-receipt` acknowledgements it is not).
    pub id: Option<MessageId>,
    /// Whether the message is safely stored (the MLLP release 2 commit acknowledgement).
    pub committed: bool,
    /// The earlier message this one duplicates, if any.
    pub duplicate_of: Option<MessageId>,
}

impl Engine {
    /// Opens the store in `dir` (created if missing) and starts one delivery task per route.
    pub fn open(dir: &Path, config: EngineConfig) -> Result<Engine, EngineError> {
        let counters = Arc::new(Counters::with_routes(
            config.routes.iter().map(|r| r.name.as_str()),
        ));
        let store = Store::open(dir, &config.store, counters.clone())?;
        let routes: Vec<Route> = config
            .routes
            .iter()
            .map(|r| Route {
                name: r.name.clone(),
                config: r.clone(),
            })
            .collect();
        let mut queues = HashMap::new();
        let mut receivers = Vec::new();
        for route in &routes {
            let (tx, rx) = mpsc::unbounded_channel();
            queues.insert(route.name.clone(), tx);
            receivers.push(rx);
        }
        // Resume what a previous run left pending, in arrival order, before any new message.
        let mut resumed = 0usize;
        for (id, route) in store.pending()? {
            match queues.get(&route) {
                Some(q) => {
                    let _ = q.send(id);
                    counters.route_queued(&route, 1);
                    resumed += 1;
                }
                None => {
                    tracing::warn!(%id, route, "pending delivery for a route no longer configured")
                }
            }
        }
        if resumed > 0 {
            tracing::info!(resumed, "resuming pending deliveries");
        }
        let (stop, _) = watch::channel(false);
        let inner = Arc::new(Inner {
            store,
            config,
            routes,
            queues,
            counters,
            waiters: Mutex::new(HashMap::new()),
            stop,
            workers: Mutex::new(Vec::new()),
        });
        let mut workers = Vec::new();
        for (index, rx) in receivers.into_iter().enumerate() {
            let stop = inner.stop.subscribe();
            #[cfg(feature = "kafka")]
            if inner.routes[index].config.kafka.is_some() {
                workers.push(tokio::spawn(crate::kafka::deliver(
                    inner.clone(),
                    index,
                    rx,
                    stop,
                )));
                continue;
            }
            workers.push(tokio::spawn(delivery::run(inner.clone(), index, rx, stop)));
        }
        let engine = Engine { inner };
        #[cfg(feature = "kafka")]
        for source in &engine.inner.config.kafka_sources {
            let stop = engine.inner.stop.subscribe();
            workers.push(tokio::spawn(crate::kafka::consume(
                engine.clone(),
                source.clone(),
                stop,
            )));
        }
        *engine.inner.workers.lock().expect("workers lock") = workers;
        Ok(engine)
    }

    /// The configuration the engine runs with.
    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    /// Validates a message under the profile `[validation]` gives its message type and sender (whatever the
    /// mode: the mode only decides what receiving does with the report).
    pub fn validate(&self, msg: &Message<'_>) -> Report {
        let profile = self.inner.config.validation.profile(&Header::read(msg));
        hl7v2::validate(msg, &profile)
    }

    /// Receives one message: parses it leniently, validates it when `[validation]` asks for it, stores the exact
    /// bytes, queues it on the matching routes and builds the acknowledgement, when the configured timing allows.
    pub async fn receive(&self, raw: Bytes, peer: &str) -> Receipt {
        self.receive_timed(raw, peer, self.inner.config.ack.timing)
            .await
    }

    /// Receives one message from a source that must know it is durable before it lets go of it (a Kafka
    /// source commits its offset then): as [`Engine::receive`], answering once the message is stored whatever
    /// `[ack] timing` says, and without waiting for its deliveries.
    #[cfg_attr(not(feature = "kafka"), allow(dead_code))]
    pub(crate) async fn receive_durable(&self, raw: Bytes, peer: &str) -> Receipt {
        self.receive_timed(raw, peer, AckTiming::AfterDurable).await
    }

    async fn receive_timed(&self, raw: Bytes, peer: &str, timing: AckTiming) -> Receipt {
        let inner = &self.inner;
        inner.counters.received.fetch_add(1, Ordering::Relaxed);
        // A message of more elements than [`MAX_ELEMENTS`] is not parsed: its header alone is.
        let too_many = hl7v2::elements_over(&raw, MAX_ELEMENTS);
        let msg = Message::parse(if too_many.is_some() {
            header_bytes(&raw)
        } else {
            &raw
        });
        let header = Header::read(&msg);
        let parse_errors = msg
            .diagnostics()
            .iter()
            .filter(|d| d.severity() == hl7v2::Severity::Error)
            .count();
        let has_header = msg.segment(0).is_some_and(|s| s.id_bytes() == b"MSH");
        // Every version requires the message type and the control id: without them nothing can route, deduplicate
        // or acknowledge the message (MSA-2 echoes MSH-10), so it is refused whatever the validation mode.
        let missing: Vec<(usize, &str)> = [(9, "message type"), (10, "message control id")]
            .into_iter()
            .filter(|(f, _)| {
                has_header
                    && msg
                        .segment(0)
                        .and_then(|s| s.field(*f))
                        .is_none_or(|v| v.text().trim().is_empty())
            })
            .collect();
        let rejected = too_many.is_some() || parse_errors > 0 || !has_header || !missing.is_empty();
        let enhanced = msg.ack_mode() == AckMode::Enhanced;
        let mode = inner.config.validation.mode;
        // Validated only when it parsed: an unparseable message is rejected whatever its content.
        let report = (mode != ValidationMode::Off && !rejected).then(|| {
            let report = hl7v2::validate(&msg, &inner.config.validation.profile(&header));
            log_issues(&header, &report);
            report
        });
        let invalid =
            mode == ValidationMode::Reject && report.as_ref().is_some_and(|r| !r.is_valid());
        // Refused messages are stored like any other (nothing received is lost) but neither routed nor deduplicated.
        let refused = rejected || invalid;
        let routes: Vec<String> = if refused {
            Vec::new()
        } else {
            inner
                .routes
                .iter()
                .filter(|r| r.matches(&header))
                .map(|r| r.name.clone())
                .collect()
        };
        let note = if rejected {
            Some(if let Some(elements) = too_many {
                too_many_text(elements)
            } else if !has_header {
                "no MSH segment".to_string()
            } else {
                let mut parts = Vec::new();
                if parse_errors > 0 {
                    parts.push(format!("{parse_errors} parse error(s)"));
                }
                if !missing.is_empty() {
                    let fields: Vec<String> =
                        missing.iter().map(|(f, _)| format!("MSH-{f}")).collect();
                    parts.push(format!("{} empty", fields.join(" and ")));
                }
                parts.join("; ")
            })
        } else {
            report.as_ref().filter(|r| !r.issues.is_empty()).map(|r| {
                format!(
                    "validation: {} error(s), {} warning(s)",
                    r.count(IssueSeverity::Error),
                    r.count(IssueSeverity::Warning)
                )
            })
        };
        let dup = &inner.config.duplicates;
        let dedup_key = (!refused && dup.window_secs > 0 && !header.control_id.is_empty())
            .then(|| format!("{}\x1f{}", header.sender, header.control_id));
        let new = NewMessage {
            raw: raw.clone(),
            meta: MetaRecord {
                received_ms: now_ms(),
                peer: peer.to_string(),
                sender: header.sender.clone(),
                message_type: header.message_type.clone(),
                trigger: header.trigger.clone(),
                control_id: header.control_id.clone(),
                status: if refused { "rejected" } else { "stored" }.into(),
                duplicate_of: None,
                parse_errors: parse_errors as u32,
                size: raw.len() as u64,
                note,
            },
            dedup_key,
            dedup_window_ms: dup.window_secs.saturating_mul(1000),
            routes,
            route_duplicates: dup.action == DuplicateAction::Keep,
        };
        if refused {
            inner.counters.rejected.fetch_add(1, Ordering::Relaxed);
        }
        let submitted = Instant::now();
        let pending = match inner.store.insert(new) {
            Ok(rx) => rx,
            Err(e) => return self.failed(&msg, enhanced, &e),
        };
        let refuse = || {
            if let (false, Some(report)) = (rejected, &report) {
                return invalid_ack(&msg, enhanced, report);
            }
            let code = if enhanced { AckCode::CR } else { AckCode::AR };
            let mut ack = msg.ack(code).errors_from_diagnostics();
            for &(field, what) in &missing {
                ack = ack.error(AckError::new(
                    ErrorCode::RequiredFieldMissing,
                    ErrorLocation {
                        segment_id: *b"MSH",
                        sequence: 1,
                        field,
                        ..ErrorLocation::default()
                    },
                    format!("MSH-{field} ({what}) is required"),
                ));
            }
            let ack = if let Some(elements) = too_many {
                ack.error(AckError::new(
                    ErrorCode::ApplicationInternalError,
                    ErrorLocation::default(),
                    too_many_text(elements),
                ))
            } else if has_header {
                ack
            } else {
                ack.error(AckError::new(
                    ErrorCode::SegmentSequenceError,
                    ErrorLocation::default(),
                    "the message does not start with an MSH segment",
                ))
            };
            ack.build()
        };
        if timing == AckTiming::OnReceipt {
            let this = self.clone();
            tokio::spawn(async move {
                if let Ok(Ok(inserted)) = pending.await {
                    this.inner
                        .counters
                        .store_latency
                        .observe(submitted.elapsed());
                    this.queued(&inserted);
                }
            });
            let ack = if refused {
                refuse()
            } else {
                Counters::add(&inner.counters.acked, 1);
                accept(&msg, enhanced)
            };
            return Receipt {
                ack: wanted(&msg, enhanced, ack),
                id: None,
                committed: false,
                duplicate_of: None,
            };
        }
        let inserted = match pending.await {
            Ok(Ok(inserted)) => {
                inner.counters.store_latency.observe(submitted.elapsed());
                inserted
            }
            Ok(Err(e)) => return self.failed(&msg, enhanced, &e),
            Err(_) => return self.failed(&msg, enhanced, &EngineError::ShuttingDown),
        };
        let waits = if timing == AckTiming::AfterProcessing {
            self.wait_for(&inserted)
        } else {
            Vec::new()
        };
        self.queued(&inserted);
        let ack = if refused {
            refuse()
        } else if waits.is_empty() {
            Counters::add(&inner.counters.acked, 1);
            accept(&msg, enhanced)
        } else {
            let limit = Duration::from_millis(inner.config.ack.processing_timeout_ms);
            let all = futures_all(waits);
            match tokio::time::timeout(limit, all).await {
                Ok(true) => {
                    Counters::add(&inner.counters.acked, 1);
                    accept(&msg, enhanced)
                }
                Ok(false) => error_ack(&msg, enhanced, "stored, but a delivery failed"),
                Err(_) => error_ack(&msg, enhanced, "stored, but not yet delivered"),
            }
        };
        Receipt {
            ack: wanted(&msg, enhanced, ack),
            id: Some(inserted.id),
            committed: true,
            duplicate_of: inserted.duplicate_of,
        }
    }

    /// Receives a frame that exceeded the size limit: stores its head (status `rejected`) and answers AR/CR.
    pub async fn receive_oversized(&self, head: Bytes, len: usize, peer: &str) -> Receipt {
        let inner = &self.inner;
        inner.counters.received.fetch_add(1, Ordering::Relaxed);
        inner.counters.rejected.fetch_add(1, Ordering::Relaxed);
        let msg = Message::parse(&head);
        let header = Header::read(&msg);
        let enhanced = msg.ack_mode() == AckMode::Enhanced;
        let text = format!(
            "message of {len} bytes exceeds the limit of {} bytes",
            inner.config.mllp.max_frame_bytes
        );
        let new = NewMessage {
            raw: head.clone(),
            meta: MetaRecord {
                received_ms: now_ms(),
                peer: peer.to_string(),
                sender: header.sender,
                message_type: header.message_type,
                trigger: header.trigger,
                control_id: header.control_id,
                status: "rejected".into(),
                size: len as u64,
                note: Some(format!(
                    "{text}; only the first {} bytes are stored",
                    head.len()
                )),
                ..Default::default()
            },
            dedup_key: None,
            dedup_window_ms: 0,
            routes: Vec::new(),
            route_duplicates: false,
        };
        let stored = match inner.store.insert(new) {
            Ok(rx) => matches!(rx.await, Ok(Ok(_))),
            Err(_) => false,
        };
        let code = if enhanced { AckCode::CR } else { AckCode::AR };
        let ack = msg
            .ack(code)
            .error(AckError::new(
                ErrorCode::ApplicationInternalError,
                ErrorLocation::default(),
                text,
            ))
            .build();
        Receipt {
            ack: Some(ack),
            id: None,
            committed: stored,
            duplicate_of: None,
        }
    }

    fn failed(&self, msg: &Message<'_>, enhanced: bool, e: &EngineError) -> Receipt {
        tracing::error!("message not stored: {e}");
        let code = if enhanced { AckCode::CE } else { AckCode::AE };
        let ack = msg
            .ack(code)
            .error(AckError::new(
                ErrorCode::ApplicationInternalError,
                ErrorLocation::default(),
                format!("not stored: {e}"),
            ))
            .build();
        Receipt {
            ack: Some(ack),
            id: None,
            committed: false,
            duplicate_of: None,
        }
    }

    /// Counts a duplicate and hands a stored message to its routes' delivery tasks.
    fn queued(&self, inserted: &Inserted) {
        if let Some(first) = inserted.duplicate_of {
            self.inner
                .counters
                .duplicates
                .fetch_add(1, Ordering::Relaxed);
            tracing::info!(id = %inserted.id, duplicate_of = %first, "duplicate message");
        }
        Counters::add(&self.inner.counters.routed, inserted.routes.len() as u64);
        for route in &inserted.routes {
            if let Some(q) = self.inner.queues.get(route) {
                let _ = q.send(inserted.id);
                self.inner.counters.route_queued(route, 1);
            }
        }
    }

    fn wait_for(&self, inserted: &Inserted) -> Vec<oneshot::Receiver<bool>> {
        let mut waiters = self.inner.waiters.lock().expect("waiters lock");
        inserted
            .routes
            .iter()
            .map(|route| {
                let (tx, rx) = oneshot::channel();
                waiters
                    .entry((inserted.id, route.clone()))
                    .or_default()
                    .push(tx);
                rx
            })
            .collect()
    }

    /// Messages matching `query`, newest first, with the total count.
    pub fn list(&self, query: &Query) -> Result<Page, EngineError> {
        self.inner.store.list(query)
    }

    /// One stored message with its raw bytes and delivery history.
    pub fn get(&self, id: MessageId) -> Result<Option<StoredMessage>, EngineError> {
        self.inner.store.get(id)
    }

    /// Queues a stored message again on every route that matches it now; returns those routes' names.
    pub async fn replay(&self, id: MessageId) -> Result<Vec<String>, EngineError> {
        let raw = self
            .inner
            .raw_off_runtime(id)
            .await?
            .ok_or(EngineError::NotFound(id.0))?;
        let msg = Message::parse(&raw);
        let header = Header::read(&msg);
        let routes: Vec<String> = self
            .inner
            .routes
            .iter()
            .filter(|r| r.matches(&header))
            .map(|r| r.name.clone())
            .collect();
        let routes = self.inner.store.requeue(id, routes).await?;
        Counters::add(&self.inner.counters.routed, routes.len() as u64);
        for route in &routes {
            if let Some(q) = self.inner.queues.get(route) {
                let _ = q.send(id);
                self.inner.counters.route_queued(route, 1);
            }
        }
        Ok(routes)
    }

    /// Counters and latency histograms since the engine started.
    pub fn stats(&self) -> Stats {
        self.inner.counters.snapshot()
    }

    /// Stops the delivery tasks (a delivery in flight stays pending and is retried on the next start), commits what
    /// the store has and closes it.
    pub async fn shutdown(&self) {
        let _ = self.inner.stop.send(true);
        let workers = std::mem::take(&mut *self.inner.workers.lock().expect("workers lock"));
        for w in workers {
            let _ = tokio::time::timeout(Duration::from_secs(5), w).await;
        }
        let inner = self.inner.clone();
        let _ = tokio::task::spawn_blocking(move || inner.store.close()).await;
    }
}

impl Inner {
    /// Tells whoever waits for this delivery how it ended.
    pub(crate) fn settled(&self, id: MessageId, route: &str, delivered: bool) {
        let waiters = self
            .waiters
            .lock()
            .expect("waiters lock")
            .remove(&(id, route.to_string()));
        for w in waiters.into_iter().flatten() {
            let _ = w.send(delivered);
        }
    }
}

impl mllp::Handler for Engine {
    async fn handle(&self, inbound: mllp::Inbound, peer: &mllp::Peer) -> mllp::Reply {
        let peer = peer.addr.to_string();
        let receipt = match inbound {
            mllp::Inbound::Message(raw) => self.receive(raw, &peer).await,
            mllp::Inbound::Oversized { head, len } => {
                self.receive_oversized(head, len, &peer).await
            }
            _ => return mllp::Reply::default(),
        };
        mllp::Reply {
            payload: receipt.ack.map(Bytes::from),
            committed: receipt.committed,
        }
    }
}

fn accept(msg: &Message<'_>, enhanced: bool) -> Vec<u8> {
    msg.ack(if enhanced { AckCode::CA } else { AckCode::AA })
        .build()
}

/// Most ERR segments in the acknowledgement of an invalid message: a message with an error in each of thousands
/// of segments must not get an acknowledgement bigger than itself. MSA-3 gives the full count.
pub(crate) const MAX_ACK_ERRORS: usize = 50;

/// AE/CE for a message that does not validate: one ERR per error-severity issue (ERR-2 location, ERR-3 code).
/// Application error rather than reject: the message was read and stored; AR/CR stays for what could not be read.
fn invalid_ack(msg: &Message<'_>, enhanced: bool, report: &Report) -> Vec<u8> {
    let code = if enhanced { AckCode::CE } else { AckCode::AE };
    let errors = report.count(IssueSeverity::Error);
    let shown = if errors > MAX_ACK_ERRORS {
        format!("; the first {MAX_ACK_ERRORS} are listed")
    } else {
        String::new()
    };
    let mut ack = msg.ack(code).text(format!(
        "the message does not validate against HL7 v{} {}: {errors} error(s){shown}",
        report.version,
        report.structure.as_deref().unwrap_or("(unknown structure)"),
    ));
    for issue in report
        .issues
        .iter()
        .filter(|i| i.severity == IssueSeverity::Error)
        .take(MAX_ACK_ERRORS)
    {
        ack = ack.error(issue.to_ack_error());
    }
    ack.build()
}

/// One log line per message with issues; each issue at debug level.
fn log_issues(header: &Header, report: &Report) {
    let (errors, warnings) = (
        report.count(IssueSeverity::Error),
        report.count(IssueSeverity::Warning),
    );
    if errors + warnings == 0 {
        return;
    }
    let first = report
        .issues
        .iter()
        .find(|i| i.severity == IssueSeverity::Error)
        .or(report.issues.first())
        .map(|i| format!("{} {}: {}", i.severity.as_str(), i.path, i.message))
        .unwrap_or_default();
    let structure = report.structure.as_deref().unwrap_or("");
    if errors > 0 {
        tracing::warn!(
            control_id = header.control_id,
            sender = header.sender,
            structure,
            errors,
            warnings,
            first,
            "message does not validate"
        );
    } else {
        tracing::info!(
            control_id = header.control_id,
            sender = header.sender,
            structure,
            warnings,
            first,
            "message validates with warnings"
        );
    }
    for i in &report.issues {
        tracing::debug!(
            control_id = header.control_id,
            severity = i.severity.as_str(),
            code = i.code().code(),
            rule = i.rule.name(),
            path = i.path,
            "{}",
            i.message
        );
    }
}

fn error_ack(msg: &Message<'_>, enhanced: bool, text: &str) -> Vec<u8> {
    let code = if enhanced { AckCode::CE } else { AckCode::AE };
    msg.ack(code)
        .error(AckError::new(
            ErrorCode::ApplicationInternalError,
            ErrorLocation::default(),
            text,
        ))
        .build()
}

/// Drops the ACK when, in enhanced mode, MSH-15 says not to send this kind (`NE`, `ER` on success, `SU` on error).
fn wanted(msg: &Message<'_>, enhanced: bool, ack: Vec<u8>) -> Option<Vec<u8>> {
    if !enhanced {
        return Some(ack);
    }
    let code = Message::parse(&ack)
        .get("MSA-1")
        .and_then(|c| AckCode::parse(&c));
    match code {
        Some(code) if !msg.ack_required(code) => None,
        _ => Some(ack),
    }
}

/// True when every receiver answered true.
async fn futures_all(waits: Vec<oneshot::Receiver<bool>>) -> bool {
    let mut all = true;
    for w in waits {
        all &= w.await.unwrap_or(false);
    }
    all
}
