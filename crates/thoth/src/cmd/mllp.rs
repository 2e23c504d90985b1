//! `thoth mllp send` (print each ACK) and `thoth mllp bench` (throughput and latency percentiles).

use crate::data_dir::GlobalArgs;
use anyhow::Context;
use std::path::PathBuf;
use std::time::Duration;

/// Options of `thoth mllp`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Send the messages in each FILE (one or many per file, LF or CR line ends) and print each ACK.
    ///
    /// Every message is sent, whatever happens to the one before: a rejected message, or one that gets no ACK,
    /// is reported and the next one goes on a fresh connection. A message whose MSH-15 asks for no accept
    /// acknowledgement (`NE`, or `ER` when all goes well) is not waited for.
    Send {
        /// `[HOST:PORT] FILE...`: the listener (default: 127.0.0.1:2575, where `thoth serve` listens), then the
        /// message files (shell globs work).
        #[arg(required = true, value_name = "[ADDR] FILE")]
        targets: Vec<String>,
        #[command(flatten)]
        tls: TlsArgs,
        /// Seconds to wait for each ACK.
        #[arg(long, default_value_t = 30)]
        timeout: u64,
    },
    /// Measure a listener: messages per second and latency percentiles.
    Bench {
        /// The listener, `host:port`.
        addr: String,
        /// Concurrent connections.
        #[arg(long, default_value_t = 1)]
        connections: usize,
        /// Messages in all (split evenly over the connections).
        #[arg(long, default_value_t = 10_000)]
        messages: usize,
        /// The message to send (its first message); MSH-10 is made unique per message.
        #[arg(long)]
        file: PathBuf,
        /// Messages per connection sent before measuring.
        #[arg(long, default_value_t = 100)]
        warmup: usize,
        /// Print the result as one JSON object.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        tls: TlsArgs,
    },
}

#[derive(clap::Args, Debug)]
struct TlsArgs {
    /// Connect with TLS, trusting the authorities in this PEM file.
    #[arg(long, value_name = "PEM")]
    tls_ca: Option<PathBuf>,
    /// Client certificate chain (PEM) for mutual TLS.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// Client private key (PEM) for mutual TLS.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Name to check the server certificate against (default: the host of the address).
    #[arg(long)]
    server_name: Option<String>,
}

impl TlsArgs {
    fn client_config(&self, reply_timeout: Duration) -> anyhow::Result<mllp::ClientConfig> {
        let tls = match &self.tls_ca {
            None => None,
            Some(ca) => {
                let read = |p: &PathBuf| {
                    std::fs::read(p).with_context(|| format!("reading {}", p.display()))
                };
                let ca = read(ca)?;
                let identity = match (&self.tls_cert, &self.tls_key) {
                    (Some(c), Some(k)) => Some((read(c)?, read(k)?)),
                    _ => None,
                };
                let identity = identity.as_ref().map(|(c, k)| (c.as_slice(), k.as_slice()));
                Some(mllp::client_tls_config(&ca, identity)?)
            }
        };
        Ok(mllp::ClientConfig {
            tls,
            server_name: self.server_name.clone(),
            reply_timeout,
            ..Default::default()
        })
    }
}

pub fn run(_global: &GlobalArgs, args: Args) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    match args.command {
        Command::Send {
            targets,
            tls,
            timeout,
        } => {
            let (addr, files) = split_targets(targets)?;
            let cfg = tls.client_config(Duration::from_secs(timeout))?;
            runtime.block_on(send(&addr, &files, cfg))
        }
        Command::Bench {
            addr,
            connections,
            messages,
            file,
            warmup,
            json,
            tls,
        } => {
            let cfg = tls.client_config(Duration::from_secs(30))?;
            let message = first_message(&file)?;
            let opts = interface::LoadOptions {
                connections,
                messages,
                warmup,
                client: cfg,
            };
            let report = runtime.block_on(interface::load(&addr, &message, &opts))?;
            print_report(&report, json);
            if report.errors > 0 {
                anyhow::bail!("{} messages were not accepted", report.errors);
            }
            Ok(())
        }
    }
}

/// The messages of a file with line ends made CR, as HL7 v2 requires on the wire.
fn messages_of(path: &PathBuf) -> anyhow::Result<Vec<Vec<u8>>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut text = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                text.push(b'\r');
                i += 1;
            }
            b'\n' => text.push(b'\r'),
            b => text.push(b),
        }
        i += 1;
    }
    let messages: Vec<Vec<u8>> = hl7v2::messages(&text)
        .map(|m| m.as_bytes().to_vec())
        .collect();
    if messages.is_empty() {
        anyhow::bail!(
            "{} holds no HL7 v2 message (no MSH segment)",
            path.display()
        );
    }
    Ok(messages)
}

fn first_message(path: &PathBuf) -> anyhow::Result<Vec<u8>> {
    Ok(messages_of(path)?.swap_remove(0))
}

/// Where `thoth serve` listens for MLLP by default.
const DEFAULT_MLLP_ADDR: &str = "127.0.0.1:2575";

/// `[ADDR] FILE...`: the first argument is the address when it is not a file and reads as `host:port`.
fn split_targets(mut targets: Vec<String>) -> anyhow::Result<(String, Vec<PathBuf>)> {
    let first = &targets[0];
    let is_addr = !std::path::Path::new(first).exists()
        && first
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    let addr = if is_addr {
        targets.remove(0)
    } else {
        DEFAULT_MLLP_ADDR.to_string()
    };
    if targets.is_empty() {
        anyhow::bail!("no message file to send to {addr}");
    }
    Ok((addr, targets.into_iter().map(PathBuf::from).collect()))
}

/// What became of one message.
enum Outcome {
    Accepted,
    Rejected,
    NoAnswer,
    NotWaited,
}

async fn send(addr: &str, files: &[PathBuf], cfg: mllp::ClientConfig) -> anyhow::Result<()> {
    let mut client = None;
    let (mut sent, mut accepted, mut rejected, mut unanswered, mut not_waited) = (0, 0, 0, 0, 0);
    for file in files {
        for msg in messages_of(file)? {
            sent += 1;
            let parsed = hl7v2::Message::parse(&msg);
            let id = parsed.get("MSH-10").unwrap_or_default().into_owned();
            let label = format!("{} message {id:?}", file.display());
            // MSH-15 governs the accept acknowledgement the receiver sends (`NE` never; `ER` only on error).
            let waits = parsed.ack_required(hl7v2::AckCode::CA);
            let outcome = send_one(addr, &cfg, &mut client, &msg, waits, &label).await;
            match outcome {
                Outcome::Accepted => accepted += 1,
                Outcome::Rejected => rejected += 1,
                Outcome::NoAnswer => unanswered += 1,
                Outcome::NotWaited => not_waited += 1,
            }
        }
    }
    if let Some(c) = client {
        c.close().await;
    }
    eprintln!(
        "{sent} sent to {addr}: {accepted} accepted, {rejected} not accepted, {unanswered} without an answer, \
         {not_waited} not waited for (MSH-15)"
    );
    if rejected + unanswered > 0 {
        anyhow::bail!("{} message(s) were not accepted", rejected + unanswered);
    }
    Ok(())
}

/// Sends one message on the open connection (opening one if there is none) and prints its ACK. A connection
/// that failed or timed out is dropped, so that a late ACK is never read as the next message's.
async fn send_one(
    addr: &str,
    cfg: &mllp::ClientConfig,
    client: &mut Option<mllp::Client>,
    msg: &[u8],
    waits: bool,
    label: &str,
) -> Outcome {
    let conn = match client {
        Some(c) => c,
        None => match mllp::Client::connect(addr, cfg.clone()).await {
            Ok(c) => client.insert(c),
            Err(e) => {
                eprintln!("{label}: not sent: {e}");
                return Outcome::NoAnswer;
            }
        },
    };
    if !waits {
        return match conn.write(msg).await {
            Ok(()) => {
                println!("{label}: sent; MSH-15 asks for no acknowledgement\n");
                Outcome::NotWaited
            }
            Err(e) => {
                eprintln!("{label}: not sent: {e}");
                *client = None;
                Outcome::NoAnswer
            }
        };
    }
    let id = hl7v2::Message::parse(msg)
        .get("MSH-10")
        .unwrap_or_default()
        .into_owned();
    let mut reply = conn.send(msg).await;
    // An error ACK to an earlier message not waited for (MSH-15 `ER`) may arrive first: report it as that
    // message's, and read on for this one's.
    for _ in 0..64 {
        let Ok(ack) = &reply else { break };
        let answers = hl7v2::Message::parse(ack)
            .get("MSA-2")
            .unwrap_or_default()
            .into_owned();
        if answers == id || answers.is_empty() {
            break;
        }
        eprintln!(
            "a late acknowledgement of message {answers:?}: {}",
            String::from_utf8_lossy(ack).trim_end().replace('\r', " | ")
        );
        reply = conn.read_reply().await;
    }
    match reply {
        Ok(ack) => {
            let code = hl7v2::Message::parse(&ack)
                .get("MSA-1")
                .unwrap_or_default()
                .into_owned();
            // One ACK per line block, segments on their own lines for reading.
            println!(
                "{}\n",
                String::from_utf8_lossy(&ack)
                    .trim_end_matches('\r')
                    .replace('\r', "\n")
            );
            if hl7v2::AckCode::parse(&code).is_some_and(|c| c.is_success()) {
                Outcome::Accepted
            } else {
                eprintln!("{label}: not accepted (MSA-1 {code:?})");
                Outcome::Rejected
            }
        }
        Err(e) => {
            eprintln!("{label}: no acknowledgement: {e}");
            *client = None;
            Outcome::NoAnswer
        }
    }
}

fn print_report(r: &interface::LoadReport, json: bool) {
    let p = |q| r.percentile_ms(q);
    let (p50, p90, p99, p999) = (p(50.0), p(90.0), p(99.0), p(99.9));
    if json {
        println!(
            "{}",
            serde_json::json!({
                "connections": r.connections,
                "messages": r.messages,
                "errors": r.errors,
                "seconds": r.elapsed.as_secs_f64(),
                "msg_per_s": r.rate(),
                "p50_ms": p50, "p90_ms": p90, "p99_ms": p99, "p999_ms": p999,
            })
        );
    } else {
        println!(
            "{} messages over {} connection(s) in {:.3} s: {:.0} msg/s; latency ms p50 {p50:.3} p90 {p90:.3} \
             p99 {p99:.3} p99.9 {p999:.3}; {} not accepted",
            r.messages,
            r.connections,
            r.elapsed.as_secs_f64(),
            r.rate(),
            r.errors
        );
    }
}
