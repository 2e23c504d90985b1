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
