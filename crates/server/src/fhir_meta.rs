//! `/fhir/metadata`: the CapabilityStatement, and with `?mode=terminology` the TerminologyCapabilities.
//!
//! It lists only what this server really does; each pillar adds its resources and operations here when they work.

use crate::state::Shared;
use axum::Router;
use axum::extract::{Query, State};
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::{Value, json};
use std::collections::HashMap;

pub(crate) fn routes() -> Router<Shared> {
    Router::new().route("/fhir/metadata", get(metadata))
}

/// The operations of the terminology service, as (resource type, operation name).
const TERMINOLOGY_OPERATIONS: &[(&str, &[&str])] = &[
    ("CodeSystem", &["lookup", "validate-code", "subsumes"]),
    (
        "ValueSet",
        &["expand", "validate-code", "batch-validate-code"],
    ),
    ("ConceptMap", &["translate"]),
];

fn terminology_resources() -> Vec<Value> {
    TERMINOLOGY_OPERATIONS
        .iter()
        .map(|(ty, ops)| {
            let search: Vec<Value> = ["url", "version", "name", "title", "status"]
                .iter()
                .map(|p| json!({"name": p, "type": if *p == "url" { "uri" } else { "string" }}))
                .collect();
            let operations: Vec<Value> = ops
                .iter()
                .map(|op| {
                    json!({
                        "name": op,
                        "definition": format!("http://hl7.org/fhir/OperationDefinition/{ty}-{op}"),
                    })
                })
                .collect();
            json!({
                "type": ty,
                "interaction": [{"code": "read"}, {"code": "search-type"}],
                "searchParam": search,
                "operation": operations,
            })
        })
        .collect()
}

async fn metadata(
    State(state): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
) -> impl IntoResponse {
    let version = state.info.version.clone();
    let body = match (query.get("mode").map(String::as_str), &state.terminology) {
        (Some("terminology"), Some(tx)) => tx.capabilities(&version),
        _ => {
            let resources = if state.terminology.is_some() {
                terminology_resources()
            } else {
                Vec::new()
            };
            let mut rest = serde_json::Map::new();
            rest.insert("mode".into(), "server".into());
            rest.insert("resource".into(), resources.into());
            if state.terminology.is_some() {
                rest.insert(
                    "operation".into(),
                    json!([{
                        "name": "versions",
                        "definition": "http://hl7.org/fhir/OperationDefinition/CapabilityStatement-versions",
                    }]),
                );
            }
            json!({
                "resourceType": "CapabilityStatement",
                "extension": [{
                    "url": "http://hl7.org/fhir/uv/application-feature/StructureDefinition/feature",
                    "extension": [
                        {"url": "definition", "valueCanonical": "http://hl7.org/fhir/uv/tx-tests/FeatureDefinition/test-version"},
                        {"url": "value", "valueCode": "1.7.8"},
                    ],
                }, {
                    "url": "http://hl7.org/fhir/uv/application-feature/StructureDefinition/feature",
                    "extension": [
                        {"url": "definition", "valueCanonical": "http://hl7.org/fhir/uv/tx-ecosystem/FeatureDefinition/CodeSystemAsParameter"},
                        {"url": "value", "valueBoolean": true},
                    ],
                }],
                "url": "http://thoth.local/fhir/CapabilityStatement/thoth",
                "version": version,
                "name": "ThothCapabilityStatement",
                "title": "Thoth FHIR server",
                "status": "active",
                "date": "2026-11-22",
                "kind": "instance",
                "instantiates": ["http://hl7.org/fhir/CapabilityStatement/terminology-server"],
                "software": { "name": "Thoth", "version": version, "releaseDate": "2026-11-22" },
                "implementation": { "description": "Thoth health interoperability server" },
                "fhirVersion": "4.0.1",
                "format": ["application/fhir+json", "application/fhir+xml"],
                "rest": [rest]
            })
        }
    };
    (
        [("content-type", "application/fhir+json")],
        body.to_string(),
    )
}
