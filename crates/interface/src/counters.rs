//! The engine's counters and latency histograms, updated with atomics on the hot path and read as a [`Stats`]
//! snapshot (exported by the server at `/metrics`).

use crate::record::{Histogram, RouteStats, Stats};
use crate::store::Outcome;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the latency histogram buckets, in microseconds.
pub(crate) const BUCKETS_US: [u64; 14] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000,
    5_000_000,
];

/// A latency histogram over [`BUCKETS_US`].
#[derive(Default)]
pub(crate) struct Latency {
    count: AtomicU64,
    sum_us: AtomicU64,
    /// Non-cumulative: `buckets[i]` counts the observations in `(BUCKETS_US[i-1], BUCKETS_US[i]]`.
    buckets: [AtomicU64; BUCKETS_US.len()],
}

impl Latency {
    pub(crate) fn observe(&self, took: Duration) {
        let us = took.as_micros().min(u128::from(u64::MAX)) as u64;
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
        if let Some(i) = BUCKETS_US.iter().position(|&b| us <= b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    fn snapshot(&self) -> Histogram {
        let mut cumulative = Vec::with_capacity(BUCKETS_US.len());
        let mut running = 0;
        for (b, n) in BUCKETS_US.iter().zip(&self.buckets) {
            running += n.load(Ordering::Relaxed);
            cumulative.push((*b as f64 / 1e6, running));
        }
        Histogram {
            count: self.count.load(Ordering::Relaxed),
            sum_seconds: self.sum_us.load(Ordering::Relaxed) as f64 / 1e6,
            buckets: cumulative,
        }
    }
}

/// Everything counted since the engine started.
#[derive(Default)]
pub(crate) struct Counters {
    pub received: AtomicU64,
    pub acked: AtomicU64,
    pub duplicates: AtomicU64,
    pub rejected: AtomicU64,
    pub routed: AtomicU64,
    pub delivered: AtomicU64,
    pub failed_attempts: AtomicU64,
    pub dead: AtomicU64,
    pub commits: AtomicU64,
    pub durable_commits: AtomicU64,
    pub committed_ops: AtomicU64,
    /// From a message's submission to the store until its commit returned (what an ACK waits for).
    pub store_latency: Latency,
    /// One commit of the writer thread (with fsync when durable).
    pub commit_latency: Latency,
    /// Per route, in configuration order.
    pub routes: Vec<RouteCounters>,
}

/// One route's counters: its lag (deliveries queued and not yet settled) and its failures.
#[derive(Default)]
pub(crate) struct RouteCounters {
    pub name: String,
    /// Deliveries queued: resumed at start, routed, replayed.
    pub queued: AtomicU64,
    /// Queued deliveries found already made (a message queued twice) and skipped.
    pub skipped: AtomicU64,
    pub delivered: AtomicU64,
    pub failed_attempts: AtomicU64,
    pub dead: AtomicU64,
}

impl Counters {
    /// Counters for an engine with these routes.
    pub(crate) fn with_routes<'a>(names: impl IntoIterator<Item = &'a str>) -> Counters {
        Counters {
            routes: names
                .into_iter()
                .map(|n| RouteCounters {
                    name: n.to_string(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn route(&self, name: &str) -> Option<&RouteCounters> {
        self.routes.iter().find(|r| r.name == name)
    }

    /// A delivery queued on route `name`.
    pub(crate) fn route_queued(&self, name: &str, n: u64) {
        if let Some(r) = self.route(name) {
            r.queued.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// A queued delivery of route `name` that turned out to be made already.
    pub(crate) fn route_skipped(&self, name: &str) {
        if let Some(r) = self.route(name) {
            r.skipped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts an attempt's outcome, in the engine's totals and route `index`'s.
    pub(crate) fn count_outcome(&self, index: usize, outcome: Outcome) {
        let r = self.routes.get(index);
        let bump = |total: &AtomicU64, per: Option<&AtomicU64>| {
            total.fetch_add(1, Ordering::Relaxed);
            if let Some(p) = per {
                p.fetch_add(1, Ordering::Relaxed);
            }
        };
        match outcome {
            Outcome::Delivered => bump(&self.delivered, r.map(|r| &r.delivered)),
            Outcome::Retry => bump(&self.failed_attempts, r.map(|r| &r.failed_attempts)),
            Outcome::Dead => {
                bump(&self.failed_attempts, r.map(|r| &r.failed_attempts));
                bump(&self.dead, r.map(|r| &r.dead));
            }
        }
    }

    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> Stats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            received: get(&self.received),
            acked: get(&self.acked),
            duplicates: get(&self.duplicates),
            rejected: get(&self.rejected),
            routed: get(&self.routed),
            delivered: get(&self.delivered),
            failed_attempts: get(&self.failed_attempts),
            dead: get(&self.dead),
            commits: get(&self.commits),
            durable_commits: get(&self.durable_commits),
            committed_ops: get(&self.committed_ops),
            store_latency: self.store_latency.snapshot(),
            commit_latency: self.commit_latency.snapshot(),
            routes: self
                .routes
                .iter()
                .map(|r| {
                    let (queued, skipped) = (get(&r.queued), get(&r.skipped));
                    let (delivered, dead) = (get(&r.delivered), get(&r.dead));
                    RouteStats {
                        name: r.name.clone(),
                        pending: queued.saturating_sub(skipped + delivered + dead),
                        delivered,
                        failed_attempts: get(&r.failed_attempts),
                        dead,
                    }
                })
                .collect(),
        }
    }
}
