//! FHIR JSON writer: compact, or pretty in the layout of the official examples (2-space indent, `"k": v`).

use crate::model::{NO_EXTRA, NodeId, Prim, PrimValue, Tree, UNKNOWN_ELEM, Value};
use crate::schema::{Kind, PrimKind, prop_name};

/// Writes node `root` of a tree (a resource) as JSON.
pub(crate) fn write(t: &Tree, root: NodeId, pretty: bool, out: &mut Vec<u8>) {
    let mut w = Writer {
        t,
        out,
        pretty,
        indent: 0,
    };
    w.node(root);
}

struct Writer<'a> {
    t: &'a Tree,
    out: &'a mut Vec<u8>,
    pretty: bool,
    indent: usize,
}

impl<'a> Writer<'a> {
    #[inline]
    fn newline(&mut self) {
        if self.pretty {
            self.out.push(b'\n');
            self.out.extend(std::iter::repeat_n(b' ', self.indent * 2));
        }
    }

    #[inline]
    fn key(&mut self, first: &mut bool, name: &str, companion: bool) {
        if !*first {
            self.out.push(b',');
        }
        *first = false;
        self.newline();
        self.out.push(b'"');
        if companion {
            self.out.push(b'_');
        }
        self.out.extend_from_slice(name.as_bytes());
        self.out
            .extend_from_slice(if self.pretty { b"\": " } else { b"\":" });
    }

    fn open(&mut self, c: u8) {
        self.out.push(c);
        self.indent += 1;
    }

    fn close(&mut self, c: u8) {
        self.indent -= 1;
        self.newline();
        self.out.push(c);
    }

    fn node(&mut self, id: NodeId) {
        let t = self.t;
        let node = t.node(id);
        let def = node.ty.def();
        self.open(b'{');
        let mut first = true;
        if def.kind == Kind::Resource {
            self.key(&mut first, "resourceType", false);
            string(self.out, def.name);
        }
        for f in t.fields(node) {
            let values = t.values(f);
            if f.elem == UNKNOWN_ELEM {
                for pair in values.chunks(2) {
                    if let [Value::Prim(k), Value::Prim(v)] = pair {
                        let (Some(PrimValue::Str(k)), Some(PrimValue::Str(v))) = (k.value, v.value)
                        else {
                            continue;
                        };
                        // A kept name is any JSON string, so it is escaped (schema names never need it).
                        if !first {
                            self.out.push(b',');
                        }
                        first = false;
                        self.newline();
                        string(self.out, t.str(k));
                        self.out
                            .extend_from_slice(if self.pretty { b": " } else { b":" });
                        self.out.extend_from_slice(t.str(v).as_bytes());
                    }
                }
                continue;
            }
            let ed = &def.elements[f.elem as usize];
            let ty = ed.types[f.alt as usize];
            let name = prop_name(ed, f.alt);
            if ty.extensible_prim() {
                let kind = ty.prim().unwrap_or(PrimKind::String);
                let prims = values.iter().filter_map(|v| match v {
                    Value::Prim(p) => Some(p),
                    Value::Node(_) => None,
                });
                let has_value = prims.clone().any(|p| p.value.is_some());
                let has_extra = prims.clone().any(|p| p.extra != NO_EXTRA);
                if has_value {
                    self.key(&mut first, &name, false);
                    self.seq(ed.many, prims.clone(), |w, p| match &p.value {
                        Some(v) => prim_value(w.out, t, v, kind),
                        None => w.out.extend_from_slice(b"null"),
                    });
                }
                if has_extra {
                    self.key(&mut first, &name, true);
                    self.seq(ed.many, prims, |w, p: &Prim| match t.extra(p) {
                        Some(x) => {
                            w.open(b'{');
                            let mut first = true;
                            if let Some(id) = x.id {
                                w.key(&mut first, "id", false);
                                string(w.out, t.str(id));
                            }
                            let exts = t.extensions(x);
                            if !exts.is_empty() {
                                w.key(&mut first, "extension", false);
                                w.seq(true, exts.iter(), |w, n| w.node(*n));
                            }
                            w.close(b'}');
                        }
                        None => w.out.extend_from_slice(b"null"),
                    });
                }
                continue;
            }
            self.key(&mut first, &name, false);
            self.seq(ed.many, values.iter(), |w, v| match v {
                Value::Node(n) => w.node(*n),
                Value::Prim(p) => match &p.value {
                    Some(v) => prim_value(w.out, t, v, PrimKind::String),
                    None => w.out.extend_from_slice(b"null"),
                },
            });
        }
        self.close(b'}');
    }

    /// Writes one item, or an array of items when `many`.
    fn seq<T>(
        &mut self,
        many: bool,
        items: impl Iterator<Item = T>,
        mut each: impl FnMut(&mut Self, T),
    ) {
        if !many {
            for item in items.take(1) {
                each(self, item);
            }
            return;
        }
        self.open(b'[');
        for (i, item) in items.enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.newline();
            each(self, item);
        }
        self.close(b']');
    }
}

fn prim_value(out: &mut Vec<u8>, t: &Tree, v: &PrimValue, kind: PrimKind) {
    match v {
        PrimValue::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        PrimValue::Int(i) => {
            use std::io::Write as _;
            let _ = write!(out, "{i}");
        }
        PrimValue::Str(s) if kind == PrimKind::Decimal => {
            out.extend_from_slice(t.str(*s).as_bytes())
        }
        PrimValue::Str(s) => string(out, t.str(*s)),
    }
}

/// Writes a JSON string: escapes `"`, `\` and control characters; everything else (non-ASCII too) verbatim.
pub(crate) fn string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    // Most strings need no escape: one table lookup per byte decides, then they are copied whole.
    if !s.bytes().any(|c| NEEDS_ESCAPE[c as usize]) {
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        return;
    }
    crate::escape::escape_into(out, s, |c| match c {
        b'"' => Some(b"\\\""),
        b'\\' => Some(b"\\\\"),
        0..=0x1f => Some(CONTROL[c as usize]),
        _ => None,
    });
    out.push(b'"');
}

/// The bytes a JSON string escapes: `"`, `\\` and the control characters.
const NEEDS_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 0x20 {
        t[c] = true;
        c += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// `\u00XX` escapes of the control characters without a short form.
const CONTROL: [&[u8]; 32] = [
    b"\\u0000", b"\\u0001", b"\\u0002", b"\\u0003", b"\\u0004", b"\\u0005", b"\\u0006", b"\\u0007",
    b"\\b", b"\\t", b"\\n", b"\\u000b", b"\\f", b"\\r", b"\\u000e", b"\\u000f", b"\\u0010",
    b"\\u0011", b"\\u0012", b"\\u0013", b"\\u0014", b"\\u0015", b"\\u0016", b"\\u0017", b"\\u0018",
    b"\\u0019", b"\\u001a", b"\\u001b", b"\\u001c", b"\\u001d", b"\\u001e", b"\\u001f",
];
