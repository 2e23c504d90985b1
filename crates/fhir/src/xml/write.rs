//! FHIR XML writer: elements in the spec's order, primitives as `value` attributes, `id`/`url` as attributes,
//! the narrative `div` embedded as XHTML, resources wrapped in their element (`<contained><Patient>`).

use crate::error::{Error, Format};
use crate::model::{NodeId, Prim, Tree, UNKNOWN_ELEM, Value};
use crate::schema::{Kind, Repr, prop_name};

/// The FHIR XML namespace.
pub(crate) const FHIR_NS: &str = "http://hl7.org/fhir";

/// Writes a resource as an XML document.
pub(crate) fn write(t: &Tree, root: NodeId, pretty: bool) -> Result<Vec<u8>, Error> {
    let mut w = Writer {
        t,
        out: Vec::with_capacity(4096),
        pretty,
        indent: 0,
    };
    w.out
        .extend_from_slice(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    w.newline();
    w.resource(root, true)?;
    if pretty {
        w.out.push(b'\n');
    }
    Ok(w.out)
}

struct Writer<'a> {
    t: &'a Tree,
    out: Vec<u8>,
    pretty: bool,
    indent: usize,
}

impl Writer<'_> {
    fn newline(&mut self) {
        if self.pretty {
            self.out.push(b'\n');
            self.out.extend(std::iter::repeat_n(b' ', self.indent * 2));
        }
    }

    fn resource(&mut self, node: NodeId, root: bool) -> Result<(), Error> {
        let name = self.t.node(node).ty.def().name;
        self.out.push(b'<');
        self.out.extend_from_slice(name.as_bytes());
        if root {
            self.out.extend_from_slice(b" xmlns=\"");
            self.out.extend_from_slice(FHIR_NS.as_bytes());
            self.out.push(b'"');
        }
        self.body(node, name)
    }

    /// Writes attributes, `>`, children and the end tag of an open start tag `<name` (or closes it with `/>`).
    fn body(&mut self, id: NodeId, name: &str) -> Result<(), Error> {
        let t = self.t;
        let node = t.node(id);
        let def = node.ty.def();
        let mut has_children = false;
        for f in t.fields(node) {
            if f.elem == UNKNOWN_ELEM {
                return Err(Error::Unrepresentable {
                    format: Format::Xml,
                    path: name.to_string(),
                    message: "properties kept by the lenient JSON reader exist only in JSON".into(),
                });
            }
            let ed = &def.elements[f.elem as usize];
            if ed.repr == Repr::Attr {
                if let Some(Value::Prim(p)) = t.values(f).first() {
                    let v = p.value.as_ref().map(|v| t.text(v)).unwrap_or_default();
                    attr(&mut self.out, ed.name, &v, name)?;
                }
            } else {
                has_children = true;
            }
        }
        if !has_children {
            self.out.extend_from_slice(b"/>");
            return Ok(());
        }
        self.out.push(b'>');
        self.indent += 1;
        for f in t.fields(node) {
            let ed = &def.elements[f.elem as usize];
            if ed.repr == Repr::Attr {
                continue;
            }
            let ty = ed.types[f.alt as usize];
            let pname = prop_name(ed, f.alt);
            for v in t.values(f) {
                self.newline();
                match v {
                    Value::Prim(p) if ty.prim() == Some(crate::schema::PrimKind::Xhtml) => {
                        let v = p.value.as_ref().map(|v| t.text(v)).unwrap_or_default();
                        self.out.extend_from_slice(v.as_bytes());
                    }
                    Value::Prim(p) => self.prim(&pname, p)?,
                    Value::Node(n) if ty.def().kind == Kind::AnyResource => {
                        self.start(&pname);
                        self.out.push(b'>');
                        self.indent += 1;
                        self.newline();
                        self.resource(*n, false)?;
                        self.indent -= 1;
                        self.newline();
                        self.end(&pname);
                    }
                    Value::Node(n) => {
                        self.start(&pname);
                        self.body(*n, &pname)?;
                    }
                }
            }
        }
        self.indent -= 1;
        self.newline();
        self.end(name);
        Ok(())
    }

    fn start(&mut self, name: &str) {
        self.out.push(b'<');
        self.out.extend_from_slice(name.as_bytes());
    }

    fn end(&mut self, name: &str) {
        self.out.extend_from_slice(b"</");
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(b'>');
    }

    fn prim(&mut self, name: &str, p: &Prim) -> Result<(), Error> {
        let t = self.t;
        self.start(name);
        let extra = t.extra(p);
        if let Some(id) = extra.and_then(|x| x.id) {
            attr(&mut self.out, "id", t.str(id), name)?;
        }
        if let Some(v) = &p.value {
            attr(&mut self.out, "value", &t.text(v), name)?;
        }
        match extra.map(|x| t.extensions(x)).filter(|e| !e.is_empty()) {
            None => self.out.extend_from_slice(b"/>"),
            Some(exts) => {
                self.out.push(b'>');
                self.indent += 1;
                for ext in exts {
                    self.newline();
                    self.start("extension");
                    self.body(*ext, "extension")?;
                }
                self.indent -= 1;
                self.newline();
                self.end(name);
            }
        }
        Ok(())
    }
}

/// Writes ` name="value"`, escaping markup and the whitespace XML attribute normalization would destroy.
/// Control characters other than tab, newline and carriage return cannot appear in XML 1.0 at all.
fn attr(out: &mut Vec<u8>, name: &str, value: &str, element: &str) -> Result<(), Error> {
    if crate::escape::xml_forbidden(value.as_bytes()).is_some() {
        return Err(Error::Unrepresentable {
            format: Format::Xml,
            path: element.to_string(),
            message: format!("the {name} holds a control character XML 1.0 cannot carry"),
        });
    }
    out.push(b' ');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"=\"");
    crate::escape::escape_into(out, value, |c| match c {
        b'&' => Some(b"&amp;"),
        b'<' => Some(b"&lt;"),
        b'>' => Some(b"&gt;"),
        b'"' => Some(b"&quot;"),
        b'\n' => Some(b"&#xA;"),
        b'\r' => Some(b"&#xD;"),
        b'\t' => Some(b"&#x9;"),
        _ => None,
    });
    out.push(b'"');
    Ok(())
}
