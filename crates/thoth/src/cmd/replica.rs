//! `thoth serve` follows the SNOMED CT imports of its data directory: a new store swapped in by `CURRENT` is
//! served without a restart, by every process over the directory (read-only replicas included).
//!
//! An import writes a complete store directory and only then renames `CURRENT` over to it (`snomed::import`),
//! so a reader that reads `CURRENT` finds a whole store or the previous one, never half of one. Each process
//! reads the small file every `--store-check`; when it names another store, the process opens it, builds the
//! terminology service over it beside the one serving, and swaps the application in one step
//! (`server::LiveApp::replace`): a request runs on the old store or the new, never on both. The import removes
//! the old directory at once; the processes still serving from it keep its files mapped (the kernel frees them
//! when the last map goes), so requests under way are not disturbed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// What following the imports needs.
pub struct Follow {
    /// The application being served.
    pub live: server::LiveApp,
    /// The state it was built from (metrics, access, engine and readiness are kept across a swap).
    pub state: server::AppState,
    pub data_dir: PathBuf,
    pub max_expansion: usize,
    /// How often `CURRENT` is read.
    pub every: Duration,
    /// Read a new store in before serving it (`--preload`).
    pub preload: bool,
    /// Builds the application over a state (the router with the MCP endpoint).
    pub build: Box<dyn Fn(server::AppState) -> server::App + Send + Sync>,
}

/// The store directory `CURRENT` names now, if it can be read.
fn current_name(data_dir: &Path) -> Option<String> {
    let root = crate::cmd::snomed::store_root(data_dir);
    std::fs::read_to_string(root.join("CURRENT"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The directory name of the store a state serves.
fn serving_name(state: &server::AppState) -> Option<String> {
    state
        .snomed
        .as_ref()
        .and_then(|s| s.dir().file_name())
        .map(|n| n.to_string_lossy().into_owned())
}

/// Reads `CURRENT` every `follow.every` and serves the store it names when that changes; runs until the process
/// ends. A store that cannot be opened (removed by a newer import in between, damaged) is logged once and tried
/// again when `CURRENT` changes again.
pub async fn follow_snomed_imports(follow: Follow) {
    let follow = Arc::new(follow);
    let mut state = follow.state.clone();
    let mut serving = serving_name(&state);
    let mut failed: Option<String> = None;
    let mut tick = tokio::time::interval(follow.every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let data_dir = follow.data_dir.clone();
        let Ok(Some(name)) = tokio::task::spawn_blocking(move || current_name(&data_dir)).await
        else {
            continue;
        };
        if Some(&name) == serving.as_ref() || Some(&name) == failed.as_ref() {
            continue;
        }
        let job = {
            let follow = follow.clone();
            let base = state.clone();
            tokio::task::spawn_blocking(move || reload(&follow, base))
        };
        match job.await {
            Ok(Ok(next)) => {
                let now = serving_name(&next);
                tracing::info!(
                    from = serving.as_deref().unwrap_or("-"),
                    to = now.as_deref().unwrap_or("-"),
                    "SNOMED CT: serving the new import"
                );
                follow.live.replace((follow.build)(next.clone()));
                state = next;
                serving = now;
                failed = None;
            }
            Ok(Err(e)) => {
                tracing::warn!(
                    "SNOMED CT: the new import {name} is not served, the previous store stays: {e}"
                );
                failed = Some(name);
            }
            Err(e) => tracing::warn!("SNOMED CT: reloading failed: {e}"),
        }
    }
}

/// The state over the store `CURRENT` names now, with the terminology service rebuilt over it; everything else
/// (metrics, access, engine, readiness) as in `base`.
fn reload(follow: &Follow, base: server::AppState) -> Result<server::AppState, snomed::OpenError> {
    let started = std::time::Instant::now();
    let root = crate::cmd::snomed::store_root(&follow.data_dir);
    let store = Arc::new(snomed::Store::open(&root)?);
    tracing::info!(
        concepts = store.manifest().concepts,
        ms = started.elapsed().as_millis() as u64,
        "SNOMED CT store open"
    );
    if follow.preload {
        preload(&store);
    }
    let terminology = crate::cmd::terminology::load_service(
        &follow.data_dir,
        follow.max_expansion,
        Some(store.clone()),
    );
    Ok(server::AppState {
        snomed: Some(store),
        terminology: Some(terminology),
        ..base
    })
}

/// Reads the whole store file in (`--preload`), logging how much and how long.
pub fn preload(store: &snomed::Store) {
    let started = std::time::Instant::now();
    let bytes = store.preload();
    tracing::info!(
        mib = bytes >> 20,
        ms = started.elapsed().as_millis() as u64,
        "SNOMED CT store read in (--preload)"
    );
}
