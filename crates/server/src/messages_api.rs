//! /messages: the interface engine's stored messages.
//!
//! - `GET /messages?type=&trigger=&sender=&control_id=&status=&since=&until=&offset=&limit=`: newest first, with
//!   the `total` over all pages. `since`/`until` take milliseconds since the epoch or an ISO date
//!   (`2024-03-15`, `2024-03-15T14:30:00Z`).
//! - `GET /messages/{id}`: header facts, the raw message (text), its JSON view, the delivery history and its
//!   `validation` (computed on read, under the engine's `[validation]` profile for its type and sender). With
//!   `names=true` the JSON view carries the message structure and version, each segment's group path and name and
//!   each field's name (`hl7v2::to_json_with_names`): what the console shows. Past 4 MiB or 10,000 segments the text
//!   and view are left out (`omitted` says so): the view costs memory per field.
//! - `GET /messages/{id}/raw`: the exact bytes received.
//! - `GET /messages/{id}/fhir?bundle=message|transaction|collection`: the FHIR R4 Bundle the message becomes by the
//!   HL7 v2-to-FHIR guide, the same bytes (ids included) a `fhir` or `format = "fhir-json"` route delivers.
//!   `Accept` / `_format` choose JSON or XML.
//! - `POST /messages/{id}/replay`: queue it again on every route that matches it.

use crate::error::ApiError;
use crate::state::{AppState, Shared};
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use interface::{Engine, EngineError, MessageId, MessageSummary, Status};
use serde::Deserialize;
use serde_json::{Value, json};

const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 1000;

pub(crate) fn routes() -> Router<Shared> {
    Router::new()
        .route("/", get(list))
        .route("/{id}", get(show))
        .route("/{id}/raw", get(raw))
        .route(
            "/{id}/fhir",
            get(fhir).layer(axum::middleware::from_fn(crate::fhir_format::negotiate)),
        )
        .route("/{id}/replay", post(replay))
}

fn engine(state: &AppState) -> Result<Engine, ApiError> {
    state.engine.clone().ok_or_else(|| {
        ApiError::NotSupported("the interface engine is not running in this server".into())
    })
}

fn engine_error(e: EngineError) -> ApiError {
    match e {
        EngineError::NotFound(id) => ApiError::NotFound(format!("no message with id {id}")),
        other => ApiError::Internal(other.to_string()),
    }
}

fn message_id(text: &str) -> Result<MessageId, ApiError> {
    text.parse()
        .map_err(|_| ApiError::BadRequest(format!("message id {text:?} is not a number")))
}

/// Runs a store read off the async workers (reads scan the store).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, EngineError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?
        .map_err(engine_error)
}

#[derive(Debug, Deserialize)]
struct ListParams {
    #[serde(rename = "type")]
    message_type: Option<String>,
    trigger: Option<String>,
    sender: Option<String>,
    control_id: Option<String>,
    status: Option<String>,
    since: Option<String>,
    until: Option<String>,
    // Read as text and parsed here, so that a bad value is answered by an OperationOutcome.
    offset: Option<String>,
    limit: Option<String>,
}

/// The latest time `since`/`until` take: 9999-12-31T23:59:59.999Z, in milliseconds since the epoch.
const MAX_TIME_MS: u64 = 253_402_300_799_999;

/// The largest `offset`: a page beyond it is never asked for by a client paging through results.
const MAX_OFFSET: usize = 1_000_000_000;

/// A non-negative count parameter (`offset`, `limit`) no larger than `max`.
fn count_param(name: &str, text: Option<&str>, max: usize) -> Result<Option<usize>, ApiError> {
    let Some(text) = text.filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    match text.parse::<usize>() {
        Ok(n) if n <= max => Ok(Some(n)),
        _ => Err(ApiError::BadRequest(format!(
            "{name}={text:?}: expected a whole number from 0 to {max}"
        ))),
    }
}

async fn list(
    State(state): State<Shared>,
    Query(p): Query<ListParams>,
) -> Result<Response, ApiError> {
    let engine = engine(&state)?;
    let status = match p.status.as_deref() {
        None | Some("") => None,
        Some(s) => Some(Status::parse(s).ok_or_else(|| {
            let all: Vec<_> = Status::ALL.iter().map(|s| s.as_str()).collect();
            ApiError::BadRequest(format!("unknown status {s:?}; one of {}", all.join(", ")))
        })?),
    };
    let offset = count_param("offset", p.offset.as_deref(), MAX_OFFSET)?.unwrap_or(0);
    let limit = count_param("limit", p.limit.as_deref(), usize::MAX)?.unwrap_or(DEFAULT_LIMIT);
    if limit > MAX_LIMIT {
        return Err(ApiError::TooCostly(format!(
            "limit {limit} exceeds {MAX_LIMIT}"
        )));
    }
    let nonempty = |v: Option<String>| v.filter(|s| !s.is_empty());
    let query = interface::Query {
        message_type: nonempty(p.message_type),
        trigger: nonempty(p.trigger),
        sender: nonempty(p.sender),
        control_id: nonempty(p.control_id),
        since_ms: p
            .since
            .as_deref()
            .map(|t| time_param("since", t))
            .transpose()?,
        until_ms: p
            .until
            .as_deref()
            .map(|t| time_param("until", t))
            .transpose()?,
        status,
        offset,
        limit,
    };
    let offset = query.offset;
    let page = blocking(move || engine.list(&query)).await?;
    let items: Vec<Value> = page.items.iter().map(summary_json).collect();
    Ok(axum::Json(json!({
        "total": page.total,
        "offset": offset,
        "limit": limit,
        "items": items,
    }))
    .into_response())
}

#[derive(Debug, Deserialize)]
struct ShowParams {
    names: Option<String>,
}

async fn show(
    State(state): State<Shared>,
    Path(id): Path<String>,
    Query(p): Query<ShowParams>,
) -> Result<Response, ApiError> {
    let names = match p.names.as_deref() {
        None | Some("false") => false,
        Some("true" | "") => true,
        Some(other) => {
            return Err(ApiError::BadRequest(format!(
                "names={other:?}: expected true or false"
            )));
        }
    };
    let engine = engine(&state)?;
    let id = message_id(&id)?;
    // Parsing, validating and writing the view all happen off the HTTP threads: a message may be 16 MiB.
    let body = blocking(move || {
        let Some(stored) = engine.get(id)? else {
            return Ok(None);
        };
        Ok(Some(show_json(&engine, &stored, names)))
    })
    .await?
    .ok_or_else(|| ApiError::NotFound(format!("no message with id {id}")))?;
    Ok(([("content-type", "application/json")], body).into_response())
}

/// The largest message (in bytes) whose JSON view and text `GET /messages/{id}` includes.
pub(crate) const MAX_VIEW_BYTES: usize = 4 << 20;
/// The most segments a message may have for `GET /messages/{id}` to include its JSON view. The view costs about
/// a hundred bytes of memory per field: a 16 MiB message of tiny segments made a 94 MB answer and took 1.5 GB.
pub(crate) const MAX_VIEW_SEGMENTS: usize = 10_000;

/// The answer of `GET /messages/{id}`: summary, text, JSON view, deliveries and validation. Beyond
/// [`MAX_VIEW_BYTES`] or [`MAX_VIEW_SEGMENTS`], `raw` and `message` are null and `omitted` says why and where the
/// bytes are (`/raw`); the rest is always there.
fn show_json(engine: &Engine, stored: &interface::StoredMessage, names: bool) -> Vec<u8> {
    let msg = hl7v2::Message::parse(&stored.raw);
    // Computed on read rather than stored: the store's format stays as it is, and the answer follows the profile
    // the engine runs with now (the receive-time count is in `note`).
    let mut validation = crate::hl7_api::validation_json(&msg, &engine.validate(&msg));
    if let Some(v) = validation.as_object_mut() {
        v.insert(
            "mode".into(),
            engine.config().validation.mode.as_str().into(),
        );
    }
    let mut out = summary_json(&stored.summary);
    let deliveries: Vec<Value> = stored
        .deliveries
        .iter()
        .map(|d| {
            json!({
                "route": d.route,
                "status": d.status.as_str(),
                "attempts": d.attempts,
                "history": d.history.iter().map(|a| json!({
                    "at": iso_time(a.at_ms),
                    "ok": a.ok,
                    "detail": a.detail,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let Some(obj) = out.as_object_mut() else {
        unreachable!("summary_json writes an object")
    };
    let (bytes, segments) = (stored.raw.len(), msg.segment_count());
    if bytes > MAX_VIEW_BYTES || segments > MAX_VIEW_SEGMENTS {
        obj.insert("raw".into(), Value::Null);
        obj.insert("raw_exact".into(), false.into());
        obj.insert("message".into(), Value::Null);
        obj.insert(
            "omitted".into(),
            format!(
                "the message has {bytes} bytes and {segments} segments; its text and JSON view are given for \
                 messages up to {MAX_VIEW_BYTES} bytes and {MAX_VIEW_SEGMENTS} segments: GET /messages/{}/raw has \
                 the bytes",
                stored.summary.id.0
            )
            .into(),
        );
    } else {
        obj.insert("raw".into(), String::from_utf8_lossy(&stored.raw).into());
        // When the bytes are not UTF-8, `raw` is lossy: `/raw` has the exact bytes.
        obj.insert(
            "raw_exact".into(),
            std::str::from_utf8(&stored.raw).is_ok().into(),
        );
        let view = if names {
            hl7v2::to_json_with_names(&msg)
        } else {
            hl7v2::to_json(&msg)
        };
        obj.insert("message".into(), view);
    }
    obj.insert("deliveries".into(), deliveries.into());
    obj.insert("validation".into(), validation);
    serde_json::to_vec(&out).unwrap_or_default()
}

async fn raw(State(state): State<Shared>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let engine = engine(&state)?;
    let id = message_id(&id)?;
    let stored = blocking(move || engine.get(id))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no message with id {id}")))?;
    Ok(([("content-type", "x-application/hl7-v2+er7")], stored.raw).into_response())
}

async fn fhir(
    State(state): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
) -> Result<Response, ApiError> {
    let engine = engine(&state)?;
    let id = message_id(&id)?;
    let bundle = crate::hl7_api::bundle_type(&query)?;
    let checker = state.terminology.clone().map(crate::TerminologyChecker);
    let zone = crate::hl7_api::time_zone(&state, &query)?;
    let converting = crate::hl7_api::conversion_place().await;
    let json = blocking(move || {
        let _converting = converting;
        let Some(stored) = engine.get(id)? else {
            return Ok(None);
        };
        // Computed on read: conversion is deterministic, so this is what a route delivered (or will).
        let options = v2fhir::Options {
            bundle,
            checker: checker.as_ref().map(|c| c as &dyn v2fhir::CodeChecker),
            time_zone: zone.as_ref(),
            ..Default::default()
        };
        Ok(Some(v2fhir::convert_json(
            &hl7v2::Message::parse(&stored.raw),
            &options,
        )))
    })
    .await?
    .ok_or_else(|| ApiError::NotFound(format!("no message with id {id}")))?
    .map_err(|e| crate::hl7_api::too_large(0, e))?;
    Ok(([("content-type", "application/fhir+json")], json).into_response())
}

async fn replay(State(state): State<Shared>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let engine = engine(&state)?;
    let id = message_id(&id)?;
    let routes = engine.replay(id).await.map_err(engine_error)?;
    Ok(axum::Json(json!({ "id": id.0, "routes": routes })).into_response())
}

fn summary_json(m: &MessageSummary) -> Value {
    json!({
        "id": m.id.0,
        "received": iso_time(m.received_ms),
        "received_ms": m.received_ms,
        "peer": m.peer,
        "sender": m.sender,
        "type": m.message_type,
        "trigger": m.trigger,
        "control_id": m.control_id,
        "status": m.status.as_str(),
        "duplicate_of": m.duplicate_of.map(|d| d.0),
        "parse_errors": m.parse_errors,
        "size": m.size,
        "note": m.note,
    })
}

/// Milliseconds since the epoch, or an ISO date / date-time in UTC (`Z` or no zone), from 1970 to the end of
/// year 9999; anything else is a 400.
fn time_param(name: &str, text: &str) -> Result<u64, ApiError> {
    let ms = match text.parse::<u64>() {
        Ok(ms) => Some(ms),
        Err(_) => parse_iso(text),
    };
    ms.filter(|ms| *ms <= MAX_TIME_MS).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "{name}={text:?}: expected milliseconds since the epoch or YYYY-MM-DD[THH:MM[:SS]][Z], \
             from 1970 to 9999"
        ))
    })
}

/// An ISO date or date-time of years 0 to 9999; None when malformed or out of range (never overflows).
fn parse_iso(text: &str) -> Option<u64> {
    let text = text.strip_suffix('Z').unwrap_or(text);
    let (date, time) = text.split_once('T').unwrap_or((text, "00:00:00"));
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (hh, mm) = (t.next()??, t.next()??);
    let ss = t.next().map_or(Some(0), |s| s).unwrap_or(0);
    if !(0..=9999).contains(&y)
        || !(1..=12).contains(&m)
        || !(1..=31).contains(&day)
        || !(0..=23).contains(&hh)
        || !(0..=59).contains(&mm)
        || !(0..=60).contains(&ss)
    {
        return None;
    }
    // In range, the arithmetic cannot overflow; checked all the same.
    let secs = days_from_civil(y, m, day)
        .checked_mul(86_400)?
        .checked_add(hh * 3600 + mm * 60 + ss)?;
    u64::try_from(secs).ok()?.checked_mul(1000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `2024-03-15T14:30:00.123Z` (also the audit trail's times).
pub(crate) fn iso_time(ms: u64) -> String {
    let secs = (ms / 1000) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Inverse of days_from_civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// The engine's counters and latency histograms in the Prometheus text format, appended to `/metrics`.
pub(crate) fn engine_metrics(engine: &Engine, out: &mut String) {
    use std::fmt::Write;
    let s = engine.stats();
    let counters = [
        (
            "received",
            "MLLP frames received, rejected ones included.",
            s.received,
        ),
        (
            "acked",
            "Messages answered with an accepting acknowledgement.",
            s.acked,
        ),
        (
            "rejected",
            "Messages rejected, stored and not routed: unparseable or oversized (AR/CR), or invalid under [validation] mode = \"reject\" (AE/CE).",
            s.rejected,
        ),
        (
            "duplicates",
            "Duplicates detected (same sender and MSH-10 within the window).",
            s.duplicates,
        ),
        (
            "routed",
            "Deliveries queued on a route, replays included.",
            s.routed,
        ),
        ("delivered", "Deliveries completed.", s.delivered),
        (
            "delivery_failures",
            "Delivery attempts that failed (retried until dead-lettered).",
            s.failed_attempts,
        ),
        (
            "dead_lettered",
            "Deliveries dead-lettered after the last attempt.",
            s.dead,
        ),
        ("store_commits", "Message store commits.", s.commits),
        (
            "store_durable_commits",
            "Message store commits that waited for fsync.",
            s.durable_commits,
        ),
        (
            "store_writes",
            "Writes covered by the store commits (group commit: writes / commits per fsync).",
            s.committed_ops,
        ),
    ];
    for (name, help, value) in counters {
        let _ = writeln!(out, "# HELP thoth_engine_{name}_total {help}");
        let _ = writeln!(out, "# TYPE thoth_engine_{name}_total counter");
        let _ = writeln!(out, "thoth_engine_{name}_total {value}");
    }
    // Per route: its lag (a gauge) and its outcomes, so that a destination that is down shows by name.
    type Series = (
        &'static str,
        &'static str,
        &'static str,
        fn(&interface::RouteStats) -> u64,
    );
    let per_route: [Series; 4] = [
        (
            "route_pending",
            "gauge",
            "Deliveries queued on the route and not yet made or dead-lettered (its lag, in messages).",
            |r| r.pending,
        ),
        (
            "route_delivered_total",
            "counter",
            "Deliveries the route made.",
            |r| r.delivered,
        ),
        (
            "route_failures_total",
            "counter",
            "Delivery attempts of the route that failed.",
            |r| r.failed_attempts,
        ),
        (
            "route_dead_lettered_total",
            "counter",
            "Deliveries of the route dead-lettered.",
            |r| r.dead,
        ),
    ];
    if !s.routes.is_empty() {
        for (name, kind, help, value) in per_route {
            let _ = writeln!(out, "# HELP thoth_engine_{name} {help}");
            let _ = writeln!(out, "# TYPE thoth_engine_{name} {kind}");
            for r in &s.routes {
                let label = r.name.replace('\\', "\\\\").replace('"', "\\\"");
                let _ = writeln!(out, "thoth_engine_{name}{{route=\"{label}\"}} {}", value(r));
            }
        }
    }
    let histograms = [
        (
            "store_latency_seconds",
            "From handing a message to the store until it is committed (what an ACK waits for).",
            &s.store_latency,
        ),
        (
            "commit_duration_seconds",
            "One message store commit.",
            &s.commit_latency,
        ),
    ];
    for (name, help, h) in histograms {
        let _ = writeln!(out, "# HELP thoth_engine_{name} {help}");
        let _ = writeln!(out, "# TYPE thoth_engine_{name} histogram");
        for (bound, n) in &h.buckets {
            let _ = writeln!(out, "thoth_engine_{name}_bucket{{le=\"{bound}\"}} {n}");
        }
        let _ = writeln!(out, "thoth_engine_{name}_bucket{{le=\"+Inf\"}} {}", h.count);
        let _ = writeln!(out, "thoth_engine_{name}_sum {}", h.sum_seconds);
        let _ = writeln!(out, "thoth_engine_{name}_count {}", h.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_times_are_refused_without_overflow() {
        for text in [
            "99999999999-01-01",
            "9223372036854775807-01-01",
            "-9223372036854775808-01-01",
            "10000-01-01",
            "2024-01-01T-1:00",
            "2024-01-01T00:-5",
            "1969-12-31",
            "18446744073709551615",
            "253402300800000",
        ] {
            assert!(time_param("since", text).is_err(), "{text}");
        }
        assert_eq!(
            time_param("since", "9999-12-31T23:59:59Z").unwrap(),
            MAX_TIME_MS - 999
        );
        assert_eq!(time_param("until", "253402300799999").unwrap(), MAX_TIME_MS);
        assert_eq!(time_param("since", "1970-01-02").unwrap(), 86_400_000);
    }

    #[test]
    fn iso_times_round_trip() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_time(1_710_513_000_123), "2024-03-15T14:30:00.123Z");
        assert_eq!(parse_iso("2024-03-15T14:30:00Z"), Some(1_710_513_000_000));
        assert_eq!(parse_iso("2024-03-15"), Some(1_710_460_800_000));
        assert_eq!(parse_iso("2024-13-01"), None);
        assert_eq!(parse_iso("yesterday"), None);
    }

    #[tokio::test]
    async fn engine_counters_render_as_prometheus_text() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path(), interface::EngineConfig::default()).unwrap();
        let adt = b"MSH|^~\\&|HIS|H|RIS|R|20240101||ADT^A01|M1|P|2.5\rPID|1\r";
        assert!(engine.receive(adt.to_vec().into(), "test").await.committed);
        assert!(
            engine
                .receive(b"garbage".to_vec().into(), "test")
                .await
                .committed
        );
        let mut text = String::new();
        engine_metrics(&engine, &mut text);
        for line in [
            "thoth_engine_received_total 2",
            "thoth_engine_acked_total 1",
            "thoth_engine_rejected_total 1",
            "thoth_engine_store_latency_seconds_count 2",
            "thoth_engine_store_latency_seconds_bucket{le=\"+Inf\"} 2",
            "# TYPE thoth_engine_commit_duration_seconds histogram",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line:?} missing from:\n{text}"
            );
        }
        engine.shutdown().await;
    }
}
