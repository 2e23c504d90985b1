//! HTTPS for the HTTP listener: rustls with a certificate that is read again when its files change, so that a
//! renewed certificate (ACME, an internal CA) is served without a restart and without dropping a connection.
//!
//! The files are looked at, at most once every [`RELOAD_CHECK`], during a handshake: no watcher thread, and a
//! server that nobody connects to does no work. A renewal that cannot be read (half written, a key that does not
//! match) is logged and the certificate in use is kept.

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

/// How often, at most, the certificate files are checked for a change.
pub const RELOAD_CHECK: Duration = Duration::from_secs(5);

/// Where the HTTP listener's certificate and key are, and (for mutual TLS) which authorities sign the client
/// certificates it accepts.
#[derive(Debug, Clone)]
pub struct HttpTls {
    /// Certificate chain, PEM.
    pub cert: PathBuf,
    /// Private key, PEM.
    pub key: PathBuf,
    /// Authorities of the client certificates required (mutual TLS), PEM.
    pub client_ca: Option<PathBuf>,
}

impl HttpTls {
    /// The rustls configuration: reads the files now, so that a mistake stops the server at start.
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let resolver = ReloadingCert::new(self.cert.clone(), self.key.clone(), provider.clone())?;
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let builder = match &self.client_ca {
            None => builder.with_no_client_auth(),
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                for cert in read_certs(ca)? {
                    roots
                        .add(cert)
                        .map_err(|e| format!("{}: {e}", ca.display()))?;
                }
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider,
                )
                .build()
                .map_err(|e| format!("{}: {e}", ca.display()))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder.with_cert_resolver(Arc::new(resolver));
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate in the file", path.display()));
    }
    Ok(certs)
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The certificate in use, and what is needed to notice and load a new one.
#[derive(Debug)]
struct ReloadingCert {
    cert: PathBuf,
    key: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
    /// When the files were last looked at, and their modification times then.
    checked: Mutex<(Instant, Option<SystemTime>, Option<SystemTime>)>,
}

impl ReloadingCert {
    fn new(cert: PathBuf, key: PathBuf, provider: Arc<CryptoProvider>) -> Result<Self, String> {
        let stamps = (modified(&cert), modified(&key));
        let loaded = load(&cert, &key, &provider)?;
        Ok(ReloadingCert {
            current: RwLock::new(Arc::new(loaded)),
            checked: Mutex::new((Instant::now(), stamps.0, stamps.1)),
            cert,
            key,
            provider,
        })
    }

    /// Reads the files again if they changed since the last look (at most once per [`RELOAD_CHECK`]).
    fn refresh(&self) {
        let Ok(mut checked) = self.checked.try_lock() else {
            return; // another handshake is looking right now
        };
        if checked.0.elapsed() < RELOAD_CHECK {
            return;
        }
        checked.0 = Instant::now();
        let stamps = (modified(&self.cert), modified(&self.key));
        if (stamps.0, stamps.1) == (checked.1, checked.2) {
            return;
        }
        match load(&self.cert, &self.key, &self.provider) {
            Ok(key) => {
                *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(key);
                (checked.1, checked.2) = stamps;
                tracing::info!(cert = %self.cert.display(), "HTTPS certificate reloaded");
            }
            // Kept: the next look tries again (a renewal may be half written).
            Err(e) => {
                tracing::warn!("HTTPS certificate not reloaded, the current one is kept: {e}")
            }
        }
    }
}

fn load(cert: &Path, key: &Path, provider: &CryptoProvider) -> Result<CertifiedKey, String> {
    let chain = read_certs(cert)?;
    let pem = std::fs::read(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let der = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| format!("{}: {e}", key.display()))?;
    let certified = CertifiedKey::from_der(chain, der, provider)
        .map_err(|e| format!("{} and {}: {e}", cert.display(), key.display()))?;
    Ok(certified)
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.refresh();
        Some(
            self.current
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        )
    }
}
