//! NDJSON (FHIR Bulk Data): one compact JSON resource per line, read and written as a stream.

use crate::error::{Error, Format, Location};
use crate::options::ReadOptions;
use crate::resource::Resource;
use std::io::{BufRead, Write};

/// Reads resources from NDJSON one line at a time; memory is bounded by the longest line
/// (at most [`ReadOptions::max_bytes`]). Blank lines are skipped.
pub struct NdjsonReader<R> {
    reader: R,
    opts: ReadOptions,
    line: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> NdjsonReader<R> {
    /// A reader over `reader`.
    pub fn new(reader: R, opts: ReadOptions) -> Self {
        NdjsonReader {
            reader,
            opts,
            line: 0,
            buf: Vec::new(),
        }
    }

    fn read_line(&mut self) -> Result<bool, Error> {
        self.buf.clear();
        let limit = self.opts.max_bytes as u64 + 1;
        let n = std::io::Read::take(&mut self.reader, limit).read_until(b'\n', &mut self.buf)?;
        if n as u64 == limit && self.buf.last() != Some(&b'\n') {
            return Err(Error::TooLarge {
                limit: self.opts.max_bytes,
            });
        }
        Ok(n > 0)
    }
}

impl<R: BufRead> Iterator for NdjsonReader<R> {
    type Item = Result<Resource, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.read_line() {
                Err(e) => return Some(Err(e)),
                Ok(false) => return None,
                Ok(true) => {}
            }
            self.line += 1;
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let line = self.line;
            return Some(
                Resource::from_json_with(&self.buf, &self.opts).map_err(|e| match e {
                    // Report the line within the whole stream.
                    Error::Invalid {
                        format: Format::Json,
                        location,
                        path,
                        message,
                    } => Error::Invalid {
                        format: Format::Json,
                        location: Location { line, ..location },
                        path,
                        message,
                    },
                    e => e,
                }),
            );
        }
    }
}

/// Writes resources as NDJSON, one compact line each.
pub struct NdjsonWriter<W> {
    writer: W,
    buf: Vec<u8>,
}

impl<W: Write> NdjsonWriter<W> {
    /// A writer into `writer`.
    pub fn new(writer: W) -> Self {
        NdjsonWriter {
            writer,
            buf: Vec::new(),
        }
    }

    /// Writes one resource and a newline.
    pub fn write(&mut self, resource: &Resource) -> Result<(), Error> {
        self.buf.clear();
        crate::json::write(&resource.tree, resource.node, false, &mut self.buf);
        self.buf.push(b'\n');
        self.writer.write_all(&self.buf)?;
        Ok(())
    }

    /// Flushes and returns the inner writer.
    pub fn finish(mut self) -> Result<W, Error> {
        self.writer.flush()?;
        Ok(self.writer)
    }
}
