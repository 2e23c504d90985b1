//! Where Thoth keeps its state: `--data DIR`, else `$THOTH_DATA`, else the platform's data directory.
//!
//! `--data` is accepted in two places: before the subcommand (`thoth --data DIR serve`, the form scripts have always
//! used) and on the commands that read or write the data directory (`thoth serve --data DIR`). It is deliberately not
//! a clap global: a global shows in the help of every command, and most (`hl7 json`, `fhir convert`, `mllp send`)
//! never touch the data directory.

use std::path::PathBuf;

/// The top-level options: `thoth --data DIR <command>`.
#[derive(clap::Args, Debug, Clone)]
pub struct GlobalArgs {
    /// Directory for terminology stores, the message store and the package cache (used by serve, mcp, import,
    /// snomed and hl7 to-fhir; each also takes `--data` after its name).
    #[arg(long = "data", env = "THOTH_DATA", value_name = "DIR")]
    data: Option<PathBuf>,
}

/// `--data` on a command that uses the data directory; it wins over the top-level one.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DataArg {
    /// Directory for terminology stores, the message store and the package cache (default: `$THOTH_DATA`, else the
    /// platform's data directory).
    #[arg(long = "data", global = true, value_name = "DIR")]
    data: Option<PathBuf>,
}

impl GlobalArgs {
    /// The options with a command's own `--data` applied over the top-level one.
    pub fn with(&self, own: &DataArg) -> GlobalArgs {
        GlobalArgs {
            data: own.data.clone().or_else(|| self.data.clone()),
        }
    }

    /// The data directory when one was named (`--data` or `THOTH_DATA`), not created.
    pub fn given_data_dir(&self) -> Option<&std::path::Path> {
        self.data.as_deref()
    }

    /// The data directory to use, created if missing.
    pub fn data_dir(&self) -> anyhow::Result<PathBuf> {
        let dir = match &self.data {
            Some(dir) => dir.clone(),
            None => dirs::data_dir().map(|d| d.join("thoth")).ok_or_else(|| {
                anyhow::anyhow!("no platform data directory; pass --data DIR or set THOTH_DATA")
            })?,
        };
        std::fs::create_dir_all(&dir)
            .map_err(|e| anyhow::anyhow!("cannot create data directory {}: {e}", dir.display()))?;
        Ok(dir)
    }
}
