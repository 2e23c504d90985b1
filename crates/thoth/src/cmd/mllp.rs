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
    Send {
        /// The listener, `host:port`.
        addr: String,
        /// Message files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
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
            addr,
            files,
            tls,
            timeout,
        } => {
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

async fn send(addr: &str, files: &[PathBuf], cfg: mllp::ClientConfig) -> anyhow::Result<()> {
    let mut client = mllp::Client::connect(addr, cfg).await?;
    let mut rejected = 0;
    for file in files {
        for msg in messages_of(file)? {
            let ack = client.send(&msg).await?;
            let parsed = hl7v2::Message::parse(&ack);
            let code = parsed.get("MSA-1").unwrap_or_default().into_owned();
            if !hl7v2::AckCode::parse(&code).is_some_and(|c| c.is_success()) {
                rejected += 1;
            }
            // One ACK per line block, segments on their own lines for reading.
            println!(
                "{}",
                String::from_utf8_lossy(&ack)
                    .trim_end_matches('\r')
                    .replace('\r', "\n")
            );
            println!();
        }
    }
    client.close().await;
    if rejected > 0 {
        anyhow::bail!("{rejected} message(s) were not accepted");
    }
    Ok(())
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
