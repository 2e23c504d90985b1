//! `thoth import ...`: one subcommand per kind of content; each delegates to its family's module.

use crate::cmd::{snomed, terminology};
use crate::data_dir::{DataArg, GlobalArgs};

/// Options of `thoth import`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    data: DataArg,
    #[command(subcommand)]
    command: Command,
}

/// What to import.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// SNOMED CT RF2 release packages (zip files or directories), layered in order.
    Snomed(snomed::ImportArgs),
    /// A FHIR package (`name@version` from the registry, or a local `.tgz` or directory).
    FhirPackage(terminology::FhirPackageArgs),
    /// A LOINC release directory.
    Loinc(terminology::LoincArgs),
    /// CDC's ICD-10-CM tabular XML (or a zip holding it); without a file, the pinned April 2026 release is
    /// downloaded.
    Icd10cm(terminology::Icd10cmArgs),
    /// The data of the built-in code systems (the IANA Language Subtag Registry, for BCP-47 displays), which
    /// `thoth serve` otherwise fetches on start unless `--offline`.
    BuiltinData(terminology::BuiltinDataArgs),
}

pub fn run(global: &GlobalArgs, args: Args) -> anyhow::Result<()> {
    let global = &global.with(&args.data);
    match args.command {
        Command::Snomed(args) => snomed::import(global, args),
        Command::FhirPackage(args) => terminology::import_fhir_package(global, args),
        Command::Loinc(args) => terminology::import_loinc(global, args),
        Command::Icd10cm(args) => terminology::import_icd10cm(global, args),
        Command::BuiltinData(args) => terminology::import_builtin_data(global, args),
    }
}
