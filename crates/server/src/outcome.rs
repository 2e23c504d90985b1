//! Every error answer is a FHIR OperationOutcome, in the format the request negotiated, whatever produced it: a
//! handler's [`ApiError`](crate::error::ApiError), an extractor's rejection (axum answers those in plain text), a
//! method the route does not have (axum answers 405 with an empty body), or one of the request limits checked
//! here before any handler runs.
//!
//! The limits below are checked up front because they are cheap to check and expensive to discover late: a URI
//! or header block past them is refused before routing, and a body whose declared `Content-Length` is past the
//! route's limit is refused before a byte of it is read, so that rejected requests cost no memory however many
//! arrive at once. What hyper itself refuses while parsing (a request line past 64 KiB, more than 100 headers, a
//! head past its buffer) never reaches this layer and is answered by hyper with an empty body.

use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Longest request target (path and query) answered; longer ones get 414. Long enough for ECL expressions and
/// searches of a few thousand characters, short of hyper's own 64 KiB refusal so that clients get a reason.
pub const MAX_URI_BYTES: usize = 32 << 10;
/// Largest total size of the header names and values; larger blocks get 431.
pub const MAX_HEADER_BYTES: usize = 32 << 10;
/// Largest request body on the FHIR, SNOMED CT and message routes, in JSON and XML alike: room for a
/// `Parameters` with several `tx-resource`s.
pub const MAX_FHIR_BODY_BYTES: usize = 32 << 20;
/// Largest request body on `/hl7` (a batch file of a day's messages).
pub const MAX_HL7_BODY_BYTES: usize = 64 << 20;
/// How much of a plain-text error body is kept as the outcome's diagnostics.
const MAX_DIAGNOSTICS_BYTES: usize = 4 << 10;

const FHIR_JSON: &str = "application/fhir+json";

/// The body limit of the route `path` belongs to.
pub fn body_limit(path: &str) -> usize {
    if path.starts_with("/hl7/") {
        MAX_HL7_BODY_BYTES
    } else {
        MAX_FHIR_BODY_BYTES
    }
}

/// The middleware: refuse what breaks a limit, run the request, and turn any error answer that is not already
/// an OperationOutcome into one.
pub(crate) async fn every_error_is_an_outcome(req: Request, next: Next) -> Response {
    // What negotiation needs after the request is consumed; both clones share their bytes.
    let uri = req.uri().clone();
    let accept = req.headers().get(header::ACCEPT).cloned();
    let method = req.method().clone();
    let response = match refusal(&req) {
        Some(refused) => refused,
        None => next.run(req).await,
    };
    if !(response.status().is_client_error() || response.status().is_server_error()) {
        return response;
    }
    let xml = wants_xml(&uri, accept);
    as_outcome(response, &method, &uri, xml).await
}

/// The limit `req` breaks, as the answer that says so.
fn refusal(req: &Request) -> Option<Response> {
    let target = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if target > MAX_URI_BYTES {
        return Some(outcome(
            StatusCode::URI_TOO_LONG,
            &format!(
                "the request target has {target} bytes, more than the {MAX_URI_BYTES} this server reads; \
                 send long parameters in a POST body"
            ),
        ));
    }
    let header_bytes: usize = req
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    if header_bytes > MAX_HEADER_BYTES {
        return Some(outcome(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            &format!(
                "the request headers have {header_bytes} bytes, more than the {MAX_HEADER_BYTES} this server reads"
            ),
        ));
    }
    let limit = body_limit(req.uri().path());
    match declared_length(req.headers()) {
        Some(Ok(length)) if length > limit as u64 => Some(outcome(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!(
                "the request body declares {length} bytes, more than the {limit} this route accepts"
            ),
        )),
        Some(Err(())) => Some(outcome(
            StatusCode::BAD_REQUEST,
            "the Content-Length header is not a number",
        )),
        _ => None,
    }
}

fn declared_length(headers: &HeaderMap) -> Option<Result<u64, ()>> {
    let value = headers.get(header::CONTENT_LENGTH)?;
    Some(
        value
            .to_str()
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .ok_or(()),
    )
}

/// Whether the answer should be FHIR XML: `_format` first, then `Accept`, as on `/fhir`.
fn wants_xml(uri: &Uri, accept: Option<HeaderValue>) -> bool {
    let mut headers = HeaderMap::new();
    if let Some(accept) = accept {
        headers.insert(header::ACCEPT, accept);
    }
    !crate::fhir_format::wants_json(uri, &headers)
}

/// `response` as an OperationOutcome in the negotiated format. Answers that are FHIR already keep their
/// content (converted to XML when asked), as do the Hermes-compatible API's JSON errors (an OperationOutcome
/// with Hermes's `error` beside it, which Hermes clients read).
async fn as_outcome(response: Response, method: &Method, uri: &Uri, xml: bool) -> Response {
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.as_bytes().to_vec())
        .unwrap_or_default();
    if content_type.starts_with(b"application/fhir+xml") {
        return response;
    }
    if content_type.starts_with(FHIR_JSON.as_bytes())
        || content_type.starts_with(b"application/json")
    {
        return if xml {
            to_xml(response).await
        } else {
            response
        };
    }
    let status = response.status();
    let allow = response.headers().get(header::ALLOW).cloned();
    let text = match to_bytes(response.into_body(), MAX_DIAGNOSTICS_BYTES).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_string(),
        Err(_) => String::new(),
    };
    let diagnostics = match (status, text.is_empty()) {
        (StatusCode::METHOD_NOT_ALLOWED, _) => format!(
            "{method} is not allowed on {}{}",
            uri.path(),
            allow
                .as_ref()
                .and_then(|a| a.to_str().ok())
                .map(|a| format!("; allowed: {a}"))
                .unwrap_or_default()
        ),
        (_, false) => text,
        (_, true) => status
            .canonical_reason()
            .unwrap_or("the request failed")
            .to_string(),
    };
    let mut answer = outcome(status, &diagnostics);
    if let Some(allow) = allow {
        answer.headers_mut().insert(header::ALLOW, allow);
    }
    if xml { to_xml(answer).await } else { answer }
}

/// An OperationOutcome answer with one error issue whose code follows from the status.
fn outcome(status: StatusCode, diagnostics: &str) -> Response {
    let code = match status.as_u16() {
        401 => "login",
        403 => "forbidden",
        404 => "not-found",
        405 | 406 | 415 | 501 => "not-supported",
        408 => "timeout",
        409 => "conflict",
        413 => "too-costly",
        414 | 431 => "too-long",
        422 => "processing",
        429 => "throttled",
        400..=499 => "invalid",
        _ => "exception",
    };
    let body = json!({
        "resourceType": "OperationOutcome",
        "issue": [{"severity": "error", "code": code, "diagnostics": diagnostics}],
    });
    (
        status,
        [(header::CONTENT_TYPE, FHIR_JSON)],
        body.to_string(),
    )
        .into_response()
}

/// A JSON error answer written as FHIR XML (an OperationOutcome is small: read whole). The Hermes-compatible
/// API's `error` member is not FHIR and is left out; a JSON answer that is not an OperationOutcome becomes one
/// that quotes it.
async fn to_xml(response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let bytes = to_bytes(body, 1 << 20).await.unwrap_or_default();
    let mut value: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    if value
        .get("resourceType")
        .and_then(serde_json::Value::as_str)
        == Some("OperationOutcome")
    {
        if let Some(members) = value.as_object_mut() {
            members.remove("error");
        }
    } else {
        let shown = bytes.get(..bytes.len().min(MAX_DIAGNOSTICS_BYTES));
        let text = String::from_utf8_lossy(shown.unwrap_or_default());
        let quoted = outcome(parts.status, text.trim()).into_body();
        let quoted = to_bytes(quoted, 1 << 20).await.unwrap_or_default();
        value = serde_json::from_slice(&quoted).unwrap_or_default();
    }
    let converted = fhir::Resource::from_json(value.to_string().as_bytes())
        .map_err(|e| e.to_string())
        .and_then(|r| r.to_xml(false).map_err(|e| e.to_string()));
    match converted {
        Ok(xml) => {
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/fhir+xml"),
            );
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(xml))
        }
        Err(e) => {
            tracing::error!(error = %e, "an OperationOutcome could not be written as XML");
            outcome(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the error could not be written as FHIR XML",
            )
        }
    }
}
