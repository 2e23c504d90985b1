//! The FHIR terminology API over HTTP: operations with tx-resources posted as Parameters, search, read,
//! and OperationOutcomes with tx-issue-type codes.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

fn app() -> server::App {
    server::app(state())
}

fn state() -> server::AppState {
    let mut registry = terminology::Registry::new();
    registry.add(json!({
        "resourceType": "CodeSystem", "id": "colours", "url": "http://example.org/colours",
        "version": "1", "name": "Colours", "status": "active", "content": "complete",
        "concept": [{"code": "red", "display": "Red", "concept": [{"code": "dark-red", "display": "Dark red"}]},
                    {"code": "blue", "display": "Blue"}]
    }));
    registry.add(json!({
        "resourceType": "ValueSet", "id": "reds", "url": "http://example.org/reds", "version": "1",
        "name": "Reds", "status": "active",
        "compose": {"include": [{"system": "http://example.org/colours",
                                 "filter": [{"property": "concept", "op": "is-a", "value": "red"}]}]}
    }));
    let tx = terminology::Terminology::new(registry, terminology::Config::default());
    server::AppState::new(server::ServerInfo::default()).with_terminology(Arc::new(tx))
}

async fn call(req: Request<Body>) -> (StatusCode, Value) {
    let response = app().oneshot(req).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap())
}

fn param<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["parameter"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {v}"))
}

#[tokio::test]
async fn expand_by_get() {
    let (status, vs) = call(
        Request::get("/fhir/ValueSet/$expand?url=http://example.org/reds&excludeNested=true")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{vs}");
    assert_eq!(vs["expansion"]["total"], 2);
    assert_eq!(vs["expansion"]["contains"][1]["code"], "dark-red");
}

#[tokio::test]
async fn validate_code_by_post_with_a_tx_resource() {
    let body = json!({"resourceType": "Parameters", "parameter": [
        {"name": "url", "valueUri": "http://example.org/blues"},
        {"name": "code", "valueCode": "red"},
        {"name": "system", "valueUri": "http://example.org/colours"},
        {"name": "tx-resource", "resource": {
            "resourceType": "ValueSet", "url": "http://example.org/blues", "status": "active",
            "compose": {"include": [{"system": "http://example.org/colours", "concept": [{"code": "blue"}]}]}
        }}
    ]});
    let (status, out) = call(
        Request::post("/fhir/ValueSet/$validate-code")
            .header("content-type", "application/fhir+json")
            .body(Body::from(body.to_string()))
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(param(&out, "result")["valueBoolean"], false);
    let issue = &param(&out, "issues")["resource"]["issue"][0];
    assert_eq!(issue["details"]["coding"][0]["code"], "not-in-vs");
}

#[tokio::test]
async fn unknown_value_set_is_a_404_with_tx_issue_type() {
    let (status, oo) = call(
        Request::get("/fhir/ValueSet/$expand?url=http://example.org/nope")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(oo["resourceType"], "OperationOutcome");
    assert_eq!(
        oo["issue"][0]["details"]["coding"][0]["system"],
        "http://hl7.org/fhir/tools/CodeSystem/tx-issue-type"
    );
}

#[tokio::test]
async fn search_and_read() {
    let (status, bundle) = call(
        Request::get("/fhir/CodeSystem?url=http://example.org/colours&_elements=url,version")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(bundle["total"], 1);
    assert!(bundle["entry"][0]["resource"].get("concept").is_none());
    let (status, cs) = call(
        Request::get("/fhir/CodeSystem/colours")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(cs["name"], "Colours");
}

#[tokio::test]
async fn terminology_capabilities() {
    let (status, tc) = call(
        Request::get("/fhir/metadata?mode=terminology")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(tc["resourceType"], "TerminologyCapabilities");
    assert_eq!(tc["codeSystem"][0]["uri"], "http://example.org/colours");
}

async fn call_raw(req: Request<Body>) -> (StatusCode, String, String) {
    crate::send(app(), req).await
}

#[tokio::test]
async fn xml_answers_by_format_parameter_and_accept_header() {
    let (status, ct, xml) = call_raw(
        Request::get("/fhir/ValueSet/$expand?url=http://example.org/reds&_format=xml")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{xml}");
    assert_eq!(ct, "application/fhir+xml");
    assert!(
        xml.contains("?><ValueSet xmlns=\"http://hl7.org/fhir\">"),
        "{xml}"
    );
    // The same answer as the JSON one, element for element.
    let json = fhir::Resource::from_xml(xml.as_bytes()).unwrap().to_json();
    let v: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["expansion"]["contains"][0]["code"], "red");
    assert!(xml.contains("<code value=\"dark-red\"/>"), "{xml}");

    let (status, ct, xml) = call_raw(
        Request::get("/fhir/CodeSystem/$lookup?system=http://example.org/colours&code=blue")
            .header("accept", "application/fhir+xml")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{xml}");
    assert_eq!(ct, "application/fhir+xml");
    assert!(xml.contains("?><Parameters xmlns="), "{xml}");
    assert!(xml.contains("<valueString value=\"Blue\"/>"), "{xml}");

    // Errors follow the requested format too.
    let (status, ct, xml) = call_raw(
        Request::get("/fhir/CodeSystem/$lookup?system=http://example.org/nowhere&code=x&_format=application/fhir%2Bxml")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert!(status.is_client_error(), "{status}: {xml}");
    assert_eq!(ct, "application/fhir+xml");
    assert!(xml.contains("?><OperationOutcome xmlns="), "{xml}");
}

#[tokio::test]
async fn xml_request_bodies_are_read() {
    let body = r#"<Parameters xmlns="http://hl7.org/fhir">
  <parameter><name value="url"/><valueUri value="http://example.org/colours"/></parameter>
  <parameter><name value="code"/><valueCode value="dark-red"/></parameter>
</Parameters>"#;
    let (status, out) = call(
        Request::post("/fhir/CodeSystem/$validate-code")
            .header("content-type", "application/fhir+xml")
            .body(Body::from(body))
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{out}");
    assert_eq!(param(&out, "result")["valueBoolean"], true);
    assert_eq!(param(&out, "display")["valueString"], "Dark red");

    let (status, out) = call(
        Request::post("/fhir/CodeSystem/$validate-code")
            .header("content-type", "application/fhir+xml")
            .body(Body::from(
                "<Parameters xmlns=\"http://hl7.org/fhir\"><parameter>",
            ))
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{out}");
    assert_eq!(out["resourceType"], "OperationOutcome");
}

/// A single-code GET is answered by the fast path before routing when the whole app serves it (the lane); the
/// router alone, and a POST of the same query, take the general path. All three must give the same answer, in JSON and (through the format layer) in XML, and an unknown code must
/// still be the general path's OperationOutcome. The lane's answers are counted under the route's series.
#[tokio::test]
async fn single_code_gets_answer_as_the_general_path() {
    let state = state();
    let queries = [
        "CodeSystem/$lookup?system=http://example.org/colours&code=dark-red",
        "CodeSystem/$validate-code?url=http://example.org/colours&code=blue",
        "CodeSystem/$subsumes?system=http://example.org/colours&codeA=red&codeB=dark-red",
        "ValueSet/$validate-code?url=http%3A%2F%2Fexample.org%2Freds&system=http://example.org/colours&code=dark-red",
        "CodeSystem/$lookup?system=http://example.org/colours&code=red&_format=xml",
        "CodeSystem/$lookup?system=http://example.org/colours&code=blue&_format=json&_pretty=true",
        "CodeSystem/$lookup?system=http://example.org/colours&code=green",
    ];
    for query in queries {
        let uri = format!("/fhir/{query}");
        let get = || Request::get(&uri).body(Body::empty()).unwrap();
        let lane = crate::send(server::app(state.clone()), get()).await;
        let routed = crate::send(server::router(state.clone()), get()).await;
        let post = crate::send(app(), Request::post(&uri).body(Body::empty()).unwrap()).await;
        assert_eq!(lane, routed, "{query}");
        assert_eq!(lane, post, "{query}");
        let get = lane;
        if query.ends_with("green") {
            assert_eq!(get.0, StatusCode::NOT_FOUND, "{}", get.2);
            assert!(get.2.contains("OperationOutcome"), "{}", get.2);
        } else {
            assert_eq!(get.0, StatusCode::OK, "{}", get.2);
        }
    }
    let (_, _, metrics) = crate::get(server::app(state), "/metrics").await;
    // Each operation under a route of its own.
    let count = |op: &str, status: &str| {
        let series = format!(
            r#"thoth_http_requests_total{{method="GET",route="/fhir/{{type}}/{op}",status="{status}"}} "#
        );
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&series))
            .map_or(0, |n| n.parse::<usize>().unwrap())
    };
    // Each GET twice (the lane and the router), the unknown code as a 404.
    assert_eq!(count("$lookup", "2xx"), 2 * 3, "{metrics}");
    assert_eq!(count("$validate-code", "2xx"), 2 * 2, "{metrics}");
    assert_eq!(count("$subsumes", "2xx"), 2, "{metrics}");
    assert_eq!(count("$lookup", "4xx"), 2, "{metrics}");
    assert_eq!(count("{id}", "2xx") + count("{id}", "4xx"), 0, "{metrics}");
}

/// An expansion's text with its identifier and timestamp (new for every answer) blanked, in JSON or XML.
fn without_instance(text: &str) -> String {
    let mut out = text.to_string();
    // In JSON and in XML.
    for key in ["urn:uuid:", r#""timestamp":""#, r#"<timestamp value=""#] {
        if let Some(at) = out.find(key) {
            let start = at + key.len();
            let stop = start + out[start..].find('"').unwrap();
            out.replace_range(start..stop, "-");
        }
    }
    out
}

/// Expansions by URL (with `count`, `offset`, `filter`) and searches are answered by the lane, as the router
/// answers them: same status, content type and body (an expansion's identifier and timestamp aside), errors and
/// XML left to the router, and each counted under its route's series.
#[tokio::test]
async fn expansions_and_searches_answer_as_the_router() {
    let state = state();
    let queries = [
        (
            "ValueSet/$expand?url=http://example.org/reds",
            StatusCode::OK,
        ),
        (
            "ValueSet/$expand?url=http%3A%2F%2Fexample.org%2Freds&count=1&offset=1",
            StatusCode::OK,
        ),
        (
            "ValueSet/$expand?url=http://example.org/reds&filter=dark&count=10",
            StatusCode::OK,
        ),
        (
            "ValueSet/$expand?url=http://example.org/reds&_format=xml",
            StatusCode::OK,
        ),
        (
            "ValueSet/$expand?url=http://example.org/nothing",
            StatusCode::NOT_FOUND,
        ),
        ("ValueSet?url=http://example.org/reds", StatusCode::OK),
        ("ValueSet?_count=10&_summary=true", StatusCode::OK),
        (
            "CodeSystem?url=http://example.org/colours&_elements=name",
            StatusCode::OK,
        ),
        (
            "ValueSet?url=http://example.org/reds&_format=xml",
            StatusCode::OK,
        ),
        ("Unknown?url=x", StatusCode::NOT_FOUND),
    ];
    for (query, status) in queries {
        let uri = format!("/fhir/{query}");
        let get = || Request::get(&uri).body(Body::empty()).unwrap();
        let lane = crate::send(server::app(state.clone()), get()).await;
        let routed = crate::send(server::router(state.clone()), get()).await;
        assert_eq!(lane.0, status, "{query}: {}", lane.2);
        assert_eq!((lane.0, &lane.1), (routed.0, &routed.1), "{query}");
        assert_eq!(
            without_instance(&lane.2),
            without_instance(&routed.2),
            "{query}"
        );
        if status == StatusCode::OK && !query.contains("xml") {
            assert_eq!(lane.1, "application/fhir+json", "{query}");
            let _: Value = serde_json::from_str(&lane.2).unwrap();
        }
    }
    // The lane's answers are the expansions' and searches' own.
    let (_, _, body) = crate::get(
        server::app(state.clone()),
        "/fhir/ValueSet/$expand?url=http://example.org/reds&count=1",
    )
    .await;
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["expansion"]["total"], 2, "{v}");
    assert_eq!(
        v["expansion"]["contains"].as_array().map(Vec::len),
        Some(1),
        "{v}"
    );
    assert_eq!(
        v["expansion"]["contains"][0]["system"], "http://example.org/colours",
        "{v}"
    );
    let (_, _, metrics) = crate::get(server::app(state), "/metrics").await;
    let count = |route: &str, status: &str| {
        let series = format!(
            r#"thoth_http_requests_total{{method="GET",route="{route}",status="{status}"}} "#
        );
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&series))
            .map_or(0, |n| n.parse::<usize>().unwrap())
    };
    // Each query twice (the lane and the router), one expansion more.
    assert_eq!(count("/fhir/{type}/$expand", "2xx"), 2 * 4 + 1, "{metrics}");
    assert_eq!(count("/fhir/{type}/$expand", "4xx"), 2, "{metrics}");
    assert_eq!(count("/fhir/{type}", "2xx"), 2 * 4, "{metrics}");
    assert_eq!(count("/fhir/{type}", "4xx"), 2, "{metrics}");
}

/// A search by URL of a resource large enough for its text to be kept (≥ 1 KiB) answers the router's body, the
/// first time (written) and after (the kept text sent as it is, between the Bundle's head and tail), with the
/// body's length known before it is sent (hyper's `Content-Length`) as for any one-buffer answer.
#[tokio::test]
async fn a_large_resource_found_by_url_is_the_routers_answer_each_time() {
    let mut registry = terminology::Registry::new();
    let concepts: Vec<Value> = (0..2000)
        .map(|i| json!({"code": format!("c{i}"), "display": format!("Code \"{i}\" é")}))
        .collect();
    registry.add(json!({
        "resourceType": "CodeSystem", "id": "big", "url": "http://example.org/big", "version": "1",
        "name": "Big", "status": "active", "content": "complete", "concept": concepts
    }));
    let listed: Vec<Value> = (0..1500)
        .map(|i| json!({"code": format!("c{i}")}))
        .collect();
    for version in ["1", "2"] {
        registry.add(json!({
            "resourceType": "ValueSet", "id": format!("listed-{version}"), "url": "http://example.org/listed",
            "version": version, "status": "active",
            "compose": {"include": [{"system": "http://example.org/big", "concept": listed}]}
        }));
    }
    let tx = terminology::Terminology::new(registry, terminology::Config::default());
    let state = server::AppState::new(server::ServerInfo::default()).with_terminology(Arc::new(tx));
    for query in [
        "CodeSystem?url=http://example.org/big",
        "ValueSet?url=http://example.org/listed",
        "ValueSet?url=http://example.org/listed&version=2",
        "ValueSet?url=http://example.org/listed&_count=1",
    ] {
        let uri = format!("/fhir/{query}");
        let routed = crate::get(server::router(state.clone()), &uri).await;
        assert!(
            routed.2.len() > 16 * 1024,
            "{query}: {} bytes",
            routed.2.len()
        );
        for pass in 0..3 {
            let response = server::app(state.clone())
                .oneshot(Request::get(&uri).body(Body::empty()).unwrap())
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{query}");
            let length = axum::body::HttpBody::size_hint(response.body()).exact();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(length, Some(body.len() as u64), "{query} pass {pass}");
            assert!(
                body == routed.2.as_bytes(),
                "{query} pass {pass}: not the router's body"
            );
        }
    }
}

/// A server with a code system of 2,500 codes, a value set of all of them, and 1,200 value sets more.
fn large_app() -> server::App {
    let mut registry = terminology::Registry::new();
    let concepts: Vec<Value> = (0..2500)
        .map(|i| json!({"code": format!("c{i}"), "display": format!("Code {i}")}))
        .collect();
    registry.add(json!({
        "resourceType": "CodeSystem", "id": "big", "url": "http://example.org/big", "version": "1",
        "name": "Big", "status": "active", "content": "complete", "concept": concepts
    }));
    registry.add(json!({
        "resourceType": "ValueSet", "id": "all-big", "url": "http://example.org/all-big", "version": "1",
        "name": "AllBig", "status": "active",
        "compose": {"include": [{"system": "http://example.org/big"}]}
    }));
    for i in 0..1200 {
        registry.add(json!({
            "resourceType": "ValueSet", "id": format!("vs{i}"), "url": format!("http://example.org/vs{i}"),
            "name": format!("Vs{i}"), "status": "active",
            "compose": {"include": [{"system": "http://example.org/big", "concept": [{"code": "c1"}]}]}
        }));
    }
    let tx = terminology::Terminology::new(registry, terminology::Config::default());
    server::app(server::AppState::new(server::ServerInfo::default()).with_terminology(Arc::new(tx)))
}

async fn call_on(app: server::App, uri: &str) -> (StatusCode, Value) {
    let response = app
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap())
}

/// `_count` of a search is clamped to 1,000, and the Bundle says so in an outcome entry.
#[tokio::test]
async fn search_count_is_clamped_and_said_so() {
    let app = large_app();
    let (status, bundle) = call_on(app.clone(), "/fhir/ValueSet?_count=100000").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(bundle["total"], 1201);
    let entries = bundle["entry"].as_array().unwrap();
    let matches = entries
        .iter()
        .filter(|e| e["search"]["mode"] == "match")
        .count();
    assert_eq!(matches, 1000);
    let outcome = entries
        .iter()
        .find(|e| e["search"]["mode"] == "outcome")
        .expect("an outcome entry");
    assert_eq!(outcome["resource"]["resourceType"], "OperationOutcome");
    let (_, bundle) = call_on(app.clone(), "/fhir/ValueSet?_count=5&_offset=1199").await;
    assert_eq!(bundle["entry"].as_array().unwrap().len(), 2);
    let (_, bundle) = call_on(app.clone(), "/fhir/ValueSet?_offset=18446744073709551615").await;
    assert!(bundle.get("entry").is_none(), "{bundle}");
    // A summary leaves the concepts out.
    let (_, bundle) = call_on(
        app,
        "/fhir/CodeSystem?url=http://example.org/big&_summary=true",
    )
    .await;
    assert!(bundle["entry"][0]["resource"].get("concept").is_none());
    assert_eq!(bundle["entry"][0]["resource"]["name"], "Big");
}
