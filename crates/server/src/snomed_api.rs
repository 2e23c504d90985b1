//! /v1/snomed: the Hermes-compatible native SNOMED CT API.
//!
//! Routes and JSON shapes follow Hermes (`wardle/hermes`) so that its clients work unchanged; see
//! `docs/SNOMED-API.md`. Identifiers in paths are validated (Verhoeff, partition): a malformed one is a 400, an
//! unknown one a 404.

use crate::error::ApiError;
use crate::state::{AppState, Shared};
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Map, Value, json};
use snomed::{ConceptIdx, Description, RefsetMember, SctId, SearchRequest, Store, format_date};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

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
) -> Result<Json<ConceptJson>, ApiError> {
    let store = store(&state)?;
    let idx = concept_idx(store, &id)?;
    Ok(Json(concept_json(store, idx)))
}

async fn descriptions(
    State(state): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
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
) -> Result<Json<Value>, ApiError> {
    let store = store(&state)?;
    let idx = concept_idx(store, &id)?;
    let refsets = store.language_refsets_for(accept_language(&headers));
    let d = store
        .preferred_synonym(idx, &refsets)
        .ok_or_else(|| ApiError::NotFound(format!("concept {id} has no active description")))?;
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
) -> Result<Json<Value>, ApiError> {
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
) -> Result<Json<Value>, ApiError> {
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
) -> Result<Json<Value>, ApiError> {
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
) -> Result<Json<Value>, ApiError> {
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
) -> Result<Json<SubsumedBy>, ApiError> {
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
) -> Result<Json<Value>, ApiError> {
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
async fn crossmap(
    State(state): State<Shared>,
    Path((refset, code)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
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

async fn search(
    State(state): State<Shared>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let store = store(&state)?;
    let text = params.get("s").map(String::as_str).unwrap_or("");
    let mut req = SearchRequest::new(text);
    req.max_hits = max_hits(&params, 500, 9_999)?;
    let fuzzy_distance = |b: Option<bool>| if b == Some(true) { 2 } else { 0 };
    req.fuzzy = fuzzy_distance(flag(&params, "fuzzy")?);
    req.fallback_fuzzy = fuzzy_distance(flag(&params, "fallbackFuzzy")?);
    req.inactive_concepts = flag(&params, "inactiveConcepts")?.unwrap_or(false);
    req.inactive_descriptions = flag(&params, "inactiveDescriptions")?.unwrap_or(true);
    req.remove_duplicates = flag(&params, "removeDuplicates")?.unwrap_or(false);
    if let Some(v) = params.get("isA") {
        req.is_a = v.split(',').map(parse_id).collect::<Result<_, _>>()?;
    }
    if let Some(v) = params.get("refset") {
        req.refsets = v.split(',').map(parse_id).collect::<Result<_, _>>()?;
    }
    let constraint = match params.get("constraint").or_else(|| params.get("ecl")) {
        Some(ecl) => Some(evaluate_ecl(store, ecl)?),
        None => None,
    };
    req.constraint = constraint.as_ref();
    if text.trim().is_empty()
        && req.is_a.is_empty()
        && req.refsets.is_empty()
        && req.constraint.is_none()
    {
        return Err(ApiError::BadRequest(
            "missing parameter: s (or a filter)".into(),
        ));
    }
    let hits = store
        .search(&req)
        .map_err(|e| ApiError::Internal(e.to_string()))?;
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

/// Evaluates an ECL constraint; every failure is the client's (400 for invalid or unsupported ECL, 422 when
/// the result or the time needed is too large).
fn evaluate_ecl(store: &Store, ecl: &str) -> Result<snomed::ecl_eval::RoaringBitmap, ApiError> {
    use snomed::ecl_eval::{EclError, Limits, evaluate_str};
    evaluate_str(store, ecl, &Limits::default()).map_err(|e| match e {
        EclError::TooLarge { .. } | EclError::Timeout(_) => ApiError::TooCostly(e.to_string()),
        other => ApiError::BadRequest(other.to_string()),
    })
}

/// ECL expansion: one row per concept with its preferred term (Hermes's `expand?ecl=...&preferred=true` shape).
async fn expand(
    State(state): State<Shared>,
    Query(params): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let store = store(&state)?;
    let ecl = params
        .get("ecl")
        .filter(|e| !e.trim().is_empty())
        .ok_or_else(|| ApiError::BadRequest("missing parameter: ecl".into()))?;
    let max_hits = max_hits(&params, 10_000, 1_000_000)?;
    let bits = evaluate_ecl(store, ecl)?;
    if bits.len() > max_hits as u64 {
        return Err(ApiError::TooCostly(format!(
            "the expansion has {} concepts, more than maxHits={max_hits}",
            bits.len()
        )));
    }
    let refsets = store.language_refsets_for(accept_language(&headers));
    let rows: Vec<Value> = bits
        .iter()
        .filter_map(|i| store.preferred_synonym(ConceptIdx(i), &refsets))
        .map(|d| {
            json!({
                "id": d.id.get(),
                "conceptId": d.concept_id.get(),
                "term": d.term,
                "preferredTerm": d.term,
            })
        })
        .collect();
    Ok(Json(Value::Array(rows)))
}
