//! TLS configurations from PEM: server (optionally requiring client certificates) and client.

use crate::error::MllpError;
use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certs(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, MllpError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| MllpError::TlsConfig(format!("{what}: {e}")))?;
    if certs.is_empty() {
        return Err(MllpError::TlsConfig(format!(
            "{what}: no certificate in the PEM"
        )));
    }
    Ok(certs)
}

fn key(pem: &[u8]) -> Result<PrivateKeyDer<'static>, MllpError> {
    PrivateKeyDer::from_pem_slice(pem)
        .map_err(|e| MllpError::TlsConfig(format!("private key: {e}")))
}

fn roots(pem: &[u8], what: &str) -> Result<RootCertStore, MllpError> {
    let mut store = RootCertStore::empty();
    for cert in certs(pem, what)? {
        store
            .add(cert)
            .map_err(|e| MllpError::TlsConfig(format!("{what}: {e}")))?;
    }
    Ok(store)
}

/// A TLS server configuration from a PEM certificate chain and private key. With `client_ca_pem`, clients must
/// present a certificate signed by one of those authorities (mutual TLS).
pub fn server_tls_config(
    cert_chain_pem: &[u8],
    key_pem: &[u8],
    client_ca_pem: Option<&[u8]>,
) -> Result<Arc<rustls::ServerConfig>, MllpError> {
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| MllpError::TlsConfig(e.to_string()))?;
    let builder = match client_ca_pem {
        Some(pem) => {
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots(pem, "client CA")?),
                provider(),
            )
            .build()
            .map_err(|e| MllpError::TlsConfig(format!("client CA: {e}")))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let config = builder
        .with_single_cert(certs(cert_chain_pem, "server certificate")?, key(key_pem)?)
        .map_err(|e| MllpError::TlsConfig(e.to_string()))?;
    Ok(Arc::new(config))
}

/// A TLS client configuration trusting the authorities in `ca_pem`; with `identity` (certificate chain PEM, key
/// PEM) it presents a client certificate for mutual TLS.
pub fn client_tls_config(
    ca_pem: &[u8],
    identity: Option<(&[u8], &[u8])>,
) -> Result<Arc<rustls::ClientConfig>, MllpError> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| MllpError::TlsConfig(e.to_string()))?
        .with_root_certificates(roots(ca_pem, "CA")?);
    let config = match identity {
        Some((chain, key_pem)) => builder
            .with_client_auth_cert(certs(chain, "client certificate")?, key(key_pem)?)
            .map_err(|e| MllpError::TlsConfig(e.to_string()))?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}
