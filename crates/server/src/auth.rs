//! Who may read the messages: access control on the HTTP API.
//!
//! The message routes (`/messages...`) hand out whole HL7 v2 messages (names, dates of birth, diagnoses) and
//! `replay` sends them again, so they are guarded by [`messages`] and every access to them is written to the
//! audit trail (`crate::audit`). The other routes (terminology, FHIR metadata, `/hl7`, `/metrics`) carry no patient
//! data of the server's own and stay open unless the configuration says `open_routes = false`; `/healthz` always
//! stays open, for load balancers and probes.
//!
//! Three policies ([`Access`]):
//! - nothing configured (the default): the message routes answer loopback peers only, others get 403. A reverse
//!   proxy on the same machine is a loopback peer: behind one, configure credentials.
//! - credentials configured (an `[auth]` file): every request to a message route needs a bearer credential with
//!   the scope the route needs, from loopback too: either a static token, configured by its SHA-256 hash (the
//!   file holds no secret), or a JWT from an OpenID Connect provider, checked against the provider's keys (JWKS),
//!   issuer, audience, expiry and not-before by the `jsonwebtoken` crate.
//! - explicitly open (`thoth serve --insecure-open-messages`): anyone who reaches the port.
//!
//! Scopes: `messages:read` (the GET routes), `messages:replay` (`POST /messages/{id}/replay`), `admin` (both).

use crate::audit::{self, Event};
use crate::state::Shared;
use axum::extract::{ConnectInfo, MatchedPath, OriginalUri, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

/// A permission a credential can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Scope {
    /// Read stored messages (`GET /messages...`).
    MessagesRead,
    /// Send a stored message again (`POST /messages/{id}/replay`).
    MessagesReplay,
    /// Everything.
    Admin,
}

impl Scope {
    const ALL: [Scope; 3] = [Scope::MessagesRead, Scope::MessagesReplay, Scope::Admin];

    fn as_str(self) -> &'static str {
        match self {
            Scope::MessagesRead => "messages:read",
            Scope::MessagesReplay => "messages:replay",
            Scope::Admin => "admin",
        }
    }

    fn parse(text: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// The `[auth]` table of the file given to `thoth serve --auth`.
///
/// ```toml
/// [auth]
/// open_routes = true            # terminology, FHIR, /hl7 and /metrics without a credential (the default)
///
/// [[auth.tokens]]
/// name = "ward-dashboard"       # what the audit trail records as the subject
/// sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
/// scopes = ["messages:read"]
///
/// [auth.jwt]
/// jwks_file = "idp-keys.json"   # relative to this file
/// issuer = "https://idp.example.org/realms/hospital"
/// audience = "thoth"
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthFile {
    /// The access control settings.
    pub auth: AuthConfig,
}

/// Access control settings: static tokens and/or an OpenID Connect provider.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// Whether the routes other than the message routes answer without a credential.
    pub open_routes: bool,
    /// Static bearer tokens.
    pub tokens: Vec<TokenConfig>,
    /// JWTs from an OpenID Connect provider.
    pub jwt: Option<JwtConfig>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            open_routes: true,
            tokens: Vec::new(),
            jwt: None,
        }
    }
}

/// One static bearer token.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// Who holds it: the subject in the audit trail.
    pub name: String,
    /// SHA-256 of the token, in hex (`printf %s "$TOKEN" | sha256sum`).
    pub sha256: String,
    /// What it may do: `messages:read`, `messages:replay`, `admin`.
    pub scopes: Vec<String>,
}

/// Where the provider's keys are and what its tokens must say.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtConfig {
    /// The provider's JSON Web Key Set, saved to a file (relative paths are relative to the auth file).
    pub jwks_file: Option<PathBuf>,
    /// The provider's JSON Web Key Set URL (`jwks_uri` of its discovery document); fetched by `thoth serve`.
    pub jwks_url: Option<String>,
    /// The `iss` a token must carry.
    pub issuer: String,
    /// The `aud` a token must carry (one of them, when it carries several).
    pub audience: String,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds.
    #[serde(default = "default_leeway")]
    pub leeway_secs: u64,
}

fn default_leeway() -> u64 {
    60
}

impl AuthFile {
    /// Reads an auth file; relative paths in it are made relative to its folder.
    pub fn from_file(path: &Path) -> Result<AuthFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut file: AuthFile =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(jwt) = file.auth.jwt.as_mut()
            && let Some(jwks) = jwt.jwks_file.as_mut()
            && jwks.is_relative()
        {
            *jwks = path.parent().unwrap_or(Path::new("")).join(&*jwks);
        }
        Ok(file)
    }
}

/// Who may use the HTTP API: the policy the server enforces, built from an [`AuthConfig`] or one of the two
/// unconfigured policies.
pub struct Access {
    policy: Policy,
    open_routes: bool,
}

enum Policy {
    /// Nothing configured: message routes for loopback peers only.
    LoopbackOnly,
    /// Told to open the message routes to every peer.
    Open,
    /// Credentials configured.
    Credentials {
        tokens: HashMap<[u8; 32], Token>,
        jwt: Option<JwtVerifier>,
    },
}

struct Token {
    name: String,
    scopes: BTreeSet<Scope>,
}

struct JwtVerifier {
    issuer: String,
    audience: String,
    leeway: u64,
    /// Replaced when the key set is fetched again (key rotation).
    keys: RwLock<JwkSet>,
}

impl Default for Access {
    fn default() -> Self {
        Access::loopback_only()
    }
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Neither token hashes nor keys: a Debug print ends up in logs.
        f.debug_struct("Access")
            .field("policy", &self.describe())
            .field("open_routes", &self.open_routes)
            .finish()
    }
}

impl Access {
    /// Nothing configured: the message routes answer loopback peers only.
    pub fn loopback_only() -> Access {
        Access {
            policy: Policy::LoopbackOnly,
            open_routes: true,
        }
    }

    /// The message routes answer every peer without a credential (`--insecure-open-messages`).
    pub fn insecure_open() -> Access {
        Access {
            policy: Policy::Open,
            open_routes: true,
        }
    }

    /// The policy `config` describes. `jwks` is the provider's key set (JSON) when it was not given as a file
    /// (`jwks_url`, fetched by the caller). An [`AuthConfig`] with neither tokens nor JWT settings is refused:
    /// a configuration that lets no one in is a mistake.
    pub fn from_config(config: &AuthConfig, jwks: Option<&str>) -> Result<Access, String> {
        let mut tokens = HashMap::new();
        for t in &config.tokens {
            let hash = parse_sha256(&t.sha256)
                .ok_or_else(|| format!("token {:?}: sha256 must be 64 hex digits", t.name))?;
            if t.name.trim().is_empty() {
                return Err("a token has an empty name".into());
            }
            let scopes = t
                .scopes
                .iter()
                .map(|s| {
                    Scope::parse(s).ok_or_else(|| {
                        format!(
                            "token {:?}: unknown scope {s:?} (one of messages:read, messages:replay, admin)",
                            t.name
                        )
                    })
                })
                .collect::<Result<BTreeSet<_>, _>>()?;
            let token = Token {
                name: t.name.clone(),
                scopes,
            };
            if tokens.insert(hash, token).is_some() {
                return Err(format!("token {:?}: the same hash is given twice", t.name));
            }
        }
        let jwt = match &config.jwt {
            None => None,
            Some(j) => {
                let text = match (&j.jwks_file, jwks) {
                    (_, Some(text)) => text.to_string(),
                    (Some(path), None) => std::fs::read_to_string(path)
                        .map_err(|e| format!("cannot read {}: {e}", path.display()))?,
                    (None, None) => {
                        return Err("[auth.jwt] needs jwks_file or jwks_url".into());
                    }
                };
                if j.issuer.is_empty() || j.audience.is_empty() {
                    return Err("[auth.jwt] needs issuer and audience".into());
                }
                Some(JwtVerifier {
                    issuer: j.issuer.clone(),
                    audience: j.audience.clone(),
                    leeway: j.leeway_secs,
                    keys: RwLock::new(parse_jwks(&text)?),
                })
            }
        };
        if tokens.is_empty() && jwt.is_none() {
            return Err("[auth] configures neither tokens nor jwt".into());
        }
        Ok(Access {
            policy: Policy::Credentials { tokens, jwt },
            open_routes: config.open_routes,
        })
    }

    /// Replaces the OpenID Connect provider's keys (JSON Web Key Set text), as after a key rotation.
    pub fn replace_jwks(&self, text: &str) -> Result<(), String> {
        let Policy::Credentials { jwt: Some(jwt), .. } = &self.policy else {
            return Err("no [auth.jwt] is configured".into());
        };
        let keys = parse_jwks(text)?;
        *jwt.keys.write().unwrap_or_else(|e| e.into_inner()) = keys;
        Ok(())
    }

    /// Whether the routes other than the message routes answer without a credential.
    pub fn open_routes(&self) -> bool {
        self.open_routes
    }

    /// One line for the start-up log.
    pub fn describe(&self) -> String {
        match &self.policy {
            Policy::LoopbackOnly => {
                "message routes for loopback peers only (no credentials configured)".into()
            }
            Policy::Open => {
                "message routes OPEN to every peer without a credential (--insecure-open-messages)"
                    .into()
            }
            Policy::Credentials { tokens, jwt } => format!(
                "credentials required on the message routes: {} token(s){}; other routes {}",
                tokens.len(),
                if jwt.is_some() {
                    ", OpenID Connect JWTs"
                } else {
                    ""
                },
                if self.open_routes {
                    "open"
                } else {
                    "need a credential"
                }
            ),
        }
    }

    /// Who the request's bearer credential belongs to, or why it is refused. `None`: no `Authorization` header.
    fn authenticate(&self, headers: &HeaderMap) -> Result<Option<Principal>, Refusal> {
        let Policy::Credentials { tokens, jwt } = &self.policy else {
            return Ok(None);
        };
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Ok(None);
        };
        let credential = value
            .to_str()
            .ok()
            .and_then(|v| {
                let (scheme, rest) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then_some(rest.trim())
            })
            .filter(|c| !c.is_empty())
            .ok_or_else(|| {
                Refusal::unauthenticated("the Authorization header is not a Bearer credential")
            })?;
        // Looked up by the hash of what the client sent: timing can only tell an attacker about hashes of tokens
        // they already know, so a plain map lookup is as good as a constant-time comparison here.
        let hash: [u8; 32] = Sha256::digest(credential.as_bytes()).into();
        if let Some(t) = tokens.get(&hash) {
            return Ok(Some(Principal {
                subject: t.name.clone(),
                method: "token",
                scopes: t.scopes.clone(),
            }));
        }
        match jwt {
            Some(jwt) if credential.matches('.').count() == 2 => jwt.verify(credential).map(Some),
            _ => Err(Refusal::unauthenticated("unknown bearer token")),
        }
    }
}

/// The holder of a valid credential.
struct Principal {
    subject: String,
    /// `token` or `jwt`, for the audit trail.
    method: &'static str,
    scopes: BTreeSet<Scope>,
}

impl Principal {
    fn may(&self, needed: Scope) -> bool {
        self.scopes.contains(&needed) || self.scopes.contains(&Scope::Admin)
    }
}

/// The claims read from a JWT besides those `jsonwebtoken` checks.
#[derive(Deserialize)]
struct Claims {
    sub: Option<String>,
    /// OAuth 2.0 (RFC 8693): space-separated.
    scope: Option<String>,
    /// Microsoft Entra ID and others: a string or a list.
    scp: Option<serde_json::Value>,
}

impl JwtVerifier {
    fn verify(&self, token: &str) -> Result<Principal, Refusal> {
        let invalid = |why: String| Refusal::unauthenticated(format!("invalid JWT: {why}"));
        let header = jsonwebtoken::decode_header(token).map_err(|e| invalid(e.to_string()))?;
        // The key comes from the configured key set only, never from the token's own `jwk` or `jku` header:
        // a token that names its own key proves nothing.
        let (key, alg) = {
            let keys = self.keys.read().unwrap_or_else(|e| e.into_inner());
            let jwk = match &header.kid {
                Some(kid) => keys.find(kid),
                // Without a `kid`, only a set of one key says which key it is.
                None if keys.keys.len() == 1 => keys.keys.first(),
                None => None,
            }
            .ok_or_else(|| invalid("no key of the provider matches its kid".into()))?;
            // Providers publish encryption keys in the same set (Keycloak does): those sign nothing.
            if matches!(
                jwk.common.public_key_use,
                Some(jsonwebtoken::jwk::PublicKeyUse::Encryption)
            ) {
                return Err(invalid("its kid names an encryption key".into()));
            }
            let key = DecodingKey::from_jwk(jwk).map_err(|e| invalid(e.to_string()))?;
            // A key that names its algorithm is used with that one only; otherwise the header's, which must be
            // a public-key algorithm of the key's family (checked by `decode`).
            let alg = match jwk.common.key_algorithm {
                Some(a) => Algorithm::try_from(a).map_err(|e| invalid(e.to_string()))?,
                None => header.alg,
            };
            (key, alg)
        };
        if header.alg != alg
            || matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
        {
            return Err(invalid(format!(
                "algorithm {:?} is not accepted",
                header.alg
            )));
        }
        let mut validation = Validation::new(alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = self.leeway;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind as K;
            invalid(match e.kind() {
                K::ExpiredSignature => "expired".into(),
                K::ImmatureSignature => "not valid yet (nbf)".into(),
                K::InvalidIssuer => "wrong issuer".into(),
                K::InvalidAudience => "wrong audience".into(),
                K::InvalidSignature => "bad signature".into(),
                _ => e.to_string(),
            })
        })?;
        let claims = data.claims;
        let mut words: Vec<String> = claims
            .scope
            .iter()
            .flat_map(|s| s.split_whitespace().map(str::to_string))
            .collect();
        match claims.scp {
            Some(serde_json::Value::String(s)) => {
                words.extend(s.split_whitespace().map(str::to_string))
            }
            Some(serde_json::Value::Array(a)) => {
                words.extend(a.iter().filter_map(|v| v.as_str().map(str::to_string)))
            }
            _ => {}
        }
        Ok(Principal {
            subject: claims.sub.unwrap_or_else(|| "(no sub)".into()),
            method: "jwt",
            // Scopes of other services in the same token are none of ours.
            scopes: words.iter().filter_map(|w| Scope::parse(w)).collect(),
        })
    }
}

fn parse_jwks(text: &str) -> Result<JwkSet, String> {
    let keys: JwkSet =
        serde_json::from_str(text).map_err(|e| format!("not a JSON Web Key Set: {e}"))?;
    if keys.keys.is_empty() {
        return Err("the JSON Web Key Set has no key".into());
    }
    Ok(keys)
}

fn parse_sha256(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim().as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    let digit = |c: u8| (c as char).to_digit(16);
    for (byte, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        let [high, low] = pair else { return None };
        *byte = u8::try_from(digit(*high)? * 16 + digit(*low)?).ok()?;
    }
    Some(out)
}

/// Why a request is refused: 401 (no or bad credential) or 403 (not allowed).
struct Refusal {
    status: StatusCode,
    reason: String,
    /// The `WWW-Authenticate` challenge (RFC 6750), when a credential could help.
    challenge: Option<String>,
}

impl Refusal {
    fn unauthenticated(reason: impl Into<String>) -> Refusal {
        let reason = reason.into();
        Refusal {
            status: StatusCode::UNAUTHORIZED,
            challenge: Some(format!(
                "Bearer realm=\"thoth\", error=\"invalid_token\", error_description=\"{}\"",
                // RFC 6750 allows printable ASCII but `"` and `\` there; a header value must be valid anyway.
                reason
                    .chars()
                    .map(|c| match c {
                        '"' | '\\' => '\'',
                        ' '..='~' => c,
                        _ => '?',
                    })
                    .collect::<String>()
            )),
            reason,
        }
    }

    fn missing() -> Refusal {
        Refusal {
            status: StatusCode::UNAUTHORIZED,
            // No `error` attribute when the request carried no credential at all (RFC 6750 section 3.1).
            challenge: Some("Bearer realm=\"thoth\"".into()),
            reason: "a bearer credential is required".into(),
        }
    }

    fn insufficient(needed: Scope) -> Refusal {
        Refusal {
            status: StatusCode::FORBIDDEN,
            challenge: Some(format!(
                "Bearer realm=\"thoth\", error=\"insufficient_scope\", scope=\"{}\"",
                needed.as_str()
            )),
            reason: format!("the credential lacks the scope {}", needed.as_str()),
        }
    }

    fn not_loopback() -> Refusal {
        Refusal {
            status: StatusCode::FORBIDDEN,
            // No credential is accepted until access control is configured, so no challenge.
            challenge: None,
            reason: "the message routes answer loopback clients only until access control is configured \
                     (thoth serve --auth)"
                .into(),
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        // The same OperationOutcome shape as `ApiError`, with the FHIR issue types for security refusals.
        let code = if self.status == StatusCode::UNAUTHORIZED {
            "login"
        } else {
            "forbidden"
        };
        let body = serde_json::json!({
            "resourceType": "OperationOutcome",
            "issue": [{ "severity": "error", "code": code, "diagnostics": self.reason }]
        })
        .to_string();
        let mut response = (
            self.status,
            [("content-type", "application/fhir+json")],
            body,
        )
            .into_response();
        if let Some(challenge) = self.challenge.and_then(|c| HeaderValue::from_str(&c).ok()) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, challenge);
        }
        response
    }
}

/// What a request to a message route is let through as: the subject and how it was established.
struct Admitted {
    subject: String,
    method: &'static str,
}

fn admit(
    access: &Access,
    headers: &HeaderMap,
    peer: Option<SocketAddr>,
    needed: Scope,
) -> Result<Admitted, (Refusal, Option<String>)> {
    match &access.policy {
        Policy::Open => Ok(Admitted {
            subject: "-".into(),
            method: "open",
        }),
        // A request without a peer address comes from inside the process (tests driving the router), not
        // from a socket: every listener of the server records the peer (see `threads`).
        Policy::LoopbackOnly => match peer {
            Some(p) if !p.ip().is_loopback() && !is_mapped_loopback(&p) => {
                Err((Refusal::not_loopback(), None))
            }
            _ => Ok(Admitted {
                subject: "-".into(),
                method: "loopback",
            }),
        },
        Policy::Credentials { .. } => match access.authenticate(headers) {
            Err(r) => Err((r, None)),
            Ok(None) => Err((Refusal::missing(), None)),
            Ok(Some(p)) if !p.may(needed) => Err((Refusal::insufficient(needed), Some(p.subject))),
            Ok(Some(p)) => Ok(Admitted {
                subject: p.subject,
                method: p.method,
            }),
        },
    }
}

/// `::ffff:127.0.0.1`, as a dual-stack listener reports an IPv4 loopback peer.
fn is_mapped_loopback(peer: &SocketAddr) -> bool {
    match peer.ip() {
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
        std::net::IpAddr::V4(_) => false,
    }
}

/// The guard of the message routes: admits or refuses the request by the [`Access`] policy and the scope the
/// route needs, and records the access in the audit trail either way.
pub(crate) async fn messages(State(state): State<Shared>, req: Request, next: Next) -> Response {
    let needed = if req.method() == Method::POST {
        Scope::MessagesReplay
    } else {
        Scope::MessagesRead
    };
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    // Inside `nest`, the request's own URI has lost its `/messages` prefix.
    let path = req
        .extensions()
        .get::<OriginalUri>()
        .map_or_else(|| req.uri().path().to_string(), |u| u.path().to_string());
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| path.clone(), |m| m.as_str().to_string());
    let message_id = path
        .strip_prefix("/messages/")
        .and_then(|rest| rest.split('/').next())
        .filter(|id| !id.is_empty())
        .map(str::to_string);
    let mut event = Event {
        peer,
        subject: "-".into(),
        auth: "none",
        method: req.method().to_string(),
        route,
        message_id,
        outcome: "allowed",
        status: 0,
        reason: None,
    };
    match admit(&state.access, req.headers(), peer, needed) {
        Ok(who) => {
            event.subject = who.subject;
            event.auth = who.method;
            let response = next.run(req).await;
            event.status = response.status().as_u16();
            audit::record(&state, &event);
            response
        }
        Err((refusal, subject)) => {
            if let Some(s) = subject {
                event.subject = s;
            }
            event.outcome = "refused";
            event.status = refusal.status.as_u16();
            event.reason = Some(refusal.reason.clone());
            audit::record(&state, &event);
            refusal.into_response()
        }
    }
}

/// The guard of the other routes when `open_routes = false`: any valid credential.
pub(crate) async fn any_credential(
    State(state): State<Shared>,
    req: Request,
    next: Next,
) -> Response {
    match state.access.authenticate(req.headers()) {
        Ok(Some(_)) => next.run(req).await,
        Ok(None) => Refusal::missing().into_response(),
        Err(r) => r.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_hex_is_parsed_in_either_case() {
        let lower = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let parsed = parse_sha256(lower).unwrap();
        assert_eq!(parse_sha256(&lower.to_uppercase()), Some(parsed));
        assert_eq!(parsed, <[u8; 32]>::from(Sha256::digest(b"test")));
        assert_eq!(parse_sha256("9f86"), None);
        assert_eq!(parse_sha256(&"g".repeat(64)), None);
    }

    #[test]
    fn a_configuration_that_lets_no_one_in_or_has_a_typo_is_refused() {
        assert!(Access::from_config(&AuthConfig::default(), None).is_err());
        let config = AuthConfig {
            tokens: vec![TokenConfig {
                name: "t".into(),
                sha256: "00".repeat(32),
                scopes: vec!["messages:reed".into()],
            }],
            ..AuthConfig::default()
        };
        let e = Access::from_config(&config, None).unwrap_err();
        assert!(e.contains("messages:reed"), "{e}");
    }

    #[test]
    fn any_reason_makes_a_valid_challenge_header() {
        let response = Refusal::unauthenticated("bad \"kid\" \\ é\n").into_response();
        let challenge = response.headers()[header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap();
        assert_eq!(
            challenge,
            "Bearer realm=\"thoth\", error=\"invalid_token\", error_description=\"bad 'kid' ' ??\""
        );
    }

    #[test]
    fn mapped_ipv4_loopback_is_loopback() {
        let p: SocketAddr = "[::ffff:127.0.0.1]:5000".parse().unwrap();
        assert!(is_mapped_loopback(&p));
        let p: SocketAddr = "[::ffff:10.0.0.1]:5000".parse().unwrap();
        assert!(!is_mapped_loopback(&p));
    }
}
