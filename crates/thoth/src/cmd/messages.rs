//! `thoth messages list|show|replay`: the interface engine's store, through a running server's HTTP API.

use crate::data_dir::GlobalArgs;
use anyhow::Context;
use serde_json::Value;

/// Options of `thoth messages`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The running server's HTTP address.
    #[arg(
        long,
        default_value = "http://127.0.0.1:8080",
        env = "THOTH_URL",
        global = true
    )]
    server: String,
    /// A bearer token (or a JWT) for a server started with `--auth` (docs/SECURITY.md); from $THOTH_TOKEN rather
    /// than the command line, where other users can read it.
    #[arg(long, env = "THOTH_TOKEN", global = true, hide_env_values = true)]
    token: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// List stored messages, newest first.
    List {
        /// Message type (MSH-9-1).
        #[arg(long = "type")]
        message_type: Option<String>,
        /// Trigger event (MSH-9-2).
        #[arg(long)]
        trigger: Option<String>,
        /// Sender (MSH-3-1, or APP@FACILITY).
        #[arg(long)]
        sender: Option<String>,
        /// Message control ID (MSH-10).
        #[arg(long)]
        control_id: Option<String>,
        /// stored, pending, delivered, dead, duplicate or rejected.
        #[arg(long)]
        status: Option<String>,
        /// Received at or after (ms since the epoch or YYYY-MM-DD[THH:MM:SS]).
        #[arg(long)]
        since: Option<String>,
        /// Received before.
        #[arg(long)]
        until: Option<String>,
        /// Skip this many.
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// Show at most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Print the server's JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one message: header facts, delivery history and the message itself.
    Show {
        /// The message id.
        id: u64,
        /// Print only the exact bytes received.
        #[arg(long, conflicts_with = "json")]
        raw: bool,
        /// Print the server's JSON (includes the JSON view of the message).
        #[arg(long)]
        json: bool,
    },
    /// Queue a message again on every route that matches it.
    Replay {
        /// The message id.
        id: u64,
    },
}

pub fn run(_global: &GlobalArgs, args: Args) -> anyhow::Result<()> {
    let base = args.server.trim_end_matches('/').to_string();
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(token) = &args.token {
        let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {}", token.trim()))
            .context("the token holds characters an HTTP header cannot")?;
        value.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    let http = reqwest::blocking::Client::builder()
        .default_headers(headers)
        .build()
        .context("building the HTTP client")?;
    match args.command {
        Command::List {
            message_type,
            trigger,
            sender,
            control_id,
            status,
            since,
            until,
            offset,
            limit,
            json,
        } => {
            let mut query: Vec<(&str, String)> =
                vec![("offset", offset.to_string()), ("limit", limit.to_string())];
            for (k, v) in [
                ("type", message_type),
                ("trigger", trigger),
                ("sender", sender),
                ("control_id", control_id),
                ("status", status),
                ("since", since),
                ("until", until),
            ] {
                if let Some(v) = v {
                    query.push((k, v));
                }
            }
            let page = get_json(http.get(format!("{base}/messages")).query(&query))?;
            if json {
                println!("{}", serde_json::to_string_pretty(&page)?);
                return Ok(());
            }
            // Columns as wide as their widest value, so that long senders and control ids keep them lined up.
            let mut rows = vec![
                ["id", "received", "type", "sender", "control id", "status"].map(String::from),
            ];
            for m in page["items"].as_array().into_iter().flatten() {
                rows.push([
                    m["id"].to_string(),
                    s(&m["received"]).to_string(),
                    format!("{}^{}", s(&m["type"]), s(&m["trigger"])),
                    s(&m["sender"]).to_string(),
                    s(&m["control_id"]).to_string(),
                    s(&m["status"]).to_string(),
                ]);
            }
            let mut widths = [0usize; 6];
            for row in &rows {
                for (w, cell) in widths.iter_mut().zip(row) {
                    *w = (*w).max(cell.chars().count());
                }
            }
            for row in &rows {
                let line = format!(
                    "{:>w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {:<w4$}  {}",
                    row[0],
                    row[1],
                    row[2],
                    row[3],
                    row[4],
                    row[5],
                    w0 = widths[0],
                    w1 = widths[1],
                    w2 = widths[2],
                    w3 = widths[3],
                    w4 = widths[4],
                );
                println!("{}", line.trim_end());
            }
            let shown = page["items"].as_array().map_or(0, |a| a.len());
            println!("{shown} shown of {} matching", page["total"]);
            Ok(())
        }
        Command::Show { id, raw, json } => {
            if raw {
                let bytes = send(http.get(format!("{base}/messages/{id}/raw")))?.bytes()?;
                use std::io::Write;
                std::io::stdout().write_all(&bytes)?;
                return Ok(());
            }
            let m = get_json(http.get(format!("{base}/messages/{id}")))?;
            if json {
                println!("{}", serde_json::to_string_pretty(&m)?);
                return Ok(());
            }
            println!(
                "id {}  received {}  from {}",
                m["id"],
                s(&m["received"]),
                s(&m["peer"])
            );
            println!(
                "{}^{}  sender {}  control id {}  status {}  {} bytes",
                s(&m["type"]),
                s(&m["trigger"]),
                s(&m["sender"]),
                s(&m["control_id"]),
                s(&m["status"]),
                m["size"]
            );
            if let Some(note) = m["note"].as_str() {
                println!("note: {note}");
            }
            let v = &m["validation"];
            if v.is_object() {
                println!(
                    "validation ({} v{}, mode {}): {}",
                    v["structure"].as_str().unwrap_or("unknown structure"),
                    s(&v["version"]),
                    s(&v["mode"]),
                    if v["valid"] == true {
                        "valid"
                    } else {
                        "INVALID"
                    }
                );
                for i in v["issues"].as_array().into_iter().flatten() {
                    println!(
                        "  {} {} {}: {}",
                        s(&i["severity"]),
                        s(&i["code"]),
                        s(&i["path"]),
                        s(&i["message"])
                    );
                }
            }
            for d in m["deliveries"].as_array().into_iter().flatten() {
                println!(
                    "route {}: {} after {} attempt(s)",
                    s(&d["route"]),
                    s(&d["status"]),
                    d["attempts"]
                );
                for a in d["history"].as_array().into_iter().flatten() {
                    println!(
                        "  {}  {}  {}",
                        s(&a["at"]),
                        if a["ok"] == true { "ok  " } else { "fail" },
                        s(&a["detail"])
                    );
                }
            }
            println!();
            println!(
                "{}",
                s(&m["raw"]).trim_end_matches('\r').replace('\r', "\n")
            );
            Ok(())
        }
        Command::Replay { id } => {
            let r = get_json(http.post(format!("{base}/messages/{id}/replay")))?;
            let routes: Vec<&str> = r["routes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str())
                .collect();
            if routes.is_empty() {
                println!("message {id}: no route matches it; nothing queued");
            } else {
                println!("message {id} queued again on: {}", routes.join(", "));
            }
            Ok(())
        }
    }
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn send(req: reqwest::blocking::RequestBuilder) -> anyhow::Result<reqwest::blocking::Response> {
    let resp = req
        .send()
        .context("is `thoth serve` running? (--server, $THOTH_URL)")?;
    if resp.status().is_success() {
        return Ok(resp);
    }
    let status = resp.status();
    let body: Value = resp.json().unwrap_or(Value::Null);
    let why = body["issue"][0]["diagnostics"]
        .as_str()
        .unwrap_or("")
        .to_string();
    anyhow::bail!("server answered {status}: {why}")
}

fn get_json(req: reqwest::blocking::RequestBuilder) -> anyhow::Result<Value> {
    Ok(send(req)?.json()?)
}
