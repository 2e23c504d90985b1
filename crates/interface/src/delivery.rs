//! One task per route delivers its queue in arrival order, with retries, backoff and dead-lettering.

use crate::engine::Inner;
use crate::record::MessageId;
use crate::route::Target;
use crate::store::Outcome;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// Delivers route `index`'s queue until the engine stops. A message is retried in place (later messages wait), so
/// that a receiver sees messages in the order they arrived, as HL7 v2 receivers expect.
pub(crate) async fn run(
    inner: Arc<Inner>,
    index: usize,
    mut queue: mpsc::UnboundedReceiver<MessageId>,
    mut stop: watch::Receiver<bool>,
) {
    let route = inner.routes[index].name.clone();
    let cfg = inner.config.delivery.clone();
    let attempt_timeout = Duration::from_millis(cfg.attempt_timeout_ms);
    let mut target = Target::new(
        &inner.routes[index].config,
        attempt_timeout,
        inner.config.to_fhir.zone(),
    );
    loop {
        let id = tokio::select! {
            id = queue.recv() => match id {
                Some(id) => id,
                None => return,
            },
            _ = stop.changed() => return,
        };
        // A message can be queued twice (a replay while it was pending); deliver it once.
        match inner.store.is_pending(id, &route) {
            Ok(true) => {}
            Ok(false) => {
                inner.counters.route_skipped(&route);
                continue;
            }
            Err(e) => {
                tracing::error!(%id, route, "cannot read the delivery state: {e}");
                continue;
            }
        }
        let raw = match inner.raw_off_runtime(id).await {
            Ok(Some(raw)) => raw,
            Ok(None) => {
                inner.counters.route_skipped(&route);
                continue;
            }
            Err(e) => {
                tracing::error!(%id, route, "cannot read the message: {e}");
                continue;
            }
        };
        let mut failures = 0u32;
        loop {
            let attempt = tokio::select! {
                r = tokio::time::timeout(attempt_timeout, target.deliver(id, &raw)) => r,
                _ = stop.changed() => return,
            };
            let (outcome, detail) = match attempt {
                Ok(Ok(detail)) => (Outcome::Delivered, detail),
                Ok(Err(detail)) => {
                    failures += 1;
                    let last = failures >= cfg.max_attempts;
                    (if last { Outcome::Dead } else { Outcome::Retry }, detail)
                }
                Err(_) => {
                    failures += 1;
                    let last = failures >= cfg.max_attempts;
                    let detail = format!("no answer within {attempt_timeout:?}");
                    (if last { Outcome::Dead } else { Outcome::Retry }, detail)
                }
            };
            inner.counters.count_outcome(index, outcome);
            if outcome != Outcome::Delivered {
                tracing::warn!(%id, route, failures, "delivery failed: {detail}");
            }
            let recorded = match inner.store.record_attempt(id, &route, detail, outcome) {
                Ok(rx) => rx,
                Err(e) => {
                    tracing::error!(%id, route, "cannot record the delivery attempt: {e}");
                    return;
                }
            };
            if outcome == Outcome::Delivered {
                // At-least-once needs no wait here: if this record is lost in a crash, the delivery is still
                // pending and is made again after the restart (a duplicate downstream, never a loss). Not waiting
                // lets the next delivery start while the store commits this one.
                let route = route.clone();
                tokio::spawn(async move {
                    if let Ok(Err(e)) = recorded.await {
                        tracing::error!(%id, route, "cannot record the delivery: {e}");
                    }
                });
            } else if let Err(e) = recorded
                .await
                .unwrap_or(Err(crate::error::EngineError::ShuttingDown))
            {
                // Not recorded: the delivery stays pending in the store and is retried on the next start.
                tracing::error!(%id, route, "cannot record the delivery attempt: {e}");
                return;
            }
            match outcome {
                Outcome::Delivered => {
                    inner.settled(id, &route, true);
                    break;
                }
                Outcome::Dead => {
                    tracing::error!(%id, route, "delivery dead-lettered after {failures} attempts");
                    inner.settled(id, &route, false);
                    break;
                }
                Outcome::Retry => {
                    tokio::select! {
                        _ = tokio::time::sleep(cfg.backoff(failures)) => {}
                        _ = stop.changed() => return,
                    }
                }
            }
        }
    }
}
