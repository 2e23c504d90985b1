//! `thoth`: the command line and server binary. Glue only: every subcommand calls a library facade.

mod cmd;
mod data_dir;
mod packages;

use clap::{Parser, Subcommand};

// The server answers each request with a handful of short-lived allocations on two to a few cores; glibc's malloc
// spends a measurable share of a terminology request in its arenas (free lists, consolidation), mimalloc's
// thread-local free lists do not.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Thoth: HL7 v2 messaging, FHIR R4 formats and clinical terminology in one fast server.
#[derive(Parser, Debug)]
#[command(name = "thoth", version, about, propagate_version = true)]
struct Cli {
    #[command(flatten)]
    global: data_dir::GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Start the server: the HTTP API (FHIR, terminology, messages) and the MLLP listener of the interface engine.
    Serve(cmd::serve::Args),
    /// Import content into the data directory (SNOMED CT, FHIR packages, LOINC, ICD-10-CM).
    Import(cmd::import::Args),
    /// Work with HL7 v2 message files: JSON view, paths, re-encoding, ACKs, checks, validation; describe
    /// message structures, segments and data types.
    Hl7(cmd::hl7::Args),
    /// Send HL7 v2 messages over MLLP and measure a listener.
    Mllp(cmd::mllp::Args),
    /// Inspect and replay the messages stored by the interface engine.
    Messages(cmd::messages::Args),
    /// Convert FHIR R4 resources between JSON, XML and the binary encoding.
    Fhir(cmd::fhir::Args),
    /// Query an imported SNOMED CT store.
    Snomed(cmd::snomed::Args),
    /// Serve the Model Context Protocol on stdin/stdout (for AI assistants; HTTP: `POST /mcp` on `thoth serve`).
    Mcp(cmd::mcp::Args),
    /// Developer tools: synthetic data generators.
    #[command(subcommand)]
    Dev(cmd::dev::Command),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_logging();
    match cli.command {
        Command::Serve(args) => cmd::serve::run(&cli.global, args),
        Command::Import(args) => cmd::import::run(&cli.global, args),
        Command::Hl7(args) => cmd::hl7::run(&cli.global, args),
        Command::Mllp(args) => cmd::mllp::run(&cli.global, args),
        Command::Messages(args) => cmd::messages::run(&cli.global, args),
        Command::Fhir(args) => cmd::fhir::run(&cli.global, args),
        Command::Snomed(args) => cmd::snomed::run(&cli.global, args),
        Command::Mcp(args) => cmd::mcp::run(&cli.global, args),
        Command::Dev(command) => cmd::dev::run(&cli.global, command),
    }
}

/// Logs go to stderr so that commands which print data on stdout stay pipeable. `RUST_LOG` overrides the level.
fn init_logging() {
    use tracing_subscriber::EnvFilter;
    // rmcp logs the life of every MCP session at info, three lines per stateless `POST /mcp` call: warnings only,
    // unless RUST_LOG asks (at a thousand calls a second they were most of the log and a tenth of the CPU).
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
