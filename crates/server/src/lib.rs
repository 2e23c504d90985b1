//! The HTTP face of Thoth.
//!
//! One [`router`] serves every API: health and metrics, the FHIR endpoint (`/fhir/...`), and the native APIs that
//! the other pillars add, and at `/` the console, a browser UI over those same APIs (files embedded in the binary).
//! The router is a plain function of [`AppState`] so that tests drive it with
//! `tower::ServiceExt::oneshot`, without a socket; [`serve`] binds it to an address and stops gracefully.
//!
//! Every failure a handler can have is an [`ApiError`]; it becomes a FHIR `OperationOutcome` in exactly one place,
//! with a 4xx status for a client's mistake and a logged 5xx for ours.
//!
//! The message routes hand out patient data: the state's [`Access`] policy says who may use them (loopback
//! clients only, by default), and every access to them, allowed or refused, goes to the [`AuditLog`].
//!
//! ```
//! # async fn demo() {
//! let state = server::AppState::new(server::ServerInfo::default());
//! let app = server::router(state);
//! # let _ = app;
//! # }
//! ```
// Request paths must not panic on what a client sends (a panic there would be a 500, or a lost connection):
// no `unwrap`/`expect` and no unchecked indexing outside tests (clippy.toml allows them in tests).
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod audit;
mod auth;
mod code_check;
mod console;
mod error;
mod fast_lane;
mod fhir_format;
mod fhir_meta;
mod hl7_api;
mod lifecycle;
mod messages_api;
mod metrics;
mod offload;
mod outcome;
mod snomed_api;
mod state;
mod terminology_api;
mod threads;
mod tls;

pub use audit::AuditLog;
pub use auth::{Access, AuthConfig, AuthFile, JwtConfig, TokenConfig};
pub use code_check::TerminologyChecker;
pub use console::first_load_gzip_bytes;
pub use error::{ApiError, IssueType};
pub use fast_lane::App;
pub use hl7_api::{
    MAX_BATCH_ANSWER, MAX_HL7_ELEMENTS, MAX_PARSE_FIELDS, validation_json, validation_parse_options,
};
pub use lifecycle::{LiveApp, Phase, Readiness};
pub use metrics::Metrics;
pub use offload::offload_work;
pub use outcome::{
    MAX_FHIR_BODY_BYTES, MAX_HEADER_BYTES, MAX_HL7_BODY_BYTES, MAX_URI_BYTES, body_limit,
};
use state::Shared;
pub use state::{AppState, ServerInfo};
pub use threads::ConnectionLimits;
pub use tls::{HttpTls, RELOAD_CHECK};

use axum::{Router, middleware, routing::get};
use std::future::Future;
use std::net::SocketAddr;

/// Builds the whole HTTP application for `state`: the [`router`] behind the lane that answers the single-code
/// terminology GETs before routing (see `fast_lane`). What [`serve`] serves.
pub fn app(state: AppState) -> App {
    app_with(state, Vec::new())
}

/// [`app`] with `extra` services mounted at their paths among the other routes, behind the same access control
/// and metrics: how the binary adds `POST /mcp` (crate `mcp`, which depends on this one) without this crate
/// knowing the protocol.
pub fn app_with(state: AppState, extra: Vec<(&'static str, Router)>) -> App {
    let state: Shared = std::sync::Arc::new(state);
    // The lane answers terminology GETs before the router, and so before its credential check: when the other
    // routes need a credential, it is given no terminology, which sends every request through the router.
    let lane = if state.access.open_routes() {
        state.clone()
    } else {
        std::sync::Arc::new(AppState {
            terminology: None,
            ..(*state).clone()
        })
    };
    App::new(routes(state, extra), lane)
}

/// Builds the router of the HTTP application for `state`: every route, without the lane in front of it.
pub fn router(state: AppState) -> Router {
    routes(std::sync::Arc::new(state), Vec::new())
}

fn routes(state: Shared, extra: Vec<(&'static str, Router)>) -> Router {
    // Handlers share one `Arc` of the state: extracting it clones one reference count, not one per field.
    let mut others = Router::new()
        .route("/metrics", get(metrics::render))
        // Merged with their full paths rather than nested under `/fhir`: a nested router rebuilds every
        // request's URI without the prefix, measurable on the single-code operations.
        .merge(
            fhir_meta::routes()
                .merge(terminology_api::routes())
                .layer(middleware::from_fn(fhir_format::negotiate))
                // JSON and XML bodies alike (the XML one is converted under the same bound).
                .layer(axum::extract::DefaultBodyLimit::max(
                    outcome::MAX_FHIR_BODY_BYTES,
                )),
        )
        .nest("/v1/snomed", snomed_api::routes())
        .nest("/hl7", hl7_api::routes());
    for (path, service) in extra {
        others = others.route_service(path, service);
    }
    // Route layers: a path that matches no route is a 404 for everyone, and reveals nothing.
    let others = if state.access.open_routes() {
        others
    } else {
        others.route_layer(middleware::from_fn_with_state(
            state.clone(),
            auth::any_credential,
        ))
    };
    // In read-only mode the message routes are refused before their access check, so that a replica writes
    // nothing, not even an audit record, and says why.
    let messages = messages_api::routes().route_layer(middleware::from_fn_with_state(
        state.clone(),
        auth::messages,
    ));
    let messages = if state.info.read_only {
        messages.route_layer(middleware::from_fn(read_only_refusal))
    } else {
        messages
    };
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        // The console's files: open to everyone, like /healthz (they hold no data; the APIs they call check).
        .merge(console::routes())
        .merge(others)
        .nest("/messages", messages)
        .fallback(not_found)
        // Inside the metrics layer, so that the requests it refuses are counted.
        .layer(middleware::from_fn(outcome::every_error_is_an_outcome))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            metrics::track,
        ))
        .with_state(state)
}

/// Serves [`router`] on `addr` until `shutdown` completes, then finishes the requests in flight: one thread per
/// core the process may run on (see `threads`).
pub async fn serve(
    addr: SocketAddr,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    serve_with_threads(addr, state, threads, shutdown).await
}

/// [`serve`] with `threads` HTTP threads.
pub async fn serve_with_threads(
    addr: SocketAddr,
    state: AppState,
    threads: usize,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let options = HttpOptions {
        threads: Some(threads),
        ..HttpOptions::default()
    };
    serve_with_options(addr, state, options, shutdown).await
}

/// How the HTTP listener runs: threads, HTTPS, connection limits.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// HTTP threads (default: one per core the process may use).
    pub threads: Option<usize>,
    /// HTTPS with this certificate (reloaded when its files change); plain HTTP when `None`.
    pub tls: Option<HttpTls>,
    /// Time bounds of each connection.
    pub limits: ConnectionLimits,
    /// After shutdown begins, how long the requests in flight may take to finish (`None`: as long as they take).
    /// Past it the server returns and the connections still answering are dropped with the process.
    pub drain_timeout: Option<std::time::Duration>,
}

/// [`serve`] with [`HttpOptions`]. A certificate that cannot be read is an error before anything listens.
pub async fn serve_with_options(
    addr: SocketAddr,
    state: AppState,
    options: HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_app(addr, app(state), options, shutdown).await
}

/// Serves `app` (from [`app`] or [`app_with`]) on `addr` with `options` until `shutdown` completes.
pub async fn serve_app(
    addr: SocketAddr,
    app: App,
    options: HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_live(
        addr,
        LiveApp::new(app, std::sync::Arc::new(Readiness::ready())),
        options,
        shutdown,
    )
    .await
}

/// Serves `app`, whose application may be put in later or replaced (see [`LiveApp`]), on `addr` with `options`
/// until `shutdown` completes; then stops accepting and lets the requests in flight finish, for at most
/// [`HttpOptions::drain_timeout`].
pub async fn serve_live(
    addr: SocketAddr,
    app: LiveApp,
    options: HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let tls = match &options.tls {
        None => None,
        Some(files) => Some(files.server_config().map_err(std::io::Error::other)?),
    };
    let threads = options
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(addr = %listener.local_addr()?, threads, https = tls.is_some(), "HTTP listening");
    let serve_options = threads::ServeOptions {
        limits: options.limits,
        drain_timeout: options.drain_timeout,
        tls,
        ..threads::ServeOptions::default()
    };
    threads::serve_with(listener, app, threads, serve_options, shutdown).await
}

/// Liveness: the process answers. Nothing is checked, so that it stays cheap and true while a store loads.
async fn healthz() -> &'static str {
    "ok\n"
}

/// Readiness: 200 once the stores are open, a 503 OperationOutcome while starting or draining.
async fn readyz(
    axum::extract::State(state): axum::extract::State<Shared>,
) -> Result<&'static str, ApiError> {
    match state.readiness.refusal() {
        None => Ok("ready\n"),
        Some(e) => Err(e),
    }
}

/// The message routes of a read-only replica: it runs no interface engine and writes nothing.
async fn read_only_refusal(_: axum::extract::Request, _: middleware::Next) -> ApiError {
    ApiError::Forbidden(
        "this server is a read-only replica (thoth serve --read-only): it has no message store; \
         use the instance that runs the interface engine"
            .into(),
    )
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::NotFound(format!("no route for {}", uri.path()))
}
