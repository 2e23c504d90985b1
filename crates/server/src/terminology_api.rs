//! /fhir: the FHIR terminology operations and resource search.

use crate::state::AppState;
use axum::Router;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
}
