//! `thoth mllp`.

use crate::data_dir::GlobalArgs;

/// Options of `thoth mllp`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_global: &GlobalArgs, _args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`thoth mllp` is not available in this build yet")
}
