//! Files of many messages and HL7 batch files (FHS/BHS ... BTS/FTS): a streaming splitter and a writer.

use crate::parse::{ParseOptions, parse_with_delimiters};
use crate::{Charset, Delimiters, Message, escape};

/// What a [`Chunk`] of a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChunkKind {
    /// A message: an `MSH` segment and every segment up to the next message or envelope segment.
    Message,
    /// An `FHS` (file header) segment.
    FileHeader,
    /// An `FTS` (file trailer) segment.
    FileTrailer,
    /// A `BHS` (batch header) segment.
    BatchHeader,
    /// A `BTS` (batch trailer) segment.
    BatchTrailer,
    /// Lines before the first message or header that are not HL7 (kept so nothing is lost).
    Other,
}

/// A piece of a file. The chunks of a file, in order, concatenate to exactly the file's bytes.
#[derive(Clone, Copy, Debug)]
pub struct Chunk<'a> {
    /// What this chunk is.
    pub kind: ChunkKind,
    /// Byte offset of the chunk in the file.
    pub offset: usize,
    /// The chunk's bytes, line terminators included.
    pub bytes: &'a [u8],
    /// The delimiters in force: those of the last header (MSH, FHS, BHS) seen, for trailers that declare none.
    delims: Delimiters,
}

impl<'a> Chunk<'a> {
    /// Parses the chunk: messages and headers as themselves, trailers (and other lines) with the delimiters in
    /// force.
    pub fn parse(&self) -> Message<'a> {
        self.parse_with(&ParseOptions::default())
    }

    /// [`Chunk::parse`] with options.
    pub fn parse_with(&self, options: &ParseOptions) -> Message<'a> {
        match self.kind {
            ChunkKind::Message | ChunkKind::FileHeader | ChunkKind::BatchHeader => {
                Message::parse_with(self.bytes, options)
            }
            _ => parse_with_delimiters(self.bytes, self.delims, options),
        }
    }

    /// For a trailer (BTS/FTS), the count it declares in field 1.
    pub fn trailer_count(&self) -> Option<usize> {
        if !matches!(self.kind, ChunkKind::BatchTrailer | ChunkKind::FileTrailer) {
            return None;
        }
        let m = self.parse();
        m.segment(0)?.field(1)?.text().trim().parse().ok()
    }
}

/// Splits a file into [`Chunk`]s, streaming: each chunk is found by scanning lines up to the next message or
/// envelope segment, so a file of any size is walked once without holding parsed messages.
pub fn split(input: &[u8]) -> Chunks<'_> {
    Chunks {
        input,
        pos: 0,
        delims: Delimiters::default(),
    }
}

/// The messages of a file (plain concatenation or batch), parsed one at a time; envelope segments are skipped.
///
/// ```
/// let file = b"FHS|^~\\&|A\rBHS|^~\\&|A\rMSH|^~\\&|A||||1||ADT^A01|1|P|2.5\rPID|1\rMSH|^~\\&|A||||1||ADT^A01|2|P|2.5\rBTS|2\rFTS|1\r";
/// let ids: Vec<_> = hl7v2::messages(file).map(|m| m.get("MSH-10").unwrap().into_owned()).collect();
/// assert_eq!(ids, ["1", "2"]);
/// ```
pub fn messages(input: &[u8]) -> impl Iterator<Item = Message<'_>> {
    split(input)
        .filter(|c| c.kind == ChunkKind::Message)
        .map(|c| c.parse())
}

/// Iterator over the chunks of a file (see [`split`]).
#[derive(Clone, Debug)]
pub struct Chunks<'a> {
    input: &'a [u8],
    pos: usize,
    delims: Delimiters,
}

fn classify(line: &[u8]) -> Option<ChunkKind> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.len() < 4 || line[3].is_ascii_alphanumeric() || line[3] == b'\r' || line[3] == b'\n' {
        return None;
    }
    Some(match &line[..3] {
        b"MSH" => ChunkKind::Message,
        b"FHS" => ChunkKind::FileHeader,
        b"FTS" => ChunkKind::FileTrailer,
        b"BHS" => ChunkKind::BatchHeader,
        b"BTS" => ChunkKind::BatchTrailer,
        _ => return None,
    })
}

impl<'a> Chunks<'a> {
    /// The end of the line starting at `pos`, and the start of the next line (after CR/LF runs).
    fn line(&self, pos: usize) -> (usize, usize) {
        let rest = &self.input[pos..];
        let end = memchr::memchr2(b'\r', b'\n', rest).map_or(self.input.len(), |i| pos + i);
        let mut next = end;
        while next < self.input.len() && matches!(self.input[next], b'\r' | b'\n') {
            next += 1;
        }
        (end, next)
    }
}

impl<'a> Iterator for Chunks<'a> {
    type Item = Chunk<'a>;

    fn next(&mut self) -> Option<Chunk<'a>> {
        if self.pos >= self.input.len() {
            return None;
        }
        let start = self.pos;
        let (_, mut next) = self.line(start);
        let kind = classify(&self.input[start..]).unwrap_or(ChunkKind::Other);
        if matches!(kind, ChunkKind::Message | ChunkKind::Other) {
            // A message (or leading junk) runs until the next line that starts a message or envelope segment.
            while next < self.input.len() && classify(&self.input[next..]).is_none() {
                next = self.line(next).1;
            }
        }
        if matches!(
            kind,
            ChunkKind::Message | ChunkKind::FileHeader | ChunkKind::BatchHeader
        ) {
            let head = &self.input[start..];
            let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
            self.delims = Delimiters::read(head).0;
        }
        self.pos = next;
        Some(Chunk {
            kind,
            offset: start,
            bytes: &self.input[start..next],
            delims: self.delims,
        })
    }
}

/// The header fields of a written batch (BHS) or file (FHS); all optional.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchHeader {
    /// FHS-3/BHS-3.
    pub sending_application: String,
    /// FHS-4/BHS-4.
    pub sending_facility: String,
    /// FHS-5/BHS-5.
    pub receiving_application: String,
    /// FHS-6/BHS-6.
    pub receiving_facility: String,
    /// FHS-7/BHS-7, e.g. `20240315143000`.
    pub timestamp: String,
    /// FHS-9/BHS-9 (name/id).
    pub name: String,
    /// FHS-10/BHS-10 (comment).
    pub comment: String,
    /// FHS-11/BHS-11 (control id).
    pub control_id: String,
}

/// Writes messages as one batch, `BHS`, the messages, `BTS|<count>`, wrapped in `FHS` ... `FTS|1` when `file`
/// is true. Segments are ended by CR; each message is copied as is (a CR is added if it lacks a final
/// terminator). Header values are escaped with the default delimiters.
///
/// ```
/// let m1 = b"MSH|^~\\&|A||||1||ADT^A01|1|P|2.5\rPID|1\r";
/// let header = hl7v2::BatchHeader { control_id: "B1".into(), ..Default::default() };
/// let out = hl7v2::write_batch([&m1[..], &m1[..]], &header, true);
/// let kinds: Vec<_> = hl7v2::split(&out).map(|c| c.kind).collect();
/// use hl7v2::ChunkKind::*;
/// assert_eq!(kinds, [FileHeader, BatchHeader, Message, Message, BatchTrailer, FileTrailer]);
/// assert_eq!(hl7v2::split(&out).nth(4).unwrap().trailer_count(), Some(2));
/// ```
pub fn write_batch<'m>(
    messages: impl IntoIterator<Item = &'m [u8]>,
    header: &BatchHeader,
    file: bool,
) -> Vec<u8> {
    let d = Delimiters::default();
    let mut out = Vec::new();
    let head = |out: &mut Vec<u8>, id: &[u8]| {
        out.extend_from_slice(id);
        out.push(d.field);
        out.extend_from_slice(&d.encoding_characters());
        let values = [
            &header.sending_application,
            &header.sending_facility,
            &header.receiving_application,
            &header.receiving_facility,
            &header.timestamp,
            &String::new(),
            &header.name,
            &header.comment,
            &header.control_id,
        ];
        let last = values
            .iter()
            .rposition(|v| !v.is_empty())
            .map_or(0, |i| i + 1);
        for v in &values[..last] {
            out.push(d.field);
            // Header values are text in UTF-8; escaping cannot fail for UTF-8.
            out.extend_from_slice(&escape::encode(v, &d, Charset::Utf8).unwrap_or_default());
        }
        out.push(b'\r');
    };
    if file {
        head(&mut out, b"FHS");
    }
    head(&mut out, b"BHS");
    let mut count = 0usize;
    for m in messages {
        out.extend_from_slice(m);
        if !m.ends_with(b"\r") && !m.ends_with(b"\n") {
            out.push(b'\r');
        }
        count += 1;
    }
    out.extend_from_slice(format!("BTS|{count}\r").as_bytes());
    if file {
        out.extend_from_slice(b"FTS|1\r");
    }
    out
}
