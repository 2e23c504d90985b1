//! `thoth snomed`, `thoth import snomed` and `thoth dev gen-snomed`.

use crate::data_dir::{DataArg, GlobalArgs};
use anyhow::Context;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use snomed::{SctId, SearchRequest, Store};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Instant;

/// Where the SNOMED CT store lives under the data directory.
pub fn store_root(data_dir: &Path) -> PathBuf {
    data_dir.join("snomed")
}

/// Opens `<data>/snomed/` for the server: `None` (logged) when nothing was imported or it cannot be opened.
pub fn open_store(data_dir: &Path) -> Option<Arc<Store>> {
    let root = store_root(data_dir);
    if !root.exists() {
        return None;
    }
    let started = Instant::now();
    match Store::open(&root) {
        Ok(store) => {
            tracing::info!(
                concepts = store.manifest().concepts,
                ms = started.elapsed().as_millis() as u64,
                "SNOMED CT store open"
            );
            Some(Arc::new(store))
        }
        Err(e) => {
            tracing::warn!("SNOMED CT not available: {e}");
            None
        }
    }
}

/// Options of `thoth snomed`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    data: DataArg,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// What the store holds: format version, releases, counts.
    Info,
    /// A concept, its preferred term and parents.
    Concept {
        /// The concept id.
        id: SctId,
    },
    /// Text search over descriptions.
    Search {
        /// The text; every word matches as a prefix.
        text: String,
        /// Maximum hits.
        #[arg(long, default_value_t = 10)]
        max: usize,
        /// Allow two edits per word.
        #[arg(long)]
        fuzzy: bool,
    },
    /// Whether CONCEPT is subsumed by (is a) ANCESTOR.
    Subsumes {
        /// The candidate descendant.
        concept: SctId,
        /// The candidate ancestor.
        ancestor: SctId,
    },
}

pub fn run(global: &GlobalArgs, args: Args) -> anyhow::Result<()> {
    let global = &global.with(&args.data);
    let root = store_root(&global.data_dir()?);
    let store = Store::open(&root)?;
    let refsets = store.language_refsets_for(None);
    match args.command {
        Command::Info => println!("{}", serde_json::to_string_pretty(store.manifest())?),
        Command::Concept { id } => {
            let idx = store
                .index_of(id)
                .with_context(|| format!("concept {id} not found"))?;
            let c = store.concept(idx);
            let pt = store
                .preferred_synonym(idx, &refsets)
                .map(|d| d.term)
                .unwrap_or("");
            println!("{id} |{pt}| active={} module={}", c.active, c.module);
            for &p in store.parents(idx) {
                let term = store
                    .preferred_synonym(p, &refsets)
                    .map(|d| d.term)
                    .unwrap_or("");
                println!("  is a {} |{term}|", store.id_of(p));
            }
            println!(
                "  {} ancestors, {} descendants",
                store.ancestors(idx).len(),
                store.descendants(idx).len()
            );
        }
        Command::Search { text, max, fuzzy } => {
            let mut req = SearchRequest::new(&text);
            req.max_hits = max;
            req.fuzzy = if fuzzy { 2 } else { 0 };
            for hit in store.search(&req)? {
                let term = store.description(hit.description).term;
                println!("{}\t{term}", hit.concept_id);
            }
        }
        Command::Subsumes { concept, ancestor } => {
            let answer = store
                .subsumed_by(concept, ancestor)
                .context("one of the concepts is not in the store")?;
            println!("{answer}");
        }
    }
    Ok(())
}

/// Options of `thoth import snomed`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// RF2 release packages (zip files or directories), layered in order: International first, then extensions.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// The packages are an unpublished release (a test subset or pre-release): the FHIR terminology API names
    /// it with the `xsct` URI scheme (`http://snomed.info/xsct/{module}/version/{date}`).
    #[arg(long)]
    unpublished: bool,
}

/// Draws one progress bar per RF2 file.
struct Bars {
    multi: MultiProgress,
    current: Mutex<Option<ProgressBar>>,
}

impl snomed::ImportProgress for Bars {
    fn file_started(&self, name: &str, len: u64) {
        let bar = self.multi.add(ProgressBar::new(len));
        bar.set_style(
            ProgressStyle::with_template("{msg:60!} [{bar:30}] {bytes}/{total_bytes} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_message(name.to_string());
        if let Ok(mut c) = self.current.lock() {
            *c = Some(bar);
        }
    }
    fn file_advanced(&self, bytes: u64) {
        if let Ok(c) = self.current.lock()
            && let Some(bar) = c.as_ref()
        {
            bar.inc(bytes);
        }
    }
    fn file_finished(&self, name: &str, rows: u64) {
        if let Ok(mut c) = self.current.lock()
            && let Some(bar) = c.take()
        {
            bar.set_position(bar.length().unwrap_or(0));
            bar.finish_with_message(format!("{name}: {rows} rows"));
        }
    }
    fn stage(&self, name: &str) {
        let _ = self.multi.println(format!("building: {name}"));
    }
}

pub fn import(global: &GlobalArgs, args: ImportArgs) -> anyhow::Result<()> {
    let root = store_root(&global.data_dir()?);
    let bars = Bars {
        multi: MultiProgress::new(),
        current: Mutex::new(None),
    };
    let options = if args.unpublished {
        snomed::ImportOptions::unpublished()
    } else {
        snomed::ImportOptions::default()
    };
    let summary = snomed::import_with(&args.paths, &root, &bars, &options)?;
    let m = &summary.manifest;
    println!(
        "imported {} package(s) in {:.1} s",
        m.releases.len(),
        summary.seconds
    );
    println!(
        "  concepts      {:>10} ({} active)\n  descriptions  {:>10} ({} active)\n  relationships {:>10} ({} active), {} concrete values\n  language refset members {}\n  other refset members    {} in {} refsets\n  IS-A closure rows       {}",
        m.concepts,
        m.active_concepts,
        m.descriptions,
        m.active_descriptions,
        m.relationships,
        m.active_relationships,
        m.concrete_values,
        m.language_members,
        m.refset_members,
        m.refsets.len(),
        m.is_a_closure_rows
    );
    println!(
        "  store {} ({:.1} MiB)",
        summary.store_dir.display(),
        summary.store_bytes as f64 / (1024.0 * 1024.0)
    );
    Ok(())
}

/// Options of `thoth dev gen-snomed`.
#[derive(clap::Args, Debug)]
pub struct GenArgs {
    /// Active concepts to generate (the International Edition has about 370,000).
    #[arg(long, default_value_t = 370_000)]
    concepts: usize,
    /// Seed of the generator; the same seed writes the same release.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output directory (created).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

pub fn generate(_global: &GlobalArgs, args: GenArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let config = snomed::synth::SynthConfig {
        concepts: args.concepts,
        seed: args.seed,
    };
    let s = snomed::synth::generate(&config, &args.out)
        .with_context(|| format!("writing {}", args.out.display()))?;
    println!(
        "wrote {} in {:.1} s: {} concept rows ({} active), {} descriptions, {} text definitions, {} relationships, {} concrete values, {} language members, {} other refset members",
        args.out.display(),
        started.elapsed().as_secs_f64(),
        s.concept_rows,
        s.active_concepts,
        s.descriptions,
        s.text_definitions,
        s.relationships,
        s.concrete_values,
        s.language_members,
        s.other_members
    );
    Ok(())
}
