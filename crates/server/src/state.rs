use crate::metrics::Metrics;
use std::sync::Arc;
use std::time::Instant;

/// What the server says about itself (software name and version, where its data lives).
#[derive(Debug, Clone)]
pub struct ServerInfo {
    /// Software version reported in `/fhir/metadata`.
    pub version: String,
    /// The data directory the server was started on, if any.
    pub data_dir: Option<std::path::PathBuf>,
    /// A read-only replica (`thoth serve --read-only`): no interface engine, message routes refused with a
    /// 403, and nothing written to the data directory (the audit trail goes to the tracing log only).
    pub read_only: bool,
}

impl Default for ServerInfo {
    fn default() -> Self {
        ServerInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            data_dir: None,
            read_only: false,
        }
    }
}

/// The state as handlers receive it.
pub(crate) type Shared = Arc<AppState>;

/// Shared, cheaply cloned state of every handler.
///
/// Each pillar adds its facade here as an `Option<Arc<_>>` (absent when its content is not loaded), so that a
/// route can answer "not available" instead of the server failing to start.
#[derive(Clone)]
pub struct AppState {
    /// Static facts about this server.
    pub info: Arc<ServerInfo>,
    /// Request counters and latency histograms exported at `/metrics`.
    pub metrics: Arc<Metrics>,
    /// When the server started.
    pub started: Instant,
    /// The terminology service (FHIR CodeSystem/ValueSet/ConceptMap operations), when content is loaded.
    pub terminology: Option<Arc<terminology::Terminology>>,
    /// The SNOMED CT store (`<data>/snomed/`), when a release has been imported.
    pub snomed: Option<Arc<snomed::Store>>,
    /// The interface engine (stored messages, delivery history, replay), when `thoth serve` runs one. Cheap to
    /// clone: it is an `Arc` inside.
    pub engine: Option<interface::Engine>,
    /// Who may use the message routes (and, when configured so, the others); see [`AppState::with_access`].
    pub access: Arc<crate::Access>,
    /// The audit trail of the message routes: `<data>/audit.log` when [`ServerInfo::data_dir`] is set (and the
    /// server is not read-only).
    pub audit: Arc<crate::AuditLog>,
    /// Where the server is in its life (`/readyz`); ready unless whoever starts the server says otherwise.
    pub readiness: Arc<crate::Readiness>,
}

impl AppState {
    /// A state with nothing loaded but the server's own facts.
    pub fn new(info: ServerInfo) -> Self {
        AppState {
            audit: Arc::new(crate::AuditLog::for_data_dir(
                info.data_dir.as_deref().filter(|_| !info.read_only),
            )),
            readiness: Arc::new(crate::Readiness::ready()),
            access: Arc::new(crate::Access::default()),
            info: Arc::new(info),
            metrics: Arc::new(Metrics::default()),
            started: Instant::now(),
            terminology: None,
            snomed: None,
            engine: None,
        }
    }

    /// This state with the terminology service `tx`.
    pub fn with_terminology(mut self, tx: Arc<terminology::Terminology>) -> Self {
        self.terminology = Some(tx);
        self
    }

    /// This state as a read-only replica's (see [`ServerInfo::read_only`]): the message routes refuse, and the
    /// audit trail goes to the tracing log only.
    pub fn read_only(mut self) -> Self {
        let info = ServerInfo {
            read_only: true,
            ..(*self.info).clone()
        };
        self.info = Arc::new(info);
        self.audit = Arc::new(crate::AuditLog::for_data_dir(None));
        self
    }

    /// This state with the access policy `access` (the default: message routes for loopback peers only).
    pub fn with_access(mut self, access: crate::Access) -> Self {
        self.access = Arc::new(access);
        self
    }
}
