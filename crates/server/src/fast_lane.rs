//! The single-code terminology GETs (`$lookup`, `$validate-code`, `$subsumes`, `$translate`), answered before
//! the router when the service's fast path has their answer.
//!
//! These requests are the bulk of a terminology server's traffic and take a microsecond or two to answer. Going
//! through the router costs about as much again: every layer around a route (metrics, FHIR format negotiation)
//! clones the boxed route service and boxes a future per request, and the path extractor copies its segments.
//! The lane answers exactly what the route would (same body, same headers, same metrics series) for the requests
//! whose answer is JSON from the fast path, and hands every other request to the router untouched.

use crate::state::Shared;
use crate::terminology_api::{TYPE_LEVEL, type_level_operation};
use axum::Router;
use axum::extract::Request;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use futures_util::future::Either;
use std::convert::Infallible;
use std::future::{Ready, ready};
use std::task::{Context, Poll};
use std::time::Instant;
use tower::Service;

/// The whole HTTP application: the lane in front of the router.
#[derive(Clone)]
pub struct App {
    router: Router,
    state: Shared,
}

impl App {
    pub(crate) fn new(router: Router, state: Shared) -> App {
        App { router, state }
    }

    /// The lane's answer to `req`, when it has one: a single-code GET of a JSON answer that the service's fast
    /// path gives. `None` (any other request, errors included) leaves it to the router and the general path.
    fn answer(&self, req: &Request) -> Option<Response> {
        if req.method() != Method::GET {
            return None;
        }
        let op = type_level_operation(req.uri().path())?;
        // An XML answer is the negotiation layer's work: the route's.
        if !crate::fhir_format::wants_json(req.uri(), req.headers()) {
            return None;
        }
        let tx = self.state.terminology.as_ref()?;
        let query = req.uri().query().unwrap_or_default();
        let pairs: Vec<_> = form_urlencoded::parse(query.as_bytes()).collect();
        let language = req
            .headers()
            .get("accept-language")
            .and_then(|v| v.to_str().ok());
        let answer = tx.run_fast(op, &pairs, language)?;
        Some(([("content-type", "application/fhir+json")], answer).into_response())
    }
}

impl Service<Request> for App {
    type Response = Response;
    type Error = Infallible;
    type Future = Either<Ready<Result<Response, Infallible>>, <Router as Service<Request>>::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Service::<Request>::poll_ready(&mut self.router, cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let start = Instant::now();
        match self.answer(&req) {
            Some(response) => {
                // Counted as the route's metrics layer counts it.
                self.state.metrics.observe(
                    "GET",
                    crate::metrics::route_label(Some(TYPE_LEVEL), req.uri().path()),
                    response.status().as_u16(),
                    start.elapsed().as_secs_f64(),
                );
                Either::Left(ready(Ok(response)))
            }
            None => Either::Right(self.router.call(req)),
        }
    }
}
