//! Every error answer is an OperationOutcome in the negotiated format, whatever produced it: a handler, an
//! extractor's rejection, a method the route lacks, or a request limit. The walk covers each API's routes with
//! the bad input a client can send them, in JSON and then in XML.

use crate::send;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::Value;

struct Case {
    method: &'static str,
    uri: String,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    status: StatusCode,
}

fn case(method: &'static str, uri: impl Into<String>, status: StatusCode) -> Case {
    Case {
        method,
        uri: uri.into(),
        headers: Vec::new(),
        body: Vec::new(),
        status,
    }
}

fn cases() -> Vec<Case> {
    let long_query = format!(
        "/fhir/CodeSystem/$lookup?system=http://snomed.info/sct&code={}",
        "1".repeat(40_000)
    );
    let mut big_headers = case(
        "GET",
        "/fhir/metadata",
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
    );
    big_headers.headers = (0..40).map(|_| ("x-padding", "p".repeat(1_000))).collect();
    let declared = |uri: &str| {
        let mut c = case("POST", uri, StatusCode::PAYLOAD_TOO_LARGE);
        c.headers.push(("content-length", "10000000000".into()));
        c.headers
            .push(("content-type", "application/fhir+json".into()));
        c
    };
    // A body past the limit without a declared length: read up to the limit, then refused.
    let mut streamed = case(
        "POST",
        "/fhir/ValueSet/$expand",
        StatusCode::PAYLOAD_TOO_LARGE,
    );
    streamed.body = vec![b' '; server::MAX_FHIR_BODY_BYTES + 1];
    let mut not_json = case("POST", "/fhir/ValueSet/$expand", StatusCode::BAD_REQUEST);
    not_json.body = b"{not json".to_vec();
    not_json
        .headers
        .push(("content-type", "application/fhir+json".into()));
    let mut bad_length = case("POST", "/fhir/ValueSet/$expand", StatusCode::BAD_REQUEST);
    bad_length.headers.push(("content-length", "lots".into()));
    vec![
        case("GET", "/no/such/route", StatusCode::NOT_FOUND),
        case("DELETE", "/fhir/metadata", StatusCode::METHOD_NOT_ALLOWED),
        case("PUT", "/healthz", StatusCode::METHOD_NOT_ALLOWED),
        case("POST", "/messages", StatusCode::METHOD_NOT_ALLOWED),
        case(
            "DELETE",
            "/v1/snomed/search",
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        case("GET", "/hl7/validate", StatusCode::METHOD_NOT_ALLOWED),
        case("GET", "/messages?limit=lots", StatusCode::BAD_REQUEST),
        case("GET", "/messages/not-a-number", StatusCode::BAD_REQUEST),
        case("GET", "/messages/999999", StatusCode::NOT_FOUND),
        // No SNOMED CT release in this state: the Hermes-compatible API's 404 (with Hermes's `error`).
        case("GET", "/v1/snomed/search?s=x", StatusCode::NOT_FOUND),
        case("GET", "/fhir/NoSuchType/x", StatusCode::NOT_FOUND),
        case("GET", long_query, StatusCode::URI_TOO_LONG),
        big_headers,
        declared("/fhir/ValueSet/$expand"),
        declared("/hl7/validate"),
        declared("/messages/1/replay"),
        streamed,
        not_json,
        bad_length,
    ]
}

async fn answer(case: &Case, accept: Option<&str>) -> (StatusCode, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let engine =
        interface::Engine::open(dir.path(), interface::EngineConfig::from_toml("").unwrap())
            .unwrap();
    let mut state = server::AppState::new(server::ServerInfo::default());
    state.engine = Some(engine);
    let mut req = Request::builder().method(case.method).uri(&case.uri);
    for (name, value) in &case.headers {
        req = req.header(*name, value);
    }
    if let Some(accept) = accept {
        req = req.header("accept", accept);
    }
    let req = req.body(Body::from(case.body.clone())).unwrap();
    send(server::app(state), req).await
}

#[tokio::test]
async fn every_error_is_an_operation_outcome_in_json() {
    for case in cases() {
        let (status, content_type, body) = answer(&case, None).await;
        let what = format!("{} {}", case.method, &case.uri[..case.uri.len().min(60)]);
        assert_eq!(status, case.status, "{what}: {body}");
        assert!(content_type.contains("json"), "{what}: {content_type}");
        let outcome: Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{what}: {e}: {body:?}"));
        assert_eq!(
            outcome["resourceType"], "OperationOutcome",
            "{what}: {body}"
        );
        let issue = &outcome["issue"][0];
        assert_eq!(issue["severity"], "error", "{what}");
        assert!(issue["code"].is_string(), "{what}");
        assert!(
            issue["diagnostics"].as_str().is_some_and(|d| d.len() > 5),
            "{what}: {body}"
        );
    }
}

#[tokio::test]
async fn every_error_is_an_operation_outcome_in_xml_when_asked() {
    for case in cases() {
        let (status, content_type, body) = answer(&case, Some("application/fhir+xml")).await;
        let what = format!("{} {}", case.method, &case.uri[..case.uri.len().min(60)]);
        assert_eq!(status, case.status, "{what}: {body}");
        assert!(
            content_type.starts_with("application/fhir+xml"),
            "{what}: {content_type} {body}"
        );
        let outcome = fhir::Resource::from_xml(body.as_bytes())
            .unwrap_or_else(|e| panic!("{what}: {e}: {body}"));
        let json: Value = serde_json::from_slice(&outcome.to_json()).unwrap();
        assert_eq!(json["resourceType"], "OperationOutcome", "{what}");
        assert!(
            json["issue"][0]["diagnostics"].is_string(),
            "{what}: {body}"
        );
    }
}

#[tokio::test]
async fn a_405_names_the_method_and_the_route() {
    let case = case("DELETE", "/fhir/metadata", StatusCode::METHOD_NOT_ALLOWED);
    let (_, _, body) = answer(&case, None).await;
    let outcome: Value = serde_json::from_str(&body).unwrap();
    let diagnostics = outcome["issue"][0]["diagnostics"].as_str().unwrap();
    assert!(
        diagnostics.contains("DELETE") && diagnostics.contains("/fhir/metadata"),
        "{diagnostics}"
    );
    assert_eq!(outcome["issue"][0]["code"], "not-supported");
}
