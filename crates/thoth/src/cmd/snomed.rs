//! `thoth snomed`, `thoth import snomed` and `thoth dev gen-snomed`.

use crate::data_dir::GlobalArgs;

/// Options of `thoth snomed`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_global: &GlobalArgs, _args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`thoth snomed` is not available in this build yet")
}

/// Options of `thoth import snomed`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {}

pub fn import(_global: &GlobalArgs, _args: ImportArgs) -> anyhow::Result<()> {
    anyhow::bail!("`thoth import snomed` is not available in this build yet")
}

/// Options of `thoth dev gen-snomed`.
#[derive(clap::Args, Debug)]
pub struct GenArgs {}

pub fn generate(_global: &GlobalArgs, _args: GenArgs) -> anyhow::Result<()> {
    anyhow::bail!("`thoth dev gen-snomed` is not available in this build yet")
}
