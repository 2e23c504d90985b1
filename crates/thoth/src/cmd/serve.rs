//! `thoth serve`: the HTTP server (and the MLLP listener once configured).

use crate::data_dir::GlobalArgs;
use std::net::SocketAddr;

/// Options of `thoth serve`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address of the HTTP API.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    http: SocketAddr,
    /// Terminology: the largest ValueSet expansion returned without paging.
    #[arg(
        long,
        default_value_t = 1000,
        value_name = "CODES",
        env = "THOTH_TX_MAX_EXPANSION"
    )]
    tx_max_expansion: usize,
}

pub fn run(global: &GlobalArgs, args: Args) -> anyhow::Result<()> {
    let data_dir = global.data_dir()?;
    tracing::info!(data = %data_dir.display(), "starting Thoth {}", env!("CARGO_PKG_VERSION"));
    let snomed = crate::cmd::snomed::open_store(&data_dir);
    let terminology = crate::cmd::terminology::load_service(&data_dir, args.tx_max_expansion);
    let info = server::ServerInfo {
        data_dir: Some(data_dir),
        ..Default::default()
    };
    let state = server::AppState::new(info).with_terminology(terminology);
    let state = server::AppState { snomed, ..state };
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async move {
        server::serve(args.http, state, shutdown_signal()).await?;
        tracing::info!("stopped");
        anyhow::Ok(())
    })
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM, whichever comes first.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down");
}
