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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

/// Upper bounds (seconds) of the latency histogram buckets.
const BUCKETS: [f64; 12] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 1.0, 5.0,
];

/// Counters of one (method, route, status) series.
#[derive(Default)]
struct Series {
    count: AtomicU64,
    sum_micros: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len()],
}

/// All HTTP metrics of one server.
#[derive(Default)]
pub struct Metrics {
    series: RwLock<BTreeMap<(String, String, u16), Arc<Series>>>,
}

impl Metrics {
    /// Records one finished request.
    pub fn observe(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let key = (method.to_string(), route.to_string(), status);
        let existing = self.series.read().expect("metrics lock").get(&key).cloned();
        let series = match existing {
            Some(s) => s,
            None => self
                .series
                .write()
                .expect("metrics lock")
                .entry(key)
                .or_default()
                .clone(),
        };
        series.count.fetch_add(1, Ordering::Relaxed);
        series
            .sum_micros
            .fetch_add((seconds * 1e6) as u64, Ordering::Relaxed);
        for (i, bound) in BUCKETS.iter().enumerate() {
            if seconds <= *bound {
                series.buckets[i].fetch_add(1, Ordering::Relaxed);
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
        let series = self.series.read().expect("metrics lock");
        for ((method, route, status), s) in series.iter() {
            let _ = writeln!(
                out,
                "thoth_http_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {}",
                s.count.load(Ordering::Relaxed)
            );
        }
        out.push_str("# HELP thoth_http_request_duration_seconds Time to answer HTTP requests.\n");
        out.push_str("# TYPE thoth_http_request_duration_seconds histogram\n");
        for ((method, route, status), s) in series.iter() {
            let labels = format!("method=\"{method}\",route=\"{route}\",status=\"{status}\"");
            for (i, bound) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "thoth_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {}",
                    s.buckets[i].load(Ordering::Relaxed)
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

/// Middleware that times every request under its route template (never the raw path, to bound cardinality).
pub(crate) async fn track(State(state): State<Shared>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().to_string();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let response = next.run(req).await;
    state.metrics.observe(
        &method,
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
