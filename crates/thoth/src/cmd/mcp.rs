//! `thoth mcp`: the Model Context Protocol server on stdin/stdout, for an assistant that starts Thoth itself.
//! Logs go to stderr (stdout carries the protocol). The HTTP transport is `POST /mcp` on `thoth serve`.

use crate::data_dir::{DataArg, GlobalArgs};

/// Options of `thoth mcp`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    data: DataArg,
    /// Terminology: the largest ValueSet expansion returned without paging.
    #[arg(
        long,
        default_value_t = 1000,
        value_name = "CODES",
        env = "THOTH_TX_MAX_EXPANSION"
    )]
    tx_max_expansion: usize,
}

pub fn run(global: &GlobalArgs, args: Args) -> anyhow::Result<()> {
    let global = &global.with(&args.data);
    let data_dir = global.data_dir()?;
    // What the data directory has: an assistant's process must start fast and quietly, so nothing is fetched
    // (`thoth serve` or `thoth import` fetch the open content once).
    let state = crate::cmd::terminology::terminology_state(data_dir, args.tx_max_expansion);
    tracing::info!("MCP server on stdin/stdout");
    // One thread: one client, one request at a time; worker threads would only add wake-ups between the pipe
    // and the tool (expensive work still leaves through the blocking pool).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(mcp::serve_stdio(state))?;
    Ok(())
}
