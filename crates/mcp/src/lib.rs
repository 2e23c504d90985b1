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
    let running = Thoth::new(state)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(std::io::Error::other)?;
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
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
