//! `thoth messages`.

use crate::data_dir::GlobalArgs;

/// Options of `thoth messages`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_global: &GlobalArgs, _args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`thoth messages` is not available in this build yet")
}
