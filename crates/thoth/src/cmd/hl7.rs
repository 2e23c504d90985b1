//! `thoth hl7`.

use crate::data_dir::GlobalArgs;

/// Options of `thoth hl7`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_global: &GlobalArgs, _args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`thoth hl7` is not available in this build yet")
}
