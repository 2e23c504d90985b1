//! FHIR XML reader over quick-xml events.
//!
//! Security: a `<!DOCTYPE>` is an error, so no DTD, internal entity (billion laughs) or external entity is
//! ever read; only XML's predefined entities and character references are expanded (in attribute values).
//! The narrative `div` is captured as the exact bytes of the input, so XHTML round-trips unchanged.

use crate::error::{Error, Format, Location};
use crate::json::{is_decimal, parse_int};
use crate::model::{Builder, Mark, NodeId, Prim, PrimValue, Tree, Value};
use crate::options::ReadOptions;
use crate::path::PathStack;
use crate::schema::{EXTENSION, Kind, PrimKind, Repr, TypeId, resource_type};
use crate::xml::write::FHIR_NS;
use quick_xml::events::{BytesStart, Event};
use quick_xml::reader::Reader;
use std::borrow::Cow;

/// Input bytes per node and per field of the tree, a little less than in a Synthea Patient (100 and 37):
/// sizes the tree's arrays up front.
const PER_NODE: usize = 80;
const PER_FIELD: usize = 30;

/// Parses one resource from an XML document: the tree and its root.
pub(crate) fn parse(input: &[u8], opts: &ReadOptions) -> Result<(Tree, NodeId), Error> {
    let text = std::str::from_utf8(input).map_err(|e| Error::Invalid {
        format: Format::Xml,
        location: Location::of(input, e.valid_up_to()),
        path: String::new(),
        message: "input is not UTF-8".into(),
    })?;
    // quick-xml skips a BOM without counting it in its positions, and the narrative is sliced out of the input
    // by those positions: drop the BOM here so both agree (found by fuzzing). Offsets count from after it.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let input = text.as_bytes();
    let mut reader = Reader::from_str(text);
    reader.config_mut().trim_text(true);
    let mut p = Parser {
        reader,
        input,
        depth: 0,
        opts,
        path: PathStack::default(),
        bld: Builder::new(input.len(), PER_NODE, PER_FIELD)?,
    };
    loop {
        let ev = p.next()?;
        match ev {
            ev @ (Event::Start(_) | Event::Empty(_)) => {
                let (e, is_empty) = split(ev);
                let name = local(&e)?;
                let ty = resource_type(name)
                    .ok_or_else(|| p.err(format!("<{name}> is not a FHIR resource")))?;
                let ns = e
                    .attributes()
                    .flatten()
                    .find(|a| a.key.as_ref() == "xmlns")
                    .map(|a| a.value.into_owned())
                    .unwrap_or_default();
                if ns != FHIR_NS {
                    return Err(p.err(format!(
                        "the root element must be in the namespace {FHIR_NS}"
                    )));
                }
                p.path.root = Some(ty);
                let node = p.node(ty, &e, is_empty, true)?;
                loop {
                    match p.next()? {
                        Event::Eof => return Ok((p.bld.finish(), node)),
                        Event::Comment(_) | Event::PI(_) => {}
                        _ => return Err(p.err("content after the root element")),
                    }
                }
            }
            Event::Decl(_) | Event::Comment(_) | Event::PI(_) => {}
            Event::Eof => return Err(p.err("no root element")),
            _ => return Err(p.err("expected the root element")),
        }
    }
}

struct Parser<'a> {
    reader: Reader<&'a [u8]>,
    input: &'a [u8],
    depth: usize,
    opts: &'a ReadOptions,
    path: PathStack,
    bld: Builder,
}

/// A start or empty-element tag and whether it was empty.
fn split(ev: Event<'_>) -> (BytesStart<'_>, bool) {
    match ev {
        Event::Start(e) => (e, false),
        Event::Empty(e) => (e, true),
        _ => unreachable!("split is only called on start tags"),
    }
}

fn local<'e>(e: &'e BytesStart<'_>) -> Result<&'e str, Error> {
    Ok(e.local_name().into_inner())
}

impl<'a> Parser<'a> {
    fn err(&self, message: impl Into<String>) -> Error {
        self.err_at(self.reader.buffer_position() as usize, message, None)
    }

    fn err_at(&self, pos: usize, message: impl Into<String>, prop: Option<&str>) -> Error {
        Error::Invalid {
            format: Format::Xml,
            location: Location::of(self.input, pos),
            path: self.path.render(prop),
            message: message.into(),
        }
    }

    fn next(&mut self) -> Result<Event<'a>, Error> {
        let before = self.reader.buffer_position() as usize;
        match self.reader.read_event() {
            Ok(Event::DocType(_)) => {
                let at = before
                    + self.input[before..]
                        .iter()
                        .position(|&c| c == b'<')
                        .unwrap_or(0);
                Err(self.err_at(
                    at,
                    "DOCTYPE is not allowed (no DTDs or entities are resolved)",
                    None,
                ))
            }
            Ok(ev) => Ok(ev),
            Err(e) => Err(self.err_at(
                self.reader.error_position() as usize,
                format!("malformed XML: {e}"),
                None,
            )),
        }
    }

    /// Reads the attributes and (unless `empty`) the children of an element of type `ty`.
    fn node(
        &mut self,
        ty: TypeId,
        start: &BytesStart<'_>,
        empty: bool,
        resource: bool,
    ) -> Result<NodeId, Error> {
        self.depth += 1;
        if self.depth > self.opts.depth_limit() {
            return Err(self.err(format!(
                "nesting deeper than {} levels",
                self.opts.depth_limit()
            )));
        }
        let def = ty.def();
        let m = self.bld.open(ty);
        for a in start.attributes().with_checks(true) {
            let a = a.map_err(|e| self.err(format!("malformed attribute: {e}")))?;
            let key = a.key.as_ref();
            if key == "xmlns" || key.starts_with("xmlns:") {
                continue;
            }
            let found = def
                .find(key)
                .filter(|(e, _)| def.elements[*e as usize].repr == Repr::Attr && !resource);
            let Some((elem, alt)) = found else {
                return Err(self.err_at(
                    self.reader.buffer_position() as usize,
                    "unknown attribute",
                    Some(&format!("@{key}")),
                ));
            };
            let v = self.attr_value(&a)?;
            let v = self.bld.str(&v)?;
            let fi = self.bld.field(&m, elem, alt).map_err(|msg| self.err(msg))?;
            if self.bld.count(fi) != 0 {
                return Err(self.err("duplicate attribute"));
            }
            self.bld.push(fi, crate::json::prim_str(v));
        }
        if !empty {
            self.children(&m)?;
        }
        self.depth -= 1;
        Ok(self.bld.close(m))
    }

    fn attr_value<'v>(
        &self,
        a: &'v quick_xml::events::attributes::Attribute<'_>,
    ) -> Result<Cow<'v, str>, Error> {
        let v = a
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(|e| self.err(format!("bad attribute value: {e}")))?;
        // quick-xml passes control characters (raw or `&#1;`) through; XML 1.0 forbids them.
        if crate::escape::xml_forbidden(v.as_bytes()).is_some() {
            return Err(
                self.err("control character in an attribute value (not allowed in XML 1.0)")
            );
        }
        Ok(v)
    }

    /// Reads child elements until the parent's end tag.
    fn children(&mut self, m: &Mark) -> Result<(), Error> {
        let ty = m.ty();
        let def = ty.def();
        loop {
            let before = self.reader.buffer_position() as usize;
            let ev = self.next()?;
            let (e, empty) = match ev {
                Event::End(_) => return Ok(()),
                Event::Start(e) => (e, false),
                Event::Empty(e) => (e, true),
                Event::Comment(_) | Event::PI(_) => continue,
                Event::Eof => return Err(self.err("unexpected end of input (unclosed element)")),
                _ => return Err(self.err("unexpected text (FHIR XML holds values in attributes)")),
            };
            let name = local(&e)?;
            let Some((elem, alt)) = def
                .find(name)
                .filter(|(e, _)| def.elements[*e as usize].repr == Repr::Element)
            else {
                return Err(self.err_at(before, "unknown element", Some(name)));
            };
            let ed = &def.elements[elem as usize];
            let ety = ed.types[alt as usize];
            let fi = self
                .bld
                .field(m, elem, alt)
                .map_err(|msg| self.err_at(before, msg, Some(name)))?;
            let count = self.bld.count(fi);
            if !ed.many && count != 0 {
                return Err(self.err_at(
                    before,
                    "repeated element that allows one value",
                    Some(name),
                ));
            }
            let index = ed.many.then_some(count as u32);
            self.path.push(ty, elem, alt, index);
            let value = match ety.def().kind {
                Kind::Primitive(PrimKind::Xhtml) => {
                    let start = before
                        + self.input[before..]
                            .iter()
                            .position(|&c| c == b'<')
                            .unwrap_or(0);
                    if !empty {
                        self.reader
                            .read_to_end(e.name())
                            .map_err(|err| self.err(format!("malformed XHTML: {err}")))?;
                    }
                    let end = self.reader.buffer_position() as usize;
                    if let Some(at) = crate::escape::xml_forbidden(&self.input[start..end]) {
                        return Err(self.err_at(
                            start + at,
                            "control character in the narrative (not allowed in XML 1.0)",
                            None,
                        ));
                    }
                    // The whole input was checked to be UTF-8 and both ends are at '<' or '>'.
                    let raw = std::str::from_utf8(&self.input[start..end]).unwrap_or_default();
                    crate::json::prim_str(self.bld.str(raw)?)
                }
                Kind::Primitive(_) => Value::Prim(self.prim(ety, &e, empty)?),
                Kind::AnyResource => {
                    if empty {
                        return Err(self.err("resource element without a resource"));
                    }
                    let r = loop {
                        match self.next()? {
                            ev @ (Event::Start(_) | Event::Empty(_)) => {
                                let (inner, inner_empty) = split(ev);
                                let rname = local(&inner)?.to_string();
                                let rty = resource_type(&rname).ok_or_else(|| {
                                    self.err(format!("<{rname}> is not a FHIR resource"))
                                })?;
                                let saved = std::mem::take(&mut self.path.segs);
                                let saved_root = self.path.root.replace(rty);
                                let r = self.node(rty, &inner, inner_empty, true);
                                self.path.segs = saved;
                                self.path.root = saved_root;
                                break r?;
                            }
                            Event::Comment(_) | Event::PI(_) => {}
                            _ => return Err(self.err("expected a resource element")),
                        }
                    };
                    loop {
                        match self.next()? {
                            Event::End(_) => break,
                            Event::Comment(_) | Event::PI(_) => {}
                            _ => {
                                return Err(
                                    self.err("more than one resource in a resource element")
                                );
                            }
                        }
                    }
                    Value::Node(r)
                }
                _ => Value::Node(self.node(ety, &e, empty, false)?),
            };
            self.path.pop();
            // Children read in between added fields of their own only above this node's.
            self.bld.push(fi, value);
        }
    }

    /// A primitive element: `value` and `id` attributes, `extension` children.
    fn prim(&mut self, ty: TypeId, e: &BytesStart<'_>, empty: bool) -> Result<Prim, Error> {
        let mut prim = Prim::default();
        let mut id = None;
        let exts = self.bld.open_exts();
        for a in e.attributes().with_checks(true) {
            let a = a.map_err(|err| self.err(format!("malformed attribute: {err}")))?;
            match a.key.as_ref() {
                "value" => {
                    let v = self.attr_value(&a)?;
                    prim.value = Some(self.prim_value(ty, &v)?);
                }
                "id" => {
                    let v = self.attr_value(&a)?;
                    id = Some(self.bld.str(&v)?);
                }
                k if k == "xmlns" || k.starts_with("xmlns:") => {}
                k => {
                    return Err(self.err(format!("unknown attribute {k} on a primitive")));
                }
            }
        }
        if !empty {
            self.depth += 1;
            if self.depth > self.opts.depth_limit() {
                return Err(self.err(format!(
                    "nesting deeper than {} levels",
                    self.opts.depth_limit()
                )));
            }
            loop {
                match self.next()? {
                    Event::End(_) => break,
                    ev @ (Event::Start(_) | Event::Empty(_)) => {
                        let (c, c_empty) = split(ev);
                        if local(&c)? != "extension" {
                            return Err(self.err("a primitive element may only contain extensions"));
                        }
                        let ext = self.node(EXTENSION, &c, c_empty, false)?;
                        self.bld.push_ext(ext);
                    }
                    Event::Comment(_) | Event::PI(_) => {}
                    Event::Eof => {
                        return Err(self.err("unexpected end of input (unclosed element)"));
                    }
                    _ => return Err(self.err("a primitive element may only contain extensions")),
                }
            }
            self.depth -= 1;
        }
        prim.extra = self.bld.close_exts(exts, id);
        if prim.value.is_none() && prim.extra == crate::model::NO_EXTRA {
            return Err(self.err("primitive element without a value or extension"));
        }
        Ok(prim)
    }

    fn prim_value(&mut self, ty: TypeId, v: &str) -> Result<PrimValue, Error> {
        Ok(match ty.prim() {
            Some(PrimKind::Boolean) => match v {
                "true" => PrimValue::Bool(true),
                "false" => PrimValue::Bool(false),
                _ => return Err(self.err(format!("invalid boolean {v:?}"))),
            },
            Some(PrimKind::Integer) => {
                parse_int(v).ok_or_else(|| self.err(format!("invalid integer {v:?}")))?
            }
            Some(PrimKind::Decimal) if !is_decimal(v.as_bytes()) => {
                return Err(self.err(format!("invalid decimal {v:?}")));
            }
            _ if v.is_empty() => return Err(self.err("empty value attribute")),
            _ => PrimValue::Str(self.bld.str(v)?),
        })
    }
}
