//! /v1/snomed on the tx-ecosystem SNOMED CT subset: Hermes's shapes, 400 for malformed ids, 404 for unknown ones.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use tower::ServiceExt;

/// One store for all tests of this module (importing takes a moment in debug builds).
fn store() -> Arc<snomed::Store> {
    static STORE: OnceLock<(tempfile::TempDir, Arc<snomed::Store>)> = OnceLock::new();
    STORE
        .get_or_init(|| {
            let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
            let rf2 = shared.join("tx-ecosystem/tx-source/snomed");
            assert!(rf2.is_dir(), "test corpora missing: {}", rf2.display());
            let tmp = tempfile::tempdir().unwrap();
            let root = tmp.path().join("snomed");
            snomed::import(&[rf2], &root, &snomed::NoProgress).unwrap();
            let store = Arc::new(snomed::Store::open(&root).unwrap());
            (tmp, store)
        })
        .1
        .clone()
}

async fn get_with(uri: &str, accept_language: Option<&str>) -> (StatusCode, Value) {
    let mut state = server::AppState::new(server::ServerInfo::default());
    state.snomed = Some(store());
    let mut req = Request::get(uri);
    if let Some(l) = accept_language {
        req = req.header("accept-language", l);
    }
    let response = server::router(state)
        .oneshot(req.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

async fn get(uri: &str) -> (StatusCode, Value) {
    get_with(uri, None).await
}

#[tokio::test]
async fn concept_has_hermes_shape() {
    let (status, body) = get("/v1/snomed/concepts/404684003").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["id"], 404684003u64);
    assert_eq!(body["active"], true);
    assert!(body["effectiveTime"].as_str().unwrap().len() == 10);
    assert!(body["moduleId"].is_u64() && body["definitionStatusId"].is_u64());
}

#[tokio::test]
async fn malformed_ids_are_400_and_unknown_ids_404() {
    let (status, body) = get("/v1/snomed/concepts/404684004").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["resourceType"], "OperationOutcome");
    assert!(
        body["issue"][0]["diagnostics"]
            .as_str()
            .unwrap()
            .contains("check digit")
    );
    assert_eq!(
        get("/v1/snomed/concepts/abc").await.0,
        StatusCode::BAD_REQUEST
    );
    // Valid check digit, not in the subset.
    let unknown = snomed::SctId::generate(987_654, None, snomed::Partition::Concept);
    let (status, body) = get(&format!("/v1/snomed/concepts/{unknown}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["issue"][0]["code"], "not-found");
    assert_eq!(
        get(&format!(
            "/v1/snomed/concepts/{unknown}/subsumed-by/138875005"
        ))
        .await
        .0,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn extended_concept_carries_descriptions_relationships_and_preferred_term() {
    let (status, body) = get_with("/v1/snomed/concepts/404684003/extended", Some("en-GB")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["concept"]["id"], 404684003u64);
    let descs = body["descriptions"].as_array().unwrap();
    assert!(descs.iter().any(|d| d["typeId"] == 900000000000003001u64));
    assert!(
        descs
            .iter()
            .all(|d| d["preferredIn"].is_array() && d["acceptableIn"].is_array())
    );
    assert_eq!(
        body["directParentRelationships"]["116680003"],
        serde_json::json!([138875005u64])
    );
    assert!(
        body["parentRelationships"]["116680003"]
            .as_array()
            .unwrap()
            .contains(&138875005u64.into())
    );
    assert_eq!(body["preferredDescription"]["term"], "Clinical finding");
    let (_, preferred) = get("/v1/snomed/concepts/404684003/preferred").await;
    assert_eq!(preferred["term"], "Clinical finding");
    let (_, list) = get("/v1/snomed/concepts/404684003/descriptions").await;
    assert_eq!(list.as_array().unwrap().len(), descs.len());
}

#[tokio::test]
async fn subsumption_properties_and_search() {
    let (_, yes) = get("/v1/snomed/concepts/404684003/subsumed-by/138875005").await;
    assert_eq!(yes, serde_json::json!({"subsumedBy": true}));
    let (_, no) = get("/v1/snomed/concepts/138875005/subsumed-by/404684003").await;
    assert_eq!(no, serde_json::json!({"subsumedBy": false}));
    let (status, props) = get("/v1/snomed/concepts/404684003/properties").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(props["0"]["116680003"], serde_json::json!([138875005u64]));

    let (status, hits) = get("/v1/snomed/search?s=diab%20mell&maxHits=5").await;
    assert_eq!(status, StatusCode::OK);
    let hits = hits.as_array().unwrap();
    assert!(!hits.is_empty() && hits.len() <= 5);
    for h in hits {
        assert!(h["id"].is_u64() && h["conceptId"].is_u64());
        assert!(h["term"].as_str().unwrap().to_lowercase().contains("diab"));
        assert!(!h["preferredTerm"].as_str().unwrap().is_empty());
    }
    let (status, _) = get("/v1/snomed/search?s=diab&maxHits=0").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = get("/v1/snomed/search?s=diab&fuzzy=maybe").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, constrained) =
        get("/v1/snomed/search?s=diab&constraint=%3C%3C404684003&maxHits=50").await;
    assert_eq!(status, StatusCode::OK);
    let (_, under_is_a) = get("/v1/snomed/search?s=diab&isA=404684003&maxHits=50").await;
    assert_eq!(constrained, under_is_a, "ECL << and isA filter agree");
    let (status, bad) = get("/v1/snomed/search?s=diab&constraint=%3C%3C%3C").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
    let (status, expansion) = get("/v1/snomed/expand?ecl=%3C%3C404684003").await;
    assert_eq!(status, StatusCode::OK);
    let store = store();
    let finding = store
        .index_of(snomed::SctId::parse("404684003").unwrap())
        .unwrap();
    // One row per synonym (Hermes's shape): the distinct concepts are the expression's.
    let concepts: std::collections::BTreeSet<u64> = expansion
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["conceptId"].as_u64().unwrap())
        .collect();
    assert_eq!(concepts.len(), store.descendants(finding).len() + 1);
    assert_eq!(get("/v1/snomed/expand").await.0, StatusCode::BAD_REQUEST);
    let (status, under) = get("/v1/snomed/search?s=diab&isA=404684003&maxHits=50").await;
    assert_eq!(status, StatusCode::OK);
    assert!(!under.as_array().unwrap().is_empty());
}

#[tokio::test]
async fn historical_associations_and_refsets_name_their_fields() {
    // Find an inactive concept with an association in the subset.
    let store = store();
    let refset = store
        .historical_refsets()
        .next()
        .expect("association refsets in the subset");
    let member = store.refset_members(refset).find(|m| m.active).unwrap();
    let id = member.referenced_component;
    let (status, body) = get(&format!("/v1/snomed/concepts/{id}/historical")).await;
    assert_eq!(status, StatusCode::OK);
    let items = body[refset.to_string()].as_array().unwrap();
    assert!(
        items
            .iter()
            .any(|i| i["targetComponentId"].is_u64() && i["referencedComponentId"] == id)
    );
    let (status, refsets) = get(&format!("/v1/snomed/concepts/{id}/refsets")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        refsets
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["refsetId"] == refset.get())
    );
    // Without a store, the API says so.
    let state = server::AppState::new(server::ServerInfo::default());
    let response = server::router(state)
        .oneshot(
            Request::get("/v1/snomed/concepts/404684003")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

/// Prints the example responses of docs/SNOMED-API.md (run with `--ignored --nocapture`).
#[tokio::test]
#[ignore = "prints documentation examples"]
async fn print_documentation_examples() {
    for uri in [
        "/v1/snomed/concepts/11687002",
        "/v1/snomed/concepts/11687002/preferred",
        "/v1/snomed/concepts/11687002/properties",
        "/v1/snomed/concepts/11687002/subsumed-by/404684003",
        "/v1/snomed/search?s=diab%20mell&maxHits=3",
        "/v1/snomed/expand?ecl=%3C%3C76783007",
        "/v1/snomed/concepts/11687003",
    ] {
        let (status, body) = get_with(uri, Some("en-GB")).await;
        println!(
            "GET {uri}\n{status}\n{}\n",
            serde_json::to_string_pretty(&body).unwrap()
        );
    }
}

/// `ecl/parse` (Thoth's addition, what the console's ECL editor asks as you type): valid expressions printed in
/// both syntaxes, errors with their position in bytes, UTF-16 units and line/column.
#[tokio::test]
async fn ecl_parse_prints_valid_expressions_and_places_errors() {
    let (status, v) = get("/v1/snomed/ecl/parse?ecl=%3C%3C73211009%7CDiabetes%20mellitus%7C").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["valid"], true);
    assert_eq!(v["brief"], "<< 73211009 |Diabetes mellitus|");
    assert_eq!(v["long"], "descendantOrSelfOf 73211009 |Diabetes mellitus|");
    // AND and OR mixed without brackets: the error is at the OR (byte 24).
    let (status, v) =
        get("/v1/snomed/ecl/parse?ecl=%3C%201234567%20AND%20%3C%202345678%20OR%20%3C%203456789")
            .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["valid"], false);
    assert_eq!(v["error"]["offset"], 24);
    assert_eq!(v["error"]["utf16Offset"], 24);
    assert_eq!(
        (v["error"]["line"].clone(), v["error"]["column"].clone()),
        (1.into(), 25.into())
    );
    assert!(
        v["error"]["message"].as_str().unwrap().contains("brackets"),
        "{v}"
    );
    // A term with a non-ASCII letter before the error: bytes and UTF-16 units differ ("é" is 2 bytes, 1 unit).
    let (_, v) = get("/v1/snomed/ecl/parse?ecl=%3C%2073211009%20%7C%C3%A9%7C%20%3A").await;
    assert_eq!(v["valid"], false, "{v}");
    let bytes = v["error"]["offset"].as_u64().unwrap();
    assert_eq!(
        v["error"]["utf16Offset"].as_u64().unwrap(),
        bytes - 1,
        "{v}"
    );
    // No expression: a 400 with both error shapes.
    let (status, v) = get("/v1/snomed/ecl/parse").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(v["error"], "missing parameter: ecl");
    assert_eq!(v["resourceType"], "OperationOutcome");
}

/// A text search costs memory per word (a fuzzy word builds its own automaton): 5,000 words in one 55 KB request
/// used to take seconds and gigabytes. Beyond 32 words or a 64-character word, every text search refuses at once.
#[tokio::test]
async fn text_searches_refuse_too_many_or_too_long_words() {
    let words = |n: usize, word: &str| vec![word; n].join("%20");
    // 2,000 ten-letter words: within the 32 KiB request target, which alone stops 5,000.
    let many = words(2_000, "diabetesxy");
    for uri in [
        format!("/v1/snomed/search?s={many}&fuzzy=true"),
        format!("/v1/snomed/search?s={many}&fallbackFuzzy=true"),
        format!("/v1/snomed/search?s={}", words(33, "diab")),
        format!("/v1/snomed/search?s={}&fuzzy=true", "d".repeat(65)),
    ] {
        let started = std::time::Instant::now();
        let (status, body) = get(&uri).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}: {body}",
            &uri[..60]
        );
        let text = body["issue"][0]["diagnostics"].as_str().unwrap_or_default();
        assert!(text.contains("more than the limit"), "{body}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }
    // At the limits, the search runs.
    let (status, hits) = get(&format!(
        "/v1/snomed/search?s={}&fuzzy=true",
        words(32, "diab")
    ))
    .await;
    assert_eq!(status, StatusCode::OK, "{hits}");
    let (status, _) = get(&format!("/v1/snomed/search?s={}", "d".repeat(64))).await;
    assert_eq!(status, StatusCode::OK);
    // ECL term filters have the same word limit.
    let ecl = format!(
        "%3C%3C404684003%20%7B%7B%20term%20%3D%20%22{}%22%20%7D%7D",
        words(33, "diab")
    );
    let (status, body) = get(&format!("/v1/snomed/expand?ecl={ecl}")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body.to_string().contains("more than the limit of 32"),
        "{body}"
    );
    let ecl = format!(
        "%3C%3C404684003%20%7B%7B%20term%20%3D%20%22{}%22%20%7D%7D",
        words(2, "diab")
    );
    let (status, _) = get(&format!("/v1/snomed/expand?ecl={ecl}")).await;
    assert_eq!(status, StatusCode::OK);
}
