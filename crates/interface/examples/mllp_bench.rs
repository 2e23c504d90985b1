//! The engine and the load generator in one small release binary, for `bench/mllp/run.sh` (building the whole
//! `thoth` binary in release mode takes far longer than this).
//!
//! ```sh
//! mllp_bench serve ADDR DATA_DIR durable|nondurable     # an engine with no routes behind an MLLP listener
//! mllp_bench load ADDR CONNECTIONS MESSAGES FILE        # one JSON line: msg/s and latency percentiles
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
        _ => Err("usage: mllp_bench serve ADDR DATA_DIR durable|nondurable | load ADDR CONNECTIONS MESSAGES FILE".into()),
    }
}
