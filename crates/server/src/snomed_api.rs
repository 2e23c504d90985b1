//! /v1/snomed: the Hermes-compatible native SNOMED CT API.

use crate::state::AppState;
use axum::Router;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
}
