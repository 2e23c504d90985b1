//! HTTPS on the HTTP listener: a client that trusts the authority is served, and a renewed certificate written
//! over the files is served to new connections without a restart.

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, ServerName};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A fresh authority; `leaf()` gives a new certificate for localhost (PEM chain, PEM key, DER).
struct Ca(Issuer<'static, KeyPair>, String);

impl Ca {
    fn new() -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).unwrap();
        Ca(Issuer::new(params, key), cert.pem())
    }

    fn leaf(&self) -> (String, String, Vec<u8>) {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .signed_by(&key, &self.0)
            .unwrap();
        (cert.pem(), key.serialize_pem(), cert.der().to_vec())
    }
}

/// GET /healthz over TLS: the answer and the certificate the server presented.
async fn get(addr: std::net::SocketAddr, ca_pem: &str) -> (String, Vec<u8>) {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(ca_pem.as_bytes()) {
        let cert: CertificateDer<'static> = cert.unwrap();
        roots.add(cert).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut tls = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    let presented = tls.get_ref().1.peer_certificates().unwrap()[0].to_vec();
    tls.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer).await;
    (String::from_utf8_lossy(&answer).into_owned(), presented)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_serves_and_picks_up_a_renewed_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    let (cert, key, first_der) = ca.leaf();
    let (cert_path, key_path) = (dir.path().join("http.pem"), dir.path().join("http.key"));
    std::fs::write(&cert_path, cert).unwrap();
    std::fs::write(&key_path, key).unwrap();
    let addr = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap()
    };
    let options = server::HttpOptions {
        threads: Some(1),
        tls: Some(server::HttpTls {
            cert: cert_path.clone(),
            key: key_path.clone(),
            client_ca: None,
        }),
        ..Default::default()
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let state = server::AppState::new(server::ServerInfo::default());
    tokio::spawn(server::serve_with_options(
        addr,
        state,
        options,
        async move {
            let _ = stop_rx.await;
        },
    ));
    let mut answer = None;
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            answer = Some(get(addr, &ca.1).await);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (text, presented) = answer.expect("the server listens");
    assert!(
        text.starts_with("HTTP/1.1 200") && text.ends_with("ok\n"),
        "{text}"
    );
    assert_eq!(presented, first_der);

    // A plain-text client gets no answer from the TLS port.
    let mut plain = tokio::net::TcpStream::connect(addr).await.unwrap();
    plain
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), plain.read_to_end(&mut buf)).await;
    assert!(
        !String::from_utf8_lossy(&buf).contains("200"),
        "plain HTTP on the HTTPS port"
    );

    // Renewal: new files in place; new connections get the new certificate once the files are looked at again.
    let (cert, key, renewed_der) = ca.leaf();
    std::fs::write(&key_path, key).unwrap();
    std::fs::write(&cert_path, cert).unwrap();
    let mut now_presented = Vec::new();
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let (text, presented) = get(addr, &ca.1).await;
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        now_presented = presented;
        if now_presented == renewed_der {
            break;
        }
    }
    assert_eq!(
        now_presented,
        renewed_der,
        "the renewed certificate is served within {:?}",
        server::RELOAD_CHECK * 2
    );
    let _ = stop_tx.send(());
}
