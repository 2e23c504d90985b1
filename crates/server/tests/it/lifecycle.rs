//! `/readyz`, the application that is put in once the stores are open and replaced when they change, and the
//! read-only replica's refusals.

use crate::{get, send};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use std::sync::Arc;

fn outcome(body: &str) -> serde_json::Value {
    let oo: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(oo["resourceType"], "OperationOutcome", "{body}");
    oo
}

#[tokio::test]
async fn readyz_is_200_when_ready_and_a_transient_503_outcome_when_draining() {
    let state = server::AppState::new(server::ServerInfo::default());
    let readiness = state.readiness.clone();
    let app = server::app(state);
    assert_eq!(
        get(app.clone(), "/readyz").await,
        (
            StatusCode::OK,
            "text/plain; charset=utf-8".into(),
            "ready\n".into()
        )
    );
    readiness.set_draining();
    let (status, content_type, body) = get(app.clone(), "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(content_type, "application/fhir+json");
    let oo = outcome(&body);
    assert_eq!(oo["issue"][0]["code"], "transient");
    assert!(
        oo["issue"][0]["diagnostics"]
            .as_str()
            .unwrap()
            .starts_with("draining")
    );
    // Draining is for the orchestrator: liveness and the requests still arriving are answered as before.
    assert_eq!(get(app.clone(), "/healthz").await.0, StatusCode::OK);
    assert_eq!(get(app, "/fhir/metadata").await.0, StatusCode::OK);
    // Never undone by a late "ready".
    readiness.set_ready();
    assert_eq!(readiness.phase(), server::Phase::Draining);
}

#[tokio::test]
async fn a_live_app_answers_only_the_probes_until_its_application_is_put_in_and_then_serves_the_latest()
 {
    let readiness = Arc::new(server::Readiness::starting());
    let live = server::LiveApp::starting(readiness.clone());
    assert_eq!(get(live.clone(), "/healthz").await.0, StatusCode::OK);
    for path in ["/readyz", "/fhir/metadata", "/v1/snomed/concepts/404684003"] {
        let (status, _, body) = get(live.clone(), path).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{path}");
        assert!(
            outcome(&body)["issue"][0]["diagnostics"]
                .as_str()
                .unwrap()
                .starts_with("starting")
        );
    }

    let first = server::AppState {
        readiness: readiness.clone(),
        ..server::AppState::new(server::ServerInfo::default())
    };
    live.replace(server::app(first));
    readiness.set_ready();
    assert_eq!(get(live.clone(), "/readyz").await.0, StatusCode::OK);
    assert_eq!(get(live.clone(), "/fhir/metadata").await.0, StatusCode::OK);
    assert_eq!(
        get(live.clone(), "/messages/1").await.0,
        StatusCode::BAD_REQUEST
    );

    // A replacement takes effect at the next request, on every clone.
    let second = server::AppState {
        readiness: readiness.clone(),
        ..server::AppState::new(server::ServerInfo::default()).read_only()
    };
    live.replace(server::app(second));
    assert_eq!(get(live, "/messages/1").await.0, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_read_only_replica_refuses_the_message_routes_with_403_and_writes_no_audit_file() {
    let data = tempfile::tempdir().unwrap();
    let info = server::ServerInfo {
        data_dir: Some(data.path().to_path_buf()),
        ..Default::default()
    };
    let state = server::AppState::new(info).read_only();
    assert!(state.info.read_only);
    assert_eq!(state.audit.path(), None);
    let app = server::app(state);
    for req in [
        Request::get("/messages").body(Body::empty()).unwrap(),
        Request::get("/messages/7").body(Body::empty()).unwrap(),
        Request::post("/messages/7/replay")
            .body(Body::empty())
            .unwrap(),
    ] {
        let (status, _, body) = send(app.clone(), req).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        let oo = outcome(&body);
        assert_eq!(oo["issue"][0]["code"], "forbidden");
        assert!(
            oo["issue"][0]["diagnostics"]
                .as_str()
                .unwrap()
                .contains("read-only")
        );
    }
    // The terminology and the probes answer as on any server.
    assert_eq!(get(app.clone(), "/readyz").await.0, StatusCode::OK);
    assert_eq!(get(app, "/fhir/metadata").await.0, StatusCode::OK);
    assert_eq!(
        std::fs::read_dir(data.path()).unwrap().count(),
        0,
        "nothing written"
    );
}
