//! Where Thoth keeps its state: `--data DIR`, else `$THOTH_DATA`, else the platform's data directory.

use std::path::PathBuf;

/// Options every subcommand accepts.
#[derive(clap::Args, Debug, Clone)]
pub struct GlobalArgs {
    /// Directory for terminology stores, the message store and the package cache.
    #[arg(long = "data", env = "THOTH_DATA", global = true, value_name = "DIR")]
    data: Option<PathBuf>,
}

impl GlobalArgs {
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
