//! The lenient parser: one pass over the bytes that records segment and field offsets and diagnostics.
//!
//! Invariants the rest of the crate relies on: every span lies inside the input (`start <= end <= len`), spans of
//! one segment's fields are in order and do not overlap, and the segment's first span is its identifier.

use crate::charset::Charset;
use crate::delimiters::{DelimiterProblem, Delimiters};
use crate::diagnostic::{Diagnostic, DiagnosticKind, Location};
use crate::message::{Message, Seg, Span};
use crate::structure::TreeOptions;

/// Options of a parse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParseOptions {
    /// The character set assumed when MSH-18 is empty or unknown (UTF-8 unless set).
    pub default_charset: Charset,
    /// How the group tree chooses the message's version (used by group paths and validation).
    pub tree: TreeOptions,
}

impl ParseOptions {
    /// Options with the given default character set.
    pub fn with_default_charset(mut self, charset: Charset) -> Self {
        self.default_charset = charset;
        self
    }

    /// Options with the given version choice for the group tree (e.g. the version assumed when MSH-12 is empty).
    pub fn with_tree_options(mut self, tree: TreeOptions) -> Self {
        self.tree = tree;
        self
    }
}

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// The fields and segments that parsing `buf` would index, counted without parsing it: each field separator (the
/// byte after `MSH`, past a byte-order mark) and each segment terminator (CR or LF). The parser's index takes
/// about 8 bytes a field, so a service that takes messages from untrusted peers counts first and refuses a
/// message of separators it cannot afford to index ([`elements_over`]).
pub fn element_count(buf: &[u8]) -> usize {
    let body = buf.strip_prefix(UTF8_BOM).unwrap_or(buf);
    let fs = body.get(3).copied().unwrap_or(b'|');
    memchr::memchr3_iter(fs, b'\r', b'\n', body).count()
}

/// [`element_count`] when it is more than `limit`, else `None`. Free for a message of at most `limit` bytes,
/// which cannot have more elements than bytes: only longer ones are counted.
pub fn elements_over(buf: &[u8], limit: usize) -> Option<usize> {
    if buf.len() <= limit {
        return None;
    }
    Some(element_count(buf)).filter(|&n| n > limit)
}

pub(crate) fn parse<'a>(buf: &'a [u8], opts: &ParseOptions) -> Message<'a> {
    let (mut msg, start) = match prologue(buf, Delimiters::default(), opts) {
        Ok(v) => v,
        Err(msg) => return msg,
    };
    let header = &buf[start..];
    let is_header = header.len() >= 4 && matches!(&header[..3], b"MSH" | b"FHS" | b"BHS");
    if is_header {
        let (d, _, problem) = Delimiters::read(header);
        msg.delims = d;
        let id = [header[0], header[1], header[2]];
        if let Some(p) = problem {
            let kind = match p {
                DelimiterProblem::Missing => DiagnosticKind::MissingEncodingCharacters,
                DelimiterProblem::Unusable => DiagnosticKind::UnusableDelimiter,
                DelimiterProblem::Duplicate => DiagnosticKind::DuplicateDelimiter,
            };
            msg.diags.push(diag(kind, start + 3, 1, id, 2));
        }
    } else {
        msg.diags
            .push(diag(DiagnosticKind::MissingHeader, start, 1, [0; 3], 0));
    }
    index(&mut msg, start, is_header);
    if is_header {
        check_header(&mut msg, opts);
    }
    check_controls(&mut msg);
    msg.diags.sort_by_key(|d| d.location.offset);
    msg
}

/// Parses segments that follow a header elsewhere (batch and file trailers): no MSH is expected, the given
/// delimiters are used.
pub(crate) fn parse_with_delimiters<'a>(
    buf: &'a [u8],
    delims: Delimiters,
    opts: &ParseOptions,
) -> Message<'a> {
    let (mut msg, start) = match prologue(buf, delims, opts) {
        Ok(v) => v,
        Err(msg) => return msg,
    };
    index(&mut msg, start, false);
    check_controls(&mut msg);
    msg.diags.sort_by_key(|d| d.location.offset);
    msg
}

/// The empty message and where its first segment starts; `Err` with the finished message when there is nothing
/// to index.
// The `Err` is the message itself, returned once per parse and moved into the caller's result: boxing it would
// cost an allocation on a path that has none.
#[allow(clippy::result_large_err)]
fn prologue<'a>(
    buf: &'a [u8],
    delims: Delimiters,
    opts: &ParseOptions,
) -> Result<(Message<'a>, usize), Message<'a>> {
    let mut msg = Message {
        buf,
        delims,
        charset: opts.default_charset,
        segs: Vec::new(),
        spans: Vec::new(),
        diags: Vec::new(),
        line_breaks: 0,
        tree_options: opts.tree,
        tree: std::sync::OnceLock::new(),
    };
    if u32::try_from(buf.len()).is_err() {
        msg.diags
            .push(diag(DiagnosticKind::TooLarge, 0, 0, [0; 3], 0));
        return Err(msg);
    }
    // Leading byte-order mark and blank lines are not part of the first segment (they stay in the buffer, so
    // encoding an unchanged message still reproduces them).
    let mut start = if buf.starts_with(UTF8_BOM) {
        UTF8_BOM.len()
    } else {
        0
    };
    while start < buf.len() && matches!(buf[start], b'\r' | b'\n' | b' ' | b'\t') {
        start += 1;
    }
    if start >= buf.len() {
        msg.diags
            .push(diag(DiagnosticKind::Empty, start, 0, [0; 3], 0));
        return Err(msg);
    }
    Ok((msg, start))
}

/// How many line-break diagnostics a message keeps (see [`Message::diagnostics_not_kept`]).
pub(crate) const MAX_LINE_BREAK_DIAGNOSTICS: usize = 1000;

fn diag(
    kind: DiagnosticKind,
    offset: usize,
    segment: usize,
    segment_id: [u8; 3],
    field: usize,
) -> Diagnostic {
    Diagnostic {
        kind,
        location: Location {
            offset,
            segment,
            segment_id,
            field,
        },
    }
}

/// Splits segments and fields in one scan for the field separator, CR and LF.
fn index(msg: &mut Message<'_>, start: usize, is_header: bool) {
    let buf = msg.buf;
    let fs = msg.delims.field;
    // A typical field is 5..10 bytes long; reserving avoids regrowth for most messages. Small messages often have
    // runs of empty fields (the ADT^A01 of the benches: 77 fields in 316 bytes), and regrowing costs more than a
    // few hundred bytes reserved and not used.
    let per_span = if buf.len() <= 4096 { 3 } else { 6 };
    msg.spans.reserve(buf.len() / per_span + 8);
    msg.segs.reserve(buf.len() / 64 + 2);

    let mut seg_start = start;
    let mut field_start = start;
    let mut first_span = 0usize;
    // The header's MSH-1 is the separator itself; MSH-2 is then scanned like any field (it holds no field
    // separator by definition), so a line break after it gets the same content-or-terminator decision as anywhere.
    let mut pos_iter_start = start;
    if is_header {
        msg.spans.push(Span::new(start, start + 3));
        msg.spans.push(Span::new(start + 3, start + 4));
        field_start = start + 4;
        pos_iter_start = start + 4;
    }
    let mut in_name = !is_header;
    let mut it = DelimiterScan::new(buf, fs);
    loop {
        let Some(p) = it.next() else {
            finish_segment(
                msg,
                seg_start,
                buf.len(),
                buf.len(),
                field_start,
                in_name,
                first_span,
            );
            return;
        };
        if p < pos_iter_start {
            continue;
        }
        let b = buf[p];
        if b == fs && b != b'\r' && b != b'\n' {
            if in_name {
                msg.spans.push(Span::new(seg_start, p));
                in_name = false;
            } else {
                msg.spans.push(Span::new(field_start, p));
            }
            field_start = p + 1;
            continue;
        }
        // A line break: find the whole run of CR/LF.
        let mut q = p;
        while q < buf.len() && matches!(buf[q], b'\r' | b'\n') {
            q += 1;
        }
        if buf[q..].iter().all(u8::is_ascii_whitespace) {
            // Trailing blanks after the last segment belong to its terminator.
            q = buf.len();
        }
        if q < buf.len() && !starts_segment(&buf[q..], fs) {
            let seg_no = msg.segs.len() + 1;
            let id = seg_id(buf, seg_start);
            let field = msg.spans.len() - first_span;
            // One per line break: a body of millions of lines would keep millions. The first are kept, the
            // rest counted ([`Message::diagnostics_not_kept`]); they are warnings, so no error goes unsaid.
            msg.line_breaks = msg.line_breaks.saturating_add(1);
            if msg.line_breaks as usize <= MAX_LINE_BREAK_DIAGNOSTICS {
                msg.diags.push(diag(
                    DiagnosticKind::LineBreakInContent,
                    p,
                    seg_no,
                    id,
                    field,
                ));
            }
            pos_iter_start = q;
            continue;
        }
        finish_segment(msg, seg_start, p, q, field_start, in_name, first_span);
        if q >= buf.len() {
            return;
        }
        seg_start = q;
        field_start = q;
        first_span = msg.spans.len();
        in_name = true;
        pos_iter_start = q;
        if buf.len() > q + 3
            && buf[q + 3] == fs
            && matches!(&buf[q..q + 3], b"MSH" | b"FHS" | b"BHS")
        {
            // A later header segment (e.g. a second message in the same buffer): its field 1 is the separator
            // itself, as in the first one, so that field numbers agree everywhere.
            msg.spans.push(Span::new(q, q + 3));
            msg.spans.push(Span::new(q + 3, q + 4));
            in_name = false;
            field_start = q + 4;
            pos_iter_start = q + 4;
        }
    }
}

/// Positions of the field separator, CR and LF, in order. HL7 fields are a few bytes long, so delimiters are
/// dense: restarting a SIMD search (`memchr3_iter`) after every hit, or a byte loop that branches on every
/// delimiter, both cost more than classifying 64 bytes at once into a bit mask (which the compiler vectorizes)
/// and walking its set bits. Measured on the 316-byte ADT^A01 bench message: about 3x faster than `memchr3_iter`.
struct DelimiterScan<'a> {
    buf: &'a [u8],
    fs: u8,
    /// Offset of the block `mask` describes.
    base: usize,
    /// Delimiters not yet returned in the current block, one bit per byte.
    mask: u64,
}

const BLOCK: usize = 64;

impl<'a> DelimiterScan<'a> {
    fn new(buf: &'a [u8], fs: u8) -> Self {
        let mut scan = DelimiterScan {
            buf,
            fs,
            base: 0,
            mask: 0,
        };
        scan.mask = scan.block_mask(0);
        scan
    }

    #[inline]
    fn block_mask(&self, base: usize) -> u64 {
        match self.buf.get(base..base + BLOCK) {
            Some(block) => full_block_mask(block.try_into().expect("64-byte block"), self.fs),
            None => {
                let mut tail = [0u8; BLOCK];
                let rest = self.buf.get(base..).unwrap_or_default();
                tail[..rest.len()].copy_from_slice(rest);
                // The padding's bits are cleared: a message may declare NUL its field separator (`MSH\0`), and
                // the padding's zero bytes would be delimiters past the end of the buffer.
                full_block_mask(&tail, self.fs) & ((1u64 << rest.len()) - 1)
            }
        }
    }
}

/// One bit per byte of `block` that is the field separator, CR or LF.
#[cfg(target_arch = "x86_64")]
#[inline]
fn full_block_mask(block: &[u8; BLOCK], fs: u8) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of the x86_64 baseline, and each load reads 16 bytes inside `block`.
    unsafe {
        let fs = _mm_set1_epi8(fs as i8);
        let cr = _mm_set1_epi8(b'\r' as i8);
        let lf = _mm_set1_epi8(b'\n' as i8);
        let mut mask = 0u64;
        for i in 0..BLOCK / 16 {
            let v = _mm_loadu_si128(block.as_ptr().add(i * 16).cast::<__m128i>());
            let hit = _mm_or_si128(
                _mm_cmpeq_epi8(v, fs),
                _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, lf)),
            );
            mask |= u64::from(_mm_movemask_epi8(hit) as u16) << (i * 16);
        }
        mask
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn full_block_mask(block: &[u8; BLOCK], fs: u8) -> u64 {
    block.iter().enumerate().fold(0u64, |m, (i, &b)| {
        m | (u64::from((b == fs) | (b == b'\r') | (b == b'\n')) << i)
    })
}

impl Iterator for DelimiterScan<'_> {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.mask == 0 {
            self.base += BLOCK;
            if self.base >= self.buf.len() {
                return None;
            }
            self.mask = self.block_mask(self.base);
        }
        let p = self.base + self.mask.trailing_zeros() as usize;
        self.mask &= self.mask - 1;
        Some(p)
    }
}

fn finish_segment(
    msg: &mut Message<'_>,
    seg_start: usize,
    end: usize,
    term_end: usize,
    field_start: usize,
    in_name: bool,
    first_span: usize,
) {
    if in_name {
        msg.spans.push(Span::new(seg_start, end));
    } else if field_start <= end {
        msg.spans.push(Span::new(field_start, end));
    }
    let seg = Seg {
        start: seg_start as u32,
        end: end as u32,
        term_end: term_end as u32,
        first: first_span as u32,
        count: (msg.spans.len() - first_span) as u32,
    };
    let id = seg_id(msg.buf, seg_start);
    let name_len = msg.spans[first_span].len();
    if name_len != 3 || !valid_id(&id) {
        let n = msg.segs.len() + 1;
        msg.diags
            .push(diag(DiagnosticKind::InvalidSegmentId, seg_start, n, id, 0));
    }
    msg.segs.push(seg);
}

fn seg_id(buf: &[u8], start: usize) -> [u8; 3] {
    let mut id = [0u8; 3];
    for (i, b) in buf.iter().skip(start).take(3).enumerate() {
        id[i] = *b;
    }
    id
}

fn valid_id(id: &[u8; 3]) -> bool {
    id[0].is_ascii_uppercase()
        && id[1..]
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

/// Whether text after a line break starts a segment: three letters or digits followed by the field separator, a
/// line break or the end of input.
fn starts_segment(rest: &[u8], fs: u8) -> bool {
    if rest.len() < 3 || !rest[..3].iter().all(u8::is_ascii_alphanumeric) {
        return false;
    }
    match rest.get(3) {
        None => true,
        Some(&b) => b == fs || b == b'\r' || b == b'\n',
    }
}

/// Charset, control characters and the header fields acknowledgements need.
fn check_header(msg: &mut Message<'_>, opts: &ParseOptions) {
    let id = seg_id(msg.buf, msg.segs.first().map_or(0, |s| s.start as usize));
    if &id == b"MSH" {
        if let Some(span) = msg.field_span(0, 18) {
            let raw = span.slice(msg.buf);
            let first = raw
                .split(|&b| b == msg.delims.repetition)
                .next()
                .unwrap_or(raw);
            if !first.is_empty() {
                match Charset::from_msh18(first) {
                    Some(c) => msg.charset = c,
                    None => {
                        msg.charset = opts.default_charset;
                        msg.diags.push(diag(
                            DiagnosticKind::UnknownCharset,
                            span.start as usize,
                            1,
                            id,
                            18,
                        ));
                    }
                }
            }
        }
        for field in [9, 10, 12] {
            let empty = msg.field_span(0, field).is_none_or(|s| s.is_empty());
            if empty {
                let offset = msg.segs[0].end as usize;
                msg.diags.push(diag(
                    DiagnosticKind::MissingHeaderField,
                    offset,
                    1,
                    id,
                    field,
                ));
            }
        }
    }
}

/// Reports the first control character (other than CR, LF, TAB): enough to flag binary or corrupted input
/// without flooding the diagnostics.
fn check_controls(msg: &mut Message<'_>) {
    let buf = msg.buf;
    if let Some(p) = first_control(buf) {
        let (seg, field) = msg.locate(p);
        let id = msg
            .segs
            .get(seg.wrapping_sub(1))
            .map_or([0; 3], |s| seg_id(buf, s.start as usize));
        msg.diags
            .push(diag(DiagnosticKind::ControlCharacter, p, seg, id, field));
    }
}

/// The first control character other than CR, LF and TAB. Scans 64-byte blocks with a branch-free fold (which the
/// compiler vectorizes) and looks for the position only in a block that has one.
fn first_control(buf: &[u8]) -> Option<usize> {
    let is_control = |b: u8| b < 0x20 && b != b'\r' && b != b'\n' && b != b'\t';
    let mut offset = 0;
    for block in buf.chunks(64) {
        if block.iter().fold(false, |acc, &b| acc | is_control(b)) {
            return block
                .iter()
                .position(|&b| is_control(b))
                .map(|i| offset + i);
        }
        offset += block.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::DelimiterScan;
    use proptest::prelude::*;

    fn naive(buf: &[u8], fs: u8) -> Vec<usize> {
        (0..buf.len())
            .filter(|&i| matches!(buf[i], b'\r' | b'\n') || buf[i] == fs)
            .collect()
    }

    proptest! {
        // Inputs drawn from a small alphabet rich in delimiters, of every length across several 64-byte blocks,
        // so that hits on block boundaries and in the padded tail are covered.
        #[test]
        fn block_scan_finds_exactly_the_delimiters(
            buf in proptest::collection::vec(prop::sample::select(b"|#\r\nA^\0\xff".to_vec()), 0..300),
            // NUL too: a message may declare it (`MSH\0`), and the padded tail is zeros.
            fs in prop::sample::select(b"|#\0".to_vec()),
        ) {
            prop_assert_eq!(DelimiterScan::new(&buf, fs).collect::<Vec<_>>(), naive(&buf, fs));
        }
    }

    /// NUL as the field separator: the padding of the last block once read as delimiters past the end, and
    /// parsing panicked (found by the fuzz target `v2fhir_convert`).
    #[test]
    fn a_nul_field_separator_parses() {
        let bytes = b"MSH\0\0\0\x13||||000||~||";
        let msg = crate::Message::parse(bytes);
        assert_eq!(msg.encode(), bytes);
        assert_eq!(msg.segment_count(), 1);
    }
}
