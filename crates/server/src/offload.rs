//! Work that takes longer than a few microseconds leaves the HTTP threads.
//!
//! Each HTTP thread runs a single-threaded runtime that owns its connections (`threads.rs`): a handler that
//! computes for 100 ms stalls every connection of that thread for 100 ms, health checks included. ECL expansions,
//! searches with an ECL constraint, crossmaps, FHIR searches, XML conversion of bodies and terminology operations
//! therefore run on tokio's blocking pool through [`offload`], which also bounds how many may be running or
//! waiting at once: past [`MAX_HEAVY_TASKS`], a request is answered 503 at once (with `Retry-After`) instead of
//! queueing without end.

use crate::error::ApiError;
use tokio::sync::Semaphore;

/// How many offloaded requests may be running or queued at once, over the whole process.
pub const MAX_HEAVY_TASKS: usize = 256;

static HEAVY: Semaphore = Semaphore::const_new(MAX_HEAVY_TASKS);

/// Runs `work` on the blocking pool and returns its result; 503 ([`ApiError::Busy`]) when [`MAX_HEAVY_TASKS`] are
/// already running or queued.
pub(crate) async fn offload<T, E>(
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, E>
where
    T: Send + 'static,
    E: From<ApiError> + Send + 'static,
{
    let Ok(permit) = HEAVY.try_acquire() else {
        return Err(ApiError::Busy(format!(
            "{MAX_HEAVY_TASKS} expensive requests are already running or waiting; try again shortly"
        ))
        .into());
    };
    // The place is held by the work itself, not by this future: a client that goes away cancels the wait, not
    // the work, which keeps its place until it is done.
    tokio::task::spawn_blocking(move || {
        let _place = permit;
        work()
    })
    .await
    .map_err(|e| ApiError::Internal(format!("request task failed: {e}")))?
}

/// [`offload`] for work outside this crate (the MCP tools that read the SNOMED CT store directly): its result, or
/// why it did not run (the pool is full: try again shortly; or it failed).
pub async fn offload_work<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    offload(move || Ok::<T, ApiError>(work()))
        .await
        .map_err(|e| e.to_string())
}
