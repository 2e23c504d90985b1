//! The read-only message: an index of offsets over borrowed bytes, and views that split and decode on demand.

use std::borrow::Cow;
use std::sync::OnceLock;

use crate::diagnostic::{Diagnostic, ParseError, Severity};
use crate::parse::{ParseOptions, parse};
use crate::path::{AsPath, Path};
use crate::structure::{GroupTree, TreeOptions};
use crate::{Charset, Delimiters, escape};

/// A parsed HL7 v2 message borrowing its bytes.
///
/// Parsing records where segments and fields start and end (two flat arrays of `u32` offsets); repetitions,
/// components and subcomponents are found by scanning a field when it is read, and text is decoded (escape
/// sequences, character set) only when asked for.
#[derive(Clone, Debug)]
pub struct Message<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) delims: Delimiters,
    pub(crate) charset: Charset,
    pub(crate) segs: Vec<Seg>,
    /// Per segment, `count` spans from `first`: the identifier, then field 1, 2, ...
    pub(crate) spans: Vec<Span>,
    pub(crate) diags: Vec<Diagnostic>,
    /// Line breaks inside content, of which the first [`crate::parse::MAX_LINE_BREAK_DIAGNOSTICS`] have a
    /// diagnostic.
    pub(crate) line_breaks: u32,
    pub(crate) tree_options: TreeOptions,
    /// Built on first use by a group path or [`Message::group_tree`].
    pub(crate) tree: OnceLock<Box<GroupTree>>,
}

/// A byte range `start..end` of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: u32,
    pub(crate) end: u32,
}

impl Span {
    /// The parser only builds spans for inputs below 4 GiB (it reports `TooLarge` otherwise).
    pub(crate) fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }
    pub(crate) fn len(&self) -> usize {
        self.end.saturating_sub(self.start) as usize
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub(crate) fn slice<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        buf.get(self.start as usize..self.end as usize)
            .unwrap_or(&[])
    }
}

/// One segment's place in the input.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seg {
    pub(crate) start: u32,
    /// End of the content (where the terminator starts).
    pub(crate) end: u32,
    /// End of the terminator (CR, LF, CRLF, blank lines).
    pub(crate) term_end: u32,
    pub(crate) first: u32,
    pub(crate) count: u32,
}

impl<'a> Message<'a> {
    /// Parses leniently: always returns a message, with [`diagnostics`](Message::diagnostics) for what was wrong.
    pub fn parse(bytes: &'a [u8]) -> Message<'a> {
        parse(bytes, &ParseOptions::default())
    }

    /// Parses leniently with options (e.g. the default character set).
    pub fn parse_with(bytes: &'a [u8], options: &ParseOptions) -> Message<'a> {
        parse(bytes, options)
    }

    /// Parses strictly: the first error-severity diagnostic becomes the error. Warnings stay available on the
    /// message.
    pub fn parse_strict(bytes: &'a [u8]) -> Result<Message<'a>, ParseError> {
        let msg = parse(bytes, &ParseOptions::default());
        let mut errors = msg.diags.iter().filter(|d| d.severity() == Severity::Error);
        match errors.next() {
            None => Ok(msg),
            Some(first) => Err(ParseError::Malformed {
                diagnostic: *first,
                count: 1 + errors.count(),
            }),
        }
    }

    /// What the parser noticed, ordered by byte offset.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diags
    }

    /// Diagnostics found but not kept in [`Message::diagnostics`]: line breaks inside content past the first
    /// thousand (warnings, each saying the same).
    pub fn diagnostics_not_kept(&self) -> usize {
        (self.line_breaks as usize).saturating_sub(crate::parse::MAX_LINE_BREAK_DIAGNOSTICS)
    }

    /// True when a diagnostic has error severity.
    pub fn has_errors(&self) -> bool {
        self.diags.iter().any(|d| d.severity() == Severity::Error)
    }

    /// The delimiters from MSH-1/MSH-2 (defaults when the message has no usable header).
    pub fn delimiters(&self) -> &Delimiters {
        &self.delims
    }

    /// The character set from MSH-18, or the parse's default.
    pub fn charset(&self) -> Charset {
        self.charset
    }

    /// The bytes this message was parsed from.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.buf
    }

    /// Encodes the message. It is unchanged, so this is exactly its input, byte for byte (to edit, use
    /// [`MessageBuf`](crate::MessageBuf)).
    pub fn encode(&self) -> &'a [u8] {
        self.buf
    }

    /// Number of segments.
    pub fn segment_count(&self) -> usize {
        self.segs.len()
    }

    /// The segment at a 0-based index.
    pub fn segment(&self, index: usize) -> Option<Segment<'_, 'a>> {
        (index < self.segs.len()).then_some(Segment { msg: self, index })
    }

    /// All segments in order.
    pub fn segments(&self) -> impl ExactSizeIterator<Item = Segment<'_, 'a>> + '_ {
        (0..self.segs.len()).map(move |index| Segment { msg: self, index })
    }

    /// The `occurrence`-th (1-based) segment with identifier `id`.
    pub fn find_segment(&self, id: &[u8], occurrence: usize) -> Option<Segment<'_, 'a>> {
        let mut seen = 0;
        for index in 0..self.segs.len() {
            let seg = &self.segs[index];
            if same_bytes(self.spans[seg.first as usize].slice(self.buf), id) {
                seen += 1;
                if seen == occurrence {
                    return Some(Segment { msg: self, index });
                }
            }
        }
        None
    }

    /// The decoded text at a path, Terser style: a path without a component reads component 1, without a
    /// subcomponent reads subcomponent 1, so the result is always one primitive value. `None` when the path is
    /// invalid or the value is absent; an empty string when the value is present but empty.
    ///
    /// ```
    /// let msg = hl7v2::Message::parse(b"MSH|^~\\&|A|B|C|D|20240101||ADT^A01|1|P|2.5\rPID|1||7^^^H~8^^^X||DOE^JOHN");
    /// assert_eq!(msg.get("PID-5-2").as_deref(), Some("JOHN"));
    /// assert_eq!(msg.get("PID-5").as_deref(), Some("DOE"));
    /// assert_eq!(msg.get("PID-3(1)-4").as_deref(), Some("X")); // HAPI's 0-based repetition
    /// assert_eq!(msg.get("PID-3[2]-4").as_deref(), Some("X")); // the same, 1-based
    /// assert_eq!(msg.get("MSH-9-2").as_deref(), Some("A01"));
    /// ```
    pub fn get(&self, path: impl AsPath) -> Option<Cow<'a, str>> {
        let path = path.as_path()?;
        let seg = self.segment_at(&path)?;
        let (raw, verbatim) = self.leaf(seg.index, &path)?;
        Some(if verbatim {
            String::from_utf8_lossy(raw)
        } else {
            escape::decode(raw, &self.delims, self.charset)
        })
    }

    /// The bytes of the primitive value `path` names in the segment at `index`, and whether they are MSH-1/MSH-2
    /// (read verbatim): what `Segment::field`, `Value::repetition`, `component(c or 1)` and `subcomponent(s or
    /// 1)` give, found in one pass per level without building `Value`s (group-path and flat reads spend most of
    /// their time here).
    fn leaf(&self, index: usize, path: &Path) -> Option<(&'a [u8], bool)> {
        if path.field == 0 {
            return None;
        }
        let raw = self.field_span(index, path.field)?.slice(self.buf);
        let component = path.component.unwrap_or(1);
        let subcomponent = path.subcomponent.unwrap_or(1);
        if path.field <= 2 && (Segment { msg: self, index }).is_header() {
            // MSH-1 and MSH-2 are not split: each is its own only repetition, component and subcomponent.
            return (path.repetition == 1 && component == 1 && subcomponent == 1)
                .then_some((raw, true));
        }
        let d = &self.delims;
        let raw = nth_part(raw, d.repetition, path.repetition)?;
        let raw = nth_part(raw, d.component, component)?;
        let raw = match d.subcomponent {
            Some(s) => nth_part(raw, s, subcomponent)?,
            // No subcomponent separator: a component is its own only subcomponent.
            None => (subcomponent == 1).then_some(raw)?,
        };
        Some((raw, false))
    }

    /// The raw (still escaped) bytes at exactly the depth the path names: `PID-5` is the whole first repetition
    /// of PID-5 (`DOE^JOHN`), `PID-5-1` its first component.
    pub fn raw(&self, path: impl AsPath) -> Option<&'a [u8]> {
        let path = path.as_path()?;
        let mut v = self.value(&path)?;
        if let Some(c) = path.component {
            v = v.component(c)?;
            if let Some(s) = path.subcomponent {
                v = v.subcomponent(s)?;
            }
        }
        Some(v.raw())
    }

    /// Where each segment stands in the message structure of its version (built on first use, then kept): group
    /// paths (`/PATIENT_RESULT/ORDER_OBSERVATION(1)/OBX(2)-5`) are read through it.
    ///
    /// ```
    /// let msg = hl7v2::Message::parse(
    ///     b"MSH|^~\\&|A|B|C|D|20240101||ORU^R01^ORU_R01|1|P|2.5.1\rPID|1||7\rOBR|1\rOBX|1|NM|a||5\rOBX|2|NM|b||6\r",
    /// );
    /// let tree = msg.group_tree();
    /// assert_eq!(tree.structure_id(), Some("ORU_R01"));
    /// assert_eq!(tree.path_of(4).as_deref(), Some("/PATIENT_RESULT(0)/ORDER_OBSERVATION(0)/OBSERVATION(1)/OBX(0)"));
    /// assert_eq!(msg.get("/PATIENT_RESULT/ORDER_OBSERVATION/OBSERVATION(1)/OBX-5").as_deref(), Some("6"));
    /// assert_eq!(msg.get("/.OBSERVATION(1)/OBX-5").as_deref(), Some("6"));
    /// assert_eq!(msg.get("OBX(1)-5").as_deref(), Some("6")); // flat: the second OBX of the message
    /// ```
    pub fn group_tree(&self) -> &GroupTree {
        self.tree
            .get_or_init(|| Box::new(GroupTree::build(self, &self.tree_options)))
    }

    /// The segment a path names: by occurrence in the whole message (flat path), or through the group tree.
    pub fn segment_at(&self, path: &Path) -> Option<Segment<'_, 'a>> {
        if path.is_group_path() {
            match self.group_tree().find(path) {
                Some(i) => self.segment(i),
                // `/PID-5` where PID is not a direct child of the message: read it flat, as Thoth always has.
                None if path.groups.is_empty()
                    && path.segment_step.as_ref().is_some_and(|s| !s.search) =>
                {
                    self.find_segment(&path.segment, path.occurrence)
                }
                None => None,
            }
        } else {
            self.find_segment(&path.segment, path.occurrence)
        }
    }

    /// The repetition a path names (segment occurrence, field, repetition).
    fn value(&self, path: &Path) -> Option<Value<'a>> {
        let seg = self.segment_at(path)?;
        seg.field(path.field)?.repetition(path.repetition)
    }

    /// The span of a field: `seg` is the 0-based segment index, `field` the HL7 field number.
    pub(crate) fn field_span(&self, seg: usize, field: usize) -> Option<Span> {
        let s = self.segs.get(seg)?;
        if field >= s.count as usize {
            return None;
        }
        self.spans.get(s.first as usize + field).copied()
    }

    /// The (1-based segment index, field number) containing a byte offset; (0, 0) before the first segment.
    pub(crate) fn locate(&self, offset: usize) -> (usize, usize) {
        let offset = offset as u32;
        let i = self.segs.partition_point(|s| s.start <= offset);
        if i == 0 {
            return (0, 0);
        }
        let s = &self.segs[i - 1];
        let spans = &self.spans[s.first as usize..(s.first + s.count) as usize];
        let f = spans.partition_point(|sp| sp.start <= offset);
        (i, f.saturating_sub(1))
    }
}

/// One segment of a [`Message`].
#[derive(Clone, Copy, Debug)]
pub struct Segment<'m, 'a> {
    msg: &'m Message<'a>,
    index: usize,
}

impl<'m, 'a> Segment<'m, 'a> {
    fn seg(&self) -> &'m Seg {
        &self.msg.segs[self.index]
    }

    /// The identifier, e.g. `PID` (as written; not necessarily valid).
    pub fn id(&self) -> &'a str {
        let raw = self.msg.spans[self.seg().first as usize].slice(self.msg.buf);
        std::str::from_utf8(raw).unwrap_or("")
    }

    /// The identifier's bytes.
    pub fn id_bytes(&self) -> &'a [u8] {
        self.msg.spans[self.seg().first as usize].slice(self.msg.buf)
    }

    /// 0-based index in the message.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Byte offset of the segment's start in the input.
    pub fn offset(&self) -> usize {
        self.seg().start as usize
    }

    /// The segment's bytes without its terminator.
    pub fn raw(&self) -> &'a [u8] {
        let s = self.seg();
        Span {
            start: s.start,
            end: s.end,
        }
        .slice(self.msg.buf)
    }

    /// The terminator as written (CR, LF, CRLF, possibly with blank lines; empty for a last unterminated
    /// segment).
    pub fn terminator(&self) -> &'a [u8] {
        let s = self.seg();
        Span {
            start: s.end,
            end: s.term_end,
        }
        .slice(self.msg.buf)
    }

    /// The highest field number present (fields beyond it are absent).
    pub fn field_count(&self) -> usize {
        (self.seg().count as usize).saturating_sub(1)
    }

    /// True for `MSH`, `FHS` and `BHS`, whose fields 1 and 2 are the delimiters.
    pub fn is_header(&self) -> bool {
        matches!(self.id_bytes(), b"MSH" | b"FHS" | b"BHS")
    }

    /// Field `n` (1-based HL7 number: in MSH, field 1 is the field separator and field 2 the encoding
    /// characters).
    pub fn field(&self, n: usize) -> Option<Value<'a>> {
        if n == 0 {
            return None;
        }
        let span = self.msg.field_span(self.index, n)?;
        Some(Value {
            raw: span.slice(self.msg.buf),
            offset: span.start,
            delims: self.msg.delims,
            charset: self.msg.charset,
            level: if n <= 2 && self.is_header() {
                Level::Verbatim
            } else {
                Level::Field
            },
        })
    }

    /// Fields 1..=field_count in order: what [`Segment::field`] gives for each, read in one pass over the
    /// segment's spans rather than looked up field by field.
    pub fn fields(&self) -> impl Iterator<Item = Value<'a>> + '_ {
        let msg = self.msg;
        let spans = msg
            .segs
            .get(self.index)
            .and_then(|s| {
                msg.spans
                    .get(s.first as usize + 1..(s.first + s.count) as usize)
            })
            .unwrap_or_default();
        let header = self.is_header();
        spans.iter().enumerate().map(move |(i, span)| Value {
            raw: span.slice(msg.buf),
            offset: span.start,
            delims: msg.delims,
            charset: msg.charset,
            level: if header && i < 2 {
                Level::Verbatim
            } else {
                Level::Field
            },
        })
    }
}

/// What a [`Value`] is a part of a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// A whole field (all repetitions).
    Field,
    /// One repetition of a field.
    Repetition,
    /// One component of a repetition.
    Component,
    /// One subcomponent of a component.
    Subcomponent,
    /// MSH-1 or MSH-2 (and FHS/BHS 1 and 2): the delimiters themselves, never split or unescaped.
    Verbatim,
}

/// A field, repetition, component or subcomponent: raw bytes plus what is needed to split and decode them.
#[derive(Clone, Copy, Debug)]
pub struct Value<'a> {
    raw: &'a [u8],
    offset: u32,
    delims: Delimiters,
    charset: Charset,
    level: Level,
}

impl<'a> Value<'a> {
    pub(crate) fn new(
        raw: &'a [u8],
        delims: Delimiters,
        charset: Charset,
        level: Level,
    ) -> Value<'a> {
        Value {
            raw,
            offset: 0,
            delims,
            charset,
            level,
        }
    }

    /// The raw bytes, escape sequences and inner delimiters included.
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// Byte offset of the value in the parsed input.
    pub fn offset(&self) -> usize {
        self.offset as usize
    }

    /// Which part of a field this is.
    pub fn level(&self) -> Level {
        self.level
    }

    /// True when the value has no bytes.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// True for HL7's explicit null, `""` (the receiver should delete the value).
    pub fn is_null(&self) -> bool {
        self.raw == b"\"\""
    }

    /// The decoded text (escape sequences and character set). A field, repetition or component that still
    /// contains inner delimiters is decoded as a whole, delimiters included.
    pub fn text(&self) -> Cow<'a, str> {
        if self.level == Level::Verbatim {
            return String::from_utf8_lossy(self.raw);
        }
        escape::decode(self.raw, &self.delims, self.charset)
    }

    fn child_sep(&self) -> Option<u8> {
        match self.level {
            Level::Field => Some(self.delims.repetition),
            Level::Repetition => Some(self.delims.component),
            Level::Component => self.delims.subcomponent,
            Level::Subcomponent | Level::Verbatim => None,
        }
    }

    fn child_level(&self) -> Level {
        match self.level {
            Level::Field => Level::Repetition,
            Level::Repetition => Level::Component,
            Level::Component | Level::Subcomponent => Level::Subcomponent,
            Level::Verbatim => Level::Verbatim,
        }
    }

    /// The parts one level down: repetitions of a field, components of a repetition, subcomponents of a
    /// component. A subcomponent (or MSH-1/MSH-2) has itself as its only part.
    pub fn parts(&self) -> Parts<'a> {
        Parts {
            rest: Some(self.raw),
            offset: self.offset,
            sep: self.child_sep(),
            template: Value {
                level: self.child_level(),
                ..*self
            },
        }
    }

    /// The `n`-th (1-based) part one level down; `None` past the last.
    pub fn part(&self, n: usize) -> Option<Value<'a>> {
        if n == 0 {
            return None;
        }
        let Some(sep) = self.child_sep() else {
            return (n == 1).then_some(Value {
                level: self.child_level(),
                ..*self
            });
        };
        // What `parts().nth(n - 1)` gives, by a byte loop (see `nth_part`): the parts read are a few bytes long.
        let raw = nth_part(self.raw, sep, n)?;
        let start = raw.as_ptr() as usize - self.raw.as_ptr() as usize;
        Some(Value {
            raw,
            offset: self.offset + start as u32,
            level: self.child_level(),
            ..*self
        })
    }

    /// Repetition `n` (1-based) of a field; a repetition or deeper value is its own first repetition.
    pub fn repetition(&self, n: usize) -> Option<Value<'a>> {
        match self.level {
            Level::Field => self.part(n),
            _ => (n == 1).then_some(*self),
        }
    }

    /// Component `n` (1-based): of the first repetition when this is a field; a component or deeper value is its
    /// own first component.
    pub fn component(&self, n: usize) -> Option<Value<'a>> {
        match self.level {
            Level::Field => self.repetition(1)?.component(n),
            Level::Repetition => self.part(n),
            _ => (n == 1).then_some(*self),
        }
    }

    /// Subcomponent `n` (1-based) of the first component (of the first repetition); a subcomponent is its own
    /// first subcomponent.
    pub fn subcomponent(&self, n: usize) -> Option<Value<'a>> {
        match self.level {
            Level::Field | Level::Repetition => self.component(1)?.subcomponent(n),
            Level::Component => self.part(n),
            Level::Subcomponent | Level::Verbatim => (n == 1).then_some(*self),
        }
    }
}

/// `a == b` for the few bytes of a segment identifier, compared in place (`==` on slices calls `memcmp`).
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// The `n`-th (1-based) part of `raw` split at `sep`, as [`Parts`] yields them (an empty `raw` has one empty part);
/// `None` past the last. A byte loop: the values read are a few bytes long, where `memchr`'s set-up costs more
/// than it saves.
fn nth_part(raw: &[u8], sep: u8, n: usize) -> Option<&[u8]> {
    if n == 0 {
        return None;
    }
    let mut start = 0;
    if n != 1 {
        let mut k = 1;
        let at = raw.iter().position(|&b| {
            k += usize::from(b == sep);
            k == n
        })?;
        start = at + 1;
    }
    let rest = raw.get(start..)?;
    let end = rest.iter().position(|&b| b == sep).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The first `b` in `hay`: a byte loop for the short values most parts are (where `memchr`'s set-up costs more
/// than it saves), `memchr` for long ones.
fn find_byte(b: u8, hay: &[u8]) -> Option<usize> {
    if hay.len() < 32 {
        hay.iter().position(|&c| c == b)
    } else {
        memchr::memchr(b, hay)
    }
}

/// Iterator over the parts of a [`Value`] (see [`Value::parts`]).
#[derive(Clone, Debug)]
pub struct Parts<'a> {
    rest: Option<&'a [u8]>,
    offset: u32,
    sep: Option<u8>,
    template: Value<'a>,
}

impl<'a> Iterator for Parts<'a> {
    type Item = Value<'a>;
    fn next(&mut self) -> Option<Value<'a>> {
        let rest = self.rest?;
        let (raw, next) = match self.sep.and_then(|s| find_byte(s, rest)) {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        let v = Value {
            raw,
            offset: self.offset,
            ..self.template
        };
        self.offset += raw.len() as u32 + 1;
        self.rest = next;
        Some(v)
    }
}
