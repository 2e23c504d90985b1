//! Tool calls answered by the HTTP API itself, in process.
//!
//! A tool that has an HTTP route sends that route's request to the server's own application (`server::App`, the
//! fast lane and the router) without a socket and reads its JSON answer, so that a tool and the route can never
//! give different answers, and so that the route's access control and audit trail apply to the tool too: the
//! request carries the MCP caller's peer address and `Authorization` header.

use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::Value;
use std::net::SocketAddr;
use tower::ServiceExt;

/// Who calls a tool: what the HTTP API's access control reads.
#[derive(Clone, Debug)]
pub struct Caller {
    /// The client's address (loopback for the stdio transport: the user who started the process).
    pub peer: SocketAddr,
    /// The client's bearer credential, sent on to the routes (the message routes check its scopes).
    pub authorization: Option<HeaderValue>,
}

impl Caller {
    /// The caller of the stdio transport: the local user who started `thoth mcp`, a loopback peer.
    pub fn local() -> Caller {
        Caller {
            peer: SocketAddr::from(([127, 0, 0, 1], 0)),
            authorization: None,
        }
    }
}

/// A tool's failure, as the assistant reads it: what went wrong and what to do instead.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError(pub String);

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl ToolError {
    pub(crate) fn new(message: impl Into<String>) -> ToolError {
        ToolError(message.into())
    }
}

/// The server's HTTP application, called in process.
#[derive(Clone)]
pub(crate) struct Api {
    app: server::App,
}

impl Api {
    pub(crate) fn new(app: server::App) -> Api {
        Api { app }
    }

    /// The JSON answer of `GET uri` (path and query), or the route's error as a tool error.
    pub(crate) async fn get(
        &self,
        caller: &Caller,
        uri: &str,
        accept_language: Option<&str>,
    ) -> Result<Value, ToolError> {
        let bytes = self
            .send(caller, Method::GET, uri, Body::empty(), accept_language)
            .await?;
        Ok(json_or_text(&bytes))
    }

    /// The answer of `method uri` as the route wrote it (JSON text, or ndjson for several Bundles), without
    /// reading it into a value: for the tools whose answer is the route's resource unchanged.
    pub(crate) async fn text(
        &self,
        caller: &Caller,
        method: Method,
        uri: &str,
        body: Vec<u8>,
        accept_language: Option<&str>,
    ) -> Result<String, ToolError> {
        let bytes = self
            .send(caller, method, uri, Body::from(body), accept_language)
            .await?;
        String::from_utf8(bytes.into())
            .map_err(|_| ToolError::new(format!("the answer of {uri} is not UTF-8 text")))
    }

    async fn send(
        &self,
        caller: &Caller,
        method: Method,
        uri: &str,
        body: Body,
        accept_language: Option<&str>,
    ) -> Result<Bytes, ToolError> {
        let mut req = Request::builder()
            .method(method)
            .uri(uri)
            .header(header::ACCEPT, "application/json")
            .body(body)
            .map_err(|e| ToolError::new(format!("invalid request {uri}: {e}")))?;
        req.extensions_mut().insert(ConnectInfo(caller.peer));
        if let Some(auth) = &caller.authorization {
            req.headers_mut()
                .insert(header::AUTHORIZATION, auth.clone());
        }
        if let Some(lang) = accept_language
            && let Ok(v) = HeaderValue::from_str(lang)
        {
            req.headers_mut().insert(header::ACCEPT_LANGUAGE, v);
        }
        let response = match self.app.clone().oneshot(req).await {
            Ok(r) => r,
            Err(never) => match never {},
        };
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| ToolError::new(format!("reading the answer failed: {e}")))?
            .to_bytes();
        if status.is_success() {
            Ok(bytes)
        } else {
            Err(ToolError(explain_failure(status, &json_or_text(&bytes))))
        }
    }
}

/// An answer as a JSON value; several Bundles (ndjson) or plain text are kept as a string.
fn json_or_text(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

/// The route's error text (OperationOutcome diagnostics, Hermes's `error`) with what the status means for the
/// caller.
fn explain_failure(status: StatusCode, body: &Value) -> String {
    let text = body["issue"][0]["diagnostics"]
        .as_str()
        .or_else(|| body["issue"][0]["details"]["text"].as_str())
        .or_else(|| body["error"].as_str())
        .or_else(|| body.as_str())
        .unwrap_or("no detail given")
        .to_string();
    let hint = match status {
        StatusCode::NOT_FOUND => {
            " (not found: check the code or identifier, or search for it first)"
        }
        StatusCode::UNAUTHORIZED => {
            " (a credential is needed: configure the MCP client to send `Authorization: Bearer <token>`)"
        }
        StatusCode::FORBIDDEN => {
            " (refused: this caller may not read messages; it needs the messages:read scope, or a loopback connection when no credentials are configured)"
        }
        StatusCode::UNPROCESSABLE_ENTITY | StatusCode::PAYLOAD_TOO_LARGE => {
            " (too large: narrow the request or page with offset and a smaller count)"
        }
        s if s.is_server_error() => " (a server error: please report it)",
        _ => "",
    };
    format!("{text}{hint}")
}
