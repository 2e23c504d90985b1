//! `thoth hl7`: JSON view, path reads, re-encoding, ACKs and checks over files of HL7 v2 messages.
//!
//! Every subcommand takes a FILE (`-` for stdin) holding one message, many messages or a batch file, and walks it
//! with `hl7v2::split`, one chunk at a time.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use hl7v2::{AckCode, AckMode, ChunkKind, Message, MessageBuf, Severity};

use crate::data_dir::GlobalArgs;

/// Options of `thoth hl7`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Print the JSON view of each message (shape: see the hl7v2 crate's `to_json`).
    Json {
        /// File of messages, `-` for stdin.
        file: PathBuf,
        /// One JSON object per line instead of pretty-printed.
        #[arg(long)]
        compact: bool,
    },
    /// Print the value at a Terser-style path (`PID-5-1`, `OBX(3)-5`), one line per message.
    Get {
        /// File of messages, `-` for stdin.
        file: PathBuf,
        /// The path, e.g. `PID-3(2)-1`.
        path: String,
        /// Print the raw (escaped) bytes at the path's depth instead of decoded text (`PID-5` → `DOE^JOHN`).
        #[arg(long)]
        raw: bool,
    },
    /// Re-encode to stdout: byte for byte unless edits are given.
    Fmt {
        /// File of messages, `-` for stdin.
        file: PathBuf,
        /// Set a value in every message before encoding, e.g. `--set PID-5-1=DOE` (repeatable).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        set: Vec<String>,
        /// Remove every segment with this identifier (repeatable).
        #[arg(long = "remove", value_name = "SEGMENT")]
        remove: Vec<String>,
    },
    /// Print an acknowledgement for each message.
    Ack {
        /// File of messages, `-` for stdin.
        file: PathBuf,
        /// AA, AE, AR (original mode) or CA, CE, CR (enhanced). Default: accept (AA or CA by the message's mode),
        /// or reject (AR or CR, with ERR segments) when the message has parse errors.
        #[arg(long)]
        code: Option<String>,
        /// MSA-3 text.
        #[arg(long)]
        text: Option<String>,
    },
    /// Print diagnostics; exit code 1 if any message has an error.
    Check {
        /// File of messages, `-` for stdin.
        file: PathBuf,
    },
}

pub fn run(_global: &GlobalArgs, args: Args) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let terminal = stdout.is_terminal();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.command {
        Command::Json { file, compact } => {
            let input = read_input(&file)?;
            for msg in hl7v2::messages(&input) {
                let json = hl7v2::to_json(&msg);
                if compact {
                    writeln!(out, "{json}")?;
                } else {
                    writeln!(out, "{json:#}")?;
                }
            }
        }
        Command::Get { file, path, raw } => {
            let path = hl7v2::Path::parse(&path)?;
            let input = read_input(&file)?;
            for msg in hl7v2::messages(&input) {
                if raw {
                    out.write_all(msg.raw(&path).unwrap_or_default())?;
                    out.write_all(b"\n")?;
                } else {
                    writeln!(out, "{}", msg.get(&path).unwrap_or_default())?;
                }
            }
        }
        Command::Fmt { file, set, remove } => {
            let edits = set
                .iter()
                .map(|s| {
                    let (p, v) = s
                        .split_once('=')
                        .with_context(|| format!("--set {s:?}: expected PATH=VALUE"))?;
                    Ok((hl7v2::Path::parse(p)?, v.to_owned()))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let input = read_input(&file)?;
            for chunk in hl7v2::split(&input) {
                if chunk.kind != ChunkKind::Message || (edits.is_empty() && remove.is_empty()) {
                    out.write_all(chunk.bytes)?;
                    continue;
                }
                let msg = chunk.parse();
                let mut buf = MessageBuf::from(&msg);
                for id in &remove {
                    buf.remove_segments(id);
                }
                for (path, value) in &edits {
                    buf.set(path, value).with_context(|| {
                        format!("message at byte {}: setting {path}", chunk.offset)
                    })?;
                }
                out.write_all(&buf.encode())?;
            }
        }
        Command::Ack { file, code, text } => {
            let code = code
                .map(|c| {
                    AckCode::parse(&c)
                        .with_context(|| format!("unknown acknowledgement code {c:?}"))
                })
                .transpose()?;
            let input = read_input(&file)?;
            for msg in hl7v2::messages(&input) {
                let code = code.unwrap_or_else(|| default_code(&msg));
                if !msg.ack_required(code) {
                    eprintln!(
                        "message {}: MSH-15/MSH-16 ask for no {code} acknowledgement; none printed",
                        msg.get("MSH-10").unwrap_or_default()
                    );
                    continue;
                }
                let mut ack = msg.ack(code);
                if let Some(t) = &text {
                    ack = ack.text(t.clone());
                }
                if !code.is_success() {
                    ack = ack.errors_from_diagnostics();
                }
                let mut bytes = ack.build();
                if terminal {
                    // CR alone would make each segment overwrite the previous one on screen.
                    for b in &mut bytes {
                        if *b == b'\r' {
                            *b = b'\n';
                        }
                    }
                }
                out.write_all(&bytes)?;
            }
        }
        Command::Check { file } => {
            let input = read_input(&file)?;
            let name = file.display().to_string();
            let (messages, errors, warnings) = check(&input, &name, &mut out)?;
            out.flush()?;
            eprintln!("{name}: {messages} message(s), {errors} error(s), {warnings} warning(s)");
            if errors > 0 {
                std::process::exit(1);
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// Accept, or reject when the message did not parse cleanly; commit codes in enhanced mode.
fn default_code(msg: &Message<'_>) -> AckCode {
    match (msg.ack_mode(), msg.has_errors()) {
        (AckMode::Original, false) => AckCode::AA,
        (AckMode::Original, true) => AckCode::AR,
        (AckMode::Enhanced, false) => AckCode::CA,
        (AckMode::Enhanced, true) => AckCode::CR,
    }
}

/// Prints every diagnostic as `FILE:OFFSET: message N: ...`; returns (messages, errors, warnings).
fn check(input: &[u8], name: &str, out: &mut impl Write) -> anyhow::Result<(usize, usize, usize)> {
    let (mut messages, mut errors, mut warnings) = (0, 0, 0);
    for chunk in hl7v2::split(input) {
        if chunk.kind == ChunkKind::Other {
            if !chunk.bytes.iter().all(u8::is_ascii_whitespace) {
                errors += 1;
                writeln!(
                    out,
                    "{name}:{}: error: text that is not an HL7 segment",
                    chunk.offset
                )?;
            }
            continue;
        }
        let msg = chunk.parse();
        let label = if chunk.kind == ChunkKind::Message {
            messages += 1;
            format!("message {messages}")
        } else {
            format!("{:?}", chunk.kind)
        };
        for d in msg.diagnostics() {
            match d.severity() {
                Severity::Error => errors += 1,
                Severity::Warning => warnings += 1,
            }
            writeln!(
                out,
                "{name}:{}: {label}: {d}",
                chunk.offset + d.location.offset
            )?;
        }
    }
    Ok((messages, errors, warnings))
}

fn read_input(file: &Path) -> anyhow::Result<Vec<u8>> {
    if file.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .context("reading stdin")?;
        return Ok(buf);
    }
    if !file.exists() {
        bail!("{}: no such file", file.display());
    }
    std::fs::read(file).with_context(|| format!("reading {}", file.display()))
}
