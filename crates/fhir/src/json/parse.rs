//! FHIR JSON reader: a hand-written pull parser that builds the element tree in one pass.
//!
//! Property names are resolved against the generated schema as they are read (no intermediate JSON value);
//! numbers keep their lexical form; `resourceType` may appear anywhere in a resource's object.

use crate::error::{Error, Format, Location};
use crate::model::{
    Builder, Mark, NO_EXTRA, NodeId, Prim, PrimValue, Span, Tree, UNKNOWN_ELEM, Value,
};
use crate::options::ReadOptions;
use crate::path::PathStack;
use crate::schema::{EXTENSION, Kind, PrimKind, TypeId, resource_type};

/// Input bytes per node and per field of the tree, a little less than in compact JSON of the Synthea
/// bundle (73 and 28) and Patient (80 and 30): sizes the tree's arrays up front.
const PER_NODE: usize = 64;
const PER_FIELD: usize = 24;

/// Parses one resource from JSON text: the tree and its root.
pub(crate) fn parse(input: &[u8], opts: &ReadOptions) -> Result<(Tree, NodeId), Error> {
    let text = match std::str::from_utf8(input) {
        Ok(t) => t,
        Err(e) => {
            return Err(Error::Invalid {
                format: Format::Json,
                location: Location::of(input, e.valid_up_to()),
                path: String::new(),
                message: "input is not UTF-8".into(),
            });
        }
    };
    let mut p = Parser {
        s: text,
        b: input,
        pos: 0,
        depth: 0,
        opts,
        path: PathStack::default(),
        bld: Builder::new(input.len(), PER_NODE, PER_FIELD)?,
    };
    p.ws();
    if p.b[p.pos..].starts_with("\u{feff}".as_bytes()) {
        p.pos += 3;
        p.ws();
    }
    let root = p.resource()?;
    p.ws();
    if p.pos != p.b.len() {
        return Err(p.err("unexpected data after the resource"));
    }
    Ok((p.bld.finish(), root))
}

struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    pos: usize,
    depth: usize,
    opts: &'a ReadOptions,
    path: PathStack,
    bld: Builder,
}

/// A property value shape, for error messages.
fn what(c: Option<u8>) -> &'static str {
    match c {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        Some(b'-' | b'0'..=b'9') => "a number",
        None => "the end of input",
        Some(_) => "an invalid character",
    }
}

impl<'a> Parser<'a> {
    fn err(&self, message: impl Into<String>) -> Error {
        self.err_at(self.pos, message, None)
    }

    fn err_at(&self, pos: usize, message: impl Into<String>, prop: Option<&str>) -> Error {
        Error::Invalid {
            format: Format::Json,
            location: Location::of(self.b, pos),
            path: self.path.render(prop),
            message: message.into(),
        }
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.pos) {
            if c == b' ' || c == b'\n' || c == b'\r' || c == b'\t' {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), Error> {
        self.ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err(format!(
                "expected '{}', found {}",
                c as char,
                what(self.peek())
            )))
        }
    }

    /// After an item of an array or object: `,` (true: another item follows) or the closing `close`.
    fn next_item(&mut self, close: u8) -> Result<bool, Error> {
        self.ws();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(c) if c == close => {
                self.pos += 1;
                Ok(false)
            }
            other => Err(self.err(format!(
                "expected ',' or '{}', found {}",
                close as char,
                what(other)
            ))),
        }
    }

    fn enter(&mut self) -> Result<(), Error> {
        self.depth += 1;
        if self.depth > self.opts.depth_limit() {
            return Err(self.err(format!(
                "nesting deeper than {} levels",
                self.opts.depth_limit()
            )));
        }
        Ok(())
    }

    /// Reads a string; borrows from the input unless it has escapes.
    fn string(&mut self) -> Result<std::borrow::Cow<'a, str>, Error> {
        if self.peek() != Some(b'"') {
            return Err(self.err(format!("expected a string, found {}", what(self.peek()))));
        }
        let start = self.pos + 1;
        let b = self.b;
        let Some(off) = memchr::memchr2(b'"', b'\\', &b[start..]) else {
            return Err(self.err_at(b.len(), "unterminated string", None));
        };
        let end = start + off;
        if let Some(bad) = b[start..end].iter().position(|&c| c < 0x20) {
            return Err(self.err_at(start + bad, "control character in string", None));
        }
        if b[end] == b'"' {
            self.pos = end + 1;
            return Ok(std::borrow::Cow::Borrowed(&self.s[start..end]));
        }
        // An escape: switch to building an owned string.
        let mut out = String::with_capacity(end - start + 16);
        out.push_str(&self.s[start..end]);
        self.pos = end;
        self.string_escaped(out).map(std::borrow::Cow::Owned)
    }

    fn string_escaped(&mut self, mut out: String) -> Result<String, Error> {
        let b = self.b;
        loop {
            let Some(&c) = b.get(self.pos) else {
                return Err(self.err("unterminated string"));
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    return Ok(out);
                }
                b'\\' => {
                    let esc = b.get(self.pos + 1).copied();
                    self.pos += 2;
                    match esc {
                        Some(b'"') => out.push('"'),
                        Some(b'\\') => out.push('\\'),
                        Some(b'/') => out.push('/'),
                        Some(b'b') => out.push('\u{8}'),
                        Some(b'f') => out.push('\u{c}'),
                        Some(b'n') => out.push('\n'),
                        Some(b'r') => out.push('\r'),
                        Some(b't') => out.push('\t'),
                        Some(b'u') => {
                            let hi = self.hex4()?;
                            let ch = if (0xD800..0xDC00).contains(&hi) {
                                if b.get(self.pos) != Some(&b'\\')
                                    || b.get(self.pos + 1) != Some(&b'u')
                                {
                                    return Err(self.err("unpaired surrogate in \\u escape"));
                                }
                                self.pos += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.err("unpaired surrogate in \\u escape"));
                                }
                                char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
                            } else {
                                char::from_u32(hi)
                            };
                            out.push(
                                ch.ok_or_else(|| self.err("unpaired surrogate in \\u escape"))?,
                            );
                        }
                        _ => return Err(self.err_at(self.pos - 1, "invalid escape", None)),
                    }
                }
                c if c < 0x20 => return Err(self.err("control character in string")),
                _ => {
                    let run =
                        memchr::memchr2(b'"', b'\\', &b[self.pos..]).unwrap_or(b.len() - self.pos);
                    let end = self.pos + run;
                    if let Some(bad) = b[self.pos..end].iter().position(|&c| c < 0x20) {
                        return Err(self.err_at(
                            self.pos + bad,
                            "control character in string",
                            None,
                        ));
                    }
                    out.push_str(&self.s[self.pos..end]);
                    self.pos = end;
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, Error> {
        let h = self
            .b
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.err("truncated \\u escape"))?;
        let mut v = 0;
        for &c in h {
            v = v * 16
                + (c as char)
                    .to_digit(16)
                    .ok_or_else(|| self.err("invalid \\u escape"))?;
        }
        self.pos += 4;
        Ok(v)
    }

    /// Reads a JSON number and returns its lexical form.
    fn number(&mut self) -> Result<&'a str, Error> {
        let b = self.b;
        let start = self.pos;
        let mut i = start;
        let digits = |i: &mut usize| {
            let s = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i > s
        };
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        if b.get(i) == Some(&b'0') {
            i += 1;
        } else if !digits(&mut i) {
            return Err(self.err_at(i, "invalid number", None));
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if !digits(&mut i) {
                return Err(self.err_at(i, "invalid number: digits expected after '.'", None));
            }
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if !digits(&mut i) {
                return Err(self.err_at(i, "invalid number: digits expected in exponent", None));
            }
        }
        if b.get(i).is_some_and(|c| c.is_ascii_digit()) {
            return Err(self.err_at(i, "invalid number: leading zero", None));
        }
        self.pos = i;
        Ok(&self.s[start..i])
    }

    fn literal(&mut self, word: &str) -> bool {
        if self.b[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    /// Skips any JSON value (validating it), returning its text.
    fn skip_value(&mut self) -> Result<&'a str, Error> {
        self.ws();
        let start = self.pos;
        match self.peek() {
            Some(b'{') | Some(b'[') => {
                let close = if self.peek() == Some(b'{') {
                    b'}'
                } else {
                    b']'
                };
                let obj = close == b'}';
                self.enter()?;
                self.pos += 1;
                self.ws();
                if self.peek() == Some(close) {
                    self.pos += 1;
                } else {
                    loop {
                        if obj {
                            self.ws();
                            self.string()?;
                            self.expect(b':')?;
                        }
                        self.skip_value()?;
                        if !self.next_item(close)? {
                            break;
                        }
                    }
                }
                self.depth -= 1;
            }
            Some(b'"') => {
                self.string()?;
            }
            Some(b'-' | b'0'..=b'9') => {
                self.number()?;
            }
            _ => {
                if !(self.literal("true") || self.literal("false") || self.literal("null")) {
                    return Err(self.err(format!("expected a value, found {}", what(self.peek()))));
                }
            }
        }
        Ok(&self.s[start..self.pos])
    }

    /// Reads a resource object: finds `resourceType` (anywhere in the object), then reads the properties.
    fn resource(&mut self) -> Result<NodeId, Error> {
        self.ws();
        if self.peek() != Some(b'{') {
            return Err(self.err(format!(
                "expected a resource object, found {}",
                what(self.peek())
            )));
        }
        let start = self.pos;
        let (name, name_pos) = self.find_resource_type()?;
        self.pos = start;
        let ty = resource_type(&name)
            .ok_or_else(|| self.err_at(name_pos, format!("unknown resourceType {name:?}"), None))?;
        let saved = std::mem::take(&mut self.path.segs);
        let saved_root = self.path.root.replace(ty);
        let node = self.object(ty, true);
        self.path.segs = saved;
        self.path.root = saved_root;
        node
    }

    fn find_resource_type(&mut self) -> Result<(std::borrow::Cow<'a, str>, usize), Error> {
        let depth = self.depth;
        self.enter()?;
        self.pos += 1;
        loop {
            self.ws();
            if self.peek() == Some(b'}') {
                return Err(self.err("resource object without resourceType"));
            }
            let key = self.string()?;
            self.expect(b':')?;
            self.ws();
            if key == "resourceType" {
                let at = self.pos;
                let v = self.string()?;
                self.depth = depth;
                return Ok((v, at));
            }
            self.skip_value()?;
            self.ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => return Err(self.err("resource object without resourceType")),
                other => {
                    return Err(self.err(format!(
                        "expected ',' before resourceType, found {}",
                        what(other)
                    )));
                }
            }
        }
    }

    /// Adds a string to the tree.
    #[inline]
    fn span(&mut self, s: &str) -> Result<Span, Error> {
        self.bld.str(s)
    }

    /// Reads an object of type `ty`; the cursor is at `{`.
    fn object(&mut self, ty: TypeId, is_resource: bool) -> Result<NodeId, Error> {
        self.enter()?;
        let def = ty.def();
        let m = self.bld.open(ty);
        self.pos += 1;
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(self.bld.close(m));
        }
        loop {
            self.ws();
            let key_pos = self.pos;
            let key = self.string()?;
            self.expect(b':')?;
            self.ws();
            if is_resource && key == "resourceType" {
                self.string()?;
            } else {
                let (companion, name) = match key.strip_prefix('_') {
                    Some(n) => (true, n),
                    None => (false, &*key),
                };
                match def.find(name) {
                    Some((elem, alt)) => {
                        let ed = &def.elements[elem as usize];
                        let ety = ed.types[alt as usize];
                        if companion && !ety.extensible_prim() {
                            return Err(self.err_at(key_pos, "unknown property", Some(&key)));
                        }
                        let fi = self
                            .bld
                            .field(&m, elem, alt)
                            .map_err(|msg| self.err_at(key_pos, msg, Some(&key)))?;
                        self.path.push(ty, elem, alt, None);
                        let r = if companion {
                            self.companion(&m, fi, ed.many)
                        } else {
                            self.values(&m, fi, ed.many, ety)
                        };
                        self.path.pop();
                        r.map_err(|e| match e {
                            Error::Invalid { message, .. } if message == DUPLICATE => {
                                self.err_at(key_pos, "duplicate property", Some(&key))
                            }
                            e => e,
                        })?;
                    }
                    None if self.opts.lenient => {
                        let k = self.span(&key)?;
                        let raw = self.skip_value()?;
                        let raw = self.span(raw)?;
                        let fi = self
                            .bld
                            .field(&m, UNKNOWN_ELEM, 0)
                            .map_err(|msg| self.err(msg))?;
                        self.bld.push(fi, prim_str(k));
                        self.bld.push(fi, prim_str(raw));
                    }
                    None => return Err(self.err_at(key_pos, "unknown property", Some(&key))),
                }
            }
            if !self.next_item(b'}')? {
                break;
            }
        }
        self.depth -= 1;
        self.check_prims(&m)?;
        Ok(self.bld.close(m))
    }

    /// After an object: every primitive item must have a value or an id/extension.
    fn check_prims(&self, m: &Mark) -> Result<(), Error> {
        let (elems, values) = self.bld.open_values(m);
        let empty = |v: &Value| {
            matches!(
                v,
                Value::Prim(Prim {
                    value: None,
                    extra: NO_EXTRA
                })
            )
        };
        let Some(at) = values.iter().position(empty) else {
            return Ok(());
        };
        let elem = elems[at];
        let i = elems[..at].iter().filter(|e| **e == elem).count();
        let ed = &m.ty().def().elements[elem as usize];
        let alt = self.bld.alt_of(m, elem);
        let name = crate::schema::prop_name(ed, alt);
        let prop = if ed.many {
            format!("{name}[{i}]")
        } else {
            name.into_owned()
        };
        Err(self.err_at(self.pos, "null without an id or extension", Some(&prop)))
    }

    /// Reads the value(s) of a property into field `fi` of the open node `m`.
    fn values(&mut self, m: &Mark, fi: usize, many: bool, ty: TypeId) -> Result<(), Error> {
        if !many {
            if ty.extensible_prim() {
                let v = self.prim_value(ty)?;
                let slots = self.bld.slots(m, fi);
                return self.set_value(fi, &slots, 0, Some(v));
            }
            if self.bld.count(fi) != 0 {
                return Err(self.err(DUPLICATE));
            }
            let v = self.one_value(ty)?;
            self.bld.push(fi, v);
            return Ok(());
        }
        if self.peek() != Some(b'[') {
            return Err(self.err(format!("expected an array, found {}", what(self.peek()))));
        }
        let prim = ty.extensible_prim();
        if !prim && self.bld.count(fi) != 0 {
            return Err(self.err(DUPLICATE));
        }
        // Items already there came from the `_name` companion (empty, without allocating, otherwise).
        let slots = if prim {
            self.bld.slots(m, fi)
        } else {
            Vec::new()
        };
        // An array of element values is not a level of its own: its objects are (as XML elements and
        // binary messages are), and arrays cannot nest directly in FHIR JSON, so recursion stays bounded.
        self.pos += 1;
        self.ws();
        let mut i = 0u32;
        if self.peek() == Some(b']') {
            return Err(self.err("empty array"));
        }
        loop {
            self.ws();
            self.path.set_index(i);
            if prim {
                let v = if self.literal("null") {
                    None
                } else {
                    Some(self.prim_value(ty)?)
                };
                self.set_value(fi, &slots, i as usize, v)?;
            } else {
                let v = self.one_value(ty)?;
                self.bld.push(fi, v);
            }
            i += 1;
            if !self.next_item(b']')? {
                break;
            }
        }
        Ok(())
    }

    /// Sets the value of item `i` of a primitive field (which its companion may have created).
    fn set_value(
        &mut self,
        fi: usize,
        slots: &[usize],
        i: usize,
        v: Option<PrimValue>,
    ) -> Result<(), Error> {
        match self.bld.prim_item(fi, slots, i) {
            Some(p) if p.value.is_none() => {
                p.value = v;
                Ok(())
            }
            _ => Err(self.err(DUPLICATE)),
        }
    }

    /// Sets the id/extensions of item `i` of a primitive field (which its value may have created).
    fn set_extra(
        &mut self,
        fi: usize,
        slots: &[usize],
        i: usize,
        extra: crate::model::ExtraId,
    ) -> Result<(), Error> {
        match self.bld.prim_item(fi, slots, i) {
            Some(p) if p.extra == NO_EXTRA => {
                p.extra = extra;
                Ok(())
            }
            _ => Err(self.err(DUPLICATE)),
        }
    }

    /// One non-null value of a non-extensible type (complex, backbone, resource, xhtml, plain string).
    fn one_value(&mut self, ty: TypeId) -> Result<Value, Error> {
        match ty.def().kind {
            Kind::Primitive(_) => {
                let s = self.string()?;
                Ok(prim_str(self.span(&s)?))
            }
            Kind::AnyResource => Ok(Value::Node(self.resource()?)),
            _ => {
                if self.peek() != Some(b'{') {
                    return Err(
                        self.err(format!("expected an object, found {}", what(self.peek())))
                    );
                }
                Ok(Value::Node(self.object(ty, false)?))
            }
        }
    }

    fn prim_value(&mut self, ty: TypeId) -> Result<PrimValue, Error> {
        let kind = ty.prim().unwrap_or(PrimKind::String);
        let c = self.peek();
        let v = match kind {
            PrimKind::Boolean => {
                if self.literal("true") {
                    PrimValue::Bool(true)
                } else if self.literal("false") {
                    PrimValue::Bool(false)
                } else {
                    return Err(self.err(format!("expected a boolean, found {}", what(c))));
                }
            }
            PrimKind::Integer | PrimKind::Decimal => {
                if !matches!(c, Some(b'-' | b'0'..=b'9')) {
                    return Err(self.err(format!("expected a number, found {}", what(c))));
                }
                let start = self.pos;
                let lex = self.number()?;
                if kind == PrimKind::Integer {
                    parse_int(lex)
                        .ok_or_else(|| self.err_at(start, format!("invalid integer {lex}"), None))?
                } else {
                    PrimValue::Str(self.span(lex)?)
                }
            }
            _ => {
                let s = self.string()?;
                if s.is_empty() {
                    return Err(self.err("empty string (absent values are omitted, not empty)"));
                }
                PrimValue::Str(self.span(&s)?)
            }
        };
        Ok(v)
    }

    /// Reads `_name`: the id and extensions of a primitive (or an array of them, `null` for none).
    fn companion(&mut self, m: &Mark, fi: usize, many: bool) -> Result<(), Error> {
        // Items already there came from the value property (empty, without allocating, otherwise).
        let slots = self.bld.slots(m, fi);
        if !many {
            let extra = self.extra()?;
            return self.set_extra(fi, &slots, 0, extra);
        }
        if self.peek() != Some(b'[') {
            return Err(self.err(format!("expected an array, found {}", what(self.peek()))));
        }
        // Not a level of its own, as in `values`: the id/extension objects are.
        self.pos += 1;
        let mut i = 0u32;
        loop {
            self.ws();
            self.path.set_index(i);
            let extra = if self.literal("null") {
                NO_EXTRA
            } else {
                self.extra()?
            };
            self.set_extra(fi, &slots, i as usize, extra)?;
            i += 1;
            if !self.next_item(b']')? {
                break;
            }
        }
        Ok(())
    }

    /// Reads a primitive's `{"id": …, "extension": […]}` object ([`NO_EXTRA`] when empty).
    fn extra(&mut self) -> Result<crate::model::ExtraId, Error> {
        if self.peek() != Some(b'{') {
            return Err(self.err(format!("expected an object, found {}", what(self.peek()))));
        }
        self.enter()?;
        self.pos += 1;
        let exts = self.bld.open_exts();
        let (mut id, mut any_ext) = (None, false);
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(self.bld.close_exts(exts, None));
        }
        loop {
            self.ws();
            let key_pos = self.pos;
            let key = self.string()?;
            self.expect(b':')?;
            self.ws();
            match &*key {
                "id" if id.is_none() => {
                    let s = self.string()?;
                    id = Some(self.span(&s)?);
                }
                "extension" if !any_ext => {
                    any_ext = true;
                    if self.peek() != Some(b'[') {
                        return Err(
                            self.err(format!("expected an array, found {}", what(self.peek())))
                        );
                    }
                    self.pos += 1;
                    loop {
                        self.ws();
                        if self.peek() != Some(b'{') {
                            return Err(self
                                .err(format!("expected an object, found {}", what(self.peek()))));
                        }
                        let ext = self.object(EXTENSION, false)?;
                        self.bld.push_ext(ext);
                        if !self.next_item(b']')? {
                            break;
                        }
                    }
                }
                "id" | "extension" => {
                    return Err(self.err_at(key_pos, "duplicate property", Some(&key)));
                }
                _ => {
                    return Err(self.err_at(
                        key_pos,
                        "unknown property of a primitive's id/extension object",
                        Some(&key),
                    ));
                }
            }
            if !self.next_item(b'}')? {
                break;
            }
        }
        self.depth -= 1;
        Ok(self.bld.close_exts(exts, id))
    }
}

const DUPLICATE: &str = "duplicate property";

pub(crate) fn prim_str(s: Span) -> Value {
    Value::Prim(Prim {
        value: Some(PrimValue::Str(s)),
        extra: NO_EXTRA,
    })
}

/// Parses an integer, accepting only its canonical form so every format writes it back identically.
pub(crate) fn parse_int(lex: &str) -> Option<PrimValue> {
    let v: i64 = lex.parse().ok()?;
    let canonical = if v < 0 {
        lex.len() > 1 && !lex[1..].starts_with('0')
    } else {
        !lex.starts_with('+') && (lex == "0" || !lex.starts_with('0'))
    };
    canonical.then_some(PrimValue::Int(v))
}

/// A decimal must also be a valid JSON number, so the JSON writer can emit it verbatim.
pub(crate) fn is_decimal(b: &[u8]) -> bool {
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let s = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > s
    };
    if b.get(i) == Some(&b'0') {
        i += 1;
    } else if !digits(&mut i) {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            return false;
        }
    }
    i == b.len()
}
