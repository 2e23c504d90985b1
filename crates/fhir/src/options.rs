//! Options for reading resources.

/// How strictly and how much to read.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Keep unknown JSON properties (written back only as JSON) instead of rejecting them.
    pub lenient: bool,
    /// Deepest nesting of objects/elements accepted; deeper input is an error, not a stack overflow.
    pub max_depth: usize,
    /// Largest input read from a stream ([`Resource::from_reader`](crate::Resource::from_reader), NDJSON lines).
    pub max_bytes: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            lenient: false,
            max_depth: 128,
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

    /// The same options with another depth limit.
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }
}
