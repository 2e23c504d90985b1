//! `/v1/snomed` against Hermes's HTTP server (`wardle/hermes`, `cmd/com/eldrix/hermes/cmd/server.clj`), route by
//! route, on the tx-ecosystem SNOMED CT subset: the field names and nesting of every supported route's answer,
//! the status codes for unknown concepts and bad ECL, and `expand`'s parameters and defaults. docs/SNOMED-API.md
//! has the table these tests pin.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use tower::ServiceExt;

/// One store for all tests of this file (importing takes a moment in debug builds).
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

fn state() -> server::AppState {
    let store = store();
    let tx = terminology::Terminology::default()
        .with_provider(terminology::SnomedProvider::new(store.clone()));
    let mut state =
        server::AppState::new(server::ServerInfo::default()).with_terminology(Arc::new(tx));
    state.snomed = Some(store);
    state
}

async fn send(req: Request<Body>) -> (StatusCode, String, Value) {
    let response = server::app(state()).oneshot(req).await.unwrap();
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
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    )
}

async fn get(uri: &str) -> (StatusCode, Value) {
    let (status, _, body) = send(Request::get(uri).body(Body::empty()).unwrap()).await;
    (status, body)
}

async fn get_lang(uri: &str, lang: &str) -> (StatusCode, Value) {
    let req = Request::get(uri)
        .header("accept-language", lang)
        .body(Body::empty())
        .unwrap();
    let (status, _, body) = send(req).await;
    (status, body)
}

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect()
}

fn set(names: &[&'static str]) -> BTreeSet<&'static str> {
    names.iter().copied().collect()
}

/// Hermes's `Concept` record.
const CONCEPT: &[&str] = &[
    "id",
    "effectiveTime",
    "active",
    "moduleId",
    "definitionStatusId",
];
/// Hermes's `Description` record.
const DESCRIPTION: &[&str] = &[
    "id",
    "effectiveTime",
    "active",
    "moduleId",
    "conceptId",
    "languageCode",
    "typeId",
    "term",
    "caseSignificanceId",
];
/// Hermes's search and expansion `Result` record.
const RESULT: &[&str] = &["id", "conceptId", "term", "preferredTerm"];
/// An association refset member (`der2_cRefset_Association`).
const ASSOCIATION_MEMBER: &[&str] = &[
    "id",
    "effectiveTime",
    "active",
    "moduleId",
    "refsetId",
    "referencedComponentId",
    "targetComponentId",
];

/// 74400008 |Appendicitis|; 307530000 |Appendicitis NOS| (inactive) is REPLACED BY it in the subset.
const APPENDICITIS: u64 = 74400008;
const APPENDICITIS_NOS: u64 = 307530000;
const REPLACED_BY: u64 = 900000000000526001;
/// 11953005 |Renal function|: one active and one inactive synonym, an active and an inactive FSN.
const RENAL_FUNCTION: u64 = 11953005;

/// A valid SCTID that is not in the subset.
fn unknown() -> u64 {
    snomed::SctId::generate(987_654, None, snomed::Partition::Concept).get()
}

/// An error of this API: Hermes's `error` text, and the OperationOutcome Thoth's clients read.
fn assert_error(body: &Value, contains: &str) {
    let error = body["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error: {body}"));
    assert!(error.contains(contains), "{error}");
    assert_eq!(body["resourceType"], "OperationOutcome");
    assert_eq!(body["issue"][0]["diagnostics"], error);
}

#[tokio::test]
async fn concept_route() {
    let (status, body) = get("/v1/snomed/concepts/404684003").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(keys(&body), set(CONCEPT));
    assert_eq!(body["id"], 404684003u64);
    assert_eq!(body["effectiveTime"].as_str().unwrap().len(), 10);
    assert!(body["active"].is_boolean() && body["moduleId"].is_u64());
    let (status, body) = get(&format!("/v1/snomed/concepts/{}", unknown())).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "not found");
    // Hermes's route takes only digits and finds no concept for a wrong check digit (404); Thoth says why (400).
    let (status, body) = get("/v1/snomed/concepts/404684004").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "check digit");
    // One rule for malformed ids: an expression naming the same id is refused the same way (it used to match
    // nothing and answer 200 []), wherever the id sits in the expression.
    for uri in [
        "/v1/snomed/expand?ecl=%3C%3C%20404684004",
        "/v1/snomed/expand?ecl=%3C%2064572001%20%3A%20404684004%20%3D%20%2A",
        "/v1/snomed/search?s=renal&constraint=%3C%3C%20404684004",
    ] {
        let (status, body) = get(uri).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}");
        assert_error(&body, "check digit");
    }
    let (status, _) = get("/v1/snomed/expand?ecl=%3C%3C%20404684003").await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn descriptions_preferred_and_extended_routes() {
    let (status, list) = get(&format!(
        "/v1/snomed/concepts/{RENAL_FUNCTION}/descriptions"
    ))
    .await;
    assert_eq!(status, StatusCode::OK);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 4);
    for d in list {
        assert_eq!(keys(d), set(DESCRIPTION));
    }
    let (status, preferred) = get_lang(
        &format!("/v1/snomed/concepts/{RENAL_FUNCTION}/preferred"),
        "en-GB",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(keys(&preferred), set(DESCRIPTION));
    assert_eq!(preferred["term"], "Renal function");
    assert_eq!(preferred["id"], 20610015u64);

    let (status, ext) = get_lang(
        &format!("/v1/snomed/concepts/{RENAL_FUNCTION}/extended"),
        "en-GB",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        keys(&ext),
        set(&[
            "concept",
            "descriptions",
            "parentRelationships",
            "directParentRelationships",
            "concreteValues",
            "refsets",
            "preferredDescription",
        ])
    );
    assert_eq!(keys(&ext["concept"]), set(CONCEPT));
    let mut extended_description = DESCRIPTION.to_vec();
    extended_description.extend(["refsets", "preferredIn", "acceptableIn"]);
    for d in ext["descriptions"].as_array().unwrap() {
        assert_eq!(keys(d), extended_description.iter().copied().collect());
    }
    assert_eq!(ext["preferredDescription"]["id"], 20610015u64);
    // Relationships by type id (a string key), values the destination ids; the transitive form includes the
    // direct one.
    let direct = ext["directParentRelationships"]["116680003"]
        .as_array()
        .unwrap();
    let all = ext["parentRelationships"]["116680003"].as_array().unwrap();
    assert!(!direct.is_empty() && direct.iter().all(|p| all.contains(p)));
    assert!(ext["refsets"].is_array() && ext["concreteValues"].is_array());

    for route in ["descriptions", "preferred", "extended"] {
        let (status, body) = get(&format!("/v1/snomed/concepts/{}/{route}", unknown())).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{route}");
        assert_error(&body, "not found");
    }
}

#[tokio::test]
async fn properties_route() {
    let (status, props) = get("/v1/snomed/concepts/11687002/properties").await;
    assert_eq!(status, StatusCode::OK);
    // {group: {type id: [values]}}, group and type as strings.
    assert_eq!(props["0"]["116680003"].as_array().unwrap().len(), 2);
    assert_eq!(props["1"]["363698007"], json!([113331007u64]));
    for (group, types) in props.as_object().unwrap() {
        assert!(group.parse::<u32>().is_ok(), "{group}");
        for (t, values) in types.as_object().unwrap() {
            assert!(t.parse::<u64>().is_ok() && values.is_array(), "{t}");
        }
    }
    let (status, _) = get(&format!("/v1/snomed/concepts/{}/properties", unknown())).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn historical_refsets_and_map_routes() {
    let (status, hist) = get(&format!(
        "/v1/snomed/concepts/{APPENDICITIS_NOS}/historical"
    ))
    .await;
    assert_eq!(status, StatusCode::OK);
    let members = hist[REPLACED_BY.to_string()].as_array().unwrap();
    assert_eq!(members.len(), 1);
    assert_eq!(keys(&members[0]), set(ASSOCIATION_MEMBER));
    assert_eq!(members[0]["targetComponentId"], APPENDICITIS);
    assert_eq!(members[0]["id"].as_str().unwrap().len(), 36, "a UUID");

    let (status, refsets) = get(&format!("/v1/snomed/concepts/{APPENDICITIS_NOS}/refsets")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        refsets
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["refsetId"] == REPLACED_BY && keys(m) == set(ASSOCIATION_MEMBER))
    );

    let (status, mapped) = get(&format!(
        "/v1/snomed/concepts/{APPENDICITIS_NOS}/map/{REPLACED_BY}"
    ))
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(mapped.as_array().unwrap().len(), 1);
    assert_eq!(mapped[0]["targetComponentId"], APPENDICITIS);

    for route in ["historical", "refsets"] {
        let (status, _) = get(&format!("/v1/snomed/concepts/{}/{route}", unknown())).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{route}");
    }
    let (status, _) = get(&format!(
        "/v1/snomed/concepts/{}/map/{REPLACED_BY}",
        unknown()
    ))
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn subsumed_by_and_crossmap_routes() {
    let (status, yes) = get("/v1/snomed/concepts/11687002/subsumed-by/404684003").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(yes, json!({"subsumedBy": true}));
    let (_, no) = get("/v1/snomed/concepts/404684003/subsumed-by/11687002").await;
    assert_eq!(no, json!({"subsumedBy": false}));
    let (status, _) = get(&format!(
        "/v1/snomed/concepts/{}/subsumed-by/404684003",
        unknown()
    ))
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The subset has no map refset; the MRCM attribute domain refset's first string field
    // (attributeCardinality) stands in for mapTarget.
    let (status, members) = get("/v1/snomed/crossmap/723561005/0..*").await;
    assert_eq!(status, StatusCode::OK);
    let members = members.as_array().unwrap();
    assert!(!members.is_empty());
    for m in members {
        assert_eq!(m["refsetId"], 723561005u64);
        assert_eq!(m["attributeCardinality"], "0..*");
        assert!(m["referencedComponentId"].is_u64() && m["domainId"].is_u64());
    }
    // Nothing maps to the code: Hermes answers 404 (its result is empty), and so does Thoth.
    let (status, body) = get("/v1/snomed/crossmap/723561005/7..7").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "maps to");
}

#[tokio::test]
async fn search_route_parameters() {
    let (status, hits) = get("/v1/snomed/search?s=renal%20function&maxHits=50").await;
    assert_eq!(status, StatusCode::OK);
    let hits = hits.as_array().unwrap();
    assert!(!hits.is_empty());
    for h in hits {
        assert_eq!(keys(h), set(RESULT));
    }
    // Fully specified names only with `fsn=true`, as in Hermes.
    let ids = |v: &Value| -> BTreeSet<u64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|h| h["id"].as_u64().unwrap())
            .collect()
    };
    assert!(!ids(&Value::Array(hits.clone())).contains(&2759904011));
    let (_, with_fsn) = get("/v1/snomed/search?s=renal%20function&maxHits=50&fsn=true").await;
    assert!(ids(&with_fsn).contains(&2759904011));
    // `inactiveDescriptions` defaults to true; false drops "Renal function, NOS".
    assert!(ids(&Value::Array(hits.clone())).contains(&20611016));
    let (_, active_only) =
        get("/v1/snomed/search?s=renal%20function&maxHits=50&inactiveDescriptions=false").await;
    assert!(!ids(&active_only).contains(&20611016));
    // `isA` repeated (Hermes) and comma-separated select the same.
    let (_, repeated) = get("/v1/snomed/search?s=a&isA=64572001&isA=363787002&maxHits=200").await;
    let (_, commas) = get("/v1/snomed/search?s=a&isA=64572001,363787002&maxHits=200").await;
    assert_eq!(repeated, commas);
    assert!(!repeated.as_array().unwrap().is_empty());
    // maxHits must be 1..9999 (Hermes: "invalid parameter: maxHits").
    for bad in ["0", "10000", "x"] {
        let (status, body) = get(&format!("/v1/snomed/search?s=renal&maxHits={bad}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
        assert_error(&body, "maxHits");
    }
    let (status, body) = get("/v1/snomed/search?s=renal&constraint=%3C%3C%3C").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "invalid ECL");
}

fn concept_ids(rows: &Value) -> BTreeSet<u64> {
    rows.as_array()
        .unwrap_or_else(|| panic!("not rows: {rows}"))
        .iter()
        .map(|r| r["conceptId"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn expand_answers_one_row_per_synonym() {
    let (status, rows) =
        get_lang(&format!("/v1/snomed/expand?ecl={RENAL_FUNCTION}"), "en-GB").await;
    assert_eq!(status, StatusCode::OK);
    // Both synonyms (Hermes indexes every description, inactive ones too), no FSN; every row carries the
    // concept's preferred term.
    assert_eq!(
        rows,
        json!([
            {"id": 20610015u64, "conceptId": RENAL_FUNCTION, "term": "Renal function", "preferredTerm": "Renal function"},
            {"id": 20611016u64, "conceptId": RENAL_FUNCTION, "term": "Renal function, NOS", "preferredTerm": "Renal function"},
        ])
    );
    // `preferred=true`: only the synonym preferred in the dialect (or Accept-Language's first refset).
    let (_, preferred) = get(&format!(
        "/v1/snomed/expand?ecl={RENAL_FUNCTION}&preferred=true&dialectId=900000000000508004"
    ))
    .await;
    assert_eq!(preferred.as_array().unwrap().len(), 1);
    assert_eq!(preferred[0]["id"], 20610015u64);
    let (_, preferred) = get_lang(
        &format!("/v1/snomed/expand?ecl={RENAL_FUNCTION}&preferred=1"),
        "en-US",
    )
    .await;
    assert_eq!(preferred.as_array().unwrap().len(), 1);
    // The rows of a hierarchy: every concept once at least, several rows for some.
    let (_, rows) = get("/v1/snomed/expand?ecl=%3C%3C76783007").await;
    let store = store();
    let idx = store
        .index_of(snomed::SctId::new(76783007).unwrap())
        .unwrap();
    let concepts = concept_ids(&rows);
    assert_eq!(concepts.len(), store.descendants(idx).len() + 1);
    assert!(rows.as_array().unwrap().len() > concepts.len());
    for r in rows.as_array().unwrap() {
        assert_eq!(keys(r), set(RESULT));
    }
}

#[tokio::test]
async fn expand_leaves_inactive_concepts_out_unless_include_historic() {
    // `^ REPLACED BY` selects the inactive concepts the refset's active members name.
    let (status, rows) = get(&format!("/v1/snomed/expand?ecl=%5E{REPLACED_BY}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(rows, json!([]));
    let (_, rows) = get(&format!(
        "/v1/snomed/expand?ecl=%5E{REPLACED_BY}&includeHistoric=true"
    ))
    .await;
    assert_eq!(concept_ids(&rows), BTreeSet::from([APPENDICITIS_NOS]));
    // A history supplement in the expression does not bring them in either.
    let (_, rows) = get(&format!(
        "/v1/snomed/expand?ecl={APPENDICITIS}%20%7B%7B%20%2BHISTORY-MOD%20%7D%7D"
    ))
    .await;
    assert_eq!(concept_ids(&rows), BTreeSet::from([APPENDICITIS]));
    // includeHistoric (and Hermes's legacy include-historic) follows the associations from the result.
    for name in ["includeHistoric", "include-historic"] {
        let (status, rows) = get(&format!("/v1/snomed/expand?ecl={APPENDICITIS}&{name}=1")).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(
            concept_ids(&rows),
            BTreeSet::from([APPENDICITIS, APPENDICITIS_NOS]),
            "{name}"
        );
    }
    // The tx subset's whole expansion of a hierarchy has no inactive concept.
    let (_, rows) = get("/v1/snomed/expand?ecl=%3C%3C404684003").await;
    let store = store();
    for id in concept_ids(&rows) {
        let idx = store.index_of(snomed::SctId::new(id).unwrap()).unwrap();
        assert!(store.concept(idx).active, "{id}");
    }
}

#[tokio::test]
async fn expand_errors() {
    // Hermes: 400 {"error": "missing parameter: ecl"}.
    for uri in ["/v1/snomed/expand", "/v1/snomed/expand?ecl=%20"] {
        let (status, _, body) = send(Request::get(uri).body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_error(&body, "missing parameter: ecl");
    }
    let (status, _, body) = send(
        Request::get("/v1/snomed/expand?ecl=%3C%3C%3C")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "invalid ECL");
    let (status, body) =
        get("/v1/snomed/expand?ecl=404684003&includeHistoric=true&preferred=true").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "nonsensical");
    // A refinement on a concept that is not a concept model attribute: Hermes's 422, naming the concept.
    let (status, content_type, body) = send(
        Request::get("/v1/snomed/expand?ecl=%3C404684003%3A404684003%3D*")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(content_type, "application/json");
    assert_error(
        &body,
        "404684003 |Clinical finding (finding)| is not a concept model attribute",
    );
    // Not a Hermes route.
    let (status, _) = get("/v1/snomed/mrcm-domains").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// The specification's cardinality example on the real subset: `[2..*]` finding sites are two different
/// ones (the same site repeated in two groups is one), and concepts that repeat one site are `[1..1]`.
#[tokio::test]
async fn cardinality_counts_distinct_finding_sites_on_the_subset() {
    let store = store();
    let distinct_sites = |id: u64| -> BTreeSet<u64> {
        let idx = store.index_of(snomed::SctId::new(id).unwrap()).unwrap();
        store
            .relationships(idx)
            .filter(|r| r.is_inferred_active() && r.type_id.get() == 363698007)
            .map(|r| r.destination_id.get())
            .collect()
    };
    let rows_of = |ecl: &str| {
        let uri = format!(
            "/v1/snomed/expand?ecl={}",
            form_urlencoded::byte_serialize(ecl.as_bytes()).collect::<String>()
        );
        async move {
            let (status, rows) = get(&uri).await;
            assert_eq!(status, StatusCode::OK, "{rows}");
            concept_ids(&rows)
        }
    };
    let two = rows_of("< 404684003 : [2..*] 363698007 = < 91723000").await;
    assert!(!two.is_empty());
    for &c in &two {
        assert!(distinct_sites(c).len() >= 2, "{c}");
    }
    let one = rows_of("< 404684003 : [1..1] 363698007 = < 91723000").await;
    for &c in &one {
        assert_eq!(distinct_sites(c).len(), 1, "{c}");
    }
    // 235864009 has its one finding site (10200004) in two groups.
    assert!(one.contains(&235864009) && !two.contains(&235864009));
}

/// On /fhir the same refusal is a 4xx OperationOutcome naming the attribute.
#[tokio::test]
async fn fhir_refuses_a_non_attribute_with_an_operation_outcome() {
    let body = json!({
        "resourceType": "Parameters",
        "parameter": [{"name": "url", "valueUri": "http://snomed.info/sct?fhir_vs=ecl/< 404684003 : 404684003 = *"}]
    });
    let req = Request::post("/fhir/ValueSet/$expand")
        .header("content-type", "application/fhir+json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, _, oo) = send(req).await;
    assert!(status.is_client_error(), "{status}: {oo}");
    assert_eq!(oo["resourceType"], "OperationOutcome");
    let text = oo.to_string();
    assert!(
        text.contains("404684003 |Clinical finding (finding)| is not a concept model attribute"),
        "{text}"
    );
}
