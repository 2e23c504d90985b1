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
        "time": iso_time(now_ms),
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

/// `2024-03-15T14:30:00.123Z` (as `messages_api` prints times; Howard Hinnant's civil-from-days).
fn iso_time(ms: u64) -> String {
    let secs = (ms / 1000) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_are_iso_utc() {
        assert_eq!(super::iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            super::iso_time(1_710_513_000_123),
            "2024-03-15T14:30:00.123Z"
        );
    }
}
