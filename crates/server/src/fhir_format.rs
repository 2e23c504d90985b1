//! FHIR content negotiation for `/fhir`, in one place: handlers read and answer FHIR JSON, and this layer turns
//! an XML request body into JSON before they see it and their answers (errors included) into XML when the
//! request asks for XML: `_format` first (`xml`, `application/fhir+xml`, ...), else the first FHIR media type
//! named by `Accept`. The `fhir` crate converts, so XML follows the spec's element order and escaping.

use crate::error::ApiError;
use axum::body::{Body, to_bytes};
use axum::extract::{Query, Request};
use axum::http::{HeaderMap, HeaderValue, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

const FHIR_JSON: &str = "application/fhir+json";
const FHIR_XML: &str = "application/fhir+xml";
/// Largest answer converted to XML; expansions are bounded by the service's expansion limit well below this.
const MAX_RESPONSE_BYTES: usize = 512 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    Json,
    Xml,
}

/// What a `_format` value or a media type names, if it is one of FHIR's.
fn wire_of(media: &str) -> Option<Wire> {
    let media = media.split(';').next().unwrap_or_default().trim();
    match media.to_ascii_lowercase().as_str() {
        "json" | FHIR_JSON | "application/json" | "application/json+fhir" => Some(Wire::Json),
        "xml" | FHIR_XML | "application/xml" | "text/xml" | "application/xml+fhir" => {
            Some(Wire::Xml)
        }
        _ => None,
    }
}

/// The answer format a request asks for, and whether it asks for pretty output (`_pretty=true`).
fn requested(uri: &Uri, headers: &HeaderMap) -> (Wire, bool) {
    // Most requests name neither parameter: their query is not decoded here a second time.
    let query: Vec<(String, String)> = match uri.query() {
        Some(q)
            if ["_format", "_pretty", "%5F", "%5f"]
                .iter()
                .any(|p| q.contains(p)) =>
        {
            Query::try_from_uri(uri).map(|q| q.0).unwrap_or_default()
        }
        _ => Vec::new(),
    };
    let param = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let pretty = param("_pretty") == Some("true");
    let from_accept = || {
        headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .and_then(|accept| accept.split(',').find_map(wire_of))
    };
    let wire = param("_format").and_then(wire_of).or_else(from_accept);
    (wire.unwrap_or(Wire::Json), pretty)
}

/// Whether the answer to this request is JSON (nothing for the negotiation layer to convert).
pub(crate) fn wants_json(uri: &Uri, headers: &HeaderMap) -> bool {
    requested(uri, headers).0 == Wire::Json
}

fn is_xml_body(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(wire_of)
        == Some(Wire::Xml)
}

/// The middleware: XML bodies in, XML answers out, JSON everywhere in between.
pub(crate) async fn negotiate(req: Request, next: Next) -> Response {
    let (wire, pretty) = requested(req.uri(), req.headers());
    let req = if is_xml_body(req.headers()) {
        match xml_body_to_json(req).await {
            Ok(req) => req,
            Err(e) => return respond(e.into_response(), wire, pretty).await,
        }
    } else {
        req
    };
    respond(next.run(req).await, wire, pretty).await
}

/// Bodies up to this size are converted between XML and JSON on the HTTP thread (tens of microseconds); larger
/// ones on the blocking pool, since a 32 MiB conversion takes long enough to stall the thread's other connections.
const INLINE_CONVERSION_BYTES: usize = 64 << 10;

/// A failed conversion of our own answer, as text; a refusal to queue more work becomes one too.
struct ConversionError(String);

impl From<ApiError> for ConversionError {
    fn from(e: ApiError) -> Self {
        ConversionError(e.to_string())
    }
}

async fn xml_body_to_json(req: Request) -> Result<Request, ApiError> {
    let (mut parts, body) = req.into_parts();
    let bytes = to_bytes(body, crate::outcome::MAX_FHIR_BODY_BYTES)
        .await
        .map_err(|e| ApiError::BadRequest(format!("the request body could not be read: {e}")))?;
    let small = bytes.len() <= INLINE_CONVERSION_BYTES;
    let convert = move || {
        fhir::Resource::from_xml(&bytes)
            .map(|r| r.to_json())
            .map_err(|e| ApiError::BadRequest(format!("the XML body is not a FHIR resource: {e}")))
    };
    let json = if small {
        convert()?
    } else {
        crate::offload::offload(convert).await?
    };
    parts
        .headers
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(FHIR_JSON));
    parts.headers.remove(header::CONTENT_LENGTH);
    Ok(Request::from_parts(parts, Body::from(json)))
}

async fn respond(resp: Response, wire: Wire, pretty: bool) -> Response {
    let is_fhir_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(FHIR_JSON.as_bytes()));
    if wire == Wire::Json || !is_fhir_json {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let converted = async {
        let bytes = to_bytes(body, MAX_RESPONSE_BYTES)
            .await
            .map_err(|e| format!("reading the answer: {e}"))?;
        let small = bytes.len() <= INLINE_CONVERSION_BYTES;
        let convert = move || -> Result<Vec<u8>, String> {
            let resource = fhir::Resource::from_json(&bytes).map_err(|e| e.to_string())?;
            resource.to_xml(pretty).map_err(|e| e.to_string())
        };
        if small {
            convert()
        } else {
            crate::offload::offload(move || convert().map_err(ConversionError))
                .await
                .map_err(|e| e.0)
        }
    };
    match converted.await {
        Ok(xml) => {
            parts
                .headers
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(FHIR_XML));
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(xml))
        }
        // Our own answer is not valid R4: a bug on our side, logged by the error's conversion.
        Err(e) => ApiError::Internal(format!("the answer cannot be written as FHIR XML: {e}"))
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_parameter_wins_over_accept() {
        let uri = |s: &str| s.parse::<Uri>().unwrap();
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_static(FHIR_JSON));
        assert_eq!(
            requested(&uri("/fhir/metadata?_format=xml"), &h).0,
            Wire::Xml
        );
        assert_eq!(
            requested(
                &uri("/fhir/metadata?_format=application%2Ffhir%2Bxml&_pretty=true"),
                &h
            ),
            (Wire::Xml, true)
        );
        assert_eq!(requested(&uri("/fhir/metadata"), &h).0, Wire::Json);
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/html, application/fhir+xml;q=0.9, */*"),
        );
        assert_eq!(requested(&uri("/fhir/metadata"), &h).0, Wire::Xml);
        assert_eq!(
            requested(&uri("/fhir/metadata?_format=json"), &h).0,
            Wire::Json
        );
        assert_eq!(
            requested(&uri("/fhir/metadata"), &HeaderMap::new()).0,
            Wire::Json
        );
    }
}
