//! `/`: the Thoth console, static files embedded in the binary.
//!
//! The files under `crates/server/console/` (hand-written ES modules, a stylesheet and the vendored Preact and
//! htm in `vendor/`) are compiled in by `rust-embed`, so `cargo build` alone yields the complete server: there is
//! no Node build step and nothing is fetched at run time. The console calls only the public HTTP APIs.
//!
//! - `GET /` answers `index.html`, `Cache-Control: no-cache` with an `ETag`: a browser asks again each time and
//!   gets a 304 while the binary is the same.
//! - `GET /console/{version}/{path}` answers the other files. `version` is a hash of every embedded file, written
//!   into `index.html` at first use, so the files can be cached for a year (`immutable`): a new binary with other
//!   files has another version and so other URLs. A request for another version is a 404 (reload the page).
//!
//! Every file is gzip-compressed once, at the first request, and kept: a client that accepts gzip gets those
//! bytes (`Vary: Accept-Encoding`).

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Write;
use std::sync::OnceLock;

#[derive(rust_embed::Embed)]
#[folder = "console/"]
// Licences and notes travel with the vendored code in the repository; the browser needs only the code.
#[exclude = "vendor/*.md"]
#[exclude = "vendor/LICENSE*"]
struct Files;

/// The placeholder in `index.html` that becomes the version of the files.
const VERSION_MARK: &str = "{{VERSION}}";

/// One file ready to send: its bytes as they are and gzip-compressed.
struct Asset {
    raw: Vec<u8>,
    gzip: Vec<u8>,
    content_type: &'static str,
}

/// Every file of the console, prepared at first use.
struct Console {
    version: String,
    index: Asset,
    /// The page's Content-Security-Policy: nothing but this origin's files, and the one inline script (the import
    /// map) by its hash.
    csp: String,
    files: HashMap<String, Asset>,
}

static CONSOLE: OnceLock<Console> = OnceLock::new();

fn console() -> &'static Console {
    CONSOLE.get_or_init(|| {
        let mut names: Vec<_> = Files::iter().collect();
        names.sort();
        let mut hasher = Sha256::new();
        for name in &names {
            if let Some(f) = Files::get(name) {
                hasher.update(name.as_bytes());
                hasher.update(f.metadata.sha256_hash());
            }
        }
        let version: String = hasher
            .finalize()
            .iter()
            .take(6)
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut files = HashMap::new();
        let mut index = None;
        for name in names {
            let Some(f) = Files::get(&name) else { continue };
            if name == "index.html" {
                let text = String::from_utf8_lossy(&f.data).replace(VERSION_MARK, &version);
                index = Some(asset(&name, text.into_bytes()));
            } else {
                files.insert(name.to_string(), asset(&name, f.data.into_owned()));
            }
        }
        let index = index.unwrap_or_else(|| asset("index.html", b"console missing".to_vec()));
        Console {
            csp: content_security_policy(&index.raw),
            index,
            version,
            files,
        }
    })
}

/// Only this origin's scripts, styles, images and API; the inline import map allowed by its SHA-256; no plugins,
/// no framing, no `<base>`, forms only to this origin.
fn content_security_policy(index: &[u8]) -> String {
    use base64::Engine as _;
    let text = String::from_utf8_lossy(index);
    let import_map = text
        .split_once("<script type=\"importmap\">")
        .and_then(|(_, rest)| rest.split_once("</script>"))
        .map_or("", |(map, _)| map);
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(import_map));
    format!(
        "default-src 'none'; script-src 'self' 'sha256-{hash}'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
}

fn asset(name: &str, raw: Vec<u8>) -> Asset {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing to a Vec cannot fail.
    let gzip = enc
        .write_all(&raw)
        .and_then(|()| enc.finish())
        .unwrap_or_default();
    Asset {
        raw,
        gzip,
        content_type: content_type(name),
    }
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next().unwrap_or_default() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "json" => "application/json",
        _ => "application/octet-stream",
    }
}

/// The console's routes (no credential needed: the files hold no data; the APIs they call check their own).
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(index))
        .route("/console/{version}/{*path}", get(file))
}

/// The compressed size of everything a first visit loads: the page and every file it refers to.
pub fn first_load_gzip_bytes() -> usize {
    let c = console();
    c.index.gzip.len() + c.files.values().map(|a| a.gzip.len()).sum::<usize>()
}

async fn index(headers: HeaderMap) -> Response {
    let c = console();
    let etag = format!("\"{}\"", c.version);
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    if matches {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
    }
    let mut response = send(&c.index, &headers, "no-cache");
    if let Ok(v) = HeaderValue::from_str(&c.csp) {
        response
            .headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, v);
    }
    response.headers_mut().insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, v);
    }
    response
}

async fn file(Path((version, path)): Path<(String, String)>, headers: HeaderMap) -> Response {
    let c = console();
    if version != c.version {
        return not_found(format!(
            "console files of version {version} are not in this server (it serves {}): reload the page",
            c.version
        ));
    }
    match c.files.get(&path) {
        Some(a) => send(a, &headers, "public, max-age=31536000, immutable"),
        None => not_found(format!("no console file {path}")),
    }
}

fn not_found(text: String) -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response()
}

fn send(a: &Asset, headers: &HeaderMap, cache: &'static str) -> Response {
    let gzip = accepts_gzip(headers);
    let body = if gzip { &a.gzip } else { &a.raw };
    let mut response = (
        [
            (header::CONTENT_TYPE, a.content_type),
            (header::CACHE_CONTROL, cache),
            (header::VARY, "accept-encoding"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body.clone(),
    )
        .into_response();
    if gzip {
        response
            .headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    response
}

/// Whether `Accept-Encoding` lists gzip (or `*`) without `q=0`.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    value.split(',').any(|item| {
        let mut parts = item.split(';');
        let coding = parts.next().unwrap_or_default().trim();
        let refused = parts.any(|p| {
            p.trim()
                .strip_prefix("q=")
                .and_then(|q| q.trim().parse::<f32>().ok())
                .is_some_and(|q| q == 0.0)
        });
        (coding.eq_ignore_ascii_case("gzip") || coding == "*") && !refused
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_accepted_unless_refused() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
            m
        };
        assert!(accepts_gzip(&h("gzip, deflate, br")));
        assert!(accepts_gzip(&h("br;q=1.0, GZIP;q=0.5")));
        assert!(accepts_gzip(&h("*")));
        assert!(!accepts_gzip(&h("gzip;q=0")));
        assert!(!accepts_gzip(&h("br, identity")));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }
}
