//! Integration tests of the HTTP router, driven without a socket.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use tower::ServiceExt;

mod auth;
mod console;
mod errors;
mod heavy;
mod hl7_api;
mod https;
mod lifecycle;
mod messages_api;
mod snomed_api;
mod terminology;

/// What the tests drive: the served application ([`server::app`]) or its router alone.
trait App:
    tower::Service<
        Request<Body>,
        Response = axum::response::Response,
        Error = std::convert::Infallible,
        Future: Send,
    > + Send
{
}

impl<S> App for S where
    S: tower::Service<
            Request<Body>,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
            Future: Send,
        > + Send
{
}

async fn get(app: impl App, uri: &str) -> (StatusCode, String, String) {
    send(app, Request::get(uri).body(Body::empty()).unwrap()).await
}

/// Sends `req` to `app`: the status, the content type and the body as text.
async fn send(app: impl App, req: Request<Body>) -> (StatusCode, String, String) {
    let response = app.oneshot(req).await.unwrap();
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        content_type,
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

fn app() -> (server::App, server::AppState) {
    let state = server::AppState::new(server::ServerInfo::default());
    (server::app(state.clone()), state)
}

#[tokio::test]
async fn healthz_answers_ok() {
    let (app, _) = app();
    let (status, _, body) = get(app, "/healthz").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, "ok\n");
}

#[tokio::test]
async fn metadata_is_an_r4_capability_statement() {
    let (app, _) = app();
    let (status, content_type, body) = get(app, "/fhir/metadata").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type, "application/fhir+json");
    let cs: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(cs["resourceType"], "CapabilityStatement");
    assert_eq!(cs["fhirVersion"], "4.0.1");
    assert_eq!(cs["kind"], "instance");
}

#[tokio::test]
async fn unknown_route_is_a_404_operation_outcome() {
    let (app, _) = app();
    let (status, content_type, body) = get(app, "/no/such/thing").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(content_type, "application/fhir+json");
    let oo: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(oo["resourceType"], "OperationOutcome");
    assert_eq!(oo["issue"][0]["code"], "not-found");
    assert!(
        oo["issue"][0]["diagnostics"]
            .as_str()
            .unwrap()
            .contains("/no/such/thing")
    );
}

#[tokio::test]
async fn metrics_count_requests_by_route_template() {
    let (app, _) = app();
    for _ in 0..3 {
        get(app.clone(), "/healthz").await;
    }
    let (status, content_type, body) = get(app, "/metrics").await;
    assert_eq!(status, StatusCode::OK);
    assert!(content_type.starts_with("text/plain"));
    assert!(
        body.contains(r#"thoth_http_requests_total{method="GET",route="/healthz",status="2xx"} 3"#),
        "{body}"
    );
    assert!(body.contains("thoth_http_request_duration_seconds_bucket"));
    assert!(body.contains("# TYPE thoth_uptime_seconds gauge"));
}

/// Labels come from closed sets: made-up methods and paths add no series to `/metrics`, however many there are.
#[tokio::test]
async fn made_up_methods_and_paths_add_no_metrics_series() {
    let (app, _) = app();
    // A small deterministic generator (xorshift), so that a failure repeats.
    let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut word = |len: u64, letters: &[u8]| -> String {
        let n = 1 + next() % len;
        (0..n)
            .map(|_| letters[(next() % letters.len() as u64) as usize] as char)
            .collect()
    };
    let mut requests = Vec::new();
    for i in 0..2000 {
        let method = word(8, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ");
        let path = match i % 4 {
            0 => "/healthz".to_string(),
            1 => format!("/{}", word(12, b"abcdefghijklmnopqrstuvwxyz0123456789-_.")),
            2 => format!("/fhir/{}/{}", word(6, b"abcXYZ"), word(6, b"abc$")),
            _ => format!("/messages/{}", word(6, b"0123456789")),
        };
        requests.push((method, path));
    }
    let series = |body: &str| -> std::collections::BTreeSet<String> {
        body.lines()
            .filter(|l| l.starts_with("thoth_http_requests_total{"))
            .map(|l| l.rsplit_once(' ').unwrap().0.to_string())
            .collect()
    };
    let mut seen = Vec::new();
    for batch in requests.chunks(1000) {
        for (method, path) in batch {
            let req = Request::builder()
                .method(axum::http::Method::from_bytes(method.as_bytes()).unwrap())
                .uri(path.as_str())
                .body(Body::empty())
                .unwrap();
            app.clone().oneshot(req).await.unwrap();
        }
        let (_, _, body) = get(app.clone(), "/metrics").await;
        // Less the series of the /metrics requests themselves.
        let s: std::collections::BTreeSet<String> = series(&body)
            .into_iter()
            .filter(|l| !l.contains(r#"route="/metrics""#))
            .collect();
        for line in &s {
            assert!(line.contains(r#"method="other""#), "{line}");
        }
        seen.push(s);
    }
    // The second thousand requests add no series to the first's.
    assert_eq!(seen[0], seen[1]);
    assert!(seen[1].len() <= 12, "{:#?}", seen[1]);
}
