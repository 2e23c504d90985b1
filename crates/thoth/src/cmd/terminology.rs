//! `thoth import fhir-package`, `thoth import loinc` and `thoth import icd10cm`.

use crate::data_dir::GlobalArgs;

/// Options of `thoth import fhir-package`.
#[derive(clap::Args, Debug)]
pub struct FhirPackageArgs {}

pub fn import_fhir_package(_global: &GlobalArgs, _args: FhirPackageArgs) -> anyhow::Result<()> {
    anyhow::bail!("`thoth import fhir-package` is not available in this build yet")
}

/// Options of `thoth import loinc`.
#[derive(clap::Args, Debug)]
pub struct LoincArgs {}

pub fn import_loinc(_global: &GlobalArgs, _args: LoincArgs) -> anyhow::Result<()> {
    anyhow::bail!("`thoth import loinc` is not available in this build yet")
}

/// Options of `thoth import icd10cm`.
#[derive(clap::Args, Debug)]
pub struct Icd10cmArgs {}

pub fn import_icd10cm(_global: &GlobalArgs, _args: Icd10cmArgs) -> anyhow::Result<()> {
    anyhow::bail!("`thoth import icd10cm` is not available in this build yet")
}
