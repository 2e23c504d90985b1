//! Request counters and latency histograms in the Prometheus text format.
//!
//! Hand-written rather than a metrics framework: the server exports a handful of series, and counting them with
//! atomics keeps the hot path free of locks once a route has been seen (the map is only written on first use).

use crate::state::Shared;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Upper bounds (seconds) of the latency histogram buckets.
const BUCKETS: [f64; 12] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 1.0, 5.0,
];

/// The methods counted under their own name; any other is counted as `other`, so that made-up methods cannot
/// add series.
const METHODS: [&str; 7] = ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"];

/// The FHIR operations counted under a route of their own (`/fhir/{type}/$expand`) rather than the template
/// they are routed by (`/fhir/{type}/{id}`).
const OPERATIONS: [&str; 6] = [
    "$expand",
    "$validate-code",
    "$batch-validate-code",
    "$lookup",
    "$subsumes",
    "$translate",
];

/// The method label of `method`: one of [`METHODS`] or `other`.
pub(crate) fn method_label(method: &str) -> &'static str {
    METHODS
        .iter()
        .find(|m| **m == method)
        .copied()
        .unwrap_or("other")
}

/// The status label of `status`: its class, `2xx` to `5xx` (`other` outside 100..=599).
fn status_label(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        500..=599 => "5xx",
        _ => "other",
    }
}

/// The route label of a request to `path` routed by `template` (None: no route matched): the template, except
/// that a known FHIR operation in the place of `{id}` or `{op}` names its own route. Borrowed, so that the fast
/// lane counts its requests without allocating.
pub(crate) fn route_label<'a>(template: Option<&'a str>, path: &str) -> &'a str {
    let Some(template) = template else {
        return "unmatched";
    };
    let last = path.rsplit('/').next().unwrap_or_default();
    let known = |labels: &'static [&'static str]| {
        OPERATIONS
            .iter()
            .zip(labels)
            .find_map(|(op, label)| (*op == last).then_some(*label))
    };
    let label = match template {
        "/fhir/{type}/{id}" => known(&TYPE_OPERATIONS),
        "/fhir/{type}/{id}/{op}" => known(&INSTANCE_OPERATIONS),
        _ => None,
    };
    label.unwrap_or(template)
}

/// The route labels of [`OPERATIONS`] at type level.
const TYPE_OPERATIONS: [&str; OPERATIONS.len()] = [
    "/fhir/{type}/$expand",
    "/fhir/{type}/$validate-code",
    "/fhir/{type}/$batch-validate-code",
    "/fhir/{type}/$lookup",
    "/fhir/{type}/$subsumes",
    "/fhir/{type}/$translate",
];

/// The route labels of [`OPERATIONS`] on an instance.
const INSTANCE_OPERATIONS: [&str; OPERATIONS.len()] = [
    "/fhir/{type}/{id}/$expand",
    "/fhir/{type}/{id}/$validate-code",
    "/fhir/{type}/{id}/$batch-validate-code",
    "/fhir/{type}/{id}/$lookup",
    "/fhir/{type}/{id}/$subsumes",
    "/fhir/{type}/{id}/$translate",
];

/// Counters of one (method, route, status class) series.
#[derive(Default)]
struct Series {
    count: AtomicU64,
    sum_micros: AtomicU64,
    /// Requests per bucket, not cumulative: a request adds to one counter, the one of the first bound at or
    /// above its time (the exposition sums them). Cumulative counters cost a request an atomic add for every
    /// bound above its time, all twelve for a sub-millisecond answer, each on a cache line the other HTTP
    /// threads write too.
    buckets: [AtomicU64; BUCKETS.len()],
}

impl Series {
    fn record(&self, seconds: f64) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros
            .fetch_add((seconds * 1e6) as u64, Ordering::Relaxed);
        if let Some((_, bucket)) = BUCKETS
            .iter()
            .zip(&self.buckets)
            .find(|(bound, _)| seconds <= **bound)
        {
            bucket.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The series of one route: a handful of (method, status class) pairs, scanned.
type RouteSeries = Vec<(&'static str, &'static str, Series)>;

/// The series of `method` and `status` among a route's.
fn find<'a>(pairs: &'a RouteSeries, method: &str, status: &str) -> Option<&'a Series> {
    pairs
        .iter()
        .find(|(m, st, _)| *m == method && *st == status)
        .map(|(_, _, s)| s)
}

/// All HTTP metrics of one server.
#[derive(Default)]
pub struct Metrics {
    /// By route template; looked up with the borrowed route and method and counted under the read lock, so a
    /// request allocates nothing here once its series exists (the map is only written on first use).
    series: RwLock<BTreeMap<String, RouteSeries>>,
}

impl Metrics {
    /// Records one finished request. `route` must come from a closed set (a route template, see
    /// [`route_label`]); the method and status are reduced to closed sets here.
    pub fn observe(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let (method, status) = (method_label(method), status_label(status));
        // A poisoned lock still holds whole counters (a panic cannot leave one half-written).
        if let Some(s) = self
            .series
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(route)
            .and_then(|pairs| find(pairs, method, status))
        {
            s.record(seconds);
            return;
        }
        let mut map = self
            .series
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let pairs = map.entry(route.to_string()).or_default();
        match find(pairs, method, status) {
            Some(s) => s.record(seconds),
            None => {
                let s = Series::default();
                s.record(seconds);
                pairs.push((method, status, s));
            }
        }
    }

    /// The Prometheus text exposition of every series.
    pub fn render_text(&self, uptime_seconds: f64) -> String {
        let mut out = String::new();
        out.push_str("# HELP thoth_uptime_seconds Seconds since the server started.\n");
        out.push_str("# TYPE thoth_uptime_seconds gauge\n");
        let _ = writeln!(out, "thoth_uptime_seconds {uptime_seconds:.3}");
        out.push_str("# HELP thoth_http_requests_total HTTP requests answered.\n");
        out.push_str("# TYPE thoth_http_requests_total counter\n");
        let map = self
            .series
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut series: Vec<(&str, &str, &str, &Series)> = map
            .iter()
            .flat_map(|(route, pairs)| {
                pairs
                    .iter()
                    .map(move |(m, st, s)| (*m, route.as_str(), *st, s))
            })
            .collect();
        series.sort_by_key(|&(m, r, st, _)| (m, r, st));
        for &(method, route, status, s) in &series {
            let _ = writeln!(
                out,
                "thoth_http_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {}",
                s.count.load(Ordering::Relaxed)
            );
        }
        out.push_str("# HELP thoth_http_request_duration_seconds Time to answer HTTP requests.\n");
        out.push_str("# TYPE thoth_http_request_duration_seconds histogram\n");
        for &(method, route, status, s) in &series {
            let labels = format!("method=\"{method}\",route=\"{route}\",status=\"{status}\"");
            let mut cumulative = 0;
            for (bound, bucket) in BUCKETS.iter().zip(&s.buckets) {
                cumulative += bucket.load(Ordering::Relaxed);
                let _ = writeln!(
                    out,
                    "thoth_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {cumulative}"
                );
            }
            let count = s.count.load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "thoth_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {count}"
            );
            let sum = s.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
            let _ = writeln!(
                out,
                "thoth_http_request_duration_seconds_sum{{{labels}}} {sum}"
            );
            let _ = writeln!(
                out,
                "thoth_http_request_duration_seconds_count{{{labels}}} {count}"
            );
        }
        out
    }
}

/// Middleware that times every request under its route template (never the raw path, to bound cardinality):
/// every label comes from a closed set, whatever method and path a client makes up.
pub(crate) async fn track(State(state): State<Shared>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = method_label(req.method().as_str());
    let route = route_label(
        req.extensions()
            .get::<MatchedPath>()
            .map(MatchedPath::as_str),
        req.uri().path(),
    )
    .to_string();
    let response = next.run(req).await;
    state.metrics.observe(
        method,
        &route,
        response.status().as_u16(),
        start.elapsed().as_secs_f64(),
    );
    response
}

pub(crate) async fn render(State(state): State<Shared>) -> impl IntoResponse {
    let mut body = state
        .metrics
        .render_text(state.started.elapsed().as_secs_f64());
    if let Some(engine) = &state.engine {
        crate::messages_api::engine_metrics(engine, &mut body);
    }
    ([("content-type", "text/plain; version=0.0.4")], body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str, prefix: &str) -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no line {prefix} in\n{text}"))
            .trim()
            .parse()
            .unwrap()
    }

    #[test]
    fn buckets_are_exposed_cumulative_and_series_apart() {
        let m = Metrics::default();
        // 50 µs, 300 µs twice, 2 ms, 10 s (beyond every bound).
        for secs in [0.00005, 0.0003, 0.0003, 0.002, 10.0] {
            m.observe("GET", "/fhir/{type}/{id}", 200, secs);
        }
        m.observe("POST", "/fhir/{type}/{id}", 200, 0.00005);
        m.observe("GET", "/fhir/{type}/{id}", 404, 0.00005);
        let text = m.render_text(1.0);
        let series = r#"method="GET",route="/fhir/{type}/{id}",status="2xx""#;
        let bucket = |le: &str| {
            value(
                &text,
                &format!("thoth_http_request_duration_seconds_bucket{{{series},le=\"{le}\"}} "),
            )
        };
        assert_eq!(bucket("0.0001"), 1);
        assert_eq!(bucket("0.00025"), 1);
        assert_eq!(bucket("0.0005"), 3);
        assert_eq!(bucket("0.0025"), 4);
        assert_eq!(bucket("5"), 4);
        assert_eq!(bucket("+Inf"), 5);
        assert_eq!(
            value(&text, &format!("thoth_http_requests_total{{{series}}} ")),
            5
        );
        for other in [
            r#"method="POST",route="/fhir/{type}/{id}",status="2xx""#,
            r#"method="GET",route="/fhir/{type}/{id}",status="4xx""#,
        ] {
            assert_eq!(
                value(&text, &format!("thoth_http_requests_total{{{other}}} ")),
                1
            );
        }
    }

    #[test]
    fn labels_come_from_closed_sets() {
        assert_eq!(method_label("GET"), "GET");
        assert_eq!(method_label("XYZA"), "other");
        assert_eq!(status_label(204), "2xx");
        assert_eq!(status_label(1000), "other");
        assert_eq!(route_label(None, "/x/y"), "unmatched");
        assert_eq!(
            route_label(Some("/fhir/{type}/{id}"), "/fhir/CodeSystem/$lookup"),
            "/fhir/{type}/$lookup"
        );
        assert_eq!(
            route_label(Some("/fhir/{type}/{id}/{op}"), "/fhir/ValueSet/x/$expand"),
            "/fhir/{type}/{id}/$expand"
        );
        assert_eq!(
            route_label(Some("/fhir/{type}/{id}"), "/fhir/CodeSystem/$made-up"),
            "/fhir/{type}/{id}"
        );
    }
}
