//! Thoth for AI assistants: the Model Context Protocol server.
//!
//! Which tools an assistant sees, and what they answer. The SNOMED CT tools carry the names and arguments of
//! Hermes's MCP server (`search`, `concept`, `subsumed_by`, `expand_ecl`...), the FHIR terminology tools answer
//! over every loaded code system (`lookup`, `validate_code`, `expand`, `subsumes`, `translate`), and the HL7 v2
//! tools parse, validate, explain and convert messages and, when the interface engine runs, find received ones.
//!
//! A tool that has an HTTP route is answered by that route, in process (see `api`): the tool and the route give
//! the same answer, and the route's access control (the message routes' scopes) applies to the tool's caller.
//! Every failure is a tool error whose text says what to do; every list is paged.
//!
//! The official Rust SDK, `rmcp`, is used in this crate only (it changes fast): [`serve_stdio`] speaks JSON-RPC
//! on stdin/stdout, [`http_service`] is the Streamable HTTP endpoint the binary mounts at `POST /mcp` — stateless
//! for the current protocol revision, and answering the `initialize` handshake of earlier ones.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let state = server::AppState::new(server::ServerInfo::default());
//! mcp::serve_stdio(state).await
//! # }
//! ```

mod api;
mod args;
mod handler;
mod hl7;
mod tools;

pub use api::{Caller, ToolError};
pub use handler::Thoth;
pub use tools::{DEFAULT_PAGE, MAX_IDS, MAX_PAGE};

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;

/// The path the binary mounts [`http_service`] at.
pub const HTTP_PATH: &str = "/mcp";

/// Serves MCP on stdin/stdout until the client closes stdin. Logs belong on stderr (stdout is the protocol).
pub async fn serve_stdio(state: server::AppState) -> std::io::Result<()> {
    let thoth = Thoth::new(state);
    #[cfg(unix)]
    if let Some(pipes) = stdio_pipes() {
        let running = thoth.serve(pipes).await.map_err(std::io::Error::other)?;
        running.waiting().await.map_err(std::io::Error::other)?;
        return Ok(());
    }
    let running = thoth
        .serve(rmcp::transport::stdio())
        .await
        .map_err(std::io::Error::other)?;
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}

/// stdin and stdout as pipes driven by the runtime's event loop, when both are pipes (how MCP clients start a
/// server). tokio's own stdin and stdout hand every read and every write to a blocking-pool thread and back,
/// which cost more CPU per call than the tool itself (`examples/stdio_latency.rs`); `None` for a terminal or a
/// file, which then go through them.
#[cfg(unix)]
fn stdio_pipes() -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let dup =
        |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().ok().map(std::fs::File::from);
    let input = dup(std::io::stdin().as_fd())?;
    let output = dup(std::io::stdout().as_fd())?;
    // Both checked before either is converted: conversion makes the descriptor non-blocking, which tokio's
    // stdin would not expect.
    let is_pipe = |f: &std::fs::File| f.metadata().is_ok_and(|m| m.file_type().is_fifo());
    if !is_pipe(&input) || !is_pipe(&output) {
        return None;
    }
    let receiver = tokio::net::unix::pipe::Receiver::from_file(input).ok()?;
    let sender = tokio::net::unix::pipe::Sender::from_file(output).ok()?;
    Some((receiver, sender))
}

/// Options of the HTTP transport.
#[derive(Debug, Clone, Default)]
pub struct HttpOptions {
    /// Host names (`Host` header) accepted; empty: any. Guards a server on loopback against DNS rebinding by a
    /// web page; a server on a network address is reached by names the operator chooses.
    pub allowed_hosts: Vec<String>,
}

impl HttpOptions {
    /// The options for a server listening on `addr`: loopback names only when it listens on loopback.
    pub fn for_address(addr: std::net::SocketAddr) -> HttpOptions {
        let allowed_hosts = if addr.ip().is_loopback() {
            vec![
                "localhost".into(),
                "127.0.0.1".into(),
                "::1".into(),
                "[::1]".into(),
            ]
        } else {
            Vec::new()
        };
        HttpOptions { allowed_hosts }
    }
}

/// The Streamable HTTP endpoint as a router answering [`HTTP_PATH`]: stateless (no session is kept between
/// requests; each request is answered by a fresh [`Thoth`] sharing `state`), JSON answers rather than event
/// streams for plain calls.
pub fn http_service(state: server::AppState, options: HttpOptions) -> axum::Router {
    let thoth = Thoth::new(state);
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None);
    config = if options.allowed_hosts.is_empty() {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(options.allowed_hosts)
    };
    let service = StreamableHttpService::new(
        move || Ok(thoth.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    axum::Router::new().route_service(HTTP_PATH, service)
}
