//! /messages: the interface engine's stored messages.

use crate::state::AppState;
use axum::Router;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
}
