//! /fhir: the FHIR terminology operations (`$expand`, `$validate-code`, `$lookup`, `$subsumes`, `$translate`,
//! `$batch-validate-code`), search and read of CodeSystem, ValueSet and ConceptMap, and `$versions`.
//!
//! GET query strings and POSTed `Parameters` become the same [`terminology::Params`]; the facade answers in
//! FHIR JSON.

use crate::error::ApiError;
use crate::state::{AppState, Shared};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequest, Path, Query, Request, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use std::sync::Arc;
use terminology::{Kind, Operation, Params, Terminology};

/// The route of the type-level operations, searches' siblings: `/fhir/CodeSystem/$lookup` and the like.
pub(crate) const TYPE_LEVEL: &str = "/fhir/{type}/{id}";
/// The route of the searches: `/fhir/ValueSet?url=...`.
pub(crate) const SEARCH: &str = "/fhir/{type}";

pub(crate) fn routes() -> Router<Shared> {
    Router::new()
        .route("/fhir/$versions", get(versions).post(versions))
        .route(SEARCH, get(search))
        .route(TYPE_LEVEL, get(type_level).post(type_level))
        .route(
            "/fhir/{type}/{id}/{op}",
            get(instance_level).post(instance_level),
        )
}

fn fhir_json(v: &Value) -> Response {
    ([("content-type", "application/fhir+json")], v.to_string()).into_response()
}

fn service(state: &AppState) -> Result<Arc<Terminology>, ApiError> {
    state
        .terminology
        .clone()
        .ok_or_else(|| ApiError::NotSupported("terminology content is not loaded".into()))
}

fn kind(name: &str) -> Result<Kind, ApiError> {
    Kind::from_name(name).ok_or_else(|| ApiError::NotFound(format!("no resource type {name} here")))
}

fn operation(kind: Kind, op: &str) -> Option<Operation> {
    Some(match (kind, op) {
        (Kind::ValueSet, "$expand") => Operation::Expand,
        (Kind::ValueSet, "$validate-code") => Operation::ValidateVs,
        (Kind::ValueSet, "$batch-validate-code") => Operation::BatchValidate,
        (Kind::CodeSystem, "$validate-code") => Operation::ValidateCs,
        (Kind::CodeSystem, "$lookup") => Operation::Lookup,
        (Kind::CodeSystem, "$subsumes") => Operation::Subsumes,
        (Kind::ConceptMap, "$translate") => Operation::Translate,
        _ => return None,
    })
}

/// Reads the operation's parameters from the query string and, for POST, the body.
fn read_params(
    method: &Method,
    query: &[(String, String)],
    body: &Bytes,
) -> Result<Params, ApiError> {
    let query: Vec<(String, String)> = query
        .iter()
        .filter(|(k, _)| !k.starts_with('_'))
        .cloned()
        .collect();
    let mut params = Params::from_query(&query);
    if method == Method::POST && !body.is_empty() {
        let v: Value = serde_json::from_slice(body)
            .map_err(|e| ApiError::BadRequest(format!("the body is not JSON: {e}")))?;
        match v.get("resourceType").and_then(Value::as_str) {
            Some("Parameters") => {
                for e in Params::from_json(&v).entries() {
                    params.push(e.clone());
                }
            }
            Some(other) => {
                return Err(ApiError::BadRequest(format!(
                    "expected a Parameters resource, got {other}"
                )));
            }
            None => {
                return Err(ApiError::BadRequest(
                    "the body is not a FHIR resource".into(),
                ));
            }
        }
    }
    Ok(params)
}

fn accept_language(headers: &HeaderMap) -> Option<String> {
    headers
        .get("accept-language")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

async fn run(
    state: Shared,
    op: Operation,
    params: Params,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let tx = service(&state)?;
    let lang = accept_language(headers);
    // Expansions of large code systems are CPU work; keep them off the async workers.
    let result = crate::offload::offload(move || {
        tx.run(op, &params, lang.as_deref()).map_err(ApiError::from)
    })
    .await?;
    Ok(fhir_json(&result))
}

/// The type-level operation a path names (`/fhir/CodeSystem/$lookup`), read as the router would route it.
pub(crate) fn type_level_operation(path: &str) -> Option<Operation> {
    let (ty, id) = path.strip_prefix("/fhir/")?.split_once('/')?;
    if id.contains('/') {
        return None;
    }
    operation(Kind::from_name(ty)?, id)
}

async fn type_level(
    State(state): State<Shared>,
    Path((ty, id)): Path<(String, String)>,
    req: Request,
) -> Result<Response, ApiError> {
    let kind = kind(&ty)?;
    // The query is read here rather than by an extractor: the single-code GETs below borrow its pairs
    // without copying them, and the headers and body are only taken when the general path needs them.
    let query = req.uri().query().unwrap_or_default();
    if id.starts_with('$') {
        let op = operation(kind, &id)
            .ok_or_else(|| ApiError::NotFound(format!("no operation {id} on {ty}")))?;
        // The single-code GETs the service's fast path answers never get here when the whole app serves:
        // `crate::fast_lane` answered them before routing.
        let query: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let method = req.method().clone();
        let headers = req.headers().clone();
        // An expansion the lane may not evaluate on an HTTP thread (an ECL implicit value set): the fast path
        // here, off the HTTP threads, which keeps its answer so that the lane answers the same request next
        // time (`Terminology::expand_seen`).
        if method == Method::GET
            && op == Operation::Expand
            && crate::fhir_format::wants_json(req.uri(), req.headers())
        {
            let tx = service(&state)?;
            let (pairs, lang) = (query.clone(), accept_language(&headers));
            let answer = crate::offload::offload(move || {
                Ok::<_, ApiError>(tx.run_fast(op, &pairs, lang.as_deref()))
            })
            .await?;
            if let Some(answer) = answer {
                return Ok(([("content-type", "application/fhir+json")], answer).into_response());
            }
        }
        let body = match Bytes::from_request(req, &state).await {
            Ok(body) => body,
            Err(rejection) => return Ok(rejection.into_response()),
        };
        let params = read_params(&method, &query, &body)?;
        return run(state, op, params, &headers).await;
    }
    if req.method() != Method::GET {
        return Err(ApiError::NotSupported(format!(
            "{} on {ty}/{id}",
            req.method()
        )));
    }
    let tx = service(&state)?;
    match tx.read(kind, &id) {
        Some(r) => Ok(fhir_json(&r)),
        None => Err(ApiError::NotFound(format!("{ty}/{id} is not known"))),
    }
}

async fn instance_level(
    State(state): State<Shared>,
    method: Method,
    Path((ty, id, op)): Path<(String, String, String)>,
    Query(query): Query<Vec<(String, String)>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let kind = kind(&ty)?;
    let operation = operation(kind, &op)
        .ok_or_else(|| ApiError::NotFound(format!("no operation {op} on {ty}")))?;
    let tx = service(&state)?;
    let resource = tx
        .read(kind, &id)
        .ok_or_else(|| ApiError::NotFound(format!("{ty}/{id} is not known")))?;
    let mut params = read_params(&method, &query, &body)?;
    let param = match kind {
        Kind::ValueSet => "valueSet",
        Kind::CodeSystem => "codeSystem",
        _ => "conceptMap",
    };
    params.push(json!({"name": param, "resource": resource}));
    run(state, operation, params, &headers).await
}

async fn search(
    State(state): State<Shared>,
    Path(ty): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
) -> Result<Response, ApiError> {
    let kind = kind(&ty)?;
    let tx = service(&state)?;
    // A search reads every resource of the type (a package may hold thousands): off the HTTP threads.
    let bundle =
        crate::offload::offload(move || Ok::<_, ApiError>(tx.search(kind, &query, "/fhir")))
            .await?;
    Ok(fhir_json(&bundle))
}

async fn versions() -> Response {
    fhir_json(&json!({
        "resourceType": "Parameters",
        "parameter": [
            {"name": "version", "valueString": "4.0.1"},
            {"name": "default", "valueString": "4.0.1"},
        ]
    }))
}
