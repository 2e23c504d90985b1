//! /v1/snomed: the Hermes-compatible native SNOMED CT API.
//!
//! Routes, parameters and JSON shapes follow Hermes (`wardle/hermes`, `cmd/com/eldrix/hermes/cmd/server.clj`) so
//! that its clients work unchanged; `docs/SNOMED-API.md` has the route-by-route table of what matches and what
//! does not. Identifiers in paths are validated (Verhoeff, partition): a malformed one is a 400, an unknown one a
//! 404. Errors carry Hermes's `{"error": message}` and, for Thoth's own clients, the OperationOutcome fields.

use crate::error::ApiError;
use crate::state::{AppState, Shared};
use axum::extract::{Path, Query, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Map, Value, json};
use snomed::{
    ConceptIdx, Description, DescriptionKind, RefsetMember, SctId, SearchRequest, Store,
    format_date,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// An error of this API: Hermes answers `{"error": "..."}` (with a 400 for bad parameters and invalid ECL, 422
/// for an ECL attribute that is not a concept model attribute); Thoth's clients of this API have read the
/// OperationOutcome `issue` list since the start. The body carries both, so neither kind of client breaks.
#[derive(Debug)]
struct V1Error {
    error: ApiError,
    /// A status other than the one `ApiError` implies (Hermes's 422 for a non-attribute in a refinement).
    status: Option<StatusCode>,
}

impl From<ApiError> for V1Error {
    fn from(error: ApiError) -> Self {
        V1Error {
            error,
            status: None,
        }
    }
}

impl IntoResponse for V1Error {
    fn into_response(self) -> Response {
        let (status, _) = self.error.classify();
        let status = self.status.unwrap_or(status);
        if status.is_server_error() {
            tracing::error!(error = %self.error, "request failed");
        }
        let mut body = self.error.operation_outcome();
        if let Value::Object(m) = &mut body {
            m.insert("error".into(), self.error.to_string().into());
        }
        (
            status,
            [("content-type", "application/json")],
            body.to_string(),
        )
            .into_response()
    }
}

pub(crate) fn routes() -> Router<Shared> {
    Router::new()
        .route("/concepts/{id}", get(concept))
        .route("/concepts/{id}/descriptions", get(descriptions))
        .route("/concepts/{id}/preferred", get(preferred))
        .route("/concepts/{id}/extended", get(extended))
        .route("/concepts/{id}/properties", get(properties))
        .route("/concepts/{id}/historical", get(historical))
        .route("/concepts/{id}/refsets", get(refsets))
        .route("/concepts/{id}/subsumed-by/{subsumer}", get(subsumed_by))
        .route("/concepts/{id}/map/{refset}", get(map_to))
        .route("/crossmap/{refset}/{code}", get(crossmap))
        .route("/search", get(search))
        .route("/expand", get(expand))
        .route("/ecl/parse", get(parse_ecl))
}

fn store(state: &AppState) -> Result<&Arc<Store>, ApiError> {
    state.snomed.as_ref().ok_or_else(|| {
        ApiError::NotFound(
            "no SNOMED CT release is loaded; run `thoth import snomed PATH...`".into(),
        )
    })
}

fn parse_id(s: &str) -> Result<SctId, ApiError> {
    SctId::parse(s).map_err(|e| ApiError::BadRequest(e.to_string()))
}

fn concept_idx(store: &Store, s: &str) -> Result<ConceptIdx, ApiError> {
    let id = parse_id(s)?;
    store
        .index_of(id)
        .ok_or_else(|| ApiError::NotFound(format!("concept {id} not found")))
}

fn accept_language(headers: &HeaderMap) -> Option<&str> {
    headers.get("accept-language").and_then(|v| v.to_str().ok())
}

/// A concept as Hermes shows it. Serialized straight from the store's fields: the single-concept lookup is the
/// API's hottest route, and building a `serde_json::Value` first cost a map and six allocations per request.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ConceptJson {
    id: u64,
    effective_time: IsoDate,
    active: bool,
    module_id: u64,
    definition_status_id: u64,
}

/// An RF2 effectiveTime (`yyyymmdd` as a number) written as an ISO date without an intermediate `String`.
struct IsoDate(u32);

impl serde::Serialize for IsoDate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        s.collect_str(&format_args!(
            "{:04}-{:02}-{:02}",
            t / 10000,
            t / 100 % 100,
            t % 100
        ))
    }
}

fn concept_json(store: &Store, idx: ConceptIdx) -> ConceptJson {
    let c = store.concept(idx);
    ConceptJson {
        id: c.id.get(),
        effective_time: IsoDate(c.effective_time),
        active: c.active,
        module_id: c.module.get(),
        definition_status_id: c.definition_status.get(),
    }
}

fn description_json(d: &Description<'_>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("id".into(), d.id.get().into());
    m.insert("effectiveTime".into(), format_date(d.effective_time).into());
    m.insert("active".into(), d.active.into());
    m.insert("moduleId".into(), d.module.get().into());
    m.insert("conceptId".into(), d.concept_id.get().into());
    m.insert("languageCode".into(), d.language.into());
    m.insert("typeId".into(), d.type_id.get().into());
    m.insert("term".into(), d.term.into());
    m.insert(
        "caseSignificanceId".into(),
        d.case_significance.get().into(),
    );
    m
}

fn extended_description_json(store: &Store, d: &Description<'_>) -> Value {
    let mut m = description_json(d);
    let (mut preferred, mut acceptable, mut all) = (Vec::new(), Vec::new(), Vec::new());
    for a in store.acceptability(d.idx) {
        all.push(a.refset.get());
        if a.preferred {
            preferred.push(a.refset.get());
        } else {
            acceptable.push(a.refset.get());
        }
    }
    m.insert("refsets".into(), all.into());
    m.insert("preferredIn".into(), preferred.into());
    m.insert("acceptableIn".into(), acceptable.into());
    Value::Object(m)
}

/// A refset member with its additional fields named and typed as in the refset's release file.
fn member_json(store: &Store, m: &RefsetMember<'_>) -> Value {
    let mut o = Map::new();
    o.insert("id".into(), m.uuid_string().into());
    o.insert("effectiveTime".into(), format_date(m.effective_time).into());
    o.insert("active".into(), m.active.into());
    o.insert("moduleId".into(), m.module.get().into());
    o.insert("refsetId".into(), m.refset.get().into());
    o.insert(
        "referencedComponentId".into(),
        m.referenced_component.into(),
    );
    if let Some(fields) = store.refset_fields(m.refset) {
        let types = fields.pattern.as_bytes();
        for (i, (name, value)) in fields.names.iter().zip(m.fields()).enumerate() {
            let v = match types.get(i) {
                Some(b'c' | b'i') => value
                    .parse::<u64>()
                    .map(Value::from)
                    .or_else(|_| value.parse::<i64>().map(Value::from))
                    .unwrap_or_else(|_| value.into()),
                _ => value.into(),
            };
            o.insert((*name).to_string(), v);
        }
    }
    Value::Object(o)
}

async fn concept(
    State(state): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<ConceptJson>, V1Error> {
    let store = store(&state)?;
    let idx = concept_idx(store, &id)?;
    Ok(Json(concept_json(store, idx)))
}

async fn descriptions(
    State(state): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, V1Error> {
    let store = store(&state)?;
    let idx = concept_idx(store, &id)?;
    let list: Vec<Value> = store
        .descriptions(idx)
        .map(|d| Value::Object(description_json(&d)))
        .collect();
    Ok(Json(Value::Array(list)))
}

async fn preferred(
    State(state): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Value>, V1Error> {
    let store = store(&state)?;
    let idx = concept_idx(store, &id)?;
    let refsets = store.language_refsets_for(accept_language(&headers));
    let d = store.preferred_synonym(idx, &refsets).ok_or_else(|| {
        V1Error::from(ApiError::NotFound(format!(
            "concept {id} has no active description"
        )))
    })?;
    Ok(Json(Value::Object(description_json(&d))))
}

/// Parent relationships by type: direct destinations, or with `transitive` their ancestors too (as Hermes's
/// `parentRelationships`, which carry the closure so clients can infer without more requests).
fn parent_relationships(store: &Store, idx: ConceptIdx, transitive: bool) -> Value {
    let mut by_type: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for r in store.relationships(idx).filter(|r| r.is_inferred_active()) {
        let list = by_type.entry(r.type_id.get()).or_default();
        list.push(r.destination_id.get());
        if transitive && let Some(d) = r.destination {
            list.extend(store.ancestors(d).iter().map(|&a| store.id_of(a).get()));
        }
    }
    let mut m = Map::new();
    for (t, mut v) in by_type {
        v.sort_unstable();
        v.dedup();
        m.insert(t.to_string(), v.into());
    }
    Value::Object(m)
}

async fn extended(
    State(state): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Value>, V1Error> {
    let store = store(&state)?;
    let idx = concept_idx(store, &id)?;
    let descriptions: Vec<Value> = store
        .descriptions(idx)
        .map(|d| extended_description_json(store, &d))
        .collect();
    let concrete: Vec<Value> = store
        .concrete_values(idx)
        .filter(|c| c.active)
        .map(|c| {
            json!({
                "id": c.id.get(),
                "typeId": c.type_id.get(),
                "relationshipGroup": c.group,
                "value": c.raw,
            })
        })
        .collect();
    let refsets = store.language_refsets_for(accept_language(&headers));
    let preferred = store
        .preferred_synonym(idx, &refsets)
        .map(|d| extended_description_json(store, &d))
        .unwrap_or(Value::Null);
    let concept_refsets: Vec<u64> = store
        .refsets_of_concept(store.id_of(idx))
        .iter()
        .map(|r| r.get())
        .collect();
    Ok(Json(json!({
        "concept": concept_json(store, idx),
        "descriptions": descriptions,
        "parentRelationships": parent_relationships(store, idx, true),
        "directParentRelationships": parent_relationships(store, idx, false),
        "concreteValues": concrete,
        "refsets": concept_refsets,
        "preferredDescription": preferred,
    })))
}

async fn properties(
    State(state): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, V1Error> {
    let store = store(&state)?;
    let idx = concept_idx(store, &id)?;
    let mut groups: BTreeMap<u32, BTreeMap<u64, Vec<Value>>> = BTreeMap::new();
    for r in store.relationships(idx).filter(|r| r.is_inferred_active()) {
        groups
            .entry(r.group)
            .or_default()
            .entry(r.type_id.get())
            .or_default()
            .push(r.destination_id.get().into());
    }
    for c in store.concrete_values(idx).filter(|c| c.active) {
        let v = match c.value() {
            snomed::Value::Integer(i) => Value::from(i),
            snomed::Value::Decimal(f) => Value::from(f),
            snomed::Value::String(s) => Value::from(s),
        };
        groups
            .entry(c.group)
            .or_default()
            .entry(c.type_id.get())
            .or_default()
            .push(v);
    }
    let mut out = Map::new();
    for (g, types) in groups {
        let mut m = Map::new();
        for (t, vs) in types {
            m.insert(t.to_string(), Value::Array(vs));
        }
        out.insert(g.to_string(), Value::Object(m));
    }
    Ok(Json(Value::Object(out)))
}

async fn historical(
    State(state): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, V1Error> {
    let store = store(&state)?;
    let idx = concept_idx(store, &id)?;
    let mut by_refset: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    for m in store.historical_associations(store.id_of(idx)) {
        by_refset
            .entry(m.refset.get())
            .or_default()
            .push(member_json(store, &m));
    }
    let out: Map<String, Value> = by_refset
        .into_iter()
        .map(|(k, v)| (k.to_string(), Value::Array(v)))
        .collect();
    Ok(Json(Value::Object(out)))
}

async fn refsets(
    State(state): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, V1Error> {
    let store = store(&state)?;
    let idx = concept_idx(store, &id)?;
    let items: Vec<Value> = store
        .members_of_component(store.id_of(idx).get())
        .filter(|m| m.active)
        .map(|m| member_json(store, &m))
        .collect();
    Ok(Json(Value::Array(items)))
}

async fn subsumed_by(
    State(state): State<Shared>,
    Path((id, subsumer)): Path<(String, String)>,
) -> Result<Json<SubsumedBy>, V1Error> {
    let store = store(&state)?;
    let a = concept_idx(store, &id)?;
    let b = concept_idx(store, &subsumer)?;
    Ok(Json(SubsumedBy {
        subsumed_by: store.is_a(a, b),
    }))
}

/// The subsumption answer, serialized without building a map (a hot route of the API, like the lookup).
#[derive(serde::Serialize)]
struct SubsumedBy {
    #[serde(rename = "subsumedBy")]
    subsumed_by: bool,
}

/// Members of `refset` for the concept; when it has none, those of its most specific ancestors that do
/// (Hermes maps a concept "into" any refset this way).
async fn map_to(
    State(state): State<Shared>,
    Path((id, refset)): Path<(String, String)>,
) -> Result<Json<Value>, V1Error> {
    let store = store(&state)?;
    let idx = concept_idx(store, &id)?;
    let refset = parse_id(&refset)?;
    let cid = store.id_of(idx).get();
    let own: Vec<Value> = store
        .refset_members_for(refset, cid)
        .filter(|m| m.active)
        .map(|m| member_json(store, &m))
        .collect();
    if !own.is_empty() {
        return Ok(Json(Value::Array(own)));
    }
    let in_refset: Vec<ConceptIdx> = store
        .ancestors(idx)
        .iter()
        .copied()
        .filter(|&a| {
            store
                .refset_members_for(refset, store.id_of(a).get())
                .any(|m| m.active)
        })
        .collect();
    let most_specific = in_refset
        .iter()
        .filter(|&&a| !in_refset.iter().any(|&b| b != a && store.is_a(b, a)));
    let mut items = Vec::new();
    for &a in most_specific {
        items.extend(
            store
                .refset_members_for(refset, store.id_of(a).get())
                .filter(|m| m.active)
                .map(|m| member_json(store, &m)),
        );
    }
    Ok(Json(Value::Array(items)))
}

/// Reverse map: active members of a map refset whose `mapTarget` (or first string field) is `code`.
async fn crossmap(state: State<Shared>, path: Path<(String, String)>) -> Result<Response, V1Error> {
    // A reverse map reads every member of the refset: off the HTTP threads.
    offload_json(move || crossmap_now(state, path)).await
}

/// Runs a handler's work on the blocking pool ([`crate::offload`]) and writes its JSON there too: serializing
/// (and freeing) a million-row answer takes as long as computing it.
async fn offload_json(
    work: impl FnOnce() -> Result<Json<Value>, V1Error> + Send + 'static,
) -> Result<Response, V1Error> {
    let bytes = crate::offload::offload(move || {
        work().map(|Json(v)| serde_json::to_vec(&v).unwrap_or_default())
    })
    .await?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        bytes,
    )
        .into_response())
}

fn crossmap_now(
    State(state): State<Shared>,
    Path((refset, code)): Path<(String, String)>,
) -> Result<Json<Value>, V1Error> {
    let store = store(&state)?;
    let refset = parse_id(&refset)?;
    let fields = store
        .refset_fields(refset)
        .ok_or_else(|| ApiError::NotFound(format!("refset {refset} not found")))?;
    let target = fields
        .names
        .iter()
        .position(|n| *n == "mapTarget")
        .or_else(|| fields.pattern.bytes().position(|b| b == b's'))
        .ok_or_else(|| ApiError::BadRequest(format!("refset {refset} is not a map")))?;
    let code = code.to_uppercase();
    let items: Vec<Value> = store
        .refset_members(refset)
        .filter(|m| {
            m.active
                && m.field(target)
                    .is_some_and(|t| t.eq_ignore_ascii_case(&code))
        })
        .map(|m| member_json(store, &m))
        .collect();
    // Hermes answers its `(seq ...)` of the matches, and no result is a 404 there: a code nothing maps to is
    // "not found", not an empty list.
    if items.is_empty() {
        return Err(
            ApiError::NotFound(format!("no member of refset {refset} maps to '{code}'")).into(),
        );
    }
    Ok(Json(Value::Array(items)))
}

/// `maxHits`: `default` when absent, an error unless `1..=max`.
fn max_hits(
    params: &HashMap<String, String>,
    default: usize,
    max: usize,
) -> Result<usize, ApiError> {
    match params.get("maxHits") {
        None => Ok(default),
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| ApiError::BadRequest(format!("invalid parameter maxHits: '{v}'"))),
    }
}

/// A flag as Hermes writes them (`true`/`1`); `false`, `0` and empty are false. Hermes reads any other value as
/// false; Thoth refuses it (400), so that a typo is not silently a different query.
fn flag(params: &HashMap<String, String>, name: &str) -> Result<Option<bool>, ApiError> {
    match params.get(name).map(String::as_str) {
        None => Ok(None),
        Some("1" | "true") => Ok(Some(true)),
        Some("0" | "false" | "") => Ok(Some(false)),
        Some(v) => Err(ApiError::BadRequest(format!(
            "invalid parameter {name}: '{v}'"
        ))),
    }
}

/// The query string as Hermes's server reads it: single parameters by name (the first occurrence), and every
/// occurrence of the ones Hermes accepts repeated (`isA=1&isA=2`).
struct Params {
    single: HashMap<String, String>,
    all: Vec<(String, String)>,
}

impl Params {
    fn parse(raw: Option<&str>) -> Params {
        let all: Vec<(String, String)> = form_urlencoded::parse(raw.unwrap_or("").as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let mut single = HashMap::new();
        for (k, v) in &all {
            single.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Params { single, all }
    }

    /// Every id given for `name`, repeated (Hermes) or comma-separated (Thoth's earlier form).
    fn ids(&self, name: &str) -> Result<Vec<SctId>, ApiError> {
        self.all
            .iter()
            .filter(|(k, _)| k == name)
            .flat_map(|(_, v)| v.split(','))
            .map(parse_id)
            .collect()
    }
}

async fn search(
    state: State<Shared>,
    raw: RawQuery,
    headers: HeaderMap,
) -> Result<Response, V1Error> {
    // A constraint is an ECL evaluation, a fuzzy search walks automata: off the HTTP threads.
    offload_json(move || search_now(state, raw, headers)).await
}

fn search_now(
    State(state): State<Shared>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Result<Json<Value>, V1Error> {
    let store = store(&state)?;
    let query = Params::parse(raw.as_deref());
    let params = &query.single;
    let text = params.get("s").map(String::as_str).unwrap_or("");
    let mut req = SearchRequest::new(text);
    req.max_hits = max_hits(params, 500, 9_999)?;
    let fuzzy_distance = |b: Option<bool>| if b == Some(true) { 2 } else { 0 };
    req.fuzzy = fuzzy_distance(flag(params, "fuzzy")?);
    req.fallback_fuzzy = fuzzy_distance(flag(params, "fallbackFuzzy")?);
    req.inactive_concepts = flag(params, "inactiveConcepts")?.unwrap_or(false);
    req.inactive_descriptions = flag(params, "inactiveDescriptions")?.unwrap_or(true);
    req.remove_duplicates = flag(params, "removeDuplicates")?.unwrap_or(false);
    // Hermes leaves fully specified names out unless `fsn=true` (its `show-fsn?`, default false).
    req.kinds = if flag(params, "fsn")?.unwrap_or(false) {
        vec![DescriptionKind::Fsn, DescriptionKind::Synonym]
    } else {
        vec![DescriptionKind::Synonym]
    };
    req.is_a = query.ids("isA")?;
    req.refsets = query.ids("refset")?;
    let constraint = match params.get("constraint").or_else(|| params.get("ecl")) {
        Some(ecl) => Some(evaluate_ecl(store, ecl, false)?),
        None => None,
    };
    req.constraint = constraint.as_ref();
    if text.trim().is_empty()
        && req.is_a.is_empty()
        && req.refsets.is_empty()
        && req.constraint.is_none()
    {
        return Err(ApiError::BadRequest("missing parameter: s (or a filter)".into()).into());
    }
    let hits = store.search(&req).map_err(|e| match e {
        snomed::SearchError::TooCostly(why) => ApiError::TooCostly(why),
        e => ApiError::Internal(e.to_string()),
    })?;
    let refsets = store.language_refsets_for(accept_language(&headers));
    let out: Vec<Value> = hits
        .iter()
        .map(|h| {
            let d = store.description(h.description);
            let pt = store
                .preferred_synonym(h.concept, &refsets)
                .map(|p| p.term)
                .unwrap_or("");
            json!({
                "id": h.description_id.get(),
                "conceptId": h.concept_id.get(),
                "term": d.term,
                "preferredTerm": pt,
            })
        })
        .collect();
    Ok(Json(Value::Array(out)))
}

/// Evaluates an ECL constraint as Hermes does: attribute cardinality counts distinct attribute values across
/// groups (`AttributeCounting::Distinct`; `/fhir` counts per group, see docs/CONFORMANCE.md), and `historic` is
/// its `includeHistoric`. Every failure is the client's: 400 for invalid or unsupported ECL, 422 for a
/// refinement on a concept that is not a concept model attribute (Hermes's status for it) and when the result or
/// the time needed is too large.
fn evaluate_ecl(
    store: &Store,
    ecl: &str,
    historic: bool,
) -> Result<snomed::ecl_eval::RoaringBitmap, V1Error> {
    use snomed::ecl_eval::{AttributeCounting, EclError, Options, evaluate_str_with};
    let options = Options {
        counting: AttributeCounting::Distinct,
        history: historic,
        ..Options::default()
    };
    // One rule for malformed ids on this API: the concept routes refuse an id with a wrong check digit or
    // partition, so an expression naming one is refused too, rather than matching nothing.
    if let Ok(expression) = ::ecl::parse(ecl) {
        for id in expression.concept_ids() {
            SctId::new(id).map_err(|e| ApiError::BadRequest(e.to_string()))?;
        }
    }
    evaluate_str_with(store, ecl, &options).map_err(|e| match e {
        EclError::TooLarge { .. } | EclError::Timeout(_) => {
            ApiError::TooCostly(e.to_string()).into()
        }
        EclError::NotAnAttribute { .. } => V1Error {
            error: ApiError::BadRequest(e.to_string()),
            status: Some(StatusCode::UNPROCESSABLE_ENTITY),
        },
        other => ApiError::BadRequest(other.to_string()).into(),
    })
}

/// ECL expansion as Hermes's `GET /v1/snomed/expand`: one row per matching *description*, not per concept.
///
/// - default: every synonym (active or not: Hermes indexes every description) of every active concept the
///   expression selects (`expand-ecl`);
/// - `includeHistoric=true` (or Hermes's legacy `include-historic`): the expression plus the inactive concepts
///   that historical associations point from to its members, and inactive concepts are kept
///   (`expand-ecl-historic`);
/// - `preferred=true`: only the synonyms preferred in `dialectId` (a language refset), or else in the first
///   language refset `Accept-Language` chooses (`expand-ecl*`); with `includeHistoric` it is a 400, as in Hermes.
///
/// `preferredTerm` is the concept's preferred synonym for `Accept-Language` (Hermes stores the one of its
/// index-time locale). Inactive concepts are left out unless `includeHistoric` asks for them, even when the
/// expression itself selects some (`^` of an association refset, `{{ +HISTORY }}`): a Hermes client expects
/// current concepts from this route. `maxHits` (a Thoth addition; Hermes has no cap) refuses expansions of
/// more concepts with a 422.
async fn expand(
    state: State<Shared>,
    params: Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, V1Error> {
    // An ECL evaluation (up to its 10 s budget) and up to a million rows: off the HTTP threads.
    offload_json(move || expand_now(state, params, headers)).await
}

fn expand_now(
    State(state): State<Shared>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Json<Value>, V1Error> {
    let store = store(&state)?;
    let ecl = params
        .get("ecl")
        .filter(|e| !e.trim().is_empty())
        .ok_or_else(|| ApiError::BadRequest("missing parameter: ecl".into()))?;
    let historic = flag(&params, "includeHistoric")?.unwrap_or(false)
        || flag(&params, "include-historic")?.unwrap_or(false);
    let preferred = flag(&params, "preferred")?.unwrap_or(false);
    if historic && preferred {
        return Err(ApiError::BadRequest(
            "invalid parameters: nonsensical use of both 'includeHistoric' and 'preferred'".into(),
        )
        .into());
    }
    let dialect = params.get("dialectId").map(|d| parse_id(d)).transpose()?;
    let max_hits = match params.get("maxHits") {
        None => None,
        Some(_) => Some(max_hits(&params, usize::MAX, usize::MAX)?),
    };
    let mut bits = evaluate_ecl(store, ecl, historic)?;
    if !historic {
        bits = bits
            .iter()
            .filter(|&i| store.concept(ConceptIdx(i)).active)
            .collect();
    }
    if let Some(max) = max_hits
        && bits.len() > max as u64
    {
        return Err(ApiError::TooCostly(format!(
            "the expansion has {} concepts, more than maxHits={max}",
            bits.len()
        ))
        .into());
    }
    let refsets = store.language_refsets_for(accept_language(&headers));
    // Hermes: the dialect given, else the best installed match for Accept-Language (falling back to the
    // defaults), one refset only so that each concept has one preferred synonym.
    let preferred_in: Vec<SctId> = dialect
        .or_else(|| refsets.first().copied())
        .into_iter()
        .collect();
    let mut rows = Vec::new();
    for i in &bits {
        let idx = ConceptIdx(i);
        let pt = store.preferred_term(idx, &refsets).unwrap_or("");
        for d in store.descriptions(idx) {
            if d.kind != DescriptionKind::Synonym {
                continue;
            }
            if preferred
                && !store
                    .acceptability(d.idx)
                    .any(|a| a.preferred && preferred_in.contains(&a.refset))
            {
                continue;
            }
            rows.push(json!({
                "id": d.id.get(),
                "conceptId": d.concept_id.get(),
                "term": d.term,
                "preferredTerm": pt,
            }));
        }
    }
    Ok(Json(Value::Array(rows)))
}

/// `GET /v1/snomed/ecl/parse?ecl=...` (a Thoth addition; Hermes has no such route): whether the expression is
/// valid ECL, without evaluating it (no release is needed). Valid: the expression printed in the brief and the
/// long syntax. Invalid: the parser's message and where it is, as a byte offset, a UTF-16 offset (a browser
/// string's index) and a 1-based line and column. Either way a 200: the answer to "is this valid?" is the body;
/// only a missing `ecl` is a 400.
async fn parse_ecl(Query(params): Query<HashMap<String, String>>) -> Result<Json<Value>, V1Error> {
    let text = params
        .get("ecl")
        .ok_or_else(|| ApiError::BadRequest("missing parameter: ecl".into()))?;
    if text.len() > MAX_ECL_BYTES {
        return Err(ApiError::TooCostly(format!(
            "the expression has {} bytes, more than {MAX_ECL_BYTES}",
            text.len()
        ))
        .into());
    }
    Ok(Json(match ecl::parse(text) {
        Ok(e) => json!({
            "valid": true,
            "brief": ecl::print(&e, ecl::Syntax::Brief),
            "long": ecl::print(&e, ecl::Syntax::Long),
        }),
        Err(e) => {
            let offset = e.offset.min(text.len());
            let mut boundary = offset;
            while !text.is_char_boundary(boundary) {
                boundary -= 1;
            }
            let (line, column) = e.line_column(text);
            json!({
                "valid": false,
                "error": {
                    "message": e.kind.to_string(),
                    "offset": offset,
                    "utf16Offset": text[..boundary].encode_utf16().count(),
                    "line": line,
                    "column": column,
                },
            })
        }
    }))
}

/// The longest expression `ecl/parse` reads: far beyond any written by hand or generated by a client.
const MAX_ECL_BYTES: usize = 64 * 1024;
