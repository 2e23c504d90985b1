//! `POST /hl7/validate` and the `validation` object of `GET /messages/{id}`.

use crate::{app, get, send};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::Value;

/// A small ADT^A01 that validates under 2.5.1, with `pid` as its PID segment and `eol` between segments.
fn adt(control_id: &str, pid: &str, eol: &str) -> String {
    [
        &format!(
            "MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240101120000||ADT^A01^ADT_A01|{control_id}|P|2.5.1"
        ),
        "EVN|A01|20240101120000",
        pid,
        "PV1|1|I",
        "",
    ]
    .join(eol)
}

const GOOD_PID: &str = "PID|1||12345^^^HOSP^MR||DOE^JOHN||19800101|M";
/// PID-5 (patient name) is required.
const NAMELESS_PID: &str = "PID|1||12345^^^HOSP^MR||||19800101|M";

async fn validate(query: &str, body: impl Into<Body>) -> (StatusCode, String, String) {
    let (app, _) = app();
    let req = Request::post(format!("/hl7/validate{query}"))
        .header("content-type", "x-application/hl7-v2+er7")
        .body(body.into())
        .unwrap();
    send(app, req).await
}

#[tokio::test]
async fn validate_answers_one_report_per_message_whatever_the_line_ends() {
    // CR, LF and CRLF line ends in one body; the second message lacks a required field.
    let body = [
        adt("M1", GOOD_PID, "\r"),
        adt("M2", NAMELESS_PID, "\n"),
        adt("M3", GOOD_PID, "\r\n"),
    ]
    .concat();
    let (status, content_type, text) = validate("", body).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    let messages = v["messages"].as_array().unwrap();
    let ids: Vec<_> = messages
        .iter()
        .map(|m| m["control_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["M1", "M2", "M3"]);
    let valid: Vec<_> = messages
        .iter()
        .map(|m| m["valid"].as_bool().unwrap())
        .collect();
    assert_eq!(valid, [true, false, true], "{text}");
    let bad = &messages[1];
    assert_eq!(bad["structure"], "ADT_A01");
    assert_eq!(bad["version"], "2.5.1");
    assert_eq!(
        bad["issues"],
        serde_json::json!([{
            "severity": "error",
            "code": "101",
            "rule": "required-field",
            "path": "/PID-5",
            "message": bad["issues"][0]["message"],
        }]),
        "{text}"
    );
    assert!(
        bad["issues"][0]["message"]
            .as_str()
            .unwrap()
            .contains("PID-5")
    );
}

#[tokio::test]
async fn validate_lists_a_thousand_parse_diagnostics_and_counts_the_rest() {
    // 5,000 line breaks inside NTE-3, each a parse diagnostic (a warning).
    let body = format!(
        "MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|M1|P|2.5\rNTE|1||a{}\r",
        "\nx".repeat(5000)
    );
    let (status, _, text) = validate("", body).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let issues = v["messages"][0]["issues"].as_array().unwrap();
    let parse: Vec<&Value> = issues.iter().filter(|i| i["rule"] == "parse").collect();
    assert_eq!(parse.len(), 1001, "{text}");
    let last = parse[1000];
    assert_eq!(last["severity"], "warning");
    assert_eq!(
        last["message"],
        "4000 more parse diagnostics, not listed (the first 1000 are)"
    );
}

#[tokio::test]
async fn a_message_of_more_elements_than_the_routes_parse_is_refused_before_parsing() {
    let many = format!(
        "MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|M1|P|2.5\rNTE|1{}\r",
        "|".repeat(server::MAX_HL7_ELEMENTS)
    );
    for route in ["/hl7/validate", "/hl7/parse", "/hl7/to-fhir"] {
        let (app, _) = app();
        let req = Request::post(route).body(Body::from(many.clone())).unwrap();
        let (status, _, text) = send(app, req).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{route}: {text}");
        assert!(
            text.contains("too-costly") && text.contains("the /hl7 routes parse at most"),
            "{route}: {text}"
        );
    }
    // Below the bound the same shape is answered.
    let fewer = format!(
        "MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|M1|P|2.5\rNTE|1{}\r",
        "|".repeat(server::MAX_HL7_ELEMENTS - 100)
    );
    let (status, _, text) = validate("", fewer).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["messages"][0]["control_id"], "M1");
}

#[tokio::test]
async fn validate_takes_a_batch_file_a_forced_version_and_the_strict_profile() {
    let mut body = String::from("FHS|^~\\&|LAB\rBHS|^~\\&|LAB\r");
    body.push_str(&adt("B1", GOOD_PID, "\r"));
    body.push_str("ZPI|1|local\r");
    body.push_str(&adt("B2", GOOD_PID, "\r"));
    body.push_str("BTS|2\rFTS|1\r");
    let (status, _, text) = validate("", body.clone()).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["messages"].as_array().unwrap().len(), 2, "{text}");
    // Lenient: the Z-segment is a warning.
    let b1 = &v["messages"][0];
    assert_eq!(b1["valid"], true, "{text}");
    assert_eq!(b1["issues"][0]["severity"], "warning");
    assert_eq!(b1["issues"][0]["rule"], "z-segment");

    let (status, _, text) = validate("?strict=true&version=2.3", body).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let b1 = &v["messages"][0];
    assert_eq!(b1["version"], "2.3", "forced: {text}");
    assert_eq!(b1["valid"], false, "strict: {text}");
    assert!(
        b1["issues"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["rule"] == "z-segment" && i["severity"] == "error"),
        "{text}"
    );
}

#[tokio::test]
async fn validate_refuses_what_is_not_hl7_with_an_operation_outcome() {
    for (query, body, wanted) in [
        ("", "", "empty"),
        ("", "  \r\n", "empty"),
        ("", "this is not HL7 at all", "no HL7 v2 message"),
        ("?version=9.9", "MSH|^~\\&|A\r", "version"),
        ("?strict=maybe", "MSH|^~\\&|A\r", "strict"),
    ] {
        let (status, content_type, text) = validate(query, body.to_owned()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body:?}: {text}");
        assert_eq!(content_type, "application/fhir+json");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["resourceType"], "OperationOutcome");
        assert_eq!(v["issue"][0]["code"], "invalid");
        let diagnostics = v["issue"][0]["diagnostics"].as_str().unwrap();
        assert!(diagnostics.contains(wanted), "{body:?}: {diagnostics}");
    }
    // Beyond the body limit: 413, still an OperationOutcome.
    let huge = vec![b'x'; 65 << 20];
    let (status, content_type, text) = validate("", huge).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{text}");
    assert_eq!(content_type, "application/fhir+json");
    assert!(text.contains("too-costly"), "{text}");
    // GET is not a validation.
    let (app, _) = app();
    let (status, _, _) = get(app, "/hl7/validate").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn a_stored_message_shows_its_validation_under_the_engine_profile() {
    let dir = tempfile::tempdir().unwrap();
    let config = interface::EngineConfig::from_toml(
        "[validation]\nmode = \"warn\"\n[[validation.rule]]\nrule = \"z-segment\"\nseverity = \"error\"\nsender = \"LAB@HOSP\"\n",
    )
    .unwrap();
    let engine = interface::Engine::open(dir.path(), config).unwrap();
    let mut raw = adt("S1", NAMELESS_PID, "\r");
    raw.push_str("ZPI|1\r");
    let receipt = engine.receive(raw.into_bytes().into(), "test").await;
    // `warn` accepts it.
    let ack = hl7v2::Message::parse(receipt.ack.as_deref().unwrap())
        .get("MSA-1")
        .unwrap()
        .into_owned();
    assert_eq!(ack, "AA");
    let id = receipt.id.unwrap();
    let mut state = server::AppState::new(server::ServerInfo::default());
    state.engine = Some(engine.clone());
    let (status, _, text) = get(server::router(state), &format!("/messages/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let validation = &v["validation"];
    assert_eq!(validation["mode"], "warn");
    assert_eq!(validation["control_id"], "S1");
    assert_eq!(validation["valid"], false);
    let rules: Vec<_> = validation["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["rule"].as_str().unwrap(),
                i["severity"].as_str().unwrap(),
                i["path"].as_str().unwrap(),
            )
        })
        .collect();
    // The sender's rule makes the Z-segment an error.
    assert_eq!(
        rules,
        [
            ("required-field", "error", "/PID-5"),
            ("z-segment", "error", "/ZPI")
        ],
        "{text}"
    );
    assert_eq!(v["note"], "validation: 2 error(s), 0 warning(s)");
    assert_eq!(v["status"], "stored");

    // The Bundle it becomes: the same bytes as converting the message directly (deterministic ids).
    let (status, content_type, text) = get(
        server::router(state_with(&engine)),
        &format!("/messages/{id}/fhir"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(
        content_type.starts_with("application/fhir+json"),
        "{content_type}"
    );
    let mut direct = adt("S1", NAMELESS_PID, "\r");
    direct.push_str("ZPI|1\r");
    let expected = v2fhir::convert(
        &hl7v2::Message::parse(direct.as_bytes()),
        &Default::default(),
    )
    .unwrap()
    .json;
    assert_eq!(text.as_bytes(), &expected[..]);
    let (status, _, _) = get(server::router(state_with(&engine)), "/messages/999999/fhir").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    engine.shutdown().await;
}

fn state_with(engine: &interface::Engine) -> server::AppState {
    let mut state = server::AppState::new(server::ServerInfo::default());
    state.engine = Some(engine.clone());
    state
}

async fn to_fhir(query: &str, accept: &str, body: impl Into<Body>) -> (StatusCode, String, String) {
    let (app, _) = app();
    let req = Request::post(format!("/hl7/to-fhir{query}"))
        .header("content-type", "x-application/hl7-v2+er7")
        .header("accept", accept)
        .body(body.into())
        .unwrap();
    send(app, req).await
}

#[tokio::test]
async fn to_fhir_answers_the_bundle_in_json_or_xml_and_refuses_what_is_not_a_message() {
    let (status, content_type, text) =
        to_fhir("", "application/fhir+json", adt("M1", GOOD_PID, "\r")).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(
        content_type.starts_with("application/fhir+json"),
        "{content_type}"
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["type"], "message");
    let patient = v["entry"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["resource"])
        .find(|r| r["resourceType"] == "Patient")
        .expect("a Patient");
    // PID-8 `M` through the guide's AdministrativeSex map; PID-7 as a FHIR date.
    assert_eq!(patient["gender"], "male");
    assert_eq!(patient["birthDate"], "1980-01-01");
    assert_eq!(patient["name"][0]["family"], "DOE");

    let (status, content_type, text) = to_fhir(
        "?bundle=transaction",
        "application/fhir+xml",
        adt("M1", GOOD_PID, "\r"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(
        content_type.starts_with("application/fhir+xml"),
        "{content_type}"
    );
    assert!(text.contains("<type value=\"transaction\"/>"), "{text}");

    let (status, _, text) = to_fhir(
        "?bundle=other",
        "application/fhir+json",
        adt("M1", GOOD_PID, "\r"),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    assert!(text.contains("OperationOutcome"), "{text}");
    let (status, _, text) = to_fhir("", "application/fhir+json", "not a message").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    assert!(text.contains("no HL7 v2 message"), "{text}");
}

#[tokio::test]
async fn the_guides_vocabulary_maps_answer_translate() {
    // What `thoth serve` loads beside the data directory's content.
    let mut registry = terminology::Registry::new();
    for cm in v2fhir::concept_maps() {
        registry.add(serde_json::from_slice(&cm).unwrap());
    }
    let tx = std::sync::Arc::new(terminology::Terminology::new(registry, Default::default()));
    let state = server::AppState::new(server::ServerInfo::default()).with_terminology(tx);
    let url = format!("{}administrativesex", v2fhir::CONCEPT_MAP_BASE);
    let (status, _, text) = get(
        server::router(state),
        &format!(
            "/fhir/ConceptMap/$translate?url={url}&system=http://terminology.hl7.org/CodeSystem/v2-0001&code=F"
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let params = v["parameter"].as_array().unwrap();
    assert!(
        params
            .iter()
            .any(|p| p["name"] == "result" && p["valueBoolean"] == true),
        "{text}"
    );
    assert!(text.contains("\"female\""), "{text}");
}

/// `POST /hl7/parse`: the console's paste box shows segments with group paths and named fields, and the lenient
/// profile's issues at their field.
#[tokio::test]
async fn parse_names_segments_and_fields_and_reports_issues() {
    let (first, _) = app();
    let req = Request::post("/hl7/parse")
        .header("content-type", "x-application/hl7-v2+er7")
        .body(Body::from(adt("P1", NAMELESS_PID, "\n")))
        .unwrap();
    let (status, _, text) = send(first, req).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let m = &v["message"];
    assert_eq!(m["structure"], "ADT_A01");
    assert_eq!(m["version"], "2.5.1");
    let pid = &m["segments"][2];
    assert_eq!(pid["id"], "PID");
    assert_eq!(pid["name"], "Patient Identification");
    assert_eq!(pid["path"], "/PID(0)");
    assert_eq!(pid["names"][2], "Patient Identifier List");
    assert_eq!(
        pid["fields"][2],
        serde_json::json!(["12345", "", "", "HOSP", "MR"])
    );
    assert_eq!(v["validation"]["valid"], false);
    assert_eq!(v["validation"]["issues"][0]["path"], "/PID-5");

    for body in ["", "not a message"] {
        let (fresh, _) = app();
        let req = Request::post("/hl7/parse").body(Body::from(body)).unwrap();
        let (status, _, text) = send(fresh, req).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
        assert!(text.contains("no segment starts with MSH"), "{text}");
    }

    // A message of more fields than the answer names: 422 too-costly, before its JSON is built.
    let many = format!(
        "MSH|^~\\&|A|B|C|D|20240101||ADT^A01^ADT_A01|M1|P|2.5\rNTE|1{}\r",
        "|".repeat(server::MAX_PARSE_FIELDS)
    );
    let (fresh, _) = app();
    let req = Request::post("/hl7/parse").body(Body::from(many)).unwrap();
    let (status, _, text) = send(fresh, req).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{text}");
    assert!(
        text.contains("too-costly") && text.contains("/hl7/parse names at most"),
        "{text}"
    );
}

/// `GET /messages/{id}?names=true`: the stored message's view with names, as the console's desk shows it.
#[tokio::test]
async fn a_stored_message_is_shown_with_names_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let engine = interface::Engine::open(dir.path(), Default::default()).unwrap();
    let receipt = engine
        .receive(adt("N1", GOOD_PID, "\r").into_bytes().into(), "test")
        .await;
    let id = receipt.id.unwrap();
    let (status, _, text) = get(
        server::router(state_with(&engine)),
        &format!("/messages/{id}?names=true"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["message"]["structure"], "ADT_A01");
    assert_eq!(
        v["message"]["segments"][0]["names"][9],
        "Message Control ID"
    );
    assert_eq!(v["message"]["segments"][0]["fields"][9], "N1");
    // Without the parameter the view is as it was (no names).
    let (_, _, text) = get(
        server::router(state_with(&engine)),
        &format!("/messages/{id}"),
    )
    .await;
    let v: Value = serde_json::from_str(&text).unwrap();
    assert!(v["message"]["segments"][0].get("names").is_none(), "{text}");
    let (status, _, text) = get(
        server::router(state_with(&engine)),
        &format!("/messages/{id}?names=maybe"),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    engine.shutdown().await;
}

/// `Bundle.timestamp` (MSH-7, an instant) of a JSON Bundle, when it has one.
fn timestamp(text: &str) -> Option<String> {
    let v: Value = serde_json::from_str(text).unwrap();
    v["timestamp"].as_str().map(str::to_string)
}

#[tokio::test]
async fn times_without_an_offset_take_the_configured_or_asked_zone() {
    // MSH-7 `20240101120000` has no offset: without a zone the instant is left out.
    let message = adt("T1", GOOD_PID, "\r");
    let (status, _, text) = to_fhir("", "application/fhir+json", message.clone()).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(timestamp(&text), None, "{text}");
    let (status, _, text) = to_fhir(
        "?time_zone=Europe/Berlin",
        "application/fhir+json",
        message.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(
        timestamp(&text).as_deref(),
        Some("2024-01-01T12:00:00+01:00")
    );
    // An unknown zone is the client's mistake: 400 with an OperationOutcome that names it.
    let (status, _, text) = to_fhir(
        "?time_zone=Atlantis/Capital",
        "application/fhir+json",
        message.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    assert!(
        text.contains("OperationOutcome") && text.contains("Atlantis/Capital"),
        "{text}"
    );

    // The engine's `[to_fhir] time_zone` for a stored message's Bundle; the query parameter still wins.
    let dir = tempfile::tempdir().unwrap();
    let config =
        interface::EngineConfig::from_toml("[to_fhir]\ntime_zone = \"America/Chicago\"\n").unwrap();
    let engine = interface::Engine::open(dir.path(), config).unwrap();
    let id = engine
        .receive(message.into_bytes().into(), "test")
        .await
        .id
        .unwrap();
    let (status, _, text) = get(
        server::router(state_with(&engine)),
        &format!("/messages/{id}/fhir"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(
        timestamp(&text).as_deref(),
        Some("2024-01-01T12:00:00-06:00")
    );
    let (status, _, text) = get(
        server::router(state_with(&engine)),
        &format!("/messages/{id}/fhir?time_zone=Asia/Kolkata"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(
        timestamp(&text).as_deref(),
        Some("2024-01-01T12:00:00+05:30")
    );
    engine.shutdown().await;
}
