//! `/fhir/metadata`: the CapabilityStatement.
//!
//! It lists only what this server really does; each pillar adds its resources and operations here when they work.

use crate::state::AppState;
use axum::Router;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::json;

pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/metadata", get(metadata))
}

async fn metadata(State(state): State<AppState>) -> impl IntoResponse {
    let body = json!({
        "resourceType": "CapabilityStatement",
        "status": "active",
        "date": "2026-11-22",
        "kind": "instance",
        "software": { "name": "Thoth", "version": state.info.version },
        "implementation": { "description": "Thoth health interoperability server" },
        "fhirVersion": "4.0.1",
        "format": ["application/fhir+json"],
        "rest": [{ "mode": "server", "resource": [] }]
    });
    (
        [("content-type", "application/fhir+json")],
        body.to_string(),
    )
}
