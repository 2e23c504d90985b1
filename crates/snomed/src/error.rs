//! Errors of importing, opening and searching a store.

use std::path::{Path, PathBuf};

/// Why an import failed. Nothing is swapped in when an import fails: the previous store stays current.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// A path given to import does not exist.
    #[error("{0}: no such file or directory")]
    NotFound(PathBuf),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A zip archive could not be read.
    #[error("{path}: not a readable zip archive: {message}")]
    Zip {
        /// The archive.
        path: PathBuf,
        /// What the zip reader said.
        message: String,
    },
    /// A row of an RF2 file is malformed.
    #[error("{file}, line {line}: {message}")]
    Row {
        /// The RF2 file name.
        file: String,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// No RF2 concept was found in any package.
    #[error("no SNOMED CT concepts found in {0}")]
    Empty(String),
    /// The store would exceed a limit of the format (e.g. 4 GiB of text).
    #[error("too large for store format: {0}")]
    TooLarge(String),
    /// Building the search index failed.
    #[error("search index: {0}")]
    Index(String),
}

impl ImportError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> ImportError {
        ImportError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Why a store could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// There is no store at this path (nothing imported yet).
    #[error("no SNOMED CT store at {0}; run `thoth import snomed PATH...` first")]
    Missing(PathBuf),
    /// Reading the store failed.
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The store was written by a different, incompatible version of the format.
    #[error(
        "{path}: store format version {found}, this build reads version {expected}; re-import the release"
    )]
    IncompatibleFormat {
        /// The store file.
        path: PathBuf,
        /// The version in the file.
        found: u32,
        /// The version this build reads.
        expected: u32,
    },
    /// The store file is damaged (bad magic, truncated, inconsistent sections).
    #[error("{path}: damaged store: {message}")]
    Corrupt {
        /// The store file.
        path: PathBuf,
        /// What is inconsistent.
        message: String,
    },
    /// The search index could not be opened.
    #[error("search index at {path}: {message}")]
    Index {
        /// The index directory.
        path: PathBuf,
        /// What tantivy said.
        message: String,
    },
}

/// Why a search failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The index failed while searching.
    #[error("search index: {0}")]
    Index(String),
    /// The search text is beyond the limits that bound one request's work ([`crate::MAX_SEARCH_WORDS`],
    /// [`crate::MAX_SEARCH_WORD_CHARS`]); the message says which.
    #[error("{0}")]
    TooCostly(String),
}
