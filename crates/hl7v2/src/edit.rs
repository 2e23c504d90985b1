//! The editable message: fields as raw bytes (borrowed until changed), set by path, segments added and removed.

use std::borrow::Cow;

use crate::message::{Level, Value};
use crate::path::{AsPath, Path, PathError};
use crate::{Charset, Delimiters, Message, escape};

/// An editable message. Built from a parsed [`Message`], it keeps every field's raw bytes (borrowed, so nothing
/// is copied until it changes); fields that are not edited encode exactly as they were read, escape sequences
/// and all. Edited values are escaped with the message's own delimiters and encoded in its character set.
///
/// ```
/// use hl7v2::{Message, MessageBuf};
///
/// let msg = Message::parse(b"MSH|^~\\&|A|B|C|D|20240101||ADT^A01|1|P|2.5\rPID|1||7||DOE^JOHN\r");
/// let mut buf = MessageBuf::from(&msg);
/// buf.set("PID-5-2", "JANE").unwrap();
/// buf.set("PID-3[2]-4", "H&S").unwrap(); // builds the missing repetition and components, escapes `&`
/// buf.set("ZPI-2", "extra").unwrap(); // a missing segment is appended
/// assert_eq!(
///     buf.encode(),
///     b"MSH|^~\\&|A|B|C|D|20240101||ADT^A01|1|P|2.5\rPID|1||7~^^^H\\T\\S||DOE^JANE\rZPI||extra\r"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageBuf<'a> {
    delims: Delimiters,
    charset: Charset,
    /// Bytes before the first segment (byte-order mark, blank lines).
    prefix: Cow<'a, [u8]>,
    segments: Vec<SegmentBuf<'a>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct SegmentBuf<'a> {
    /// `[identifier, field 1, field 2, ...]`; for a header, field 1 is the field separator and field 2 MSH-2.
    fields: Vec<Cow<'a, [u8]>>,
    terminator: Cow<'a, [u8]>,
}

impl SegmentBuf<'_> {
    fn is_header(&self) -> bool {
        matches!(&*self.fields[0], b"MSH" | b"FHS" | b"BHS")
    }
}

/// Why an edit could not be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// The path is not valid.
    #[error(transparent)]
    Path(#[from] PathError),
    /// The path's text is not a valid path (see [`Path::parse`]).
    #[error("invalid path")]
    InvalidPath,
    /// The path names groups (`/PATIENT_RESULT/...`); an editable message is flat: name the segment by its
    /// occurrence in the message (`OBX[3]-5`).
    #[error("group paths cannot be edited; name the segment by its occurrence, e.g. OBX[3]-5")]
    GroupPath,
    /// The segment occurrence does not exist and is not the next one (which would be appended).
    #[error("no segment {segment}[{occurrence}] to edit, and it is not the next occurrence")]
    NoSuchSegment {
        /// Segment identifier.
        segment: String,
        /// Requested occurrence.
        occurrence: usize,
    },
    /// MSH-1 and MSH-2 hold the delimiters; changing them would change how every other field reads.
    #[error("{0} holds the delimiters and cannot be set")]
    Delimiters(String),
    /// The message has no subcomponent separator, so a subcomponent other than the first cannot exist.
    #[error("the message declares no subcomponent separator")]
    NoSubcomponentSeparator,
    /// A character cannot be represented in the message's character set.
    #[error("the value cannot be written in the message's character set {0:?}")]
    Unencodable(Charset),
    /// The value contains a delimiter or line break but the message declares no escape character.
    #[error("the value needs escaping but the message declares no escape character")]
    NoEscapeCharacter,
    /// A segment index is out of range.
    #[error("no segment at index {0}")]
    NoSuchIndex(usize),
    /// A segment to insert is not `XXX` or `XXX|fields...` with a three-character identifier.
    #[error("not a segment: {0:?}")]
    NotASegment(String),
}

impl<'a> From<&Message<'a>> for MessageBuf<'a> {
    fn from(msg: &Message<'a>) -> Self {
        let buf = msg.as_bytes();
        let first = msg.segs.first().map_or(buf.len(), |s| s.start as usize);
        let segments = msg
            .segs
            .iter()
            .map(|s| SegmentBuf {
                fields: msg.spans[s.first as usize..(s.first + s.count) as usize]
                    .iter()
                    .map(|sp| Cow::Borrowed(sp.slice(buf)))
                    .collect(),
                terminator: Cow::Borrowed(
                    buf.get(s.end as usize..s.term_end as usize)
                        .unwrap_or_default(),
                ),
            })
            .collect();
        MessageBuf {
            delims: *msg.delimiters(),
            charset: msg.charset(),
            prefix: Cow::Borrowed(buf.get(..first).unwrap_or_default()),
            segments,
        }
    }
}

impl<'a> MessageBuf<'a> {
    /// An empty message (no segments) with these delimiters and character set.
    pub fn new(delims: Delimiters, charset: Charset) -> MessageBuf<'static> {
        MessageBuf {
            delims,
            charset,
            prefix: Cow::Borrowed(b""),
            segments: Vec::new(),
        }
    }

    /// Copies every borrowed byte so the message no longer borrows its input.
    pub fn into_owned(self) -> MessageBuf<'static> {
        let own = |c: Cow<'a, [u8]>| Cow::Owned(c.into_owned());
        MessageBuf {
            delims: self.delims,
            charset: self.charset,
            prefix: own(self.prefix),
            segments: self
                .segments
                .into_iter()
                .map(|s| SegmentBuf {
                    fields: s.fields.into_iter().map(own).collect(),
                    terminator: own(s.terminator),
                })
                .collect(),
        }
    }

    /// The delimiters values are escaped with.
    pub fn delimiters(&self) -> &Delimiters {
        &self.delims
    }

    /// Number of segments.
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// The identifier of the segment at a 0-based index.
    pub fn segment_id(&self, index: usize) -> Option<&str> {
        std::str::from_utf8(self.segments.get(index)?.fields.first()?).ok()
    }

    /// Encodes the message: unchanged fields as read, edited ones as written, each segment with its original
    /// terminator (new segments get the terminator of the message's first segment, CR by default).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode_into(&mut out);
        out
    }

    fn encoded_len(&self) -> usize {
        self.prefix.len()
            + self
                .segments
                .iter()
                .map(|s| s.fields.iter().map(|f| f.len() + 1).sum::<usize>() + s.terminator.len())
                .sum::<usize>()
    }

    /// Appends the encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.prefix);
        let fs = self.delims.field;
        for s in &self.segments {
            let header = s.is_header();
            for (i, f) in s.fields.iter().enumerate() {
                // In a header, field 1 *is* the separator between the identifier and MSH-2.
                if i > 0 && !(header && i == 2) && !(header && i == 1) {
                    out.push(fs);
                }
                out.extend_from_slice(f);
            }
            out.extend_from_slice(&s.terminator);
        }
    }

    /// The decoded text at a path (Terser style, like [`Message::get`]).
    pub fn get(&self, path: impl AsPath) -> Option<Cow<'_, str>> {
        let path = path.as_path()?;
        if path.is_group_path() {
            return None;
        }
        let leaf = self.field_value(&path)?.repetition(path.repetition)?;
        let leaf = leaf.component(path.component.unwrap_or(1))?;
        Some(leaf.subcomponent(path.subcomponent.unwrap_or(1))?.text())
    }

    fn field_value(&self, path: &Path) -> Option<Value<'_>> {
        let i = self.find(&path.segment, path.occurrence)?;
        let seg = &self.segments[i];
        let raw = seg.fields.get(path.field)?;
        let level = if path.field <= 2 && seg.is_header() {
            Level::Verbatim
        } else {
            Level::Field
        };
        Some(Value::new(raw, self.delims, self.charset, level))
    }

    fn find(&self, id: &[u8; 3], occurrence: usize) -> Option<usize> {
        self.segments
            .iter()
            .enumerate()
            .filter(|(_, s)| &*s.fields[0] == id)
            .nth(occurrence.checked_sub(1)?)
            .map(|(i, _)| i)
    }

    /// Sets the value at a path, Terser style: a path without a component sets component 1, without a
    /// subcomponent sets subcomponent 1. The text is escaped and encoded in the message's character set. Missing
    /// fields, repetitions, components and subcomponents are created empty; a missing segment is appended when it
    /// is the next occurrence.
    pub fn set(&mut self, path: impl AsPath, text: &str) -> Result<(), EditError> {
        let mut path = path.as_path().ok_or(EditError::InvalidPath)?.into_owned();
        path.component.get_or_insert(1);
        path.subcomponent.get_or_insert(1);
        let needs_escape = text
            .bytes()
            .any(|b| self.delims.is_delimiter(b) || b == b'\r' || b == b'\n');
        if needs_escape && self.delims.escape.is_none() {
            return Err(EditError::NoEscapeCharacter);
        }
        let raw = escape::encode(text, &self.delims, self.charset)
            .ok_or(EditError::Unencodable(self.charset))?;
        self.set_raw(&path, &raw)
    }

    /// Replaces the raw (already escaped) bytes at exactly the depth the path names: `PID-5` replaces the first
    /// repetition of PID-5 as a whole, `PID-5-1` its first component.
    pub fn set_raw(&mut self, path: impl AsPath, raw: &[u8]) -> Result<(), EditError> {
        let path = path.as_path().ok_or(EditError::InvalidPath)?;
        if path.is_group_path() {
            return Err(EditError::GroupPath);
        }
        let d = self.delims;
        let index = match self.find(&path.segment, path.occurrence) {
            Some(i) => i,
            None => {
                let existing = self
                    .segments
                    .iter()
                    .filter(|s| *s.fields[0] == path.segment)
                    .count();
                if path.occurrence != existing + 1 {
                    return Err(EditError::NoSuchSegment {
                        segment: path.segment_id().to_owned(),
                        occurrence: path.occurrence,
                    });
                }
                self.push_fields(vec![Cow::Owned(path.segment.to_vec())]);
                self.segments.len() - 1
            }
        };
        let seg = &mut self.segments[index];
        if seg.is_header() && path.field <= 2 {
            return Err(EditError::Delimiters(format!(
                "{}-{}",
                path.segment_id(),
                path.field
            )));
        }
        if path.subcomponent.is_some_and(|s| s > 1) && d.subcomponent.is_none() {
            return Err(EditError::NoSubcomponentSeparator);
        }
        while seg.fields.len() <= path.field {
            seg.fields.push(Cow::Borrowed(b""));
        }
        let field = &mut seg.fields[path.field];
        let mut levels = vec![(d.repetition, path.repetition)];
        if let Some(c) = path.component {
            levels.push((d.component, c));
            if let (Some(s), Some(sep)) = (path.subcomponent, d.subcomponent) {
                levels.push((sep, s));
            }
        }
        *field = Cow::Owned(replace_part(field, &levels, raw));
        Ok(())
    }

    /// Appends a segment written as raw text with the message's delimiters (`NTE|1||text`).
    pub fn push_segment(&mut self, raw: &[u8]) -> Result<(), EditError> {
        self.insert_segment(self.segments.len(), raw)
    }

    /// Inserts a segment (raw text with the message's delimiters) before the 0-based `index`.
    pub fn insert_segment(&mut self, index: usize, raw: &[u8]) -> Result<(), EditError> {
        if index > self.segments.len() {
            return Err(EditError::NoSuchIndex(index));
        }
        let fields: Vec<Cow<'a, [u8]>> = raw
            .split(|&b| b == self.delims.field)
            .map(|f| Cow::Owned(f.to_vec()))
            .collect();
        let ok = fields[0].len() == 3 && fields[0].iter().all(u8::is_ascii_alphanumeric);
        if !ok
            || raw.iter().any(|&b| b == b'\r' || b == b'\n')
            || matches!(&*fields[0], b"MSH" | b"FHS" | b"BHS")
        {
            return Err(EditError::NotASegment(
                String::from_utf8_lossy(raw).into_owned(),
            ));
        }
        let terminator = self.style_terminator();
        // The segment before the new one must end with a terminator (a message's last segment may not).
        if index > 0 {
            let prev = &mut self.segments[index - 1];
            if prev.terminator.is_empty() {
                prev.terminator = Cow::Owned(terminator.clone());
            }
        }
        self.segments.insert(
            index,
            SegmentBuf {
                fields,
                terminator: Cow::Owned(terminator),
            },
        );
        Ok(())
    }

    fn push_fields(&mut self, fields: Vec<Cow<'a, [u8]>>) {
        let terminator = self.style_terminator();
        if let Some(prev) = self.segments.last_mut()
            && prev.terminator.is_empty()
        {
            prev.terminator = Cow::Owned(terminator.clone());
        }
        self.segments.push(SegmentBuf {
            fields,
            terminator: Cow::Owned(terminator),
        });
    }

    /// The message's own segment terminator: the first segment's CR, LF or CRLF; CR when it has none.
    fn style_terminator(&self) -> Vec<u8> {
        match self.segments.first().map(|s| &*s.terminator) {
            Some([b'\r', b'\n', ..]) => b"\r\n".to_vec(),
            Some([b'\n', ..]) => b"\n".to_vec(),
            _ => b"\r".to_vec(),
        }
    }

    /// Removes the segment at a 0-based index.
    pub fn remove_segment(&mut self, index: usize) -> Result<(), EditError> {
        if index >= self.segments.len() {
            return Err(EditError::NoSuchIndex(index));
        }
        self.segments.remove(index);
        Ok(())
    }

    /// Removes every segment with identifier `id`; returns how many were removed.
    pub fn remove_segments(&mut self, id: &str) -> usize {
        let before = self.segments.len();
        self.segments.retain(|s| &*s.fields[0] != id.as_bytes());
        before - self.segments.len()
    }
}

/// Replaces the `n`-th part at the last of `levels` (each level: separator and 1-based index), creating empty
/// parts as needed, and returns the new raw bytes. Parts that are not on the path keep their bytes.
fn replace_part(raw: &[u8], levels: &[(u8, usize)], value: &[u8]) -> Vec<u8> {
    let Some(&(sep, n)) = levels.first() else {
        return value.to_vec();
    };
    let mut parts: Vec<&[u8]> = raw.split(|&b| b == sep).collect();
    if raw.is_empty() {
        parts.clear();
    }
    while parts.len() < n {
        parts.push(b"");
    }
    let replaced = replace_part(parts[n - 1], &levels[1..], value);
    let mut out = Vec::with_capacity(raw.len() + value.len() + n);
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push(sep);
        }
        if i == n - 1 {
            out.extend_from_slice(&replaced);
        } else {
            out.extend_from_slice(p);
        }
    }
    out
}
