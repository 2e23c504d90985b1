//! Apache Kafka, through librdkafka (`rdkafka`): a route's delivery task and a source's consumer task.
//!
//! The route keeps up to [`WINDOW`] records in flight through one idempotent producer (`acks=all`), so delivery runs
//! at the broker's pace rather than one round trip per message; librdkafka keeps their order within a partition
//! and retries inside `message.timeout.ms` (the route's attempt timeout) on its own. A record it gives up on is
//! an attempt failed like any other route's: recorded in the store, retried after the backoff, dead-lettered after
//! `max_attempts`. While a failed record waits for its retry no new record is taken, so a broker that is down
//! costs one failed attempt per record in flight, not one per queued message: the rest waits in the store.
//!
//! The source stores a record's offset for the (automatic) commit only once the message is durable in the store,
//! in order: a crash re-reads at most the records not yet stored or committed, and those are caught by duplicate
//! detection (same sender and MSH-10).

use crate::config::{KafkaKey, KafkaRouteConfig, KafkaSourceConfig, KafkaValue};
use crate::engine::{Engine, Inner};
use crate::record::MessageId;
use crate::store::Outcome;
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::{FuturesOrdered, FuturesUnordered};
use rdkafka::ClientConfig;
use rdkafka::consumer::{CommitMode, Consumer, StreamConsumer};
use rdkafka::message::{Header, Message as _, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// Records of one route in flight at once. Bounded so that memory stays bounded and a broker outage fails a
/// bounded number of attempts; large enough to keep a broker's batches full.
pub(crate) const WINDOW: usize = 2048;

/// Messages of one source being stored at once (the store commits them as groups).
const SOURCE_WINDOW: usize = 512;

/// The record header names: each message's facts for consumers that do not parse HL7 v2.
pub mod header {
    /// Thoth's message id (decimal): the same on a redelivery, so a consumer can drop the second copy.
    pub const MESSAGE_ID: &str = "thoth.message_id";
    /// MSH-9-1.
    pub const TYPE: &str = "hl7.type";
    /// MSH-9-2.
    pub const TRIGGER: &str = "hl7.trigger";
    /// MSH-3-1, or `APP@FACILITY` with MSH-4-1.
    pub const SENDER: &str = "hl7.sender";
    /// MSH-10.
    pub const CONTROL_ID: &str = "hl7.control_id";
    /// MSH-12.
    pub const VERSION: &str = "hl7.version";
}

/// A record ready to produce.
struct Built {
    key: Option<String>,
    value: Vec<u8>,
    headers: OwnedHeaders,
}

/// The key, value and headers of message `id` (deterministic: a redelivery builds the same record). `zone`:
/// `[to_fhir] time_zone`, for the `fhir` value.
fn build(
    cfg: &KafkaRouteConfig,
    id: MessageId,
    raw: &[u8],
    zone: Option<&v2fhir::TimeZone>,
) -> Result<Built, String> {
    let msg = hl7v2::Message::parse(raw);
    let h = crate::route::Header::read(&msg);
    let version = msg
        .get("MSH-12-1")
        .map(|v| v.into_owned())
        .unwrap_or_default();
    let id_text = id.0.to_string();
    let key = match cfg.key {
        KafkaKey::ControlId => Some(format!("{}/{}", h.sender, h.control_id)),
        KafkaKey::MessageId => Some(id_text.clone()),
        KafkaKey::None => None,
    };
    let value = match cfg.value {
        KafkaValue::Raw => raw.to_vec(),
        KafkaValue::Json => serde_json::to_vec(&hl7v2::to_json(&msg)).unwrap_or_default(),
        KafkaValue::Fhir => crate::route::to_bundle(&msg, v2fhir::BundleType::Message, zone)?,
    };
    let mut headers = OwnedHeaders::new_with_capacity(6);
    for (name, v) in [
        (header::MESSAGE_ID, id_text.as_str()),
        (header::TYPE, h.message_type.as_str()),
        (header::TRIGGER, h.trigger.as_str()),
        (header::SENDER, h.sender.as_str()),
        (header::CONTROL_ID, h.control_id.as_str()),
        (header::VERSION, version.as_str()),
    ] {
        headers = headers.insert(Header {
            key: name,
            value: Some(v),
        });
    }
    Ok(Built {
        key,
        value,
        headers,
    })
}

/// The producer of a route: idempotent, `acks=all`; `message.timeout.ms` is the route's attempt timeout unless
/// the route's properties say otherwise.
fn producer(cfg: &KafkaRouteConfig, attempt_timeout: Duration) -> Result<FutureProducer, String> {
    let mut c = ClientConfig::new();
    c.set(
        "message.timeout.ms",
        attempt_timeout.as_millis().to_string(),
    )
    .set("linger.ms", "5");
    for (k, v) in &cfg.properties {
        c.set(k, v);
    }
    c.set("bootstrap.servers", &cfg.brokers)
        .set("enable.idempotence", "true")
        .set("acks", "all");
    c.create().map_err(|e| e.to_string())
}

/// What finished: the message, its failures before this attempt, and the attempt's outcome.
type Finished = (MessageId, u32, Result<String, String>);

/// A record in flight.
type InFlight = std::pin::Pin<Box<dyn std::future::Future<Output = Finished> + Send>>;

/// A consumed message being stored: its partition and offset, and whether it is stored.
type Storing = std::pin::Pin<Box<dyn std::future::Future<Output = (i32, i64, bool)> + Send>>;

/// Delivers route `index`'s queue to its Kafka topic until the engine stops.
pub(crate) async fn deliver(
    inner: Arc<Inner>,
    index: usize,
    mut queue: mpsc::UnboundedReceiver<MessageId>,
    mut stop: watch::Receiver<bool>,
) {
    let route = inner.routes[index].name.clone();
    let Some(cfg) = inner.routes[index].config.kafka.clone() else {
        return;
    };
    let cfg = Arc::new(cfg);
    let delivery = inner.config.delivery.clone();
    let attempt_timeout = Duration::from_millis(delivery.attempt_timeout_ms);
    let mut producer = match producer(&cfg, attempt_timeout) {
        Ok(p) => p,
        Err(e) => {
            // Only a setting librdkafka refuses gets here (the brokers are contacted later): nothing to retry.
            tracing::error!(
                route,
                "cannot create the Kafka producer: {e}; the route delivers nothing"
            );
            return;
        }
    };
    let mut in_flight: FuturesUnordered<InFlight> = FuturesUnordered::new();
    // Failed records waiting for their retry: (due, id, failures so far).
    let mut retries: BinaryHeap<Reverse<(Instant, u64, u32)>> = BinaryHeap::new();
    let far = Instant::now() + Duration::from_secs(365 * 24 * 3600);
    loop {
        let room = in_flight.len() < WINDOW;
        let next_due = retries.peek().map(|Reverse((due, _, _))| *due);
        let next = tokio::select! {
            biased;
            _ = stop.changed() => break,
            Some(done) = in_flight.next(), if !in_flight.is_empty() => Step::Finished(done),
            _ = tokio::time::sleep_until(next_due.unwrap_or(far)), if room && next_due.is_some() => {
                let Reverse((_, id, failures)) = retries.pop().expect("peeked");
                Step::Send(MessageId(id), failures)
            }
            id = queue.recv(), if room && retries.is_empty() => match id {
                Some(id) => Step::Send(id, 0),
                None => break,
            },
        };
        match next {
            Step::Send(id, failures) => {
                match send(
                    &inner,
                    &route,
                    &cfg,
                    &producer,
                    id,
                    failures,
                    attempt_timeout,
                )
                .await
                {
                    Some(fut) => in_flight.push(fut),
                    None => continue,
                }
            }
            Step::Finished((id, failures, result)) => {
                if let Some(retry) = finished(&inner, index, &route, id, failures, result) {
                    retries.push(Reverse(retry));
                }
                // A fatal error (the idempotent producer's sequence broken) stops the producer for good: start
                // afresh. Its records in flight fail (purged) and are retried like any failure.
                if let Some((code, text)) = producer.client().fatal_error() {
                    tracing::error!(
                        route,
                        ?code,
                        "Kafka producer failed fatally: {text}; recreating it"
                    );
                    match self::producer(&cfg, attempt_timeout) {
                        Ok(p) => producer = p,
                        Err(e) => tracing::error!(route, "cannot recreate the Kafka producer: {e}"),
                    }
                }
            }
        }
    }
    // Stopping: give the records in flight a moment to be acknowledged and record those that were; the rest stays
    // pending in the store and is delivered again on the next start (same key and message id header).
    let p = producer.clone();
    let _ = tokio::task::spawn_blocking(move || p.flush(Duration::from_secs(3))).await;
    while let Some(Some((id, failures, result))) =
        futures_util::FutureExt::now_or_never(in_flight.next())
    {
        let _ = finished(&inner, index, &route, id, failures, result);
    }
}

enum Step {
    Send(MessageId, u32),
    Finished(Finished),
}

/// Hands message `id` to the producer; `None` when there is nothing to send (no longer pending, or unreadable).
async fn send(
    inner: &Arc<Inner>,
    route: &str,
    cfg: &Arc<KafkaRouteConfig>,
    producer: &FutureProducer,
    id: MessageId,
    failures: u32,
    attempt_timeout: Duration,
) -> Option<InFlight> {
    // A message can be queued twice (a replay while it was pending); deliver it once.
    match inner.store.is_pending(id, route) {
        Ok(true) => {}
        Ok(false) => {
            inner.counters.route_skipped(route);
            return None;
        }
        Err(e) => {
            tracing::error!(%id, route, "cannot read the delivery state: {e}");
            return None;
        }
    }
    let raw = match inner.raw_off_runtime(id).await {
        Ok(Some(raw)) => raw,
        Ok(None) => {
            inner.counters.route_skipped(route);
            return None;
        }
        Err(e) => {
            tracing::error!(%id, route, "cannot read the message: {e}");
            return None;
        }
    };
    let built = if cfg.value == KafkaValue::Raw {
        build(cfg, id, &raw, None)
    } else {
        // Conversion is CPU work (tens of microseconds): beside the runtime's I/O threads.
        let cfg = cfg.clone();
        let zone = inner.config.to_fhir.zone().cloned();
        tokio::task::spawn_blocking(move || build(&cfg, id, &raw, zone.as_ref()))
            .await
            .unwrap_or_else(|e| Err(e.to_string()))
    };
    let built = match built {
        Ok(b) => b,
        Err(e) => {
            let detail = format!("building the record: {e}");
            return Some(Box::pin(async move { (id, failures, Err(detail)) }));
        }
    };
    let mut record = FutureRecord::to(&cfg.topic)
        .payload(&built.value)
        .headers(built.headers);
    if let Some(key) = &built.key {
        record = record.key(key);
    }
    match producer.send_result(record) {
        Ok(delivery) => Some(Box::pin(async move {
            // librdkafka reports every record by `message.timeout.ms`; the margin only guards against a lost report.
            let result =
                match tokio::time::timeout(attempt_timeout + Duration::from_secs(10), delivery)
                    .await
                {
                    Ok(Ok(Ok(d))) => Ok(format!("partition {} offset {}", d.partition, d.offset)),
                    Ok(Ok(Err((e, _)))) => Err(format!("Kafka: {e}")),
                    Ok(Err(_)) => Err("the Kafka producer was closed".into()),
                    Err(_) => Err(format!("no delivery report within {attempt_timeout:?}")),
                };
            (id, failures, result)
        })),
        Err((e, _)) => {
            let detail = format!("Kafka: {e}");
            Some(Box::pin(async move { (id, failures, Err(detail)) }))
        }
    }
}

/// Records an attempt's outcome; answers the retry to schedule, if any.
fn finished(
    inner: &Arc<Inner>,
    index: usize,
    route: &str,
    id: MessageId,
    failures: u32,
    result: Result<String, String>,
) -> Option<(Instant, u64, u32)> {
    let max_attempts = inner.config.delivery.max_attempts;
    let (outcome, detail, failures) = match result {
        Ok(detail) => (Outcome::Delivered, detail, failures),
        Err(detail) => {
            let failures = failures + 1;
            let last = failures >= max_attempts;
            (
                if last { Outcome::Dead } else { Outcome::Retry },
                detail,
                failures,
            )
        }
    };
    inner.counters.count_outcome(index, outcome);
    if outcome != Outcome::Delivered {
        tracing::warn!(%id, route, failures, "delivery failed: {detail}");
    }
    // At-least-once needs no wait for the record: if it is lost in a crash, the delivery is still pending and is
    // made again after the restart (a duplicate downstream with the same key and message id, never a loss).
    match inner.store.record_attempt(id, route, detail, outcome) {
        Ok(recorded) => {
            let route = route.to_string();
            tokio::spawn(async move {
                if let Ok(Err(e)) = recorded.await {
                    tracing::error!(%id, route, "cannot record the delivery attempt: {e}");
                }
            });
        }
        Err(e) => tracing::error!(%id, route, "cannot record the delivery attempt: {e}"),
    }
    match outcome {
        Outcome::Delivered => {
            inner.settled(id, route, true);
            None
        }
        Outcome::Dead => {
            tracing::error!(%id, route, "delivery dead-lettered after {failures} attempts");
            inner.settled(id, route, false);
            None
        }
        Outcome::Retry => Some((
            Instant::now() + inner.config.delivery.backoff(failures),
            id.0,
            failures,
        )),
    }
}

/// The consumer of a source: offsets stored by Thoth only (`enable.auto.offset.store=false`) and committed by
/// librdkafka's periodic commit; a new group starts at the topic's beginning.
fn consumer(cfg: &KafkaSourceConfig) -> Result<StreamConsumer, String> {
    let mut c = ClientConfig::new();
    c.set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "true")
        .set("auto.commit.interval.ms", "1000");
    for (k, v) in &cfg.properties {
        c.set(k, v);
    }
    c.set("bootstrap.servers", &cfg.brokers)
        .set("group.id", &cfg.group)
        .set("enable.auto.offset.store", "false");
    c.create().map_err(|e| e.to_string())
}

/// Consumes `cfg.topic` into the engine until it stops.
pub(crate) async fn consume(
    engine: Engine,
    cfg: KafkaSourceConfig,
    mut stop: watch::Receiver<bool>,
) {
    let topic = cfg.topic.clone();
    let consumer = match consumer(&cfg).and_then(|c| {
        c.subscribe(&[&topic]).map_err(|e| e.to_string())?;
        Ok(c)
    }) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(
                topic,
                "cannot create the Kafka consumer: {e}; the source reads nothing"
            );
            return;
        }
    };
    let max_frame = engine.config().mllp.max_frame_bytes;
    // In receive order, so that an offset is stored only once every earlier record of the topic is stored too.
    let mut storing: FuturesOrdered<Storing> = FuturesOrdered::new();
    loop {
        tokio::select! {
            biased;
            _ = stop.changed() => break,
            Some((partition, offset, stored)) = storing.next(), if !storing.is_empty() => {
                if stored
                    && let Err(e) = consumer.store_offset(&topic, partition, offset)
                {
                    // A partition revoked meanwhile: its next owner reads the record again (a duplicate).
                    tracing::debug!(topic, partition, offset, "offset not stored: {e}");
                }
            }
            m = consumer.recv(), if storing.len() < SOURCE_WINDOW => match m {
                Ok(m) => {
                    let (partition, offset) = (m.partition(), m.offset());
                    let raw = Bytes::copy_from_slice(m.payload().unwrap_or_default());
                    let peer = format!("kafka:{topic}/{partition}@{offset}");
                    let engine = engine.clone();
                    let stop = stop.clone();
                    storing.push_back(Box::pin(async move {
                        let stored = store(&engine, raw, &peer, max_frame, stop).await;
                        (partition, offset, stored)
                    }));
                }
                Err(e) => {
                    // The client reconnects by itself; errors here are reports (broker down, topic missing).
                    tracing::warn!(topic, "Kafka consumer: {e}");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                        _ = stop.changed() => break,
                    }
                }
            },
        }
    }
    // Stopping: finish what is being stored (briefly), store those offsets and commit them now.
    let deadline = Instant::now() + Duration::from_secs(3);
    while let Ok(Some((partition, offset, stored))) =
        tokio::time::timeout_at(deadline, storing.next()).await
    {
        if !stored {
            break;
        }
        let _ = consumer.store_offset(&topic, partition, offset);
    }
    let _ = tokio::task::spawn_blocking(move || {
        if let Err(e) = consumer.commit_consumer_state(CommitMode::Sync) {
            tracing::debug!("final offset commit: {e}");
        }
    })
    .await;
}

/// Stores one consumed message, retrying while the store fails; false only when the engine stops first.
async fn store(
    engine: &Engine,
    raw: Bytes,
    peer: &str,
    max_frame: usize,
    mut stop: watch::Receiver<bool>,
) -> bool {
    let mut failures = 0u32;
    loop {
        let receipt = if raw.len() > max_frame {
            let head = raw.slice(..max_frame.min(raw.len()).min(64 * 1024));
            engine.receive_oversized(head, raw.len(), peer).await
        } else {
            engine.receive_durable(raw.clone(), peer).await
        };
        if receipt.committed {
            return true;
        }
        if *stop.borrow() {
            return false;
        }
        failures += 1;
        let wait = engine.config().delivery.backoff(failures);
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.changed() => return false,
        }
    }
}
