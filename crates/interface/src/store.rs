//! The durable message store: an append-only log ([`crate::log`]) that holds the raw bytes and is the durable
//! point, and redb tables (headers, indexes, deliveries) brought up to date from it, written by one thread that
//! commits batches (group commit).
//!
//! Every write goes through the writer thread. It takes one operation, then whatever else is already queued (up to
//! a batch limit), applies them all to one redb write transaction, appends one log record per operation, syncs the
//! log once and then commits the transaction without a sync of its own: with N connections waiting, one
//! `fdatasync` of the log covers N messages. Replies are sent only after that, so "acknowledged" implies "in the
//! synced log" and "visible to readers" implies the same. Once a second (and on close) a checkpoint makes the redb
//! tables durable, recording the log position they cover; after a crash, [`Store::open`] replays the log from
//! there. Reads use their own read transactions and never wait for the writer (MVCC).

use crate::config::StoreConfig;
use crate::counters::Counters;
use crate::error::EngineError;
use crate::index;
use crate::log::{Loc, Log, LogReader, Pos, SEGMENT_HEADER};
use crate::record::{
    Attempt, Delivery, DeliveryStatus, MessageId, MessageSummary, Page, Query, Status,
    StoredMessage,
};
use bytes::Bytes;
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Raw bytes as received, by message id: stores of format 1 and 2 only. Format 3 keeps them in the log.
const RAW: TableDefinition<u64, &[u8]> = TableDefinition::new("raw");
/// Where a message's log record is: (segment, offset, length).
const RAW_AT: TableDefinition<u64, (u64, u64, u64)> = TableDefinition::new("raw_at");
/// [`MetaRecord`] (JSON) by message id.
pub(crate) const META: TableDefinition<u64, &[u8]> = TableDefinition::new("meta");
/// `sender \x1f control id` -> (first message id, received ms): duplicate detection.
const DEDUP: TableDefinition<&str, (u64, u64)> = TableDefinition::new("dedup");
/// [`DeliveryRecord`] (JSON) by (message id, route).
const DELIVERY: TableDefinition<(u64, &str), &[u8]> = TableDefinition::new("delivery");
/// The deliveries still to be made, so that a restart finds them without scanning every delivery.
const PENDING: TableDefinition<(u64, &str), ()> = TableDefinition::new("pending");
/// Format version, and the log position the tables cover (`log_segment`, `log_offset`, `log_batch`).
const INFO: TableDefinition<&str, u64> = TableDefinition::new("info");

/// Bump when the layout of a table or record changes incompatibly. 2: the secondary indexes ([`crate::index`]);
/// a version 1 store gets them built when it is opened. 3: raw bytes in the log, `raw_at` their location; a
/// version 1 or 2 store keeps its older messages' bytes in `raw` and takes new ones in the log.
pub(crate) const FORMAT_VERSION: u64 = 3;
const MAX_BATCH: usize = 4096;
/// How often the redb tables are made durable (a checkpoint): bounds how much log a restart after a crash
/// replays, and, without `durable`, how much a machine crash can lose.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// Log record kinds (the first payload byte; 0 is the log's seal).
const REC_INSERT: u8 = 1;
const REC_ATTEMPT: u8 = 2;
const REC_REQUEUE: u8 = 3;
const MAX_HISTORY: usize = 50;
/// The longest a durable commit waits to gather more messages ([`gather`]).
const MAX_GATHER: Duration = Duration::from_millis(2);

/// The on-disk header record of a message (JSON in [`META`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct MetaRecord {
    pub received_ms: u64,
    pub peer: String,
    pub sender: String,
    pub message_type: String,
    pub trigger: String,
    pub control_id: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<u64>,
    pub parse_errors: u32,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct AttemptRecord {
    at_ms: u64,
    ok: bool,
    detail: String,
}

/// The on-disk state of one delivery (JSON in [`DELIVERY`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct DeliveryRecord {
    status: String,
    attempts: u32,
    history: Vec<AttemptRecord>,
}

/// The log record of a stored message, as decided by the writer: replaying it needs no other state.
#[derive(Debug, Serialize, Deserialize)]
struct LogInsert {
    id: u64,
    meta: MetaRecord,
    /// The duplicate-detection key to point at this message (it is the first with its key in the window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dedup: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    routes: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct LogAttempt {
    id: u64,
    route: String,
    at_ms: u64,
    detail: String,
    outcome: u8,
}

#[derive(Debug, Serialize, Deserialize)]
struct LogRequeue {
    id: u64,
    routes: Vec<String>,
    at_ms: u64,
}

/// Insert payload: kind, header length (u32 LE), header JSON, then the raw bytes.
fn encode_insert(rec: &LogInsert, raw: &[u8]) -> Result<Vec<u8>, EngineError> {
    let header = serde_json::to_vec(rec).map_err(|e| EngineError::store("encode", e))?;
    let mut out = Vec::with_capacity(5 + header.len() + raw.len());
    out.push(REC_INSERT);
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(raw);
    Ok(out)
}

/// The header and raw bytes of an insert payload.
fn decode_insert(payload: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_le_bytes(payload.get(1..5)?.try_into().ok()?) as usize;
    let header = payload.get(5..5 + len)?;
    Some((header, &payload[5 + len..]))
}

fn encode_json(kind: u8, value: &impl Serialize) -> Result<Vec<u8>, EngineError> {
    let mut out = vec![kind];
    serde_json::to_writer(&mut out, value).map_err(|e| EngineError::store("encode", e))?;
    Ok(out)
}

fn outcome_code(o: Outcome) -> u8 {
    match o {
        Outcome::Delivered => 0,
        Outcome::Retry => 1,
        Outcome::Dead => 2,
    }
}

/// A message to store.
pub(crate) struct NewMessage {
    pub raw: Bytes,
    pub meta: MetaRecord,
    /// `sender \x1f control id`, when duplicates are detected for it.
    pub dedup_key: Option<String>,
    pub dedup_window_ms: u64,
    /// The routes it matched.
    pub routes: Vec<String>,
    /// Whether a duplicate is routed too.
    pub route_duplicates: bool,
}

/// What storing a message did.
#[derive(Debug, Clone)]
pub(crate) struct Inserted {
    pub id: MessageId,
    pub duplicate_of: Option<MessageId>,
    /// The routes it was queued on (none for a dropped duplicate).
    pub routes: Vec<String>,
}

/// The result of a delivery attempt, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Delivered,
    Retry,
    Dead,
}

enum Op {
    Insert(
        Box<NewMessage>,
        oneshot::Sender<Result<Inserted, EngineError>>,
    ),
    Attempt {
        id: u64,
        route: String,
        at_ms: u64,
        detail: String,
        outcome: Outcome,
        done: oneshot::Sender<Result<(), EngineError>>,
    },
    Requeue {
        id: u64,
        routes: Vec<String>,
        at_ms: u64,
        done: oneshot::Sender<Result<Vec<String>, EngineError>>,
    },
}

/// What an applied operation answers once its batch is committed.
enum Answer {
    Inserted(oneshot::Sender<Result<Inserted, EngineError>>, Inserted),
    Done(oneshot::Sender<Result<(), EngineError>>),
    Requeued(
        oneshot::Sender<Result<Vec<String>, EngineError>>,
        Vec<String>,
    ),
}

impl Answer {
    fn send(self, err: Option<&EngineError>) {
        let fail = || {
            let e = err.expect("called with an error");
            EngineError::Store {
                op: "commit",
                detail: e.to_string(),
            }
        };
        match self {
            Answer::Inserted(tx, v) => {
                drop(tx.send(if err.is_some() { Err(fail()) } else { Ok(v) }))
            }
            Answer::Done(tx) => drop(tx.send(if err.is_some() { Err(fail()) } else { Ok(()) })),
            Answer::Requeued(tx, v) => {
                drop(tx.send(if err.is_some() { Err(fail()) } else { Ok(v) }))
            }
        }
    }
}

/// The store: cheap to share (`Arc`).
pub(crate) struct Store {
    db: Arc<Database>,
    log: Arc<LogReader>,
    tx: std::sync::Mutex<Option<mpsc::Sender<Op>>>,
    writer: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Store {
    /// Opens (or creates) `dir/messages.redb` and the log in `dir/log`, replays the log past the last checkpoint
    /// into the tables, and starts the writer thread.
    pub(crate) fn open(
        dir: &Path,
        config: &StoreConfig,
        counters: Arc<Counters>,
    ) -> Result<Store, EngineError> {
        let path = dir.join("messages.redb");
        let open_err = |detail: String| EngineError::Open {
            path: path.clone(),
            detail,
        };
        std::fs::create_dir_all(dir).map_err(|e| open_err(e.to_string()))?;
        let db = Database::create(&path).map_err(|e| open_err(e.to_string()))?;
        let (mut next_id, from, from_batch) = init(&db, &path)?;
        let (log, recovered) = recover(&db, &path, dir, config, from, from_batch, &mut next_id)?;
        if recovered.records > 0 || recovered.torn_bytes > 0 {
            tracing::info!(
                records = recovered.records,
                torn_bytes = recovered.torn_bytes,
                "message store recovered from its log"
            );
        }
        let reader = log.reader();
        let db = Arc::new(db);
        let (tx, rx) = mpsc::channel();
        let writer_db = db.clone();
        let mode = WriteMode {
            durable: config.durable,
            quick_repair: config.quick_repair,
        };
        let writer = std::thread::Builder::new()
            .name("message-store-writer".into())
            .spawn(move || {
                Writer {
                    db: writer_db,
                    log,
                    next_id,
                    mode,
                    failed: None,
                    syncer: Syncer::start(),
                }
                .run(rx, &counters)
            })
            .map_err(|e| open_err(e.to_string()))?;
        Ok(Store {
            db,
            log: reader,
            tx: std::sync::Mutex::new(Some(tx)),
            writer: std::sync::Mutex::new(Some(writer)),
        })
    }

    fn submit(&self, op: Op) -> Result<(), EngineError> {
        let guard = self.tx.lock().expect("store sender lock");
        let tx = guard.as_ref().ok_or(EngineError::ShuttingDown)?;
        tx.send(op).map_err(|_| EngineError::ShuttingDown)
    }

    /// Stores a message; the answer arrives once it is committed.
    pub(crate) fn insert(
        &self,
        msg: NewMessage,
    ) -> Result<oneshot::Receiver<Result<Inserted, EngineError>>, EngineError> {
        let (tx, rx) = oneshot::channel();
        self.submit(Op::Insert(Box::new(msg), tx))?;
        Ok(rx)
    }

    /// Queues the record of a delivery attempt and its outcome; the answer arrives once it is committed.
    pub(crate) fn record_attempt(
        &self,
        id: MessageId,
        route: &str,
        detail: String,
        outcome: Outcome,
    ) -> Result<oneshot::Receiver<Result<(), EngineError>>, EngineError> {
        let (done, rx) = oneshot::channel();
        self.submit(Op::Attempt {
            id: id.0,
            route: route.to_string(),
            at_ms: now_ms(),
            detail,
            outcome,
            done,
        })?;
        Ok(rx)
    }

    /// Queues a message again on `routes`; answers the routes actually queued.
    pub(crate) async fn requeue(
        &self,
        id: MessageId,
        routes: Vec<String>,
    ) -> Result<Vec<String>, EngineError> {
        let (done, rx) = oneshot::channel();
        self.submit(Op::Requeue {
            id: id.0,
            routes,
            at_ms: now_ms(),
            done,
        })?;
        rx.await.map_err(|_| EngineError::ShuttingDown)?
    }

    /// Stops taking writes, lets the writer commit what it has, and waits for it.
    pub(crate) fn close(&self) {
        self.tx.lock().expect("store sender lock").take();
        if let Some(writer) = self.writer.lock().expect("writer lock").take() {
            let _ = writer.join();
        }
    }

    /// The raw bytes of a message.
    pub(crate) fn raw(&self, id: MessageId) -> Result<Option<Vec<u8>>, EngineError> {
        let txn = self
            .db
            .begin_read()
            .map_err(|e| EngineError::store("read", e))?;
        self.raw_in(&txn, id.0)
    }

    /// From the log, or from the `raw` table for a message stored before format 3.
    fn raw_in(&self, txn: &redb::ReadTransaction, id: u64) -> Result<Option<Vec<u8>>, EngineError> {
        let e = |e: redb::Error| EngineError::store("read", e);
        let at = txn.open_table(RAW_AT).map_err(|x| e(x.into()))?;
        if let Some(v) = at.get(id).map_err(|x| e(x.into()))? {
            let (segment, offset, len) = v.value();
            let payload = self.log.read(Loc {
                segment,
                offset,
                len,
            })?;
            return match decode_insert(&payload) {
                Some((_, raw)) if payload[0] == REC_INSERT => Ok(Some(raw.to_vec())),
                _ => Err(EngineError::store(
                    "reading the message log",
                    format!("the record of message {id} is not a message"),
                )),
            };
        }
        let raw = txn.open_table(RAW).map_err(|x| e(x.into()))?;
        let v = raw.get(id).map_err(|x| e(x.into()))?;
        Ok(v.map(|v| v.value().to_vec()))
    }

    /// Whether the delivery of `id` to `route` is still to be made.
    pub(crate) fn is_pending(&self, id: MessageId, route: &str) -> Result<bool, EngineError> {
        let txn = self
            .db
            .begin_read()
            .map_err(|e| EngineError::store("read", e))?;
        let table = txn
            .open_table(PENDING)
            .map_err(|e| EngineError::store("read", e))?;
        Ok(table
            .get((id.0, route))
            .map_err(|e| EngineError::store("read", e))?
            .is_some())
    }

    /// Every pending delivery, in message order.
    pub(crate) fn pending(&self) -> Result<Vec<(MessageId, String)>, EngineError> {
        let txn = self
            .db
            .begin_read()
            .map_err(|e| EngineError::store("read", e))?;
        let table = txn
            .open_table(PENDING)
            .map_err(|e| EngineError::store("read", e))?;
        let mut out = Vec::new();
        for entry in table.iter().map_err(|e| EngineError::store("read", e))? {
            let (k, _) = entry.map_err(|e| EngineError::store("read", e))?;
            let (id, route) = k.value();
            out.push((MessageId(id), route.to_string()));
        }
        Ok(out)
    }

    /// A message with its deliveries.
    pub(crate) fn get(&self, id: MessageId) -> Result<Option<StoredMessage>, EngineError> {
        let e = |e: redb::Error| EngineError::store("read", e);
        let txn = self.db.begin_read().map_err(|x| e(x.into()))?;
        let meta = txn.open_table(META).map_err(|x| e(x.into()))?;
        let Some(record) = meta.get(id.0).map_err(|x| e(x.into()))? else {
            return Ok(None);
        };
        let summary = summary(id.0, &decode_meta(record.value())?);
        let raw = self.raw_in(&txn, id.0)?.unwrap_or_default();
        let table = txn.open_table(DELIVERY).map_err(|x| e(x.into()))?;
        let mut deliveries = Vec::new();
        for entry in table
            .range((id.0, "")..(id.0 + 1, ""))
            .map_err(|x| e(x.into()))?
        {
            let (k, v) = entry.map_err(|x| e(x.into()))?;
            let record: DeliveryRecord = serde_json::from_slice(v.value())
                .map_err(|x| EngineError::store("decoding a delivery", x))?;
            deliveries.push(Delivery {
                route: k.value().1.to_string(),
                status: DeliveryStatus::parse(&record.status),
                attempts: record.attempts,
                history: record
                    .history
                    .into_iter()
                    .map(|a| Attempt {
                        at_ms: a.at_ms,
                        ok: a.ok,
                        detail: a.detail,
                    })
                    .collect(),
            });
        }
        Ok(Some(StoredMessage {
            summary,
            raw,
            deliveries,
        }))
    }

    /// Messages matching `q`, newest first, from the most selective index the query names.
    pub(crate) fn list(&self, q: &Query) -> Result<Page, EngineError> {
        let txn = self
            .db
            .begin_read()
            .map_err(|e| EngineError::store("read", e))?;
        index::list(&txn, q)
    }
}

pub(crate) fn matches(q: &Query, m: &MetaRecord) -> bool {
    let eq = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
    eq(&q.message_type, &m.message_type)
        && eq(&q.trigger, &m.trigger)
        && eq(&q.control_id, &m.control_id)
        && q.sender
            .as_deref()
            .is_none_or(|s| m.sender == s || m.sender.split('@').next() == Some(s))
        && q.since_ms.is_none_or(|t| m.received_ms >= t)
        && q.until_ms.is_none_or(|t| m.received_ms < t)
        && q.status.is_none_or(|s| s.as_str() == m.status)
}

pub(crate) fn summary(id: u64, m: &MetaRecord) -> MessageSummary {
    MessageSummary {
        id: MessageId(id),
        received_ms: m.received_ms,
        peer: m.peer.clone(),
        sender: m.sender.clone(),
        message_type: m.message_type.clone(),
        trigger: m.trigger.clone(),
        control_id: m.control_id.clone(),
        status: Status::parse(&m.status).unwrap_or(Status::Stored),
        duplicate_of: m.duplicate_of.map(MessageId),
        parse_errors: m.parse_errors,
        size: m.size,
        note: m.note.clone(),
    }
}

pub(crate) fn decode_meta(bytes: &[u8]) -> Result<MetaRecord, EngineError> {
    serde_json::from_slice(bytes).map_err(|e| EngineError::store("decoding a message header", e))
}

/// Creates the tables, checks the format version and returns the next message id and the log position (with its
/// batch number) that the durable tables cover.
fn init(db: &Database, path: &Path) -> Result<(u64, Pos, u64), EngineError> {
    let e = |x: redb::Error| EngineError::Open {
        path: path.to_path_buf(),
        detail: x.to_string(),
    };
    let txn = db.begin_write().map_err(|x| e(x.into()))?;
    let next;
    let from;
    let from_batch;
    let mut upgrade_from_1 = false;
    {
        let mut info = txn.open_table(INFO).map_err(|x| e(x.into()))?;
        let found = info
            .get("format")
            .map_err(|x| e(x.into()))?
            .map(|v| v.value());
        match found {
            Some(FORMAT_VERSION) | Some(2) | None => {}
            Some(1) => upgrade_from_1 = true,
            Some(v) => {
                return Err(EngineError::IncompatibleFormat {
                    path: PathBuf::from(path),
                    found: v,
                    expected: FORMAT_VERSION,
                });
            }
        }
        if found.is_some_and(|v| v < FORMAT_VERSION) {
            tracing::info!(
                from = found.unwrap_or(0),
                "message store upgraded to format {FORMAT_VERSION}: new messages' bytes go to the log"
            );
        }
        info.insert("format", FORMAT_VERSION)
            .map_err(|x| e(x.into()))?;
        let get = |k: &str| -> Result<Option<u64>, EngineError> {
            Ok(info.get(k).map_err(|x| e(x.into()))?.map(|v| v.value()))
        };
        from = Pos {
            segment: get("log_segment")?.unwrap_or(1),
            offset: get("log_offset")?.unwrap_or(SEGMENT_HEADER),
        };
        from_batch = get("log_batch")?.unwrap_or(0);
        let meta = txn.open_table(META).map_err(|x| e(x.into()))?;
        next = meta
            .last()
            .map_err(|x| e(x.into()))?
            .map_or(1, |(k, _)| k.value() + 1);
        txn.open_table(RAW).map_err(|x| e(x.into()))?;
        txn.open_table(RAW_AT).map_err(|x| e(x.into()))?;
        txn.open_table(DEDUP).map_err(|x| e(x.into()))?;
        txn.open_table(DELIVERY).map_err(|x| e(x.into()))?;
        txn.open_table(PENDING).map_err(|x| e(x.into()))?;
        index::create(&txn).map_err(|x| e(x.into()))?;
    }
    if upgrade_from_1 {
        let n = index::rebuild(&txn)?;
        tracing::info!(messages = n, "message store indexes built");
    } else {
        let n = index::backfill(&txn)?;
        if n > 0 {
            tracing::info!(messages = n, "message store: trigger index built");
        }
    }
    txn.commit().map_err(|x| e(x.into()))?;
    Ok((next, from, from_batch))
}

/// Opens the log and replays what it holds past `from` into the tables, in one durable transaction.
fn recover(
    db: &Database,
    path: &Path,
    dir: &Path,
    config: &StoreConfig,
    from: Pos,
    from_batch: u64,
    next_id: &mut u64,
) -> Result<(Log, crate::log::Recovered), EngineError> {
    let e = |x: redb::Error| EngineError::Open {
        path: path.to_path_buf(),
        detail: x.to_string(),
    };
    let mut txn = db.begin_write().map_err(|x| e(x.into()))?;
    let _ = txn.set_durability(Durability::Immediate);
    let max_segment = config.log_segment_mib.clamp(1, 4096) << 20;
    let (log, recovered) = Log::open(&dir.join("log"), max_segment, from, from_batch, |loc, p| {
        replay(&txn, loc, p, next_id)
    })?;
    mark(&txn, &log).map_err(e)?;
    txn.commit().map_err(|x| e(x.into()))?;
    Ok((log, recovered))
}

/// Applies one log record to the tables (recovery after a crash).
fn replay(
    txn: &redb::WriteTransaction,
    loc: Loc,
    payload: &[u8],
    next_id: &mut u64,
) -> Result<(), EngineError> {
    let bad = |detail: String| EngineError::store("replaying the message log", detail);
    match payload[0] {
        REC_INSERT => {
            let (header, _) = decode_insert(payload).ok_or_else(|| bad("short insert".into()))?;
            let rec: LogInsert = serde_json::from_slice(header).map_err(|x| bad(x.to_string()))?;
            write_insert(txn, &rec)?;
            txn.open_table(RAW_AT)
                .map_err(w)?
                .insert(rec.id, (loc.segment, loc.offset, loc.len))
                .map_err(w)?;
            *next_id = (*next_id).max(rec.id + 1);
        }
        REC_ATTEMPT => {
            let a: LogAttempt =
                serde_json::from_slice(&payload[1..]).map_err(|x| bad(x.to_string()))?;
            let outcome = match a.outcome {
                0 => Outcome::Delivered,
                1 => Outcome::Retry,
                _ => Outcome::Dead,
            };
            attempt(txn, a.id, &a.route, a.at_ms, a.detail, outcome)?;
        }
        REC_REQUEUE => {
            let r: LogRequeue =
                serde_json::from_slice(&payload[1..]).map_err(|x| bad(x.to_string()))?;
            requeue(txn, r.id, r.routes, r.at_ms)?;
        }
        kind => return Err(bad(format!("unknown record kind {kind}"))),
    }
    Ok(())
}

/// Records in the transaction the log position it covers: whichever commit becomes durable says where replay starts.
fn mark(txn: &redb::WriteTransaction, log: &Log) -> Result<(), redb::Error> {
    let end = log.end();
    let mut info = txn.open_table(INFO)?;
    info.insert("log_segment", end.segment)?;
    info.insert("log_offset", end.offset)?;
    info.insert("log_batch", log.batch())?;
    Ok(())
}

/// How the writer commits.
#[derive(Debug, Clone, Copy)]
struct WriteMode {
    durable: bool,
    quick_repair: bool,
}

/// The writer thread's state.
struct Writer {
    db: Arc<Database>,
    log: Log,
    next_id: u64,
    mode: WriteMode,
    /// Why the store takes no more writes: the log failed to write or sync, after which what the disk holds is
    /// unknown (a retried `fsync` can report success for pages it already dropped), or a commit failed after its
    /// records were logged. A restart recovers from what the log holds.
    failed: Option<String>,
    syncer: Syncer,
}

/// A thread that syncs the log while the writer commits the tables: the two waits overlap.
struct Syncer {
    files: Option<mpsc::Sender<Arc<std::fs::File>>>,
    done: mpsc::Receiver<std::io::Result<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Syncer {
    fn start() -> Syncer {
        let (files, rx) = mpsc::channel::<Arc<std::fs::File>>();
        let (tx, done) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("message-log-sync".into())
            .spawn(move || {
                for f in rx {
                    if tx.send(f.sync_data()).is_err() {
                        return;
                    }
                }
            })
            .ok();
        Syncer {
            files: thread.as_ref().map(|_| files),
            done,
            thread,
        }
    }

    /// Syncs `file`, on the sync thread when there is one; [`Syncer::wait`] answers.
    fn begin(&self, file: Arc<std::fs::File>) -> Result<(), std::io::Error> {
        match &self.files {
            Some(tx) => tx
                .send(file)
                .map_err(|_| std::io::Error::other("the log sync thread is gone")),
            None => file.sync_data(),
        }
    }

    fn wait(&self) -> std::io::Result<()> {
        if self.files.is_none() {
            return Ok(());
        }
        self.done
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("the log sync thread is gone")))
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        self.files.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Writer {
    fn run(mut self, rx: mpsc::Receiver<Op>, counters: &Counters) {
        let mut last_checkpoint = Instant::now();
        let mut dirty = false;
        let mut batch = Vec::with_capacity(MAX_BATCH);
        // What a synced commit costs lately (a moving average), and how many writers took part in the last cycle
        // (the batch committed plus what arrived meanwhile): together they decide how long to gather before a sync.
        let mut commit_cost = Duration::ZERO;
        let mut expected = 1;
        loop {
            if batch.is_empty() {
                let op = if dirty {
                    let left = CHECKPOINT_EVERY.saturating_sub(last_checkpoint.elapsed());
                    match rx.recv_timeout(left) {
                        Ok(op) => Some(op),
                        Err(mpsc::RecvTimeoutError::Timeout) => None,
                        Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    }
                } else {
                    match rx.recv() {
                        Ok(op) => Some(op),
                        Err(_) => break,
                    }
                };
                match op {
                    Some(op) => batch.push(op),
                    None => {
                        // Idle with tables not yet durable: checkpoint now rather than at the next write.
                        self.checkpoint();
                        last_checkpoint = Instant::now();
                        dirty = false;
                        continue;
                    }
                }
            }
            take_queued(&rx, &mut batch);
            let checkpoint = last_checkpoint.elapsed() >= CHECKPOINT_EVERY;
            let sync = self.mode.durable || checkpoint;
            if sync && batch.len() < expected {
                gather(&rx, &mut batch, expected, (commit_cost / 2).min(MAX_GATHER));
            }
            let size = batch.len();
            let began = Instant::now();
            let result = self.apply_batch(&mut batch, sync, checkpoint);
            let took = began.elapsed();
            counters.commit_latency.observe(took);
            Counters::add(&counters.commits, 1);
            Counters::add(&counters.committed_ops, size as u64);
            if sync {
                Counters::add(&counters.durable_commits, 1);
                commit_cost = (commit_cost * 3 + took) / 4;
            }
            match result {
                Ok(answers) => {
                    if checkpoint {
                        last_checkpoint = Instant::now();
                        dirty = false;
                    } else {
                        dirty = true;
                    }
                    for a in answers {
                        a.send(None);
                    }
                }
                Err((answers, err)) => {
                    tracing::error!("message store commit failed: {err}");
                    for a in answers {
                        a.send(Some(&err));
                    }
                }
            }
            take_queued(&rx, &mut batch);
            expected = (size + batch.len()).min(MAX_BATCH);
        }
        // The channel is closed: make everything durable before the process exits.
        self.checkpoint();
    }

    /// Syncs the log and makes the tables durable, recording the log position they cover.
    fn checkpoint(&mut self) {
        if self.failed.is_some() {
            return;
        }
        if let Err(e) = self.log.sync() {
            self.fail(format!("syncing the message log: {e}"));
            return;
        }
        let done = (|| -> Result<(), redb::Error> {
            let mut txn = self.db.begin_write()?;
            let _ = txn.set_durability(Durability::Immediate);
            txn.set_quick_repair(self.mode.quick_repair);
            mark(&txn, &self.log)?;
            txn.commit()?;
            Ok(())
        })();
        if let Err(e) = done {
            // The log still has everything: the next checkpoint or a restart catches up.
            tracing::error!("message store checkpoint failed: {e}");
        }
    }

    fn fail(&mut self, why: String) {
        tracing::error!("message store stops taking writes: {why}");
        self.failed = Some(why);
        // redb makes its last non-durable commits durable when the database closes; they may name log records
        // that never reached the disk. Kept open until the process ends, it never closes: a restart recovers from
        // the last checkpoint and the log instead.
        std::mem::forget(self.db.clone());
    }

    /// Applies a batch to one transaction, logs it (synced when `sync`), then commits the transaction (durably at
    /// a checkpoint). Nothing is visible to readers, and nobody is answered, before the log write.
    fn apply_batch(&mut self, batch: &mut Vec<Op>, sync: bool, checkpoint: bool) -> BatchResult {
        let mut answers = Vec::with_capacity(batch.len());
        if let Some(why) = &self.failed {
            let err = EngineError::store(
                "write",
                format!("the store stopped taking writes ({why}); restart to recover from the log"),
            );
            answers.extend(batch.drain(..).map(unapplied));
            return Err((answers, err));
        }
        let before = self.next_id;
        let mut failed = None;
        let txn = match self.db.begin_write() {
            Ok(mut txn) => {
                let level = if checkpoint {
                    Durability::Immediate
                } else {
                    Durability::None
                };
                let _ = txn.set_durability(level);
                // On, a checkpoint also saves the allocator state (a second fsync, once a second) and reopening
                // after a crash needs no repair pass over the file.
                txn.set_quick_repair(checkpoint && self.mode.quick_repair);
                Some(txn)
            }
            Err(e) => {
                failed = Some(EngineError::store("begin write", e));
                None
            }
        };
        let mut payloads = Vec::with_capacity(batch.len());
        // (message id, index of its record in `payloads`)
        let mut raws = Vec::new();
        for op in batch.drain(..) {
            match (&txn, &failed) {
                (Some(txn), None) => match apply(txn, op, &mut self.next_id) {
                    Ok((answer, payload, raw_of)) => {
                        if let Some(id) = raw_of {
                            raws.push((id, payloads.len()));
                        }
                        payloads.push(payload);
                        answers.push(answer);
                    }
                    Err((answer, e)) => {
                        answers.push(answer);
                        failed = Some(e);
                    }
                },
                _ => answers.push(unapplied(op)),
            }
        }
        let abort = |txn: Option<redb::WriteTransaction>| {
            if let Some(txn) = txn {
                let _ = txn.abort();
            }
        };
        if let Some(e) = failed {
            abort(txn);
            self.next_id = before;
            return Err((answers, e));
        }
        let txn = txn.expect("a transaction when nothing failed");
        // A checkpoint's commit is durable, so the log must be synced before it; otherwise the sync runs on the
        // sync thread while the tables commit (without a sync of their own), and answers wait for both.
        let overlap = sync && !checkpoint;
        let locs = match self.log.append(&payloads, sync && !overlap) {
            Ok(locs) => locs,
            Err(e) => {
                abort(Some(txn));
                self.next_id = before;
                let why = format!("writing the message log: {e}");
                self.fail(why.clone());
                return Err((answers, EngineError::store("write", why)));
            }
        };
        let located = (|| -> Result<(), redb::Error> {
            let mut at = txn.open_table(RAW_AT)?;
            for (id, i) in raws {
                let l = locs[i];
                at.insert(id, (l.segment, l.offset, l.len))?;
            }
            drop(at);
            mark(&txn, &self.log)
        })();
        let syncing = if overlap {
            match self.log.take_unsynced().map(|f| self.syncer.begin(f)) {
                Some(Ok(())) => true,
                Some(Err(e)) => {
                    abort(Some(txn));
                    let why = format!("syncing the message log: {e}");
                    self.fail(why.clone());
                    return Err((answers, EngineError::store("write", why)));
                }
                None => false,
            }
        } else {
            false
        };
        let committed = located.and_then(|()| Ok(txn.commit()?));
        if syncing && let Err(e) = self.syncer.wait() {
            // Readers may have seen the batch for a moment; nobody was answered, and `fail` keeps the tables
            // from becoming durable with it.
            let why = format!("syncing the message log: {e}");
            self.fail(why.clone());
            return Err((answers, EngineError::store("write", why)));
        }
        match committed {
            Ok(()) => Ok(answers),
            Err(e) => {
                // The log has records the tables lack, under ids that would be handed out again: stop here and let
                // a restart replay them.
                let why = format!("committing after the log write: {e}");
                self.fail(why.clone());
                Err((answers, EngineError::store("commit", why)))
            }
        }
    }
}

/// Moves whatever is already queued into the batch, up to the batch limit.
fn take_queued(rx: &mpsc::Receiver<Op>, batch: &mut Vec<Op>) {
    while batch.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(op) => batch.push(op),
            Err(_) => break,
        }
    }
}

/// Group commit under a closed loop: the senders answered by the previous commit are sending their next message
/// right now, a few hundred microseconds apart. Waiting for them (until `expected` are in, at most `window`) lets
/// one fsync cover all of them, where otherwise the first to arrive would start a commit of its own and the others
/// would wait for the next one.
fn gather(rx: &mpsc::Receiver<Op>, batch: &mut Vec<Op>, expected: usize, window: Duration) {
    let deadline = Instant::now() + window;
    while batch.len() < expected {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        match rx.recv_timeout(left) {
            Ok(op) => {
                batch.push(op);
                take_queued(rx, batch);
            }
            Err(_) => return,
        }
    }
}

type BatchResult = Result<Vec<Answer>, (Vec<Answer>, EngineError)>;

fn unapplied(op: Op) -> Answer {
    match op {
        Op::Insert(_, tx) => Answer::Inserted(
            tx,
            Inserted {
                id: MessageId(0),
                duplicate_of: None,
                routes: Vec::new(),
            },
        ),
        Op::Attempt { done, .. } => Answer::Done(done),
        Op::Requeue { done, .. } => Answer::Requeued(done, Vec::new()),
    }
}

/// Applies one operation: its answer, its log record, and the message id when the record holds raw bytes.
type Applied = (Answer, Vec<u8>, Option<u64>);

fn apply(
    txn: &redb::WriteTransaction,
    op: Op,
    next_id: &mut u64,
) -> Result<Applied, (Answer, EngineError)> {
    match op {
        Op::Insert(msg, tx) => match insert(txn, *msg, next_id) {
            Ok((v, payload)) => {
                let id = v.id.0;
                Ok((Answer::Inserted(tx, v), payload, Some(id)))
            }
            Err(e) => Err((unapplied(Op::Insert(Box::new(empty_message()), tx)), e)),
        },
        Op::Attempt {
            id,
            route,
            at_ms,
            detail,
            outcome,
            done,
        } => {
            let record = LogAttempt {
                id,
                route,
                at_ms,
                detail,
                outcome: outcome_code(outcome),
            };
            let payload = match encode_json(REC_ATTEMPT, &record) {
                Ok(p) => p,
                Err(e) => return Err((Answer::Done(done), e)),
            };
            match attempt(txn, id, &record.route, at_ms, record.detail, outcome) {
                Ok(()) => Ok((Answer::Done(done), payload, None)),
                Err(e) => Err((Answer::Done(done), e)),
            }
        }
        Op::Requeue {
            id,
            routes,
            at_ms,
            done,
        } => {
            let record = LogRequeue { id, routes, at_ms };
            let payload = match encode_json(REC_REQUEUE, &record) {
                Ok(p) => p,
                Err(e) => return Err((Answer::Requeued(done, Vec::new()), e)),
            };
            match requeue(txn, id, record.routes, at_ms) {
                Ok(v) => Ok((Answer::Requeued(done, v), payload, None)),
                Err(e) => Err((Answer::Requeued(done, Vec::new()), e)),
            }
        }
    }
}

fn empty_message() -> NewMessage {
    NewMessage {
        raw: Bytes::new(),
        meta: MetaRecord::default(),
        dedup_key: None,
        dedup_window_ms: 0,
        routes: Vec::new(),
        route_duplicates: false,
    }
}

fn w(e: impl Into<redb::Error>) -> EngineError {
    EngineError::store("write", e.into())
}

/// Decides what storing `msg` means (its id, whether it duplicates an earlier one, its status and routes), writes
/// that to the tables and returns it with its log record.
fn insert(
    txn: &redb::WriteTransaction,
    msg: NewMessage,
    next_id: &mut u64,
) -> Result<(Inserted, Vec<u8>), EngineError> {
    let id = *next_id;
    let mut meta = msg.meta;
    let mut duplicate_of = None;
    let mut dedup = None;
    if let Some(key) = msg.dedup_key {
        let table = txn.open_table(DEDUP).map_err(w)?;
        let seen = table.get(key.as_str()).map_err(w)?.map(|v| v.value());
        match seen {
            Some((first, at)) if meta.received_ms.saturating_sub(at) <= msg.dedup_window_ms => {
                duplicate_of = Some(first);
            }
            _ => dedup = Some(key),
        }
    }
    meta.duplicate_of = duplicate_of;
    let routes = if duplicate_of.is_some() && !msg.route_duplicates {
        Vec::new()
    } else {
        msg.routes
    };
    if meta.status != Status::Rejected.as_str() {
        meta.status = if duplicate_of.is_some() && !msg.route_duplicates {
            Status::Duplicate
        } else if routes.is_empty() {
            Status::Stored
        } else {
            Status::Pending
        }
        .as_str()
        .to_string();
    }
    let rec = LogInsert {
        id,
        meta,
        dedup,
        routes,
    };
    write_insert(txn, &rec)?;
    let payload = encode_insert(&rec, &msg.raw)?;
    *next_id += 1;
    Ok((
        Inserted {
            id: MessageId(id),
            duplicate_of: duplicate_of.map(MessageId),
            routes: rec.routes,
        },
        payload,
    ))
}

/// Writes a decided insert to the tables (all but `raw_at`, which needs the log position).
fn write_insert(txn: &redb::WriteTransaction, rec: &LogInsert) -> Result<(), EngineError> {
    let id = rec.id;
    if let Some(key) = &rec.dedup {
        txn.open_table(DEDUP)
            .map_err(w)?
            .insert(key.as_str(), (id, rec.meta.received_ms))
            .map_err(w)?;
    }
    let encoded = serde_json::to_vec(&rec.meta).map_err(|e| EngineError::store("encode", e))?;
    txn.open_table(META)
        .map_err(w)?
        .insert(id, &encoded[..])
        .map_err(w)?;
    index::add(txn, id, &rec.meta)?;
    if !rec.routes.is_empty() {
        let mut deliveries = txn.open_table(DELIVERY).map_err(w)?;
        let mut pending = txn.open_table(PENDING).map_err(w)?;
        let record = serde_json::to_vec(&DeliveryRecord {
            status: DeliveryStatus::Pending.as_str().into(),
            attempts: 0,
            history: Vec::new(),
        })
        .map_err(|e| EngineError::store("encode", e))?;
        for route in &rec.routes {
            deliveries
                .insert((id, route.as_str()), &record[..])
                .map_err(w)?;
            pending.insert((id, route.as_str()), ()).map_err(w)?;
        }
    }
    Ok(())
}

fn push_history(record: &mut DeliveryRecord, attempt: AttemptRecord) {
    record.history.push(attempt);
    if record.history.len() > MAX_HISTORY {
        // Keep the first attempt (when trouble started) and the latest ones.
        record.history.remove(1);
    }
}

fn attempt(
    txn: &redb::WriteTransaction,
    id: u64,
    route: &str,
    at_ms: u64,
    detail: String,
    outcome: Outcome,
) -> Result<(), EngineError> {
    let mut deliveries = txn.open_table(DELIVERY).map_err(w)?;
    let mut record: DeliveryRecord = match deliveries.get((id, route)).map_err(w)? {
        Some(v) => {
            serde_json::from_slice(v.value()).map_err(|e| EngineError::store("decode", e))?
        }
        None => DeliveryRecord::default(),
    };
    record.attempts += 1;
    push_history(
        &mut record,
        AttemptRecord {
            at_ms,
            ok: outcome == Outcome::Delivered,
            detail,
        },
    );
    record.status = match outcome {
        Outcome::Delivered => DeliveryStatus::Delivered,
        Outcome::Retry => DeliveryStatus::Pending,
        Outcome::Dead => DeliveryStatus::Dead,
    }
    .as_str()
    .into();
    let encoded = serde_json::to_vec(&record).map_err(|e| EngineError::store("encode", e))?;
    deliveries.insert((id, route), &encoded[..]).map_err(w)?;
    if outcome != Outcome::Retry {
        txn.open_table(PENDING)
            .map_err(w)?
            .remove((id, route))
            .map_err(w)?;
        // The message's status follows its deliveries.
        let mut any_pending = false;
        let mut any_dead = false;
        for entry in deliveries.range((id, "")..(id + 1, "")).map_err(w)? {
            let (_, v) = entry.map_err(w)?;
            let r: DeliveryRecord =
                serde_json::from_slice(v.value()).map_err(|e| EngineError::store("decode", e))?;
            any_pending |= r.status == DeliveryStatus::Pending.as_str();
            any_dead |= r.status == DeliveryStatus::Dead.as_str();
        }
        let status = if any_pending {
            Status::Pending
        } else if any_dead {
            Status::Dead
        } else {
            Status::Delivered
        };
        set_status(txn, id, status)?;
    }
    Ok(())
}

fn set_status(txn: &redb::WriteTransaction, id: u64, status: Status) -> Result<(), EngineError> {
    let mut meta = txn.open_table(META).map_err(w)?;
    let Some(mut record) = meta
        .get(id)
        .map_err(w)?
        .map(|v| decode_meta(v.value()))
        .transpose()?
    else {
        return Ok(());
    };
    index::restatus(txn, id, &record.status, status.as_str())?;
    record.status = status.as_str().into();
    let encoded = serde_json::to_vec(&record).map_err(|e| EngineError::store("encode", e))?;
    meta.insert(id, &encoded[..]).map_err(w)?;
    Ok(())
}

fn requeue(
    txn: &redb::WriteTransaction,
    id: u64,
    routes: Vec<String>,
    at_ms: u64,
) -> Result<Vec<String>, EngineError> {
    // A missing message is checked before queueing; an error here would fail the whole batch.
    if txn
        .open_table(META)
        .map_err(w)?
        .get(id)
        .map_err(w)?
        .is_none()
    {
        return Ok(Vec::new());
    }
    let mut deliveries = txn.open_table(DELIVERY).map_err(w)?;
    let mut pending = txn.open_table(PENDING).map_err(w)?;
    for route in &routes {
        let mut record: DeliveryRecord = match deliveries.get((id, route.as_str())).map_err(w)? {
            Some(v) => {
                serde_json::from_slice(v.value()).map_err(|e| EngineError::store("decode", e))?
            }
            None => DeliveryRecord::default(),
        };
        record.status = DeliveryStatus::Pending.as_str().into();
        record.attempts = 0;
        push_history(
            &mut record,
            AttemptRecord {
                at_ms,
                ok: true,
                detail: "replay requested".into(),
            },
        );
        let encoded = serde_json::to_vec(&record).map_err(|e| EngineError::store("encode", e))?;
        deliveries
            .insert((id, route.as_str()), &encoded[..])
            .map_err(w)?;
        pending.insert((id, route.as_str()), ()).map_err(w)?;
    }
    drop(deliveries);
    drop(pending);
    if !routes.is_empty() {
        set_status(txn, id, Status::Pending)?;
    }
    Ok(routes)
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(control_id: &str) -> MetaRecord {
        MetaRecord {
            received_ms: now_ms(),
            sender: "LAB".into(),
            message_type: "ADT".into(),
            trigger: "A01".into(),
            control_id: control_id.into(),
            status: "stored".into(),
            ..Default::default()
        }
    }

    fn open(dir: &Path) -> Result<Store, EngineError> {
        Store::open(dir, &StoreConfig::default(), Arc::new(Counters::default()))
    }

    /// A store written by the previous format: its bytes in the `raw` table, no log.
    fn write_format(dir: &Path, version: u64) {
        std::fs::create_dir_all(dir).unwrap();
        let db = Database::create(dir.join("messages.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(INFO)
            .unwrap()
            .insert("format", version)
            .unwrap();
        txn.open_table(RAW)
            .unwrap()
            .insert(1, &b"MSH|^~\\&|LAB|H|||20240101||ADT^A01|OLD-1|P|2.5\r"[..])
            .unwrap();
        let m = meta("OLD-1");
        txn.open_table(META)
            .unwrap()
            .insert(1, &serde_json::to_vec(&m).unwrap()[..])
            .unwrap();
        index::create(&txn).unwrap();
        index::add(&txn, 1, &m).unwrap();
        txn.commit().unwrap();
    }

    #[test]
    fn a_store_written_before_the_trigger_index_gets_it_at_open() {
        let tmp = tempfile::tempdir().unwrap();
        write_format(tmp.path(), FORMAT_VERSION);
        {
            let db = Database::open(tmp.path().join("messages.redb")).unwrap();
            let txn = db.begin_write().unwrap();
            assert!(txn.delete_table(index::BY_TRIGGER).unwrap());
            txn.commit().unwrap();
        }
        let store = open(tmp.path()).unwrap();
        let page = store
            .list(&Query {
                trigger: Some("A01".into()),
                limit: 10,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(page.total, 1);
        assert_eq!(page.items[0].control_id, "OLD-1");
        store.close();
    }

    #[test]
    fn a_format_2_store_is_upgraded_in_place_and_keeps_its_raw_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        write_format(dir, 2);
        let store = open(dir).unwrap();
        let old = store.raw(MessageId(1)).unwrap().unwrap();
        assert!(old.ends_with(b"OLD-1|P|2.5\r"));
        let new = b"MSH|^~\\&|LAB|H|||20240101||ADT^A01|NEW-1|P|2.5\r";
        let inserted = store
            .insert(NewMessage {
                raw: Bytes::from_static(new),
                meta: meta("NEW-1"),
                dedup_key: None,
                dedup_window_ms: 0,
                routes: Vec::new(),
                route_duplicates: false,
            })
            .unwrap()
            .blocking_recv()
            .unwrap()
            .unwrap();
        assert_eq!(inserted.id, MessageId(2));
        store.close();
        drop(store);

        let store = open(dir).unwrap();
        assert_eq!(store.raw(MessageId(1)).unwrap().unwrap(), old);
        assert_eq!(store.raw(MessageId(2)).unwrap().unwrap(), new);
        let page = store
            .list(&Query {
                message_type: Some("ADT".into()),
                limit: 10,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(page.total, 2);
        let txn = store.db.begin_read().unwrap();
        let info = txn.open_table(INFO).unwrap();
        assert_eq!(info.get("format").unwrap().unwrap().value(), FORMAT_VERSION);
        // The new message's bytes are in the log, not in `raw`.
        assert!(txn.open_table(RAW).unwrap().get(2).unwrap().is_none());
        assert!(dir.join("log/0000000001.seg").exists());
    }

    #[test]
    fn a_store_of_a_newer_format_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        write_format(tmp.path(), FORMAT_VERSION + 1);
        match open(tmp.path()) {
            Err(EngineError::IncompatibleFormat {
                found, expected, ..
            }) => assert_eq!((found, expected), (FORMAT_VERSION + 1, FORMAT_VERSION)),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("opened a newer store"),
        }
    }
}
