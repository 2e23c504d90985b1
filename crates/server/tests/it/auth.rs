//! Who may read the messages: the loopback-only default, bearer tokens by their hash, OpenID Connect JWTs, the
//! scopes of each route, and the audit trail of every access, allowed or refused.

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tower::ServiceExt;

const ISSUER: &str = "https://idp.example.org/realms/hospital";
const AUDIENCE: &str = "thoth";

/// A server with an engine holding one message, its data directory `dir`, and the access policy `access`.
struct Fixture {
    app: server::App,
    engine: interface::Engine,
    id: u64,
    dir: tempfile::TempDir,
}

async fn fixture(access: impl FnOnce(&Path) -> server::Access) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let engine = interface::Engine::open(
        &dir.path().join("messages"),
        interface::EngineConfig::from_toml("").unwrap(),
    )
    .unwrap();
    let raw = "MSH|^~\\&|LAB|HOSP|THOTH|HOSP|20240101120000||ADT^A01|C1|P|2.5.1\rPID|1||123^^^HOSP^MR||DOE^JANE\r";
    let receipt = engine.receive(raw.as_bytes().to_vec().into(), "test").await;
    let id = receipt.id.unwrap().0;
    let info = server::ServerInfo {
        data_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    let mut state = server::AppState::new(info).with_access(access(dir.path()));
    state.engine = Some(engine.clone());
    Fixture {
        app: server::app(state),
        engine,
        id,
        dir,
    }
}

/// What a request gets: the status, the `WWW-Authenticate` header and the body.
struct Answer {
    status: StatusCode,
    challenge: Option<String>,
    body: String,
}

impl Answer {
    /// Checks that the answer is a refusal with `status` and a FHIR OperationOutcome.
    #[track_caller]
    fn refused(&self, status: StatusCode) {
        assert_eq!(self.status, status, "{}", self.body);
        let oo: Value = serde_json::from_str(&self.body).unwrap();
        assert_eq!(oo["resourceType"], "OperationOutcome", "{}", self.body);
        let code = if status == StatusCode::UNAUTHORIZED {
            "login"
        } else {
            "forbidden"
        };
        assert_eq!(oo["issue"][0]["code"], code, "{}", self.body);
        if status == StatusCode::UNAUTHORIZED {
            assert!(
                self.challenge
                    .as_deref()
                    .is_some_and(|c| c.starts_with("Bearer")),
                "{:?}",
                self.challenge
            );
        }
    }
}

async fn call(
    app: &server::App,
    method: Method,
    uri: &str,
    peer: &str,
    bearer: Option<&str>,
) -> Answer {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(token) = bearer {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    let mut req = req.body(Body::empty()).unwrap();
    // What the server's listener attaches to every request it reads from a socket.
    let peer: SocketAddr = peer.parse().unwrap();
    req.extensions_mut().insert(ConnectInfo(peer));
    let response = app.clone().oneshot(req).await.unwrap();
    let status = response.status();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_string());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        challenge,
        body: String::from_utf8(body.to_vec()).unwrap(),
    }
}

const LOCAL: &str = "127.0.0.1:40000";
const REMOTE: &str = "192.0.2.7:40000";

fn audit_lines(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("audit.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn sha256_hex(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test]
async fn with_nothing_configured_the_message_routes_answer_loopback_only() {
    let f = fixture(|_| server::Access::default()).await;
    let show = format!("/messages/{}", f.id);
    for peer in [LOCAL, "[::1]:40000", "[::ffff:127.0.0.1]:40000"] {
        let a = call(&f.app, Method::GET, &show, peer, None).await;
        assert_eq!(a.status, StatusCode::OK, "{peer}: {}", a.body);
    }
    let a = call(&f.app, Method::GET, "/messages", REMOTE, None).await;
    a.refused(StatusCode::FORBIDDEN);
    let a = call(&f.app, Method::GET, &format!("{show}/raw"), REMOTE, None).await;
    a.refused(StatusCode::FORBIDDEN);
    let a = call(
        &f.app,
        Method::POST,
        &format!("{show}/replay"),
        REMOTE,
        None,
    )
    .await;
    a.refused(StatusCode::FORBIDDEN);
    // The other routes stay open.
    let a = call(&f.app, Method::GET, "/fhir/metadata", REMOTE, None).await;
    assert_eq!(a.status, StatusCode::OK);

    let lines = audit_lines(f.dir.path());
    let id = f.id.to_string();
    assert_eq!(lines.len(), 6, "{lines:#?}");
    assert!(lines[..3].iter().all(|l| l["outcome"] == "allowed"
        && l["auth"] == "loopback"
        && l["status"] == 200
        && l["message_id"] == id.as_str()
        && l["route"] == "/messages/{id}"));
    assert_eq!(lines[0]["peer"], LOCAL);
    assert!(
        lines[3..]
            .iter()
            .all(|l| l["outcome"] == "refused" && l["status"] == 403 && l["peer"] == REMOTE)
    );
    assert_eq!(lines[3]["message_id"], Value::Null);
    assert_eq!(lines[4]["route"], "/messages/{id}/raw");
    assert_eq!(lines[5]["method"], "POST");
    assert!(lines[0]["time"].as_str().unwrap().ends_with('Z'));
    f.engine.shutdown().await;
}

#[tokio::test]
async fn explicitly_opened_message_routes_answer_every_peer() {
    let f = fixture(|_| server::Access::insecure_open()).await;
    let a = call(&f.app, Method::GET, "/messages", REMOTE, None).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(audit_lines(f.dir.path())[0]["auth"], "open");
    f.engine.shutdown().await;
}

fn tokens_config() -> server::AuthConfig {
    let token = |name: &str, secret: &str, scopes: &[&str]| server::TokenConfig {
        name: name.into(),
        sha256: sha256_hex(secret),
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
    };
    server::AuthConfig {
        tokens: vec![
            token("ward-dashboard", "reader-secret", &["messages:read"]),
            token("replayer", "replay-secret", &["messages:replay"]),
            token("ops", "admin-secret", &["admin"]),
        ],
        ..Default::default()
    }
}

#[tokio::test]
async fn bearer_tokens_need_the_scope_of_the_route() {
    let f = fixture(|_| server::Access::from_config(&tokens_config(), None).unwrap()).await;
    let show = format!("/messages/{}", f.id);
    let replay = format!("/messages/{}/replay", f.id);

    // No credential, from loopback too: once configured, a credential is needed from everyone.
    let a = call(&f.app, Method::GET, &show, LOCAL, None).await;
    a.refused(StatusCode::UNAUTHORIZED);
    assert_eq!(a.challenge.as_deref(), Some("Bearer realm=\"thoth\""));
    // A wrong token, and a credential of another scheme.
    let a = call(&f.app, Method::GET, &show, REMOTE, Some("guess")).await;
    a.refused(StatusCode::UNAUTHORIZED);
    assert!(a.challenge.unwrap().contains("invalid_token"));
    let req = Request::get(&show)
        .header("authorization", "Basic dXNlcjpwYXNz")
        .body(Body::empty())
        .unwrap();
    let response = f.app.clone().oneshot(req).await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    // The right token.
    let a = call(&f.app, Method::GET, &show, REMOTE, Some("reader-secret")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let a = call(
        &f.app,
        Method::GET,
        &format!("{show}/raw"),
        REMOTE,
        Some("reader-secret"),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert!(a.body.starts_with("MSH|"));
    // Reading does not allow replaying, nor replaying reading.
    let a = call(&f.app, Method::POST, &replay, REMOTE, Some("reader-secret")).await;
    a.refused(StatusCode::FORBIDDEN);
    assert!(a.challenge.unwrap().contains("insufficient_scope"));
    let a = call(&f.app, Method::GET, &show, REMOTE, Some("replay-secret")).await;
    a.refused(StatusCode::FORBIDDEN);
    let a = call(&f.app, Method::POST, &replay, REMOTE, Some("replay-secret")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    // `admin` does both.
    let a = call(
        &f.app,
        Method::GET,
        "/messages",
        REMOTE,
        Some("admin-secret"),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let a = call(&f.app, Method::POST, &replay, REMOTE, Some("admin-secret")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    // The other routes stay open by default.
    let a = call(&f.app, Method::GET, "/fhir/metadata", REMOTE, None).await;
    assert_eq!(a.status, StatusCode::OK);

    let lines = audit_lines(f.dir.path());
    let summary: Vec<(String, String, u64)> = lines
        .iter()
        .map(|l| {
            (
                l["subject"].as_str().unwrap().to_string(),
                l["outcome"].as_str().unwrap().to_string(),
                l["status"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("-", "refused", 401),
        ("-", "refused", 401),
        ("-", "refused", 401),
        ("ward-dashboard", "allowed", 200),
        ("ward-dashboard", "allowed", 200),
        ("ward-dashboard", "refused", 403),
        ("replayer", "refused", 403),
        ("replayer", "allowed", 200),
        ("ops", "allowed", 200),
        ("ops", "allowed", 200),
    ];
    let expected: Vec<(String, String, u64)> = expected
        .iter()
        .map(|(s, o, c)| (s.to_string(), o.to_string(), *c))
        .collect();
    assert_eq!(summary, expected, "{lines:#?}");
    // The request the Basic credential came in carried no peer address.
    assert_eq!(lines[2]["peer"], "-");
    assert!(lines[1]["reason"].as_str().unwrap().contains("unknown"));
    assert_eq!(lines[5]["route"], "/messages/{id}/replay");
    assert!(
        !std::fs::read_to_string(f.dir.path().join("audit.log"))
            .unwrap()
            .contains("secret"),
        "the audit trail never holds a credential"
    );
    f.engine.shutdown().await;
}

#[tokio::test]
async fn closed_other_routes_need_a_credential_but_health_does_not() {
    let mut config = tokens_config();
    config.open_routes = false;
    // A terminology whose single-code lookups the fast lane answers before the router.
    let mut registry = terminology::Registry::new();
    registry.add(json!({
        "resourceType": "CodeSystem", "id": "colours", "url": "http://example.org/colours",
        "version": "1", "name": "Colours", "status": "active", "content": "complete",
        "concept": [{"code": "red", "display": "Red"}]
    }));
    let tx = terminology::Terminology::new(registry, terminology::Config::default());
    let state = server::AppState::new(server::ServerInfo::default())
        .with_terminology(Arc::new(tx))
        .with_access(server::Access::from_config(&config, None).unwrap());
    let app = server::app(state);
    let lookup = "/fhir/CodeSystem/$lookup?system=http://example.org/colours&code=red";
    for uri in [
        lookup,
        "/fhir/metadata",
        "/metrics",
        "/v1/snomed/search?term=x",
    ] {
        let a = call(&app, Method::GET, uri, LOCAL, None).await;
        a.refused(StatusCode::UNAUTHORIZED);
        let a = call(&app, Method::GET, uri, LOCAL, Some("wrong")).await;
        a.refused(StatusCode::UNAUTHORIZED);
    }
    let a = call(&app, Method::GET, lookup, LOCAL, Some("reader-secret")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert!(a.body.contains("Red"), "{}", a.body);
    let a = call(&app, Method::GET, "/healthz", REMOTE, None).await;
    assert_eq!(a.status, StatusCode::OK);
}

/// An EC P-256 key pair made for the test: the signing key and its public JWK named `kid`.
fn key_pair(kid: &str) -> (EncodingKey, Jwk) {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let key = EncodingKey::from_ec_der(&pair.serialize_der());
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap();
    jwk.common.key_id = Some(kid.into());
    (key, jwk)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn jwt(key: &EncodingKey, kid: &str, claims: Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, &claims, key).unwrap()
}

#[tokio::test]
async fn jwts_are_checked_against_the_providers_keys_issuer_audience_and_expiry() {
    let (key, jwk) = key_pair("k1");
    let (other_key, _) = key_pair("k1");
    let jwks = serde_json::to_string(&JwkSet { keys: vec![jwk] }).unwrap();
    let f = fixture(|dir| {
        let jwks_path = dir.join("idp-keys.json");
        std::fs::write(&jwks_path, &jwks).unwrap();
        // Through the auth file, as `thoth serve --auth` reads it: the key set's path is relative to it.
        let auth = dir.join("auth.toml");
        std::fs::write(
            &auth,
            format!(
                "[auth]\n[auth.jwt]\njwks_file = \"idp-keys.json\"\nissuer = \"{ISSUER}\"\naudience = \"{AUDIENCE}\"\n"
            ),
        )
        .unwrap();
        let file = server::AuthFile::from_file(&auth).unwrap();
        server::Access::from_config(&file.auth, None).unwrap()
    })
    .await;
    let show = format!("/messages/{}", f.id);
    let claims = |overrides: Value| {
        let mut c = json!({
            "iss": ISSUER, "aud": AUDIENCE, "sub": "dr-house",
            "exp": now() + 300, "iat": now(), "scope": "openid messages:read"
        });
        // `null` removes the claim.
        for (k, v) in overrides.as_object().unwrap() {
            if v.is_null() {
                c.as_object_mut().unwrap().remove(k);
            } else {
                c[k] = v.clone();
            }
        }
        c
    };

    let good = jwt(&key, "k1", claims(json!({})));
    let a = call(&f.app, Method::GET, &show, REMOTE, Some(&good)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    // `scp` as a list, and an audience list that holds ours.
    let scp = jwt(
        &key,
        "k1",
        claims(json!({"scope": null, "scp": ["messages:read"], "aud": ["other", AUDIENCE]})),
    );
    let a = call(&f.app, Method::GET, &show, REMOTE, Some(&scp)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);

    let refused = [
        (
            "expired",
            jwt(&key, "k1", claims(json!({"exp": now() - 3600}))),
            StatusCode::UNAUTHORIZED,
        ),
        (
            "wrong issuer",
            jwt(&key, "k1", claims(json!({"iss": "https://evil.example"}))),
            StatusCode::UNAUTHORIZED,
        ),
        (
            "wrong audience",
            jwt(&key, "k1", claims(json!({"aud": "someone-else"}))),
            StatusCode::UNAUTHORIZED,
        ),
        (
            "bad signature",
            jwt(&other_key, "k1", claims(json!({}))),
            StatusCode::UNAUTHORIZED,
        ),
        (
            "no key of the provider",
            jwt(&key, "k2", claims(json!({}))),
            StatusCode::UNAUTHORIZED,
        ),
        (
            "exp",
            jwt(&key, "k1", claims(json!({"exp": null}))),
            StatusCode::UNAUTHORIZED,
        ),
        (
            "lacks the scope",
            jwt(&key, "k1", claims(json!({"scope": "openid"}))),
            StatusCode::FORBIDDEN,
        ),
    ];
    for (why, token, status) in &refused {
        let a = call(&f.app, Method::GET, &show, REMOTE, Some(token)).await;
        a.refused(*status);
        let oo: Value = serde_json::from_str(&a.body).unwrap();
        assert!(
            oo["issue"][0]["diagnostics"]
                .as_str()
                .unwrap()
                .contains(why),
            "{why}: {}",
            a.body
        );
    }
    // Reading does not allow replaying.
    let a = call(
        &f.app,
        Method::POST,
        &format!("{show}/replay"),
        REMOTE,
        Some(&good),
    )
    .await;
    a.refused(StatusCode::FORBIDDEN);

    let lines = audit_lines(f.dir.path());
    assert_eq!(lines.len(), 2 + refused.len() + 1, "{lines:#?}");
    assert!(
        lines[..2]
            .iter()
            .all(|l| l["outcome"] == "allowed" && l["auth"] == "jwt" && l["subject"] == "dr-house")
    );
    for (line, (why, _, status)) in lines[2..].iter().zip(&refused) {
        assert_eq!(line["outcome"], "refused", "{why}");
        assert_eq!(line["status"], status.as_u16(), "{why}");
        assert!(line["reason"].as_str().unwrap().contains(why), "{line}");
    }
    // The holder of a valid token that lacks the scope is named; an invalid token's claims are not believed.
    assert_eq!(lines[2]["subject"], "-");
    assert_eq!(lines[2 + refused.len() - 1]["subject"], "dr-house");
    assert_eq!(lines.last().unwrap()["subject"], "dr-house");
    f.engine.shutdown().await;
}

#[tokio::test]
async fn a_rotated_key_set_replaces_the_old_one() {
    let (old_key, old_jwk) = key_pair("old");
    let (new_key, new_jwk) = key_pair("new");
    let config = server::AuthConfig {
        jwt: Some(server::JwtConfig {
            jwks_file: None,
            jwks_url: Some("https://idp.example.org/jwks".into()),
            issuer: ISSUER.into(),
            audience: AUDIENCE.into(),
            leeway_secs: 0,
        }),
        ..Default::default()
    };
    let set = |jwk: Jwk| serde_json::to_string(&JwkSet { keys: vec![jwk] }).unwrap();
    let access = Arc::new(server::Access::from_config(&config, Some(&set(old_jwk))).unwrap());
    let mut state = server::AppState::new(server::ServerInfo::default());
    state.access = access.clone();
    let app = server::app(state);
    let claims =
        json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "s", "exp": now() + 60, "scp": "admin"});
    let old = jwt(&old_key, "old", claims.clone());
    let new = jwt(&new_key, "new", claims);
    // No engine: a request let through is answered 400 "not running", a refused one 401.
    let a = call(&app, Method::GET, "/messages", REMOTE, Some(&old)).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
    call(&app, Method::GET, "/messages", REMOTE, Some(&new))
        .await
        .refused(StatusCode::UNAUTHORIZED);
    access.replace_jwks(&set(new_jwk)).unwrap();
    let a = call(&app, Method::GET, "/messages", REMOTE, Some(&new)).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
    call(&app, Method::GET, "/messages", REMOTE, Some(&old))
        .await
        .refused(StatusCode::UNAUTHORIZED);
    assert!(access.replace_jwks("{\"keys\": []}").is_err());
}

/// Over a real socket the listener records the peer, which the loopback rule and the audit trail read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listener_gives_the_guard_the_peer_address() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let info = server::ServerInfo {
        data_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    let state = server::AppState::new(info);
    // A free port: bound, noted, released.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(server::serve_with_threads(addr, state, 1, async move {
        let _ = stop_rx.await;
    }));
    let mut answer = String::new();
    for _ in 0..100 {
        let Ok(mut tcp) = tokio::net::TcpStream::connect(addr).await else {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            continue;
        };
        tcp.write_all(b"GET /messages HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        tcp.read_to_string(&mut answer).await.unwrap();
        break;
    }
    // No engine here: let through, the route says it has none (400); the point is the peer in the trail.
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    let lines = audit_lines(dir.path());
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let peer: SocketAddr = lines[0]["peer"].as_str().unwrap().parse().unwrap();
    assert!(peer.ip().is_loopback(), "{peer}");
    assert_eq!(lines[0]["auth"], "loopback");
    stop_tx.send(()).unwrap();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), server).await;
}
