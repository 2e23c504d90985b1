//! Routes: which messages go where, and the three kinds of destination.

use crate::config::RouteConfig;
use crate::record::MessageId;
use std::path::PathBuf;
use std::time::Duration;

/// The header fields routing and duplicate detection look at.
#[derive(Debug, Clone, Default)]
pub(crate) struct Header {
    pub sender: String,
    pub sender_app: String,
    pub message_type: String,
    pub trigger: String,
    pub control_id: String,
}

impl Header {
    pub(crate) fn read(msg: &hl7v2::Message<'_>) -> Header {
        let get = |p: &str| msg.get(p).map(|v| v.into_owned()).unwrap_or_default();
        let app = get("MSH-3-1");
        let facility = get("MSH-4-1");
        let sender = if facility.is_empty() {
            app.clone()
        } else {
            format!("{app}@{facility}")
        };
        Header {
            sender,
            sender_app: app,
            message_type: get("MSH-9-1"),
            trigger: get("MSH-9-2"),
            control_id: get("MSH-10"),
        }
    }
}

/// A route's filter.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    pub name: String,
    pub config: RouteConfig,
}

impl Route {
    pub(crate) fn matches(&self, h: &Header) -> bool {
        let any_of = |list: &[String], v: &str| list.is_empty() || list.iter().any(|x| x == v);
        any_of(&self.config.types, &h.message_type)
            && any_of(&self.config.triggers, &h.trigger)
            && (self.config.senders.is_empty()
                || self
                    .config
                    .senders
                    .iter()
                    .any(|s| *s == h.sender || *s == h.sender_app))
    }
}

/// A destination with its connection state.
pub(crate) enum Target {
    Mllp {
        addr: String,
        client: Option<Box<mllp::Client>>,
    },
    Http {
        url: String,
        client: reqwest::Client,
    },
    Dir {
        path: PathBuf,
        /// Write the message's FHIR Bundle instead of its bytes.
        fhir: bool,
        /// `[to_fhir] time_zone`.
        zone: Option<v2fhir::TimeZone>,
    },
    /// A FHIR server: each message's Bundle, as a transaction, POSTed to its base URL.
    Fhir {
        url: String,
        client: reqwest::Client,
        /// `[to_fhir] time_zone`.
        zone: Option<v2fhir::TimeZone>,
    },
}

impl Target {
    /// `zone`: `[to_fhir] time_zone`, for the routes that convert.
    pub(crate) fn new(
        config: &RouteConfig,
        attempt_timeout: Duration,
        zone: Option<&v2fhir::TimeZone>,
    ) -> Target {
        if let Some(addr) = &config.mllp {
            Target::Mllp {
                addr: addr.clone(),
                client: None,
            }
        } else if let Some(url) = &config.http {
            let client = reqwest::Client::builder()
                .timeout(attempt_timeout)
                .build()
                .unwrap_or_default();
            Target::Http {
                url: url.clone(),
                client,
            }
        } else if let Some(url) = &config.fhir {
            let client = reqwest::Client::builder()
                .timeout(attempt_timeout)
                .build()
                .unwrap_or_default();
            Target::Fhir {
                url: url.trim_end_matches('/').to_string(),
                client,
                zone: zone.cloned(),
            }
        } else {
            Target::Dir {
                path: config.dir.clone().unwrap_or_default(),
                fhir: config.format.as_deref() == Some("fhir-json"),
                zone: zone.cloned(),
            }
        }
    }

    /// One delivery attempt: `Ok(detail)` when the destination took the message, `Err(detail)` when not.
    pub(crate) async fn deliver(&mut self, id: MessageId, raw: &[u8]) -> Result<String, String> {
        match self {
            Target::Mllp { addr, client } => {
                let result = deliver_mllp(addr, client, raw).await;
                if result.is_err() {
                    // After an error the stream may be out of step with its answers: start afresh.
                    *client = None;
                }
                result
            }
            Target::Http { url, client } => {
                let response = client
                    .post(url.as_str())
                    .header("content-type", "x-application/hl7-v2+er7")
                    .body(raw.to_vec())
                    .send()
                    .await
                    .map_err(|e| format!("POST {url}: {e}"))?;
                http_outcome(response).await
            }
            Target::Dir { path, fhir, zone } => {
                let fhir = *fhir;
                let dir = path.clone();
                let zone = zone.clone();
                let raw = raw.to_vec();
                tokio::task::spawn_blocking(move || {
                    let msg = hl7v2::Message::parse(&raw);
                    let control = msg
                        .get("MSH-10")
                        .map(|c| c.into_owned())
                        .unwrap_or_default();
                    let name = file_name(id, &control, if fhir { "json" } else { "hl7" });
                    if fhir {
                        let bundle = to_bundle(&msg, v2fhir::BundleType::Message, zone.as_ref())?;
                        write_file(&dir, &name, &bundle)
                    } else {
                        write_file(&dir, &name, &raw)
                    }
                })
                .await
                .map_err(|e| e.to_string())?
            }
            Target::Fhir { url, client, zone } => {
                // Conversion is CPU work (tens of microseconds): beside the runtime's I/O threads.
                let owned = raw.to_vec();
                let zone = zone.clone();
                let bundle = tokio::task::spawn_blocking(move || {
                    to_bundle(
                        &hl7v2::Message::parse(&owned),
                        v2fhir::BundleType::Transaction,
                        zone.as_ref(),
                    )
                })
                .await
                .map_err(|e| e.to_string())??;
                let response = client
                    .post(url.as_str())
                    .header("content-type", "application/fhir+json")
                    .header("accept", "application/fhir+json")
                    .body(bundle)
                    .send()
                    .await
                    .map_err(|e| format!("POST {url}: {e}"))?;
                http_outcome(response).await
            }
        }
    }
}

async fn deliver_mllp(
    addr: &str,
    client: &mut Option<Box<mllp::Client>>,
    raw: &[u8],
) -> Result<String, String> {
    if client.is_none() {
        let c = mllp::Client::connect(addr, mllp::ClientConfig::default())
            .await
            .map_err(|e| e.to_string())?;
        *client = Some(Box::new(c));
    }
    let c = client.as_mut().expect("connected above");
    let reply = c.send(raw).await.map_err(|e| e.to_string())?;
    let expected = hl7v2::Message::parse(raw)
        .get("MSH-10")
        .unwrap_or_default()
        .into_owned();
    let ack = hl7v2::Message::parse(&reply);
    let code = ack.get("MSA-1").unwrap_or_default().into_owned();
    let acked = ack.get("MSA-2").unwrap_or_default().into_owned();
    if acked != expected {
        return Err(format!(
            "ACK for another message: MSA-2 {acked:?}, sent MSH-10 {expected:?}"
        ));
    }
    match hl7v2::AckCode::parse(&code) {
        Some(c) if c.is_success() => Ok(code),
        Some(_) => {
            let text = ack
                .get("MSA-3")
                .or_else(|| ack.get("ERR-8"))
                .or_else(|| ack.get("ERR-3-2"))
                .unwrap_or_default();
            Err(format!("{code} {text}").trim().to_string())
        }
        None => Err(format!("answer is not an ACK (MSA-1 {code:?})")),
    }
}

/// A 2xx answer is a delivery (`HTTP 200`); anything else fails with the status and the start of the body.
async fn http_outcome(response: reqwest::Response) -> Result<String, String> {
    let status = response.status();
    if status.is_success() {
        Ok(format!("HTTP {}", status.as_u16()))
    } else {
        let body = body_prefix(response, ERROR_BODY_PREFIX).await;
        Err(format!(
            "HTTP {}: {}",
            status.as_u16(),
            truncate(&body, 200)
        ))
    }
}

/// The FHIR Bundle a message becomes by the HL7 v2-to-FHIR guide. Deterministic: a redelivery sends the same
/// Bundle, with the same resource ids. `Err`: the delivery's detail when the message is too large to convert
/// (its attempts fail, and it is dead-lettered with that reason).
pub(crate) fn to_bundle(
    msg: &hl7v2::Message<'_>,
    bundle: v2fhir::BundleType,
    time_zone: Option<&v2fhir::TimeZone>,
) -> Result<Vec<u8>, String> {
    let options = v2fhir::Options {
        bundle,
        time_zone,
        ..Default::default()
    };
    v2fhir::convert_json(msg, &options).map_err(|e| e.to_string())
}

/// `000000000042-CTRL.hl7`: sorted by arrival, and the same name on redelivery, so a retry after a crash
/// overwrites instead of duplicating.
fn file_name(id: MessageId, control_id: &str, ext: &str) -> String {
    let safe: String = control_id
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() {
        format!("{:012}.{ext}", id.0)
    } else {
        format!("{:012}-{safe}.{ext}", id.0)
    }
}

/// Writes to a temporary name, fsyncs, renames and fsyncs the directory: a reader never sees half a file, and a
/// file that exists survives a crash.
fn write_file(dir: &std::path::Path, name: &str, raw: &[u8]) -> Result<String, String> {
    use std::io::Write;
    let fail = |what: &str, e: std::io::Error| format!("{what} {}: {e}", dir.display());
    std::fs::create_dir_all(dir).map_err(|e| fail("creating", e))?;
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = std::fs::File::create(&tmp).map_err(|e| fail("writing into", e))?;
    f.write_all(raw).map_err(|e| fail("writing into", e))?;
    f.sync_all().map_err(|e| fail("syncing a file in", e))?;
    drop(f);
    std::fs::rename(&tmp, dir.join(name)).map_err(|e| fail("renaming in", e))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(format!("wrote {name}"))
}

/// How much of a failed delivery's answer is read for its error detail: the detail keeps its first 200
/// characters, and a destination that answers a flood (or never ends its body) must not be read whole.
const ERROR_BODY_PREFIX: usize = 4096;

/// The first `max` bytes of `response`'s body (fewer when it ends sooner or fails), as text; the rest is not
/// read.
async fn body_prefix(mut response: reqwest::Response, max: usize) -> String {
    let mut prefix = Vec::new();
    while prefix.len() < max {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let take = chunk.len().min(max - prefix.len());
                prefix.extend_from_slice(&chunk[..take]);
            }
            Ok(None) | Err(_) => break,
        }
    }
    String::from_utf8_lossy(&prefix).into_owned()
}

fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A destination that fails with an endless body: the error detail is cut from a bounded prefix, read
    /// without waiting for the body's end (reading it whole would wait for the attempt's timeout, and hold
    /// all of it in memory).
    #[tokio::test]
    async fn a_failed_http_delivery_reads_a_bounded_prefix_of_the_answer() {
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = tcp.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut socket, _) = tcp.accept().await.unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !request.ends_with(b"MSH|^~\\&|A|B\r") {
                let n = socket.read(&mut buf).await.unwrap();
                assert!(n > 0, "the request ended early");
                request.extend_from_slice(&buf[..n]);
            }
            socket
                .write_all(
                    b"HTTP/1.1 500 Internal Server Error\r\ntransfer-encoding: chunked\r\n\r\n",
                )
                .await
                .unwrap();
            // 64 KiB now, then nothing: the body never ends.
            let chunk = format!("{:x}\r\n{}\r\n", 64 * 1024, "x".repeat(64 * 1024));
            socket.write_all(chunk.as_bytes()).await.unwrap();
            tokio::time::sleep(Duration::from_secs(60)).await;
        });
        let mut target = Target::Http {
            url: format!("http://127.0.0.1:{port}/in"),
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
        };
        let result = tokio::time::timeout(
            Duration::from_secs(5),
            target.deliver(MessageId(1), b"MSH|^~\\&|A|B\r"),
        )
        .await
        .expect("the detail is read without waiting for the body's end");
        let detail = result.unwrap_err();
        assert_eq!(detail, format!("HTTP 500: {}", "x".repeat(200)));
        server.abort();
    }
}
