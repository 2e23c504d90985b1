//! `thoth dev ...`: generators of synthetic data for benchmarks and scale tests.

use crate::cmd::snomed;
use crate::data_dir::GlobalArgs;

/// Developer tools.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Write a synthetic SNOMED CT RF2 snapshot shaped like the International Edition.
    GenSnomed(snomed::GenArgs),
}

pub fn run(global: &GlobalArgs, command: Command) -> anyhow::Result<()> {
    match command {
        Command::GenSnomed(args) => snomed::generate(global, args),
    }
}
