//! A load generator for MLLP listeners (`thoth mllp bench`, `bench/mllp`): connections send one message at a time
//! and wait for its ACK, which must name it (MSA-2) and accept it.

use crate::error::EngineError;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to send.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Concurrent connections.
    pub connections: usize,
    /// Messages in all, split evenly over the connections.
    pub messages: usize,
    /// Messages per connection sent before measuring.
    pub warmup: usize,
    /// Connection options (TLS, timeouts).
    pub client: mllp::ClientConfig,
}

/// What a load run measured.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// Connections used.
    pub connections: usize,
    /// Messages measured.
    pub messages: usize,
    /// Answers that were not an accepting ACK naming the message.
    pub errors: usize,
    /// Wall time of the measured part.
    pub elapsed: Duration,
    /// Every message's round trip, sorted, in microseconds.
    pub latencies_us: Vec<u32>,
}

impl LoadReport {
    /// Messages per second.
    pub fn rate(&self) -> f64 {
        self.messages as f64 / self.elapsed.as_secs_f64()
    }

    /// The `p`th percentile latency in milliseconds (nearest rank).
    pub fn percentile_ms(&self, p: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * self.latencies_us.len() as f64).ceil() as usize;
        let i = rank.clamp(1, self.latencies_us.len()) - 1;
        f64::from(self.latencies_us[i]) / 1000.0
    }
}

/// A message whose MSH-10 is replaced per send without re-encoding.
struct Template {
    prefix: Vec<u8>,
    suffix: Vec<u8>,
}

impl Template {
    fn new(msg: &[u8]) -> Option<Template> {
        let parsed = hl7v2::Message::parse(msg);
        let field = parsed.raw("MSH-10")?;
        let start = field.as_ptr() as usize - msg.as_ptr() as usize;
        Some(Template {
            prefix: msg[..start].to_vec(),
            suffix: msg[start + field.len()..].to_vec(),
        })
    }

    fn with_id(&self, id: &str, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(id.as_bytes());
        out.extend_from_slice(&self.suffix);
    }
}

fn io(e: mllp::MllpError) -> EngineError {
    EngineError::store("load", e)
}

/// Sends `message` (MSH-10 made unique per send) to `addr` as `opts` says and measures each round trip.
pub async fn load(
    addr: &str,
    message: &[u8],
    opts: &LoadOptions,
) -> Result<LoadReport, EngineError> {
    let template = Arc::new(Template::new(message).ok_or_else(|| EngineError::Config {
        path: Default::default(),
        detail: "the message has no MSH-10".into(),
    })?);
    let connections = opts.connections.max(1);
    // A run id keeps control IDs unique across runs, so duplicate detection does not change what is measured.
    let run = crate::store::now_ms();
    let mut clients = Vec::with_capacity(connections);
    for _ in 0..connections {
        clients.push(
            mllp::Client::connect(addr, opts.client.clone())
                .await
                .map_err(io)?,
        );
    }
    let start = Arc::new(tokio::sync::Barrier::new(connections + 1));
    let mut tasks = Vec::new();
    for (c, mut client) in clients.into_iter().enumerate() {
        let count = opts.messages / connections + usize::from(c < opts.messages % connections);
        let (template, start, warmup) = (template.clone(), start.clone(), opts.warmup);
        tasks.push(tokio::spawn(async move {
            let mut buf = Vec::new();
            let mut latencies = Vec::with_capacity(count);
            let mut errors = 0usize;
            for i in 0..warmup {
                template.with_id(&format!("W{run}-{c}-{i}"), &mut buf);
                client.send(&buf).await.map_err(io)?;
            }
            start.wait().await;
            for i in 0..count {
                let id = format!("B{run}-{c}-{i}");
                template.with_id(&id, &mut buf);
                let t = Instant::now();
                let ack = client.send(&buf).await.map_err(io)?;
                latencies.push(t.elapsed().as_micros().min(u128::from(u32::MAX)) as u32);
                let parsed = hl7v2::Message::parse(&ack);
                let accepted = parsed
                    .get("MSA-1")
                    .and_then(|code| hl7v2::AckCode::parse(&code))
                    .is_some_and(|code| code.is_success());
                errors +=
                    usize::from(!(accepted && parsed.get("MSA-2").as_deref() == Some(id.as_str())));
            }
            client.close().await;
            Ok::<_, EngineError>((latencies, errors))
        }));
    }
    start.wait().await;
    let began = Instant::now();
    let mut latencies_us = Vec::with_capacity(opts.messages);
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await.map_err(|e| EngineError::store("load", e))??;
        latencies_us.extend(l);
        errors += e;
    }
    let elapsed = began.elapsed();
    latencies_us.sort_unstable();
    Ok(LoadReport {
        connections,
        messages: opts.messages,
        errors,
        elapsed,
        latencies_us,
    })
}
