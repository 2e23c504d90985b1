//! `thoth`: the command line and server binary. Glue only: every subcommand calls a library facade.

mod cmd;
mod data_dir;

use clap::{Parser, Subcommand};

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
    /// Start the server (HTTP and, once configured, MLLP).
    Serve(cmd::serve::Args),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_logging();
    match cli.command {
        Command::Serve(args) => cmd::serve::run(&cli.global, args),
    }
}

/// Logs go to stderr so that commands which print data on stdout stay pipeable. `RUST_LOG` overrides the level.
fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
