//! What orchestrators ask of a server (is it alive, is it ready for traffic) and the application that can be
//! replaced while it serves.
//!
//! `thoth serve` listens before its stores are open, so that a liveness probe (`/healthz`) passes while a large
//! store loads and a readiness probe (`/readyz`) says when traffic may come. Until then the [`LiveApp`] has no
//! application and answers everything but the probes with a 503; once the binary has built the application it
//! puts it in, and does so again whenever the content changes under it (a new SNOMED CT import swapped in by
//! `CURRENT`): requests already running finish on the application they started on, the next ones take the new
//! one. A request sees one store from start to end, never a mix.

use crate::error::ApiError;
use crate::fast_lane::App;
use arc_swap::ArcSwapOption;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use futures_util::future::Either;
use std::convert::Infallible;
use std::future::ready;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll};
use tower::Service;

/// Where a server is in its life, as `/readyz` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Phase {
    /// Listening, the stores not open yet: alive, not ready.
    Starting,
    /// Serving.
    Ready,
    /// Told to stop: finishing what it has, taking no new work (not ready).
    Draining,
}

/// The server's [`Phase`], shared by the probes, the application and the code that starts and stops it.
#[derive(Debug)]
pub struct Readiness(AtomicU8);

impl Readiness {
    /// A server whose stores are still opening.
    pub fn starting() -> Readiness {
        Readiness(AtomicU8::new(Phase::Starting as u8))
    }

    /// A server that is ready (what a state built with its content already loaded is, as in tests).
    pub fn ready() -> Readiness {
        Readiness(AtomicU8::new(Phase::Ready as u8))
    }

    /// The stores are open: ready for traffic (unless draining has begun, which is never undone).
    pub fn set_ready(&self) {
        let _ = self.0.compare_exchange(
            Phase::Starting as u8,
            Phase::Ready as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    /// Shutdown has begun: `/readyz` answers 503 from now on.
    pub fn set_draining(&self) {
        self.0.store(Phase::Draining as u8, Ordering::Release);
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        match self.0.load(Ordering::Acquire) {
            0 => Phase::Starting,
            1 => Phase::Ready,
            _ => Phase::Draining,
        }
    }

    /// Why the server is not ready, or `None` when it is.
    pub(crate) fn refusal(&self) -> Option<ApiError> {
        match self.phase() {
            Phase::Ready => None,
            Phase::Starting => Some(ApiError::Unavailable(
                "starting: the stores are not open yet".into(),
            )),
            Phase::Draining => Some(ApiError::Unavailable(
                "draining: this server is shutting down and takes no new work".into(),
            )),
        }
    }
}

impl Default for Readiness {
    fn default() -> Self {
        Readiness::ready()
    }
}

/// The application a server serves, replaceable while it serves (see the module documentation). Cloning it is
/// cheap and every clone sees the same application.
#[derive(Clone)]
pub struct LiveApp {
    current: Arc<ArcSwapOption<App>>,
    readiness: Arc<Readiness>,
}

impl LiveApp {
    /// Serves `app` at once.
    pub fn new(app: App, readiness: Arc<Readiness>) -> LiveApp {
        LiveApp {
            current: Arc::new(ArcSwapOption::from_pointee(app)),
            readiness,
        }
    }

    /// No application yet: `/healthz` answers 200, `/readyz` and everything else 503, until [`LiveApp::replace`].
    pub fn starting(readiness: Arc<Readiness>) -> LiveApp {
        LiveApp {
            current: Arc::new(ArcSwapOption::empty()),
            readiness,
        }
    }

    /// Serves `app` from the next request on; the requests under way finish on the application they started on.
    pub fn replace(&self, app: App) {
        self.current.store(Some(Arc::new(app)));
    }

    /// The readiness it reports while it has no application.
    pub fn readiness(&self) -> &Arc<Readiness> {
        &self.readiness
    }
}

impl Service<Request> for LiveApp {
    type Response = Response;
    type Error = Infallible;
    type Future = <App as Service<Request>>::Future;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // The application's router is always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        // One load per request (an atomic read and a reference count), so that a replaced application takes
        // effect on connections that stay open.
        match &*self.current.load() {
            Some(app) => App::clone(app).call(req),
            None => {
                let response = if req.uri().path() == "/healthz" {
                    "ok\n".into_response()
                } else {
                    self.readiness
                        .refusal()
                        .unwrap_or_else(|| ApiError::Unavailable("starting".into()))
                        .into_response()
                };
                Either::Left(ready(Ok(response)))
            }
        }
    }
}
