//! `/`: the console's embedded files, their compression and cache headers, and that the API routes beside them
//! still answer.

use crate::{App, app, get};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use std::io::Read;
use tower::ServiceExt;

/// The response to `GET uri` with `headers`: status, headers and body bytes.
async fn fetch(
    app: impl App,
    uri: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let mut req = Request::get(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let response = app.oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, headers, body.to_vec())
}

fn header<'a>(h: &'a axum::http::HeaderMap, name: &str) -> &'a str {
    h.get(name).map_or("", |v| v.to_str().unwrap())
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// The `/console/...` URLs a text refers to (in `href`, `src` and the import map).
fn console_urls(text: &str) -> Vec<String> {
    text.split('"')
        .filter(|s| s.starts_with("/console/"))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn the_page_is_not_cached_and_its_files_are_cached_for_good() {
    let (app, _) = app();
    let (status, h, body) = fetch(app.clone(), "/", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(header(&h, "content-type"), "text/html; charset=utf-8");
    assert_eq!(header(&h, "cache-control"), "no-cache");
    let etag = header(&h, "etag").to_string();
    assert!(etag.starts_with('"') && etag.len() > 4, "{etag}");
    let page = String::from_utf8(body).unwrap();
    assert!(!page.contains("{{VERSION}}"), "{page}");
    // Asked again with its ETag: 304, no body.
    let (status, _, body) = fetch(app.clone(), "/", &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());

    let urls = console_urls(&page);
    for name in [
        "app.js",
        "style.css",
        "vendor/preact-11.2.0.mjs",
        "vendor/htm-3.1.1.mjs",
    ] {
        assert!(
            urls.iter().any(|u| u.ends_with(name)),
            "{name} not in {urls:?}"
        );
    }
    for url in &urls {
        let (status, h, plain) = fetch(app.clone(), url, &[]).await;
        assert_eq!(status, StatusCode::OK, "{url}");
        assert_eq!(
            header(&h, "cache-control"),
            "public, max-age=31536000, immutable"
        );
        assert_eq!(
            header(&h, "content-encoding"),
            "",
            "{url}: not asked for gzip"
        );
        let (status, h, gz) = fetch(app.clone(), url, &[("accept-encoding", "gzip, br")]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(header(&h, "content-encoding"), "gzip");
        assert_eq!(header(&h, "vary"), "accept-encoding");
        assert_eq!(gunzip(&gz), plain, "{url}");
        if url.ends_with(".js") || url.ends_with(".mjs") {
            assert_eq!(header(&h, "content-type"), "text/javascript; charset=utf-8");
        }
    }
}

/// Every module the page loads imports only files the server has: a missing file would be a blank page.
#[tokio::test]
async fn every_relative_import_of_the_modules_is_served() {
    let (app, _) = app();
    let (_, _, page) = fetch(app.clone(), "/", &[]).await;
    let page = String::from_utf8(page).unwrap();
    let app_js = console_urls(&page)
        .into_iter()
        .find(|u| u.ends_with("/app.js"))
        .unwrap();
    let base = app_js.trim_end_matches("app.js").to_string();
    let mut todo = vec![app_js];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(url) = todo.pop() {
        if !seen.insert(url.clone()) {
            continue;
        }
        let (status, _, body) = fetch(app.clone(), &url, &[]).await;
        assert_eq!(status, StatusCode::OK, "{url}");
        let text = String::from_utf8(body).unwrap();
        for part in text.split("from '").skip(1) {
            let target = part.split('\'').next().unwrap();
            if let Some(rel) = target.strip_prefix("./") {
                todo.push(format!("{base}{rel}"));
            } else {
                // A bare specifier must be in the import map.
                assert!(
                    page.contains(&format!("\"{target}\":")),
                    "{url} imports {target}, which the import map lacks"
                );
            }
        }
    }
    assert!(seen.len() >= 6, "{seen:?}");
}

#[tokio::test]
async fn a_file_of_another_version_or_none_is_a_404_that_says_so() {
    let (app, _) = app();
    let (status, _, body) = fetch(app.clone(), "/console/000000000000/app.js", &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(String::from_utf8(body).unwrap().contains("reload the page"));
    let (_, _, page) = fetch(app.clone(), "/", &[]).await;
    let page = String::from_utf8(page).unwrap();
    let app_js = console_urls(&page)
        .into_iter()
        .find(|u| u.ends_with("/app.js"))
        .unwrap();
    let missing = app_js.replace("app.js", "nothing.js");
    let (status, _, _) = fetch(app.clone(), &missing, &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // The vendored licences stay in the repository, not in the binary.
    let licence = app_js.replace("app.js", "vendor/LICENSE-preact");
    let (status, _, _) = fetch(app, &licence, &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_api_routes_answer_beside_the_console() {
    let (app, _) = app();
    let (status, _, body) = get(app.clone(), "/healthz").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "ok\n"));
    let (status, content_type, _) = get(app.clone(), "/fhir/metadata").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type, "application/fhir+json");
    let (status, content_type, _) = get(app, "/no/such/page").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(content_type, "application/fhir+json");
}

/// The issue's budget: everything a first visit loads is at most 150 KB compressed.
#[test]
fn the_first_load_is_at_most_150_kb_compressed() {
    let bytes = server::first_load_gzip_bytes();
    assert!(bytes > 10_000, "{bytes}: the console looks empty");
    assert!(bytes <= 150 * 1024, "{bytes} bytes compressed");
}

/// The page allows nothing but this origin's files and its one inline script (the import map, by its hash): an
/// injected script or a page framing the console is refused by the browser. (`cargo xtask console-test` runs
/// every screen under this policy in Chromium and fails on any console error, violations included.)
#[tokio::test]
async fn the_page_has_a_content_security_policy_that_allows_only_its_own_files() {
    use base64::Engine as _;
    use sha2::Digest as _;
    let (app, _) = app();
    let (_, h, body) = fetch(app, "/", &[]).await;
    let csp = header(&h, "content-security-policy");
    for directive in [
        "default-src 'none'",
        "style-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ] {
        assert!(csp.contains(directive), "{directive} missing from {csp}");
    }
    let page = String::from_utf8(body).unwrap();
    let inline: Vec<&str> = page
        .split("<script")
        .skip(1)
        .filter(|tag| !tag.split('>').next().unwrap().contains("src="))
        .collect();
    assert_eq!(
        inline.len(),
        1,
        "one inline script, the import map: {inline:?}"
    );
    let map = page
        .split_once("<script type=\"importmap\">")
        .and_then(|(_, rest)| rest.split_once("</script>"))
        .unwrap()
        .0;
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(map));
    assert!(
        csp.contains(&format!("script-src 'self' 'sha256-{hash}'")),
        "{csp}"
    );
    assert!(!page.contains(" style=") && !page.contains(" onclick="));
    assert_eq!(header(&h, "referrer-policy"), "no-referrer");
}
