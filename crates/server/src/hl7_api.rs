//! /hl7: stateless HL7 v2 services, and the JSON shape of a validation report, which `thoth hl7 validate` and
//! `GET /messages/{id}` print too (one function, [`validation_json`], so the three never drift apart).
//!
//! - `POST /hl7/validate?version=2.5.1&strict=true`: the body holds one or more v2 messages (any line endings, a
//!   plain concatenation or an FHS/BHS batch file); the answer is `{"messages": [ <validation_json> ... ]}`.
//! - `POST /hl7/parse?version=2.5.1`: the body holds one v2 message (the first of several); the answer is
//!   `{"message": <hl7v2::to_json_with_names>, "validation": <validation_json>}`: its segments with their group
//!   paths and names, each field named, and the lenient profile's issues to mark at their fields.
//! - `POST /hl7/to-fhir?bundle=message|transaction|collection`: the body holds a v2 message; the answer is its FHIR
//!   R4 Bundle by the v2-to-FHIR guide, its codes checked by the server's terminology (`check=false`: not) (`Accept` / `_format` choose JSON or XML, as on `/fhir`). A body of several
//!   messages answers one JSON Bundle per line (`application/fhir+ndjson`).

use crate::error::ApiError;
use crate::state::Shared;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Query};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hl7v2::{
    ChunkKind, IssueSeverity, Message, ParseOptions, Profile, Report, TreeOptions, Version,
};
use serde_json::{Value, json};

pub(crate) fn routes() -> Router<Shared> {
    Router::new()
        .route(
            "/parse",
            post(parse).layer(DefaultBodyLimit::max(crate::outcome::MAX_HL7_BODY_BYTES)),
        )
        .route(
            "/validate",
            // A batch file of a day's messages is bigger than axum's 2 MB default; the same bound as the largest
            // FHIR request body the server reads.
            post(validate).layer(DefaultBodyLimit::max(crate::outcome::MAX_HL7_BODY_BYTES)),
        )
        .merge(
            // The Bundle is negotiated to XML as on /fhir.
            Router::new()
                .route(
                    "/to-fhir",
                    post(to_fhir).layer(DefaultBodyLimit::max(crate::outcome::MAX_HL7_BODY_BYTES)),
                )
                .layer(axum::middleware::from_fn(crate::fhir_format::negotiate)),
        )
}

/// The `bundle` query parameter of the conversions (`message` when absent).
pub(crate) fn bundle_type(query: &[(String, String)]) -> Result<v2fhir::BundleType, ApiError> {
    let mut bundle = v2fhir::BundleType::Message;
    for (k, v) in query {
        if k == "bundle" {
            bundle = match v.as_str() {
                "message" | "" => v2fhir::BundleType::Message,
                "transaction" => v2fhir::BundleType::Transaction,
                "collection" => v2fhir::BundleType::Collection,
                _ => {
                    return Err(ApiError::BadRequest(format!(
                        "bundle={v:?}: expected message, transaction or collection"
                    )));
                }
            };
        }
    }
    Ok(bundle)
}

/// The zone of times sent without an offset: the `time_zone` query parameter (an IANA name), else the engine's
/// `[to_fhir] time_zone`, else none.
pub(crate) fn time_zone(
    state: &crate::state::AppState,
    query: &[(String, String)],
) -> Result<Option<v2fhir::TimeZone>, ApiError> {
    match query.iter().rfind(|(k, _)| k == "time_zone") {
        Some((_, name)) => v2fhir::time_zone(name)
            .map(Some)
            .map_err(ApiError::BadRequest),
        None => Ok(state
            .engine
            .as_ref()
            .and_then(|e| e.config().to_fhir.zone().cloned())),
    }
}

/// The request body, or the 413/400 OperationOutcome a client's oversized or broken body deserves; `hint` ends
/// the 413's text.
fn read_body(body: Result<Bytes, BytesRejection>, hint: &str) -> Result<Bytes, ApiError> {
    body.map_err(|r| {
        if r.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge(format!(
                "the body exceeds {} bytes{hint}",
                crate::outcome::MAX_HL7_BODY_BYTES
            ))
        } else {
            ApiError::BadRequest(format!(
                "the request body could not be read: {}",
                r.body_text()
            ))
        }
    })
}

/// `POST /hl7/to-fhir`: the Bundle(s) the message(s) in the body become.
async fn to_fhir(
    axum::extract::State(state): axum::extract::State<Shared>,
    Query(query): Query<Vec<(String, String)>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = read_body(body, "")?;
    let bundle = bundle_type(&query)?;
    // Codes are checked by the server's own terminology when it has one (`check=false` turns it off).
    let check = !query.iter().any(|(k, v)| k == "check" && v == "false");
    let checker = state
        .terminology
        .clone()
        .filter(|_| check)
        .map(crate::TerminologyChecker);
    let zone = time_zone(&state, &query)?;
    let converting = conversion_place().await;
    let bundles = crate::offload::offload(move || {
        let _converting = converting;
        let options = v2fhir::Options {
            bundle,
            checker: checker.as_ref().map(|c| c as &dyn v2fhir::CodeChecker),
            time_zone: zone.as_ref(),
            ..Default::default()
        };
        convert_all(&body, &options, MAX_BATCH_ANSWER)
    })
    .await?;
    let (mut out, count) = bundles;
    let content_type = |t: &'static str| [(axum::http::header::CONTENT_TYPE, t)];
    match count {
        0 => Err(ApiError::BadRequest(
            "the body holds no HL7 v2 message: no segment starts with MSH".into(),
        )),
        1 => {
            out.pop();
            Ok((content_type("application/fhir+json"), out).into_response())
        }
        _ => Ok((content_type("application/fhir+ndjson"), out).into_response()),
    }
}

/// The Bundles of the messages in `body`, one per line, written as each message is converted, and how many: at
/// most `limit` bytes of them (else 422 `too-costly`).
fn convert_all(
    body: &[u8],
    options: &v2fhir::Options<'_>,
    limit: usize,
) -> Result<(Vec<u8>, usize), ApiError> {
    let mut out = Vec::new();
    let mut count = 0;
    for (i, chunk) in hl7v2::split(body)
        .filter(|c| c.kind == ChunkKind::Message)
        .enumerate()
    {
        within_elements(&chunk)?;
        let json = v2fhir::convert_json(&chunk.parse(), options).map_err(|e| too_large(i, e))?;
        // Checked before the answer grows, so that its buffer never doubles past the bound.
        within_answer(out.len() + json.len() + 1, limit, i, "Bundles")?;
        out.extend_from_slice(&json);
        out.push(b'\n');
        count += 1;
    }
    Ok((out, count))
}

/// The bytes one answer of `POST /hl7/to-fhir` or `/hl7/validate` may hold. Each message of a batch is bounded
/// on its own, but a 64 MiB body of small messages becomes Bundles about thirteen times its size (865 MB); past
/// this the request is refused, 422 `too-costly`, naming the message where the answer would pass it, so that the
/// client splits the batch.
pub const MAX_BATCH_ANSWER: usize = 256 << 20;

/// `Err` (422 `too-costly`) when an answer of `len` bytes, reached at message `index` (0-based), is past `limit`
/// ([`MAX_BATCH_ANSWER`] but in tests).
fn within_answer(len: usize, limit: usize, index: usize, what: &str) -> Result<(), ApiError> {
    if len > limit {
        return Err(ApiError::TooCostly(format!(
            "the {what} of the body's first {} messages pass {limit} bytes, the most one answer holds: split the \
             batch",
            index + 1,
        )));
    }
    Ok(())
}

/// Conversions running at once, over the process: each may take up to [`v2fhir::DEFAULT_MAX_MEMORY`] while it
/// builds its Bundle, so their number is bounded apart from the requests': one per core (more would not finish
/// sooner, only take more memory). A request waits for its place without holding a thread.
static CONVERSIONS: std::sync::LazyLock<std::sync::Arc<tokio::sync::Semaphore>> =
    std::sync::LazyLock::new(|| {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        std::sync::Arc::new(tokio::sync::Semaphore::new(cores))
    });

/// A place among the [`CONVERSIONS`], held until the conversion ends.
pub(crate) async fn conversion_place() -> Option<tokio::sync::OwnedSemaphorePermit> {
    // The semaphore is never closed: `None` cannot happen, and would only let the conversion run unbounded.
    CONVERSIONS.clone().acquire_owned().await.ok()
}

/// The answer to a message too large to convert: 422, `too-costly`, saying which message.
pub(crate) fn too_large(index: usize, e: v2fhir::Error) -> ApiError {
    ApiError::TooCostly(format!("message {}: {e}", index + 1))
}

/// The JSON view of one message's validation: what `POST /hl7/validate` answers per message, what
/// `thoth hl7 validate --format json` prints per line and what `GET /messages/{id}` shows as `validation`.
///
/// ```json
/// {"control_id": "MSG00001", "structure": "ORU_R01", "version": "2.5.1", "valid": false,
///  "issues": [{"severity": "error", "code": "101", "rule": "required-field",
///              "path": "/PATIENT_RESULT/PATIENT/PID-5", "message": "..."}]}
/// ```
///
/// `structure` is null when the message structure could not be resolved; `code` is the HL7 table 0357 code as a
/// string. The parser's diagnostics come first (`rule` = `"parse"`), then the report's issues in message order;
/// `valid` is false when any of them is an error.
pub fn validation_json(msg: &Message<'_>, report: &Report) -> Value {
    // The parser's diagnostics are listed up to the validator's own limit on issues, and the rest counted: a body
    // of millions of malformed segments has a diagnostic each, and listing them all took gigabytes.
    let diagnostics = msg.diagnostics();
    let (listed, rest) = diagnostics.split_at(diagnostics.len().min(hl7v2::MAX_ISSUES));
    let mut issues = Vec::with_capacity(report.issues.len() + listed.len() + 1);
    let valid = report.is_valid()
        && !diagnostics
            .iter()
            .any(|d| d.severity() == hl7v2::Severity::Error);
    let tree = msg.group_tree();
    for d in listed {
        let err = hl7v2::AckError::from_diagnostic(msg, d);
        let severity = match d.severity() {
            hl7v2::Severity::Error => IssueSeverity::Error,
            hl7v2::Severity::Warning => IssueSeverity::Warning,
        };
        let l = d.location;
        let mut path = l
            .segment
            .checked_sub(1)
            .and_then(|i| tree.path_of(i))
            .map(|p| p.replace("(0)", ""))
            .unwrap_or_default();
        if l.field > 0 {
            path.push_str(&format!("-{}", l.field));
        }
        issues.push(json!({
            "severity": severity.as_str(),
            "code": err.code.code().to_string(),
            "rule": "parse",
            "path": path,
            "message": d.kind.describe(),
        }));
    }
    let more = rest.len() + msg.diagnostics_not_kept();
    if more > 0 {
        // One issue for the rest: the gravest severity among them (those the parser did not keep are warnings),
        // the code of the first listed of them or of a line break in content.
        let error = rest.iter().any(|d| d.severity() == hl7v2::Severity::Error);
        let code = match rest.first() {
            Some(d) => hl7v2::AckError::from_diagnostic(msg, d)
                .code
                .code()
                .to_string(),
            None => "102".to_owned(),
        };
        issues.push(json!({
            "severity": if error { "error" } else { "warning" },
            "code": code,
            "rule": "parse",
            "path": "",
            "message": format!(
                "{more} more parse diagnostics, not listed (the first {} are)",
                listed.len()
            ),
        }));
    }
    for i in &report.issues {
        issues.push(json!({
            "severity": i.severity.as_str(),
            "code": i.code().code().to_string(),
            "rule": i.rule.name(),
            "path": i.path,
            "message": i.message,
        }));
    }
    json!({
        "control_id": msg.get("MSH-10").unwrap_or_default(),
        "structure": report.structure,
        "version": report.version.as_str(),
        "valid": valid,
        "issues": issues,
    })
}

/// Parse options that force `version` when one is given (else MSH-12 chooses, 2.5.1 when it names none).
pub fn validation_parse_options(version: Option<Version>) -> ParseOptions {
    ParseOptions::default().with_tree_options(TreeOptions {
        force_version: version,
        ..TreeOptions::default()
    })
}

/// The `version` query parameter, when given (else MSH-12 chooses).
fn version_param(query: &[(String, String)]) -> Result<Option<Version>, ApiError> {
    let mut version = None;
    for (k, v) in query {
        if k == "version" && !v.is_empty() {
            version = Some(Version::parse(v).ok_or_else(|| {
                let all: Vec<_> = Version::ALL.iter().map(|v| v.as_str()).collect();
                ApiError::BadRequest(format!("version={v:?}: expected one of {}", all.join(", ")))
            })?);
        }
    }
    Ok(version)
}

/// The fields and segments one message of a body may have for the /hl7 routes to parse it: the engine's own bound
/// on a received message ([`interface::MAX_ELEMENTS`], which says why). A 64 MiB body of separators would take
/// about a gigabyte of parser index per request.
pub const MAX_HL7_ELEMENTS: usize = interface::MAX_ELEMENTS;

/// `Err` (422 `too-costly`) when the message in `chunk` has more fields and segments than [`MAX_HL7_ELEMENTS`],
/// counted before it is parsed.
fn within_elements(chunk: &hl7v2::Chunk<'_>) -> Result<(), ApiError> {
    match hl7v2::elements_over(chunk.bytes, MAX_HL7_ELEMENTS) {
        Some(n) => Err(ApiError::TooCostly(format!(
            "the message at byte {} has {n} fields and segments; the /hl7 routes parse at most {MAX_HL7_ELEMENTS}",
            chunk.offset
        ))),
        None => Ok(()),
    }
}

/// The fields a message may have for `POST /hl7/parse` to name each (see [`parse`]).
pub const MAX_PARSE_FIELDS: usize = 200_000;

/// `POST /hl7/parse`: the first message of the body, with names, and its validation under the lenient profile.
async fn parse(
    Query(query): Query<Vec<(String, String)>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = read_body(body, "")?;
    let version = version_param(&query)?;
    let out = tokio::task::spawn_blocking(move || {
        let options = validation_parse_options(version);
        let Some(chunk) = hl7v2::split(&body).find(|c| c.kind == ChunkKind::Message) else {
            return Err(ApiError::BadRequest(
                "the body holds no HL7 v2 message: no segment starts with MSH".into(),
            ));
        };
        within_elements(&chunk)?;
        let msg = chunk.parse_with(&options);
        // The answer names every field: its JSON tree takes about 150 bytes a field, and a body of 60 million `|`
        // took 9 GB and 47 s. Past the bound the message is refused (validation has no such cost).
        let fields: usize = msg.segments().map(|s| s.field_count()).sum();
        if fields > MAX_PARSE_FIELDS {
            return Err(ApiError::TooCostly(format!(
                "the message has {fields} fields; /hl7/parse names at most {MAX_PARSE_FIELDS} (use /hl7/validate)"
            )));
        }
        let validation = validation_json(&msg, &hl7v2::validate(&msg, &Profile::lenient()));
        Ok(json!({ "message": hl7v2::to_json_with_names(&msg), "validation": validation }))
    })
    .await
    .map_err(|e| ApiError::Internal(format!("parse task failed: {e}")))??;
    Ok(axum::Json(out).into_response())
}

async fn validate(
    Query(query): Query<Vec<(String, String)>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = read_body(body, "; split the batch")?;
    let mut version = None;
    let mut profile = Profile::lenient();
    for (k, v) in &query {
        match k.as_str() {
            "version" if !v.is_empty() => {
                version = Some(Version::parse(v).ok_or_else(|| {
                    let all: Vec<_> = Version::ALL.iter().map(|v| v.as_str()).collect();
                    ApiError::BadRequest(format!(
                        "version={v:?}: expected one of {}",
                        all.join(", ")
                    ))
                })?);
            }
            "version" => {}
            "strict" => {
                profile.strict = match v.as_str() {
                    "true" | "" => true,
                    "false" => false,
                    _ => {
                        return Err(ApiError::BadRequest(format!(
                            "strict={v:?}: expected true or false"
                        )));
                    }
                }
            }
            _ => {}
        }
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::BadRequest(
            "the body is empty: expected one or more HL7 v2 messages".into(),
        ));
    }
    // Validation is CPU work proportional to the body (a batch of thousands of messages): off the HTTP thread.
    let answer = tokio::task::spawn_blocking(move || {
        validate_all(&body, version, &profile, MAX_BATCH_ANSWER)
    })
    .await
    .map_err(|e| ApiError::Internal(format!("validation task failed: {e}")))??;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        answer,
    )
        .into_response())
}

/// `{"messages":[...]}`, each message's [`validation_json`] written as it is validated, so that a batch holds its
/// reports' bytes rather than their JSON trees, bounded by [`MAX_BATCH_ANSWER`].
fn validate_all(
    body: &[u8],
    version: Option<Version>,
    profile: &Profile,
    limit: usize,
) -> Result<Vec<u8>, ApiError> {
    let options = validation_parse_options(version);
    let mut out = b"{\"messages\":[".to_vec();
    let mut count = 0;
    for (i, chunk) in hl7v2::split(body)
        .filter(|c| c.kind == ChunkKind::Message)
        .enumerate()
    {
        within_elements(&chunk)?;
        let msg = chunk.parse_with(&options);
        let report = serde_json::to_vec(&validation_json(&msg, &hl7v2::validate(&msg, profile)))
            .map_err(|e| ApiError::Internal(format!("a validation report was not written: {e}")))?;
        // Checked before the answer grows (with its `,` and closing `]}`), so that its buffer never doubles past
        // the bound.
        within_answer(out.len() + report.len() + 3, limit, i, "validation reports")?;
        if count > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&report);
        count += 1;
    }
    if count == 0 {
        return Err(ApiError::BadRequest(
            "the body holds no HL7 v2 message: no segment starts with MSH".into(),
        ));
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADT: &[u8] = include_bytes!("../../../bench/hl7v2/messages/adt_a01.hl7");
    const ORU: &[u8] = include_bytes!("../../../bench/hl7v2/messages/oru_r01.hl7");

    /// A batch of the bench's messages, one after another (their files end without a segment terminator).
    fn batch() -> Vec<u8> {
        [ADT, b"\r", ORU, b"\r", ADT, b"\r"].concat()
    }

    fn too_costly_text(r: Result<impl std::fmt::Debug, ApiError>) -> String {
        match r {
            Err(ApiError::TooCostly(text)) => text,
            other => panic!("expected 422 too-costly, got {other:?}"),
        }
    }

    #[test]
    fn a_batchs_bundles_are_each_messages_own_until_the_answer_passes_its_bound() {
        let options = v2fhir::Options::default();
        let alone: Vec<Vec<u8>> = [ADT, ORU, ADT]
            .iter()
            .map(|m| v2fhir::convert_json(&hl7v2::Message::parse(m), &options).unwrap())
            .collect();
        let (out, count) = convert_all(&batch(), &options, usize::MAX).unwrap();
        assert_eq!(count, 3);
        let lines: Vec<&[u8]> = out
            .strip_suffix(b"\n")
            .unwrap()
            .split(|&b| b == b'\n')
            .collect();
        assert_eq!(lines, alone.iter().map(Vec::as_slice).collect::<Vec<_>>());
        // The bound one byte short of the first two Bundles and their line ends: refused at the second message.
        let limit = alone[0].len() + alone[1].len() + 1;
        let text = too_costly_text(convert_all(&batch(), &options, limit));
        assert!(text.contains("first 2 messages"), "{text}");
        assert!(
            convert_all(&batch(), &options, limit + 1).is_err(),
            "the third passes it"
        );
        let (_, count) = convert_all(&batch(), &options, out.len()).unwrap();
        assert_eq!(count, 3, "an answer of exactly the bound is given");
    }

    #[test]
    fn a_batchs_validation_reports_are_each_messages_own_until_the_answer_passes_its_bound() {
        let profile = Profile::lenient();
        let out = validate_all(&batch(), None, &profile, usize::MAX).unwrap();
        let answer: Value = serde_json::from_slice(&out).unwrap();
        let options = validation_parse_options(None);
        let alone: Vec<Value> = [ADT, ORU, ADT]
            .iter()
            .map(|m| {
                let msg = hl7v2::Message::parse_with(m, &options);
                validation_json(&msg, &hl7v2::validate(&msg, &profile))
            })
            .collect();
        assert_eq!(answer, json!({ "messages": alone }));
        let text = too_costly_text(validate_all(&batch(), None, &profile, 20));
        assert!(text.contains("first 1 messages"), "{text}");
        assert!(validate_all(&batch(), None, &profile, out.len()).is_ok());
    }
}
