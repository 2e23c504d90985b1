use crate::start;
use mllp::{Client, ClientConfig, ListenerConfig};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};

/// A throwaway certificate authority and the PEMs it signs, made fresh for each test.
struct Pki {
    ca_pem: String,
    server_cert: String,
    server_key: String,
    client_cert: String,
    client_key: String,
}

fn pki() -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf = |name: &str| {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec![name.to_string()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (server_cert, server_key) = leaf("localhost");
    let (client_cert, client_key) = leaf("sender.example");
    Pki {
        ca_pem: ca_cert.pem(),
        server_cert,
        server_key,
        client_cert,
        client_key,
    }
}

fn client_cfg(pki: &Pki, with_identity: bool) -> ClientConfig {
    let identity = with_identity.then_some((pki.client_cert.as_bytes(), pki.client_key.as_bytes()));
    ClientConfig {
        tls: Some(mllp::client_tls_config(pki.ca_pem.as_bytes(), identity).unwrap()),
        server_name: Some("localhost".into()),
        ..Default::default()
    }
}

#[tokio::test]
async fn tls_round_trip() {
    let pki = pki();
    let tls = mllp::server_tls_config(pki.server_cert.as_bytes(), pki.server_key.as_bytes(), None)
        .unwrap();
    let (addr, _) = start(ListenerConfig {
        tls: Some(tls),
        ..Default::default()
    })
    .await;
    let mut client = Client::connect(&addr, client_cfg(&pki, false))
        .await
        .unwrap();
    for i in 0..20 {
        let msg = format!("MSH|tls{i}");
        assert_eq!(
            &client.send(msg.as_bytes()).await.unwrap()[..],
            format!("ACK:{msg}").as_bytes()
        );
    }
    // A plain-TCP client gets nothing useful from a TLS listener.
    let mut plain = Client::connect(
        &addr,
        ClientConfig {
            reply_timeout: std::time::Duration::from_secs(3),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(plain.send(b"MSH|plain").await.is_err());
}

#[tokio::test]
async fn mutual_tls_requires_a_client_certificate() {
    let pki = pki();
    let tls = mllp::server_tls_config(
        pki.server_cert.as_bytes(),
        pki.server_key.as_bytes(),
        Some(pki.ca_pem.as_bytes()),
    )
    .unwrap();
    let (addr, echo) = start(ListenerConfig {
        tls: Some(tls),
        ..Default::default()
    })
    .await;
    let mut client = Client::connect(&addr, client_cfg(&pki, true))
        .await
        .unwrap();
    assert_eq!(
        &client.send(b"MSH|mtls").await.unwrap()[..],
        b"ACK:MSH|mtls"
    );

    // Without a certificate the handshake (or the first exchange, in TLS 1.3) fails.
    let refused = match Client::connect(&addr, client_cfg(&pki, false)).await {
        Err(_) => true,
        Ok(mut c) => c.send(b"MSH|anonymous").await.is_err(),
    };
    assert!(refused, "a client without a certificate was served");
    assert_eq!(echo.messages.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn unusable_pem_is_a_clear_error() {
    let err = mllp::server_tls_config(b"not a pem", b"nor this", None).unwrap_err();
    assert!(err.to_string().contains("server certificate"), "{err}");
}
