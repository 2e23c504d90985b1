//! The audit trail of the message routes: who read or replayed which message, when, from where, and whether it
//! was allowed.
//!
//! One JSON object a line, appended to `<data>/audit.log` (when the server has a data directory) and logged under
//! the `audit` tracing target. The file is opened in append mode and each line goes out in one `write` of an
//! `O_APPEND` file, so lines are never interleaved or overwritten; it is not synced per line (a crash of the
//! machine can lose the last lines, as the page cache does), and it is never rotated or pruned by the server:
//! that, and shipping it somewhere the server cannot rewrite, is left to the operator (docs/SECURITY.md).

use crate::state::AppState;
use serde_json::json;
use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// Where the audit trail is written: `<data>/audit.log`, opened at the first access to a message route.
#[derive(Debug, Default)]
pub struct AuditLog {
    path: Option<PathBuf>,
    /// Opened lazily so that a server nobody asks for messages creates no file; `None` inside when it could not
    /// be opened (said once in the log).
    file: OnceLock<Option<Mutex<File>>>,
}

impl AuditLog {
    /// The audit trail of a server whose data directory is `data_dir` (none: the tracing log only).
    pub fn for_data_dir(data_dir: Option<&Path>) -> AuditLog {
        AuditLog {
            path: data_dir.map(|d| d.join("audit.log")),
            file: OnceLock::new(),
        }
    }

    /// The file the trail is appended to, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn file(&self) -> Option<&Mutex<File>> {
        self.file
            .get_or_init(|| {
                let path = self.path.as_ref()?;
                let mut options = std::fs::OpenOptions::new();
                options.append(true).create(true);
                // Who looked at which patient's message is itself sensitive: owner only.
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                match options.open(path) {
                    Ok(f) => Some(Mutex::new(f)),
                    Err(e) => {
                        tracing::error!(path = %path.display(), "cannot open the audit log: {e}");
                        None
                    }
                }
            })
            .as_ref()
    }
}

/// One access to a message route.
pub(crate) struct Event {
    pub peer: Option<SocketAddr>,
    /// The token's name or the JWT's `sub`; `-` when there is none.
    pub subject: String,
    /// How the request was admitted: `token`, `jwt`, `loopback`, `open`, or `none` (refused).
    pub auth: &'static str,
    pub method: String,
    /// The route template, such as `/messages/{id}/raw`.
    pub route: String,
    pub message_id: Option<String>,
    /// `allowed` or `refused`.
    pub outcome: &'static str,
    /// The HTTP status answered.
    pub status: u16,
    /// Why it was refused.
    pub reason: Option<String>,
}

/// Records `event` in the tracing log and in the audit file.
pub(crate) fn record(state: &AppState, event: &Event) {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let peer = event
        .peer
        .map_or_else(|| "-".to_string(), |p| p.to_string());
    tracing::info!(
        target: "audit",
        peer = %peer,
        subject = %event.subject,
        auth = event.auth,
        method = %event.method,
        route = %event.route,
        message_id = event.message_id.as_deref().unwrap_or("-"),
        outcome = event.outcome,
        status = event.status,
        reason = event.reason.as_deref().unwrap_or(""),
        "message route access"
    );
    let Some(file) = state.audit.file() else {
        return;
    };
    let mut line = json!({
        "time": crate::messages_api::iso_time(now_ms),
        "peer": peer,
        "subject": event.subject,
        "auth": event.auth,
        "method": event.method,
        "route": event.route,
        "message_id": event.message_id,
        "outcome": event.outcome,
        "status": event.status,
        "reason": event.reason,
    })
    .to_string();
    line.push('\n');
    let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(e) = f.write_all(line.as_bytes()) {
        tracing::error!("cannot append to the audit log: {e}");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_are_iso_utc() {
        assert_eq!(crate::messages_api::iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            crate::messages_api::iso_time(1_710_513_000_123),
            "2024-03-15T14:30:00.123Z"
        );
    }
}
