//! `thoth fhir`.

use crate::data_dir::GlobalArgs;

/// Options of `thoth fhir`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_global: &GlobalArgs, _args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`thoth fhir` is not available in this build yet")
}
