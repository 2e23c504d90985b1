//! `thoth import ...`: one subcommand per kind of content; each delegates to its family's module.

use crate::cmd::{snomed, terminology};
use crate::data_dir::GlobalArgs;

/// What to import.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// SNOMED CT RF2 release packages (zip files or directories), layered in order.
    Snomed(snomed::ImportArgs),
    /// A FHIR package (`name@version` from the registry, or a local `.tgz` or directory).
    FhirPackage(terminology::FhirPackageArgs),
    /// A LOINC release directory.
    Loinc(terminology::LoincArgs),
    /// CDC's ICD-10-CM tabular XML.
    Icd10cm(terminology::Icd10cmArgs),
}

pub fn run(global: &GlobalArgs, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Snomed(args) => snomed::import(global, args),
        Command::FhirPackage(args) => terminology::import_fhir_package(global, args),
        Command::Loinc(args) => terminology::import_loinc(global, args),
        Command::Icd10cm(args) => terminology::import_icd10cm(global, args),
    }
}
