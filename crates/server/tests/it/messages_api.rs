//! `GET /messages`: the query parameters are checked, whatever a client sends.

use crate::get;
use axum::http::StatusCode;
use serde_json::Value;

#[tokio::test]
async fn out_of_range_list_parameters_are_a_400_operation_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let engine =
        interface::Engine::open(dir.path(), interface::EngineConfig::from_toml("").unwrap())
            .unwrap();
    let mut state = server::AppState::new(server::ServerInfo::default());
    state.engine = Some(engine.clone());
    let app = server::router(state);
    for query in [
        // A year whose days overflow 64 bits (a panic in a debug build, a wrong time in release).
        "since=9223372036854775807-01-01",
        "until=9223372036854775807-01-01",
        "since=-9223372036854775808-01-01",
        "since=10000-01-01",
        "until=2024-01-01T-1:00",
        "since=18446744073709551615",
        "offset=-1",
        "offset=18446744073709551616",
        "offset=99999999999999",
        "limit=-5",
        "limit=lots",
    ] {
        let (status, _, text) = get(app.clone(), &format!("/messages?{query}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["resourceType"], "OperationOutcome", "{query}: {text}");
    }
    for query in [
        "since=1970-01-01&until=9999-12-31T23:59:59Z",
        "since=0&until=253402300799999&offset=5&limit=1000",
    ] {
        let (status, _, text) = get(app.clone(), &format!("/messages?{query}")).await;
        assert_eq!(status, StatusCode::OK, "{query}: {text}");
    }
    engine.shutdown().await;
}

/// A 16 MiB message of tiny segments is accepted and stored (as it should be); its JSON view used to be a 94 MB
/// answer costing 1.5 GB. Now the view names the limit and `/raw` keeps the exact bytes; a message within the
/// limits has its full view.
#[tokio::test]
async fn the_view_of_a_huge_message_is_omitted_and_its_bytes_stay_readable() {
    let dir = tempfile::tempdir().unwrap();
    let engine =
        interface::Engine::open(dir.path(), interface::EngineConfig::from_toml("").unwrap())
            .unwrap();
    let mut state = server::AppState::new(server::ServerInfo::default());
    state.engine = Some(engine.clone());
    let app = server::router(state);
    let head = "MSH|^~\\&|LAB|HOSP|EHR|HOSP|20240101120000||ORU^R01^ORU_R01|HUGE1|P|2.5.1\rPID|1||42^^^HOSP^MR||DOE^JANE\r";
    let mut huge = head.as_bytes().to_vec();
    let mut n = 0;
    while huge.len() < 16 << 20 {
        n += 1;
        huge.extend_from_slice(format!("NTE|{n}|L|x\r").as_bytes());
    }
    let huge_id = engine
        .receive(huge.clone().into(), "test")
        .await
        .id
        .unwrap();
    let small = format!("{head}NTE|1|L|a note\r");
    let small_id = engine
        .receive(small.clone().into_bytes().into(), "test")
        .await
        .id
        .unwrap();

    let started = std::time::Instant::now();
    let (status, _, text) = get(app.clone(), &format!("/messages/{}", huge_id.0)).await;
    assert_eq!(status, StatusCode::OK);
    // The summary, the deliveries and a validation report of at most 1,000 issues.
    assert!(text.len() < 1 << 20, "answer of {} bytes", text.len());
    let v: Value = serde_json::from_str(&text).unwrap();
    assert!(v["message"].is_null() && v["raw"].is_null(), "{text}");
    let omitted = v["omitted"].as_str().unwrap();
    assert!(
        omitted.contains(&format!("{} bytes", huge.len())),
        "{omitted}"
    );
    assert!(
        omitted.contains(&format!("/messages/{}/raw", huge_id.0)),
        "{omitted}"
    );
    assert_eq!(v["control_id"], "HUGE1");
    assert!(v["validation"].is_object());
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let (status, _, raw) = get(app.clone(), &format!("/messages/{}/raw", huge_id.0)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(raw.as_bytes(), &huge[..]);

    let (status, _, text) = get(app.clone(), &format!("/messages/{}?names=true", small_id.0)).await;
    assert_eq!(status, StatusCode::OK);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["raw"], small);
    assert_eq!(v["message"]["structure"], "ORU_R01");
    assert_eq!(v["message"]["segments"][2]["fields"][2], "a note");
    assert!(v.get("omitted").is_none());
    engine.shutdown().await;
}
