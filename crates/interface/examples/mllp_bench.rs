//! The engine and the load generator in one small release binary, for `bench/mllp/run.sh` (building the whole
//! `thoth` binary in release mode takes far longer than this).
//!
//! ```sh
//! mllp_bench serve ADDR DATA_DIR durable|nondurable     # an engine with no routes behind an MLLP listener
//! mllp_bench load ADDR CONNECTIONS MESSAGES FILE        # one JSON line: msg/s and latency percentiles
//! mllp_bench route CONFIG DATA_DIR CONNECTIONS MESSAGES FILE
//!     # an engine with CONFIG's routes (its own listener on a free loopback port) and the load against it: one
//!     # JSON line with the acknowledged msg/s and the delivered msg/s (until every route delivered everything)
//! ```

use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("serve") if args.len() == 4 => {
            let config = interface::EngineConfig::from_toml(&format!(
                "[store]\ndurable = {}\n",
                args[3] == "durable"
            ))?;
            let engine = interface::Engine::open(std::path::Path::new(&args[2]), config.clone())?;
            let listener = mllp::Listener::bind(args[1].parse()?, config.listener_config()?).await?;
            eprintln!("serving {} ({})", listener.local_addr(), args[3]);
            listener
                .serve(Arc::new(engine.clone()), async {
                    let _ = tokio::signal::ctrl_c().await;
                })
                .await;
            engine.shutdown().await;
            let s = engine.stats();
            let per = |a: f64, b: u64| if b == 0 { 0.0 } else { a / b as f64 };
            eprintln!(
                "store: {} commits ({} durable), {:.2} writes per commit, {:.3} ms per commit",
                s.commits,
                s.durable_commits,
                per(s.committed_ops as f64, s.commits),
                per(s.commit_latency.sum_seconds * 1e3, s.commit_latency.count)
            );
            Ok(())
        }
        Some("load") if args.len() == 5 => {
            let text = std::fs::read(&args[4])?;
            let message: Vec<u8> = text.iter().map(|&b| if b == b'\n' { b'\r' } else { b }).collect();
            let opts = interface::LoadOptions {
                connections: args[2].parse()?,
                messages: args[3].parse()?,
                warmup: 500,
                client: Default::default(),
            };
            let r = interface::load(&args[1], &message, &opts).await?;
            let p = |q| r.percentile_ms(q);
            println!(
                "{{\"connections\":{},\"messages\":{},\"errors\":{},\"msg_per_s\":{:.0},\"p50_ms\":{:.3},\"p90_ms\":{:.3},\"p99_ms\":{:.3},\"p999_ms\":{:.3}}}",
                r.connections,
                r.messages,
                r.errors,
                r.rate(),
                p(50.0),
                p(90.0),
                p(99.0),
                p(99.9)
            );
            Ok(())
        }
        Some("route") if args.len() == 6 => {
            let config = interface::EngineConfig::from_file(std::path::Path::new(&args[1]))?;
            let engine = interface::Engine::open(std::path::Path::new(&args[2]), config.clone())?;
            let listener =
                mllp::Listener::bind("127.0.0.1:0".parse()?, config.listener_config()?).await?;
            let addr = listener.local_addr().to_string();
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let served = tokio::spawn(listener.serve(Arc::new(engine.clone()), async {
                let _ = stop_rx.await;
            }));
            let text = std::fs::read(&args[5])?;
            let message: Vec<u8> = text.iter().map(|&b| if b == b'\n' { b'\r' } else { b }).collect();
            let opts = interface::LoadOptions {
                connections: args[3].parse()?,
                messages: args[4].parse()?,
                warmup: 0,
                client: Default::default(),
            };
            let started = std::time::Instant::now();
            let r = interface::load(&addr, &message, &opts).await?;
            // Delivered: every queued delivery made (or dead-lettered, which the JSON line shows).
            loop {
                let s = engine.stats();
                if s.delivered + s.dead >= s.routed {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            let elapsed = started.elapsed().as_secs_f64();
            let s = engine.stats();
            println!(
                "{{\"connections\":{},\"messages\":{},\"errors\":{},\"acked_msg_per_s\":{:.0},\"delivered\":{},\"dead\":{},\"failed_attempts\":{},\"delivered_msg_per_s\":{:.0}}}",
                r.connections,
                r.messages,
                r.errors,
                r.rate(),
                s.delivered,
                s.dead,
                s.failed_attempts,
                s.delivered as f64 / elapsed
            );
            let _ = stop_tx.send(());
            let _ = served.await;
            engine.shutdown().await;
            Ok(())
        }
        _ => Err("usage: mllp_bench serve ADDR DATA_DIR durable|nondurable | load ADDR CONNECTIONS MESSAGES FILE | route CONFIG DATA_DIR CONNECTIONS MESSAGES FILE".into()),
    }
}
