//! The binary encoding: Protocol Buffers wire format, numbered by the generated schema (`fhir.proto`).
//!
//! Encoded and decoded straight from the schema tables rather than through generated prost structs: the tree
//! is already schema-driven, so one small codec serves all ~680 message types (see docs/ARCHITECTURE.md).
//! Encoding computes every message length in a first pass (pre-order, stored in a vector) and writes in a
//! second, so no bytes are ever moved. Decoding is one pass over the input with a direct field-number index.
//!
//! Long strings (narratives, markdown) go to a string table in the outermost `Resource` message, zstd-compressed
//! when it is large: a string field then holds U+0000 and the table index in decimal (a reference; real strings
//! that start with U+0000 are always tabled, so a reference is never ambiguous). See the `.proto` header.

use crate::error::{Error, Format, Location};
use crate::model::{
    Builder, ExtraId, Mark, NO_EXTRA, NodeId, Prim, PrimValue, Span, Tree, UNKNOWN_ELEM, Value,
};
use crate::options::ReadOptions;
use crate::schema::{EXTENSION, Kind, PrimKind, RESOURCES, TypeId, resource_tag};

const VARINT: u32 = 0;
const LEN: u32 = 2;

/// `Resource.strings`: the string table, plain.
const TABLE_TAG: u32 = 200;
/// `Resource.strings_zstd`: the string table as a zstd-compressed `StringTable` message.
const TABLE_ZSTD_TAG: u32 = 201;
/// Strings at least this long are tabled: short strings would pay more for the reference than they save.
const LONG: usize = 256;
/// A table at least this large is compressed (smaller ones would not pay for the zstd frame and context).
const COMPRESS_AT: usize = 2048;
/// zstd level of the table: ~400 MB/s to write, >1 GB/s to read, ~28x on narratives.
const ZSTD_LEVEL: i32 = 3;

/// Whether a string goes to the table rather than inline.
fn tabled(s: &str) -> bool {
    s.len() >= LONG || s.starts_with('\0')
}

/// Length of the reference to table entry `i` ("\0" and the index in decimal).
fn ref_len(i: usize) -> usize {
    1 + i.checked_ilog10().unwrap_or(0) as usize + 1
}

/// Encodes node `root` of a tree (a resource) as a `thoth.fhir.r4.Resource` message.
pub(crate) fn encode(t: &Tree, root: NodeId) -> Result<Vec<u8>, Error> {
    let mut e = Encoder {
        t,
        sizes: Vec::new(),
        next: 0,
        table: Vec::new(),
        next_ref: 0,
        out: Vec::new(),
    };
    let inner = e.size_node(root)?;
    let tag = resource_tag(t.node(root).ty);
    let table = e.table();
    e.out
        .reserve(table.len() + key_len(tag) + varint_len(inner as u64) + inner);
    e.out.extend_from_slice(&table);
    e.key(tag, LEN);
    e.varint(inner as u64);
    e.write_node(root);
    Ok(e.out)
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

fn key_len(tag: u32) -> usize {
    varint_len((tag as u64) << 3)
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn len_field(tag: u32, len: usize) -> usize {
    key_len(tag) + varint_len(len as u64) + len
}

struct Encoder<'a> {
    t: &'a Tree,
    /// Message lengths in pre-order, filled by `size_*` and consumed in the same order by `write_*`.
    sizes: Vec<u32>,
    next: usize,
    /// Tabled strings in the order `size_*` meets them; `write_*` meets them in the same order.
    table: Vec<&'a str>,
    next_ref: usize,
    out: Vec<u8>,
}

fn prims(values: &[Value]) -> impl Iterator<Item = &Prim> + Clone {
    values.iter().filter_map(|v| match v {
        Value::Prim(p) => Some(p),
        Value::Node(_) => None,
    })
}

/// Whether a primitive field needs companions, and whether one per item (repeating with nulls/extras).
fn companions(values: &[Value], many: bool) -> bool {
    let any_extra = prims(values).any(|p| p.extra != NO_EXTRA);
    if many {
        any_extra || prims(values).any(|p| p.value.is_none())
    } else {
        any_extra
    }
}

impl<'a> Encoder<'a> {
    /// Bytes of a string field's length and value (a reference when tabled, which records it).
    fn str_len(&mut self, s: &'a str) -> usize {
        let n = if tabled(s) {
            self.table.push(s);
            ref_len(self.table.len() - 1)
        } else {
            s.len()
        };
        varint_len(n as u64) + n
    }

    fn scalar_len(&mut self, v: &PrimValue) -> usize {
        match v {
            PrimValue::Bool(_) => 1,
            PrimValue::Int(i) => varint_len(zigzag(*i)),
            PrimValue::Str(s) => self.str_len(self.t.str(*s)),
        }
    }

    /// The table fields of the outermost `Resource` (empty without tabled strings).
    fn table(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let raw: usize = self.table.iter().map(|s| len_field(1, s.len())).sum();
        if raw >= COMPRESS_AT {
            let mut msg = Vec::with_capacity(raw);
            for s in &self.table {
                put_bytes(&mut msg, 1, s.as_bytes());
            }
            // Compression cannot fail on valid parameters; if it ever did, the plain table is still right.
            if let Ok(z) = zstd::bulk::compress(&msg, ZSTD_LEVEL)
                && z.len() < raw
            {
                put_bytes(&mut out, TABLE_ZSTD_TAG, &z);
                return out;
            }
        }
        for s in &self.table {
            put_bytes(&mut out, TABLE_TAG, s.as_bytes());
        }
        out
    }

    fn reserve(&mut self) -> usize {
        self.sizes.push(0);
        self.sizes.len() - 1
    }

    fn size_node(&mut self, id: NodeId) -> Result<usize, Error> {
        let t = self.t;
        let node = t.node(id);
        let slot = self.reserve();
        let mut total = 0;
        for f in t.fields(node) {
            let values = t.values(f);
            if f.elem == UNKNOWN_ELEM {
                return Err(Error::Unrepresentable {
                    format: Format::Protobuf,
                    path: node.ty.def().name.into(),
                    message: "properties kept by the lenient JSON reader exist only in JSON".into(),
                });
            }
            let ed = node.elem_def(f);
            let ty = ed.types[f.alt as usize];
            let tag = ed.tags[f.alt as usize];
            match ty.def().kind {
                Kind::Primitive(_) if ty.extensible_prim() => {
                    for p in prims(values) {
                        if let Some(v) = &p.value {
                            total += key_len(tag) + self.scalar_len(v);
                        }
                    }
                    if companions(values, ed.many) {
                        for p in prims(values) {
                            if ed.many || p.extra != NO_EXTRA {
                                let n = self.size_extra(p)?;
                                total += len_field(tag + 1, n);
                            }
                        }
                    }
                }
                Kind::Primitive(_) => {
                    for p in prims(values) {
                        total += key_len(tag)
                            + match &p.value {
                                Some(v) => self.scalar_len(v),
                                None => 1,
                            };
                    }
                }
                Kind::AnyResource => {
                    for v in values {
                        if let Value::Node(n) = v {
                            let wrapper = self.reserve();
                            let inner = self.size_node(*n)?;
                            let w = len_field(resource_tag(t.node(*n).ty), inner);
                            self.sizes[wrapper] = w as u32;
                            total += len_field(tag, w);
                        }
                    }
                }
                _ => {
                    for v in values {
                        if let Value::Node(n) = v {
                            total += len_field(tag, self.size_node(*n)?);
                        }
                    }
                }
            }
        }
        self.sizes[slot] = total as u32;
        Ok(total)
    }

    fn size_extra(&mut self, p: &Prim) -> Result<usize, Error> {
        let t = self.t;
        let slot = self.reserve();
        let mut total = 0;
        if let Some(x) = t.extra(p) {
            if let Some(id) = x.id {
                total += key_len(1) + self.str_len(t.str(id));
            }
            for ext in t.extensions(x) {
                total += len_field(2, self.size_node(*ext)?);
            }
        }
        if p.value.is_none() {
            total += 2;
        }
        self.sizes[slot] = total as u32;
        Ok(total)
    }

    fn take_size(&mut self) -> usize {
        self.next += 1;
        self.sizes[self.next - 1] as usize
    }

    #[inline]
    fn varint(&mut self, v: u64) {
        put_varint(&mut self.out, v);
    }

    #[inline]
    fn key(&mut self, tag: u32, wire: u32) {
        self.varint(((tag << 3) | wire) as u64);
    }

    fn bytes(&mut self, tag: u32, b: &[u8]) {
        put_bytes(&mut self.out, tag, b);
    }

    /// A string field: inline, or a reference to the table entry `size_*` recorded for it.
    fn string(&mut self, tag: u32, s: &str) {
        if !tabled(s) {
            return self.bytes(tag, s.as_bytes());
        }
        let mut digits = [0u8; 21];
        digits[0] = 0;
        let mut i = self.next_ref;
        self.next_ref += 1;
        let n = ref_len(i);
        for d in digits[1..n].iter_mut().rev() {
            *d = b'0' + (i % 10) as u8;
            i /= 10;
        }
        self.bytes(tag, &digits[..n]);
    }

    fn scalar(&mut self, tag: u32, v: &PrimValue) {
        match v {
            PrimValue::Bool(b) => {
                self.key(tag, VARINT);
                self.out.push(*b as u8);
            }
            PrimValue::Int(i) => {
                self.key(tag, VARINT);
                self.varint(zigzag(*i));
            }
            PrimValue::Str(s) => self.string(tag, self.t.str(*s)),
        }
    }

    fn write_node(&mut self, id: NodeId) {
        let t = self.t;
        let node = t.node(id);
        self.take_size();
        for f in t.fields(node) {
            let values = t.values(f);
            let ed = node.elem_def(f);
            let ty = ed.types[f.alt as usize];
            let tag = ed.tags[f.alt as usize];
            match ty.def().kind {
                Kind::Primitive(_) if ty.extensible_prim() => {
                    for p in prims(values) {
                        if let Some(v) = &p.value {
                            self.scalar(tag, v);
                        }
                    }
                    if companions(values, ed.many) {
                        for p in prims(values) {
                            if ed.many || p.extra != NO_EXTRA {
                                self.write_extra(tag + 1, p);
                            }
                        }
                    }
                }
                Kind::Primitive(_) => {
                    for p in prims(values) {
                        match &p.value {
                            Some(v) => self.scalar(tag, v),
                            None => self.bytes(tag, b""),
                        }
                    }
                }
                Kind::AnyResource => {
                    for v in values {
                        if let Value::Node(n) = v {
                            let w = self.take_size();
                            self.key(tag, LEN);
                            self.varint(w as u64);
                            self.key(resource_tag(t.node(*n).ty), LEN);
                            self.varint(self.sizes[self.next] as u64);
                            self.write_node(*n);
                        }
                    }
                }
                _ => {
                    for v in values {
                        if let Value::Node(n) = v {
                            self.key(tag, LEN);
                            self.varint(self.sizes[self.next] as u64);
                            self.write_node(*n);
                        }
                    }
                }
            }
        }
    }

    fn write_extra(&mut self, tag: u32, p: &Prim) {
        let t = self.t;
        let n = self.take_size();
        self.key(tag, LEN);
        self.varint(n as u64);
        if let Some(x) = t.extra(p) {
            if let Some(id) = x.id {
                self.string(1, t.str(id));
            }
            for ext in t.extensions(x) {
                self.key(2, LEN);
                self.varint(self.sizes[self.next] as u64);
                self.write_node(*ext);
            }
        }
        if p.value.is_none() {
            self.key(3, VARINT);
            self.out.push(1);
        }
    }
}

/// Input bytes per node and per field of the tree, a little less than in the Synthea bundle (45 and 18)
/// and Patient (53 and 20): sizes the tree's arrays up front.
const PER_NODE: usize = 40;
const PER_FIELD: usize = 14;

/// Decodes a `thoth.fhir.r4.Resource` message: the tree and its root.
pub(crate) fn decode(input: &[u8], opts: &ReadOptions) -> Result<(Tree, NodeId), Error> {
    let mut d = Decoder {
        input,
        bld: Builder::new(input.len(), PER_NODE, PER_FIELD)?,
        table: Vec::new(),
        pending: Vec::new(),
        depth: 0,
        opts,
    };
    let root = d.outermost(input.len())?;
    Ok((d.bld.finish(), root))
}

struct Decoder<'a> {
    input: &'a [u8],
    bld: Builder,
    /// The string table of the outermost `Resource`, which references (`\0` + index) resolve to: each
    /// entry is in the tree's text once, however often it is referenced.
    table: Vec<Span>,
    /// Companions (`<name>_element`) of the messages being read, innermost last: (element, alternative,
    /// id/extensions, item has no value).
    pending: Vec<(u16, u8, ExtraId, bool)>,
    depth: usize,
    opts: &'a ReadOptions,
}

impl<'a> Decoder<'a> {
    fn err(&self, pos: usize, message: impl Into<String>) -> Error {
        Error::Invalid {
            format: Format::Protobuf,
            location: Location {
                offset: pos,
                line: 0,
                column: 0,
            },
            path: String::new(),
            message: message.into(),
        }
    }

    #[inline(always)]
    fn varint(&self, pos: &mut usize, end: usize) -> Result<u64, Error> {
        // Keys and lengths are almost always one byte.
        if *pos < end && self.input[*pos] < 0x80 {
            *pos += 1;
            return Ok(self.input[*pos - 1] as u64);
        }
        self.varint_long(pos, end)
    }

    #[inline(never)]
    fn varint_long(&self, pos: &mut usize, end: usize) -> Result<u64, Error> {
        read_varint(&self.input[..end], pos).map_err(|m| self.err(*pos, m))
    }

    /// Reads a length prefix and returns the end of the delimited bytes.
    #[inline]
    fn delimited(&self, pos: &mut usize, end: usize) -> Result<usize, Error> {
        let at = *pos;
        let len = self.varint(pos, end)?;
        if len > (end - *pos) as u64 {
            return Err(self.err(at, "length runs past the end of its message"));
        }
        Ok(*pos + len as usize)
    }

    fn enter(&mut self, pos: usize) -> Result<(), Error> {
        self.depth += 1;
        if self.depth > self.opts.depth_limit() {
            return Err(self.err(
                pos,
                format!("nesting deeper than {} levels", self.opts.depth_limit()),
            ));
        }
        Ok(())
    }

    /// Adds a UTF-8 checked string of the input (`start..end`) to the tree.
    #[inline]
    fn text(&mut self, at: usize, start: usize, end: usize) -> Result<Span, Error> {
        match self.bld.utf8(&self.input[start..end])? {
            Some(s) => Ok(s),
            None => Err(self.err(at, "string is not UTF-8")),
        }
    }

    /// The outermost `Resource`: its string table (read first, wherever it is) and exactly one resource.
    fn outermost(&mut self, end: usize) -> Result<NodeId, Error> {
        let mut pos = 0;
        let mut resource = None;
        while pos < end {
            let at = pos;
            let key = self.varint(&mut pos, end)?;
            if key & 7 != LEN as u64 {
                return Err(self.err(at, "wrong wire type"));
            }
            let stop = self.delimited(&mut pos, end)?;
            match key >> 3 {
                t if t == TABLE_TAG as u64 => {
                    let s = self.text(at, pos, stop)?;
                    self.table.push(s);
                }
                t if t == TABLE_ZSTD_TAG as u64 => self.zstd_table(pos, stop)?,
                _ if resource.is_some() => {
                    return Err(self.err(at, "more than one resource in a Resource message"));
                }
                _ => resource = Some((at, stop)),
            }
            pos = stop;
        }
        let (start, stop) = resource.ok_or_else(|| self.err(end, "no resource in the input"))?;
        self.resource(start, stop)
    }

    /// Reads `Resource.strings_zstd`; the declared size must be within `max_bytes`, so memory stays bounded.
    fn zstd_table(&mut self, start: usize, end: usize) -> Result<(), Error> {
        let z = &self.input[start..end];
        let size = match zstd::zstd_safe::get_frame_content_size(z) {
            Ok(Some(n)) if n <= self.opts.max_bytes as u64 => n as usize,
            Ok(Some(n)) => {
                return Err(self.err(
                    start,
                    format!("string table of {n} bytes exceeds the limit"),
                ));
            }
            _ => return Err(self.err(start, "string table is not a sized zstd frame")),
        };
        // Room for the resource's own strings too: the buffer becomes the tree's text (`Builder::table`).
        let mut buf = Vec::with_capacity(size + self.input.len());
        let written = zstd::bulk::Decompressor::new()
            .and_then(|mut d| d.decompress_to_buffer(z, &mut buf))
            .ok();
        if written != Some(size) || buf.len() != size {
            return Err(self.err(start, "string table does not decompress"));
        }
        let mut pos = 0;
        // Errors inside the table are reported at the table's offset in the input.
        let bad = |m: &str| self.err(start, format!("compressed string table: {m}"));
        let mut entries = Vec::new();
        while pos < buf.len() {
            let key = read_varint(&buf, &mut pos).map_err(bad)?;
            let len = read_varint(&buf, &mut pos).map_err(bad)?;
            if key != ((1 << 3) | LEN) as u64 || len > (buf.len() - pos) as u64 {
                return Err(bad("not a StringTable message"));
            }
            entries.push((pos, pos + len as usize));
            pos += len as usize;
        }
        let spans = self
            .bld
            .table(buf, &entries)?
            .ok_or_else(|| self.err(start, "compressed string table: entry is not UTF-8"))?;
        self.table.extend(spans);
        Ok(())
    }

    /// A `Resource` wrapper message spanning `start..end`: exactly one resource field.
    fn resource(&mut self, start: usize, end: usize) -> Result<NodeId, Error> {
        let mut pos = start;
        let key = self.varint(&mut pos, end)?;
        let (tag, wire) = ((key >> 3) as usize, (key & 7) as u32);
        let ty = tag
            .checked_sub(1)
            .and_then(|i| RESOURCES.get(i))
            .map(|r| r.1)
            .filter(|_| wire == LEN)
            .ok_or_else(|| self.err(start, format!("field {tag} is not a resource type")))?;
        let inner_end = self.delimited(&mut pos, end)?;
        let node = self.message(ty, pos, inner_end)?;
        if inner_end != end {
            return Err(self.err(inner_end, "more than one resource in a Resource message"));
        }
        Ok(node)
    }

    /// A string field's value: a string of the input, or a reference to the table.
    #[inline]
    fn string(&mut self, pos: &mut usize, end: usize) -> Result<Span, Error> {
        let at = *pos;
        let stop = self.delimited(pos, end)?;
        let start = *pos;
        *pos = stop;
        if self.input.get(start) == Some(&0) {
            // A reference: U+0000 and a table index in decimal.
            let i = std::str::from_utf8(&self.input[start + 1..stop])
                .ok()
                .filter(|d| d.bytes().all(|c| c.is_ascii_digit()))
                .and_then(|d| d.parse::<usize>().ok());
            return i
                .and_then(|i| self.table.get(i).copied())
                .ok_or_else(|| self.err(at, "string reference to no table entry"));
        }
        self.text(at, start, stop)
    }

    fn message(&mut self, ty: TypeId, start: usize, end: usize) -> Result<NodeId, Error> {
        self.enter(start)?;
        let def = ty.def();
        let m = self.bld.open(ty);
        let pending = self.pending.len();
        let mut pos = start;
        while pos < end {
            let at = pos;
            let key = self.varint(&mut pos, end)?;
            let (tag, wire) = ((key >> 3) as u32, (key & 7) as u32);
            let (elem, alt, companion) =
                u32::try_from(key >> 3)
                    .ok()
                    .and_then(|t| def.by_tag(t))
                    .ok_or_else(|| self.err(at, format!("unknown field {tag} in {}", def.name)))?;
            let ed = &def.elements[elem as usize];
            let ety = ed.types[alt as usize];
            let kind = ety.def().kind;
            if companion {
                if wire != LEN {
                    return Err(self.err(at, "wrong wire type"));
                }
                let stop = self.delimited(&mut pos, end)?;
                let (extra, no_value) = self.extra(pos, stop)?;
                pos = stop;
                self.pending.push((elem, alt, extra, no_value));
                continue;
            }
            let fi = self
                .bld
                .field(&m, elem, alt)
                .map_err(|msg| self.err(at, msg))?;
            if !ed.many && self.bld.count(fi) != 0 {
                return Err(self.err(at, "repeated field that allows one value"));
            }
            match kind {
                Kind::Primitive(pk) => match (pk, wire) {
                    (PrimKind::Boolean | PrimKind::Integer, VARINT) => {
                        let v = self.varint(&mut pos, end)?;
                        self.bld.push(fi, prim(scalar(pk, v)));
                    }
                    (PrimKind::Boolean | PrimKind::Integer, LEN) => {
                        // Packed repeated scalars, as other protobuf encoders write them.
                        let stop = self.delimited(&mut pos, end)?;
                        while pos < stop {
                            let v = self.varint(&mut pos, stop)?;
                            self.bld.push(fi, prim(scalar(pk, v)));
                        }
                        if !ed.many && self.bld.count(fi) > 1 {
                            return Err(self.err(at, "repeated field that allows one value"));
                        }
                    }
                    (PrimKind::Boolean | PrimKind::Integer, _) => {
                        return Err(self.err(at, "wrong wire type"));
                    }
                    (_, LEN) => {
                        let s = self.string(&mut pos, end)?;
                        // What JSON and XML refuse to read, the binary reader refuses too, so that
                        // everything it accepts writes back as valid JSON (found by mutating inputs).
                        if s.is_empty() && ety.extensible_prim() {
                            return Err(self.err(at, "empty string"));
                        }
                        if pk == PrimKind::Decimal && !crate::json::is_decimal(self.bld.bytes_of(s))
                        {
                            let text = String::from_utf8_lossy(self.bld.bytes_of(s));
                            return Err(self.err(at, format!("invalid decimal {text:?}")));
                        }
                        self.bld.push(fi, prim(PrimValue::Str(s)));
                    }
                    _ => return Err(self.err(at, "wrong wire type")),
                },
                _ if wire != LEN => return Err(self.err(at, "wrong wire type")),
                Kind::AnyResource => {
                    let stop = self.delimited(&mut pos, end)?;
                    let r = self.resource(pos, stop)?;
                    pos = stop;
                    self.bld.push(fi, Value::Node(r));
                }
                _ => {
                    let stop = self.delimited(&mut pos, end)?;
                    let n = self.message(ety, pos, stop)?;
                    pos = stop;
                    // The child added fields of its own only above this node's: `fi` still holds.
                    self.bld.push(fi, Value::Node(n));
                }
            }
        }
        if self.pending.len() > pending {
            self.merge_companions(&m, pending, end)?;
        }
        self.depth -= 1;
        Ok(self.bld.close(m))
    }

    /// Joins the companions of the open node `m` (`pending[from..]`) with the values of their fields: a
    /// repeating field has one companion per item, in order, including items without a value.
    #[inline(never)]
    fn merge_companions(&mut self, m: &Mark, from: usize, end: usize) -> Result<(), Error> {
        let mut items: Vec<_> = self.pending.drain(from..).collect();
        // Stable: each field's companions keep their order.
        items.sort_by_key(|p| p.0);
        for group in items.chunk_by(|a, b| a.0 == b.0) {
            let (elem, alt) = (group[0].0, group[0].1);
            let many = m.ty().def().elements[elem as usize].many;
            let fi = self
                .bld
                .field(m, elem, alt)
                .map_err(|msg| self.err(end, msg))?;
            let (elems, values) = self.bld.open_values(m);
            let values: Vec<Option<PrimValue>> = elems
                .iter()
                .zip(values)
                .filter(|(e, _)| **e == elem)
                .map(|(_, v)| match v {
                    Value::Prim(p) => p.value,
                    Value::Node(_) => None,
                })
                .collect();
            if !many && group.len() != 1 {
                return Err(self.err(end, "more than one companion for a single primitive"));
            }
            let mut values = values.into_iter();
            let mut merged = Vec::with_capacity(group.len());
            for &(_, _, extra, no_value) in group {
                let value = if no_value || (!many && values.len() == 0) {
                    None
                } else {
                    match values.next() {
                        Some(v @ Some(_)) => v,
                        _ => return Err(self.err(end, "more companions than values")),
                    }
                };
                merged.push(Value::Prim(Prim { value, extra }));
            }
            if values.next().is_some() {
                return Err(self.err(end, "fewer companions than values"));
            }
            self.bld.replace(m, fi, merged);
        }
        Ok(())
    }

    /// A `PrimitiveElement` message: (id and extensions, item has no value).
    fn extra(&mut self, start: usize, end: usize) -> Result<(ExtraId, bool), Error> {
        self.enter(start)?;
        let exts = self.bld.open_exts();
        let mut id = None;
        let mut no_value = false;
        let mut pos = start;
        while pos < end {
            let at = pos;
            let key = self.varint(&mut pos, end)?;
            match key {
                0x0a => id = Some(self.string(&mut pos, end)?),
                0x12 => {
                    let stop = self.delimited(&mut pos, end)?;
                    let ext = self.message(EXTENSION, pos, stop)?;
                    self.bld.push_ext(ext);
                    pos = stop;
                }
                0x18 => no_value = self.varint(&mut pos, end)? != 0,
                _ => {
                    return Err(self.err(
                        at,
                        format!("unknown field {} in PrimitiveElement", key >> 3),
                    ));
                }
            }
        }
        self.depth -= 1;
        Ok((self.bld.close_exts(exts, id), no_value))
    }
}

fn prim(v: PrimValue) -> Value {
    Value::Prim(Prim {
        value: Some(v),
        extra: NO_EXTRA,
    })
}

/// Reads a varint from `b` at `pos` (advanced past it).
#[inline]
fn read_varint(b: &[u8], pos: &mut usize) -> Result<u64, &'static str> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let Some(&c) = b.get(*pos) else {
            return Err("truncated varint");
        };
        *pos += 1;
        v |= ((c & 0x7f) as u64) << shift;
        if c & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("varint longer than 10 bytes")
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, tag: u32, b: &[u8]) {
    put_varint(out, ((tag << 3) | LEN) as u64);
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn scalar(kind: PrimKind, v: u64) -> PrimValue {
    match kind {
        PrimKind::Boolean => PrimValue::Bool(v != 0),
        _ => PrimValue::Int(((v >> 1) as i64) ^ -((v & 1) as i64)),
    }
}
