//! Options for reading resources.

/// The deepest nesting any reader accepts, whatever [`ReadOptions::max_depth`] says: at this depth every
/// reader and writer fits in a 2 MiB thread stack (the default for spawned threads, tokio workers and test
/// threads) even in an unoptimised build (measured: ~10 KiB per level in debug, see docs/ARCHITECTURE.md).
pub const MAX_DEPTH: usize = 128;

/// How strictly and how much to read.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Keep unknown JSON properties (written back only as JSON) instead of rejecting them.
    pub lenient: bool,
    /// Deepest nesting of elements accepted (a JSON object, an XML element or a binary message is one level);
    /// deeper input is an error, not a stack overflow. Values above [`MAX_DEPTH`] count as [`MAX_DEPTH`].
    pub max_depth: usize,
    /// Largest input read from a stream ([`Resource::from_reader`](crate::Resource::from_reader), NDJSON lines).
    pub max_bytes: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            lenient: false,
            max_depth: MAX_DEPTH,
            max_bytes: 512 << 20,
        }
    }
}

impl ReadOptions {
    /// Strict reading with the default limits.
    pub fn strict() -> Self {
        Self::default()
    }

    /// Lenient reading: unknown JSON properties are kept.
    pub fn lenient() -> Self {
        ReadOptions {
            lenient: true,
            ..Self::default()
        }
    }

    /// The same options with another stream size limit.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The nesting limit the readers apply: `max_depth`, at most [`MAX_DEPTH`].
    pub(crate) fn depth_limit(&self) -> usize {
        self.max_depth.min(MAX_DEPTH)
    }

    /// The same options with another depth limit (at most [`MAX_DEPTH`] is honoured).
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }
}
