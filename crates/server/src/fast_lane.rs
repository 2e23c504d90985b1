//! The terminology GETs whose answer the service writes as JSON text straight away, answered before the router:
//! the single-code operations (`$lookup`, `$validate-code`, `$subsumes`, `$translate`), `ValueSet/$expand` of
//! a value set by URL with `count`, `offset` and `filter` at most, and the searches (`GET /fhir/ValueSet?url=`).
//!
//! These requests are the bulk of a terminology server's traffic and take microseconds to answer. Going
//! through the router costs about as much again: every layer around a route (metrics, FHIR format negotiation)
//! clones the boxed route service and boxes a future per request, and the path extractor copies its segments;
//! an expansion also went to the blocking pool (a wake-up of another thread, and one back). The lane answers
//! exactly what the route would (same body, same headers, same metrics series) for the requests whose answer
//! is JSON from the fast path, and hands every other request to the router untouched.

use crate::state::Shared;
use crate::terminology_api::{SEARCH, TYPE_LEVEL, type_level_operation};
use axum::Router;
use axum::body::Bytes;
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
        let path = req.uri().path();
        let target = match type_level_operation(path) {
            Some(op) => Target::Operation(op),
            None => Target::Search(search_kind(path)?),
        };
        // An XML answer is the negotiation layer's work, and an over-long request target the limits' (414):
        // the route's.
        if !crate::fhir_format::wants_json(req.uri(), req.headers())
            || req.uri().path_and_query().map_or(0, |p| p.as_str().len())
                > crate::outcome::MAX_URI_BYTES
        {
            return None;
        }
        let tx = self.state.terminology.as_ref()?;
        let query = req.uri().query().unwrap_or_default();
        let pairs: Vec<_> = form_urlencoded::parse(query.as_bytes()).collect();
        let language = req
            .headers()
            .get("accept-language")
            .and_then(|v| v.to_str().ok());
        let answer = match target {
            Target::Operation(op) if bounded(&target, &pairs) => {
                tx.run_fast(op, &pairs, language)?
            }
            // Not bounded, but answered before (the router's path kept the text): as cheap as any page.
            Target::Operation(terminology::Operation::Expand) => {
                tx.expand_seen(&pairs, language)?
            }
            Target::Search(kind) if bounded(&target, &pairs) => {
                let chunks = tx.search_chunks(kind, &pairs, "/fhir");
                let body = axum::body::Body::new(Chunks::new(chunks));
                return Some(([("content-type", "application/fhir+json")], body).into_response());
            }
            _ => return None,
        };
        Some(([("content-type", "application/fhir+json")], answer).into_response())
    }
}

/// Whether the lane's work for this request is bounded by construction, so that it may run on the HTTP thread
/// (whose other connections wait meanwhile). Not so: an expansion of an ECL implicit value set, whose first
/// evaluation may take up to the ECL budget (seconds), and a search by anything but URL or the catalogue page
/// (a scan of every resource of the type). The router runs those off the HTTP threads (`offload`).
fn bounded(
    target: &Target,
    pairs: &[(std::borrow::Cow<'_, str>, std::borrow::Cow<'_, str>)],
) -> bool {
    match target {
        Target::Operation(terminology::Operation::Expand) => !pairs
            .iter()
            .any(|(k, v)| k == "url" && v.contains("fhir_vs=ecl")),
        Target::Operation(_) => true,
        Target::Search(_) => pairs.iter().all(|(k, _)| {
            matches!(
                k.as_ref(),
                "url" | "version" | "_count" | "_summary" | "_offset" | "_format"
            )
        }),
    }
}

/// A body sent as the pieces it was written in, its length known (`Content-Length`, as for one buffer): the
/// kept text of a large resource goes to the socket as it is kept, never copied into one buffer per request.
struct Chunks {
    pieces: std::collections::VecDeque<Bytes>,
    remaining: u64,
}

impl Chunks {
    fn new(pieces: Vec<Bytes>) -> Chunks {
        let remaining = pieces.iter().map(|p| p.len() as u64).sum();
        Chunks {
            pieces: pieces.into_iter().filter(|p| !p.is_empty()).collect(),
            remaining,
        }
    }
}

impl hyper::body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        let next = self.pieces.pop_front();
        if let Some(piece) = &next {
            self.remaining -= piece.len() as u64;
        }
        Poll::Ready(next.map(|piece| Ok(hyper::body::Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.pieces.is_empty()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        hyper::body::SizeHint::with_exact(self.remaining)
    }
}

/// What the lane answers a request with.
enum Target {
    Operation(terminology::Operation),
    Search(terminology::Kind),
}

/// The resource type a search path names (`/fhir/ValueSet`), read as the router would route it.
fn search_kind(path: &str) -> Option<terminology::Kind> {
    let ty = path.strip_prefix("/fhir/")?;
    terminology::Kind::from_name(ty)
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
                let template = if search_kind(req.uri().path()).is_some() {
                    SEARCH
                } else {
                    TYPE_LEVEL
                };
                self.state.metrics.observe(
                    "GET",
                    crate::metrics::route_label(Some(template), req.uri().path()),
                    response.status().as_u16(),
                    start.elapsed().as_secs_f64(),
                );
                Either::Left(ready(Ok(response)))
            }
            None => Either::Right(self.router.call(req)),
        }
    }
}
