//! `thoth import fhir-package`, `thoth import loinc` and `thoth import icd10cm`, and loading the terminology
//! content of a data directory for `thoth serve`.

use crate::data_dir::GlobalArgs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Loads the terminology content under `data_dir` (packages and imported code systems), logging what was
/// loaded and what failed; the server starts with whatever loaded.
pub fn load_service(data_dir: &Path, max_expansion: usize) -> Arc<terminology::Terminology> {
    let mut registry = terminology::Registry::new();
    let started = std::time::Instant::now();
    for (path, result) in terminology::load_data_dir(data_dir, &mut registry) {
        match result {
            Ok(stats) => {
                tracing::info!(source = %path.display(), resources = stats.resources, "terminology loaded")
            }
            Err(e) => tracing::warn!("terminology content not loaded: {e}"),
        }
    }
    if registry.is_empty() {
        tracing::warn!(
            "no terminology content in {}: import some with `thoth import fhir-package`, `thoth import loinc` or `thoth import icd10cm`",
            data_dir.display()
        );
    }
    tracing::info!(
        resources = registry.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "terminology ready"
    );
    Arc::new(terminology::Terminology::new(
        registry,
        terminology::Config { max_expansion },
    ))
}

/// Options of `thoth import fhir-package`.
#[derive(clap::Args, Debug)]
pub struct FhirPackageArgs {
    /// A local package (`.tgz` or directory).
    #[arg(value_name = "PACKAGE")]
    package: PathBuf,
}

/// Copies a package into `<data>/packages` after checking that it loads.
pub fn import_fhir_package(global: &GlobalArgs, args: FhirPackageArgs) -> anyhow::Result<()> {
    let data_dir = global.data_dir()?;
    let mut registry = terminology::Registry::new();
    let stats = terminology::load_package(&args.package, &mut registry)?;
    let dir = data_dir.join("packages");
    std::fs::create_dir_all(&dir)?;
    let name = args
        .package
        .file_name()
        .ok_or_else(|| anyhow::anyhow!("{} has no file name", args.package.display()))?;
    let target = dir.join(name);
    if args.package.is_dir() {
        anyhow::bail!("importing a package directory is not supported yet; pass the .tgz");
    }
    std::fs::copy(&args.package, &target)?;
    println!(
        "imported {} terminology resources from {} into {}",
        stats.resources,
        args.package.display(),
        target.display()
    );
    Ok(())
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
