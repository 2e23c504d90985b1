use std::path::PathBuf;

/// Every way the engine can fail.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The configuration file cannot be read or is invalid.
    #[error("configuration {path}: {detail}")]
    Config {
        /// The file (empty when the configuration came from a string).
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// The store cannot be opened.
    #[error("opening the message store {path}: {detail}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// What failed.
        detail: String,
    },
    /// The store was written by an incompatible version of Thoth.
    #[error(
        "the message store {path} has format version {found}; this build reads version {expected}"
    )]
    IncompatibleFormat {
        /// The database file.
        path: PathBuf,
        /// The version found on disk.
        found: u64,
        /// The version this build writes.
        expected: u64,
    },
    /// A read or write of the store failed.
    #[error("message store {op}: {detail}")]
    Store {
        /// What we were doing.
        op: &'static str,
        /// What failed.
        detail: String,
    },
    /// The engine is shutting down and takes no more work.
    #[error("the engine is shutting down")]
    ShuttingDown,
    /// No stored message has this id.
    #[error("no message with id {0}")]
    NotFound(u64),
}

impl EngineError {
    pub(crate) fn store(op: &'static str, e: impl std::fmt::Display) -> EngineError {
        EngineError::Store {
            op,
            detail: e.to_string(),
        }
    }
}
