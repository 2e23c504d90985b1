//! The element tree: one generic node type driven by the generated schema tables, stored flat.
//!
//! A [`Tree`] holds a whole resource in a handful of arrays instead of one heap object per node: nodes,
//! fields and values are indices into `Vec`s, and every string is a [`Span`] of one text buffer. Reading a
//! resource therefore costs a few amortised allocations whatever its size, dropping it a few frees, and
//! values are plain `Copy` data (see docs/ARCHITECTURE.md for the measurements that led here).
//!
//! A node's fields are kept in the spec's element order and a field's values contiguously, so every writer
//! walks them front to back. Primitive values keep what each format can say: the lexical form of decimals,
//! an `id`, extensions, and "no value" (JSON's `null` padding). Trees are built by the readers through a
//! [`Builder`], which collects the fields of the nodes being read on scratch stacks (formats may give a
//! node's properties in any order, and JSON's `_name` companions amend values already read) and lays each
//! node out when it is complete: children before parents.

use crate::error::Error;
use crate::schema::{ElemDef, TypeId};

/// Element index of a property kept verbatim by the lenient JSON parser (values: name, raw JSON text).
pub(crate) const UNKNOWN_ELEM: u16 = u16::MAX;

/// Index of a node in [`Tree::nodes`].
pub(crate) type NodeId = u32;

/// Index of a primitive's id and extensions in [`Tree::extras`]; [`NO_EXTRA`] for none.
pub(crate) type ExtraId = u32;

/// A primitive without id or extensions.
pub(crate) const NO_EXTRA: ExtraId = u32::MAX;

/// A string of the tree: `text[start..start + len]`, always on character boundaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    start: u32,
    len: u32,
}

/// A resource (or, for Bundles, the resources inside it) as flat arrays.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tree {
    /// Every string value, one after the other.
    text: String,
    nodes: Vec<NodeData>,
    fields: Vec<Field>,
    values: Vec<Value>,
    extras: Vec<Extra>,
    /// The extension nodes of primitives, a contiguous run per [`Extra`].
    ext_nodes: Vec<NodeId>,
}

/// An instance of a complex type, backbone element or resource: its fields are `fields[first..first + len]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NodeData {
    pub(crate) ty: TypeId,
    first: u32,
    len: u32,
}

/// The values of one element (one alternative of a choice element): `values[first..first + len]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field {
    pub(crate) elem: u16,
    pub(crate) alt: u8,
    first: u32,
    len: u32,
}

/// One value of an element.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Value {
    Prim(Prim),
    /// A complex type, backbone element or (for `Resource`-typed elements) a resource.
    Node(NodeId),
}

/// A primitive value with its optional id and extensions.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prim {
    pub(crate) value: Option<PrimValue>,
    pub(crate) extra: ExtraId,
}

impl Default for Prim {
    fn default() -> Prim {
        Prim {
            value: None,
            extra: NO_EXTRA,
        }
    }
}

/// The rarely present parts of a primitive: `ext_nodes[first..first + len]` are its extensions.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Extra {
    pub(crate) id: Option<Span>,
    first: u32,
    len: u32,
}

/// A primitive's value. Decimals are `Str` holding their lexical form.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PrimValue {
    Bool(bool),
    Int(i64),
    Str(Span),
}

impl Span {
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }
}

fn range(first: u32, len: u32) -> std::ops::Range<usize> {
    first as usize..first as usize + len as usize
}

impl Tree {
    pub(crate) fn node(&self, id: NodeId) -> &NodeData {
        &self.nodes[id as usize]
    }

    pub(crate) fn fields(&self, n: &NodeData) -> &[Field] {
        &self.fields[range(n.first, n.len)]
    }

    pub(crate) fn values(&self, f: &Field) -> &[Value] {
        &self.values[range(f.first, f.len)]
    }

    pub(crate) fn str(&self, s: Span) -> &str {
        &self.text[range(s.start, s.len)]
    }

    /// The id and extensions of a primitive, if it has any.
    pub(crate) fn extra(&self, p: &Prim) -> Option<&Extra> {
        self.extras.get(p.extra as usize)
    }

    pub(crate) fn extensions(&self, x: &Extra) -> &[NodeId] {
        &self.ext_nodes[range(x.first, x.len)]
    }

    /// A primitive's value as text, as JSON or XML writes it.
    pub(crate) fn text(&self, v: &PrimValue) -> std::borrow::Cow<'_, str> {
        match v {
            PrimValue::Bool(b) => std::borrow::Cow::Borrowed(if *b { "true" } else { "false" }),
            PrimValue::Int(i) => std::borrow::Cow::Owned(i.to_string()),
            PrimValue::Str(s) => std::borrow::Cow::Borrowed(self.str(*s)),
        }
    }

    /// Structural equality of node `a` of this tree and node `b` of `other`: the same types, fields and
    /// values (strings by content), whatever order the arrays were filled in.
    pub(crate) fn same(&self, a: NodeId, other: &Tree, b: NodeId) -> bool {
        let (na, nb) = (self.node(a), other.node(b));
        if na.ty != nb.ty || na.len != nb.len {
            return false;
        }
        self.fields(na)
            .iter()
            .zip(other.fields(nb))
            .all(|(fa, fb)| {
                fa.elem == fb.elem
                    && fa.alt == fb.alt
                    && fa.len == fb.len
                    && self
                        .values(fa)
                        .iter()
                        .zip(other.values(fb))
                        .all(|(va, vb)| match (va, vb) {
                            (Value::Node(x), Value::Node(y)) => self.same(*x, other, *y),
                            (Value::Prim(x), Value::Prim(y)) => self.same_prim(x, other, y),
                            _ => false,
                        })
            })
    }

    fn same_prim(&self, a: &Prim, other: &Tree, b: &Prim) -> bool {
        let values = match (&a.value, &b.value) {
            (None, None) => true,
            (Some(PrimValue::Bool(x)), Some(PrimValue::Bool(y))) => x == y,
            (Some(PrimValue::Int(x)), Some(PrimValue::Int(y))) => x == y,
            (Some(PrimValue::Str(x)), Some(PrimValue::Str(y))) => self.str(*x) == other.str(*y),
            _ => false,
        };
        values
            && match (self.extra(a), other.extra(b)) {
                (None, None) => true,
                (Some(x), Some(y)) => {
                    x.id.map(|s| self.str(s)) == y.id.map(|s| other.str(s))
                        && x.len == y.len
                        && self
                            .extensions(x)
                            .iter()
                            .zip(other.extensions(y))
                            .all(|(p, q)| self.same(*p, other, *q))
                }
                _ => false,
            }
    }
}

impl NodeData {
    /// The element definition of a field.
    pub(crate) fn elem_def(&self, f: &Field) -> &'static ElemDef {
        &self.ty.def().elements[f.elem as usize]
    }
}

/// A field of a node being read: its element, alternative and how many values it has so far.
#[derive(Clone, Copy, Debug)]
struct OpenField {
    elem: u16,
    alt: u8,
    count: u32,
}

/// Where a node being read starts on the builder's scratch stacks.
#[derive(Debug)]
pub(crate) struct Mark {
    ty: TypeId,
    fields: usize,
    values: usize,
}

impl Mark {
    /// The type of the node being read.
    pub(crate) fn ty(&self) -> TypeId {
        self.ty
    }
}

/// Where a primitive's extensions being read start on the builder's scratch stack.
#[derive(Debug)]
pub(crate) struct ExtMark(usize);

/// Builds a [`Tree`] while a reader walks its input (see the module docs).
///
/// Protocol: [`open`](Builder::open) a node, declare each of its elements with [`field`](Builder::field),
/// [`push`](Builder::push) values (child nodes are opened and closed in between), then
/// [`close`](Builder::close) it, which lays its fields out in element order and returns its id.
#[derive(Default)]
pub(crate) struct Builder {
    tree: Tree,
    /// The tree's text while it is built: every piece added was checked to be UTF-8 (`str`, `utf8`).
    text: Vec<u8>,
    /// Fields of the nodes being read, innermost node last; a node's fields sorted by element.
    open_fields: Vec<OpenField>,
    /// Values of the nodes being read, innermost node last, and beside them their elements (two arrays,
    /// so that a finished node's values move to the tree in one copy).
    open_values: Vec<Value>,
    open_elems: Vec<u16>,
    /// Extensions of the primitives being read.
    open_exts: Vec<NodeId>,
}

impl Builder {
    /// A builder for an input of `len` bytes with about one node per `per_node` bytes of it and one field
    /// (and value) per `per_field` bytes: the tree's arrays are sized once up front, not regrown.
    ///
    /// Inputs of 4 GiB or more are refused: every node, field and value takes at least one byte of input,
    /// so below that all their indices fit the `u32`s of the tree.
    pub(crate) fn new(len: usize, per_node: usize, per_field: usize) -> Result<Builder, Error> {
        if u32::try_from(len).is_err() {
            return Err(Error::TooLarge {
                limit: u32::MAX as usize,
            });
        }
        let (nodes, fields) = (len / per_node.max(1) + 1, len / per_field.max(1) + 1);
        Ok(Builder {
            tree: Tree {
                text: String::new(),
                nodes: Vec::with_capacity(nodes),
                fields: Vec::with_capacity(fields),
                values: Vec::with_capacity(fields),
                extras: Vec::new(),
                ext_nodes: Vec::new(),
            },
            // Strings are never longer than the input they come from (escapes only shrink), except a
            // binary string table, which is added once.
            text: Vec::with_capacity(len),
            open_fields: Vec::with_capacity(64),
            open_values: Vec::with_capacity(64),
            open_elems: Vec::with_capacity(64),
            open_exts: Vec::new(),
        })
    }

    /// The finished tree.
    pub(crate) fn finish(mut self) -> Tree {
        debug_assert!(std::str::from_utf8(&self.text).is_ok());
        // SAFETY: `text` is only ever extended by `span` with bytes of a `&str` (`str`) or bytes checked to
        // be UTF-8 (`utf8`, `table`), or replaced by `table` with a buffer whose every byte outside the
        // checked entries is an ASCII space; a concatenation of UTF-8 strings is UTF-8. Each span starts and
        // ends at a piece boundary, so slicing the `String` by spans never splits a character. (Checking
        // again here would be a second pass over every string of the resource.)
        self.tree.text = unsafe { String::from_utf8_unchecked(self.text) };
        self.tree
    }

    fn span(&mut self, b: &[u8]) -> Result<Span, Error> {
        let start = self.text.len();
        match (u32::try_from(start), u32::try_from(start + b.len())) {
            (Ok(st), Ok(_)) => {
                self.text.extend_from_slice(b);
                Ok(Span {
                    start: st,
                    len: b.len() as u32,
                })
            }
            _ => Err(Error::TooLarge {
                limit: u32::MAX as usize,
            }),
        }
    }

    /// Adds a string; more than 4 GiB of text is refused rather than wrapped.
    #[inline]
    pub(crate) fn str(&mut self, s: &str) -> Result<Span, Error> {
        self.span(s.as_bytes())
    }

    /// Adds bytes if they are UTF-8 (`Ok(None)` if not). ASCII, most of FHIR's text, is checked with a
    /// word-at-a-time scan before the full validation.
    #[inline]
    pub(crate) fn utf8(&mut self, b: &[u8]) -> Result<Option<Span>, Error> {
        if b.is_ascii() || std::str::from_utf8(b).is_ok() {
            return self.span(b).map(Some);
        }
        Ok(None)
    }

    /// Adds the entries `buf[start..end]` of a decompressed string table (in increasing order, not
    /// overlapping) and returns their spans, or `None` if one is not UTF-8. When the tree has no text yet
    /// (the table is read before the resource), `buf` becomes the text itself, the bytes between entries
    /// (their message framing) blanked, so a large table is never copied.
    pub(crate) fn table(
        &mut self,
        mut buf: Vec<u8>,
        entries: &[(usize, usize)],
    ) -> Result<Option<Vec<Span>>, Error> {
        if entries
            .iter()
            .any(|&(s, e)| !(buf[s..e].is_ascii() || std::str::from_utf8(&buf[s..e]).is_ok()))
        {
            return Ok(None);
        }
        if !self.text.is_empty() || u32::try_from(buf.len()).is_err() {
            return entries
                .iter()
                .map(|&(s, e)| self.span(&buf[s..e]))
                .collect::<Result<Vec<_>, _>>()
                .map(Some);
        }
        let mut prev = 0;
        for &(s, e) in entries {
            buf[prev..s].fill(b' ');
            prev = e;
        }
        buf[prev..].fill(b' ');
        // Keep the capacity reserved for the rest of the strings.
        buf.reserve(self.text.capacity());
        self.text = buf;
        Ok(Some(
            entries
                .iter()
                .map(|&(s, e)| Span {
                    start: s as u32,
                    len: (e - s) as u32,
                })
                .collect(),
        ))
    }

    /// The bytes of a string added before (for checks while reading).
    pub(crate) fn bytes_of(&self, s: Span) -> &[u8] {
        &self.text[range(s.start, s.len)]
    }

    /// Starts a node of type `ty`.
    #[inline]
    pub(crate) fn open(&self, ty: TypeId) -> Mark {
        Mark {
            ty,
            fields: self.open_fields.len(),
            values: self.open_values.len(),
        }
    }

    /// The field of element `elem` of the open node `m`, created if new; errors if another choice
    /// alternative is set. Returns its handle for [`push`](Builder::push) and friends, valid until the next
    /// call of `field` for this node (a new field may be inserted before it).
    #[inline]
    pub(crate) fn field(&mut self, m: &Mark, elem: u16, alt: u8) -> Result<usize, &'static str> {
        // The node's open fields stay sorted by element. Formats write in element order, so the field is
        // almost always the last one or new at the end.
        let len = self.open_fields.len();
        let last = if len > m.fields {
            self.open_fields.last().copied()
        } else {
            None
        };
        match last {
            Some(f) if f.elem == elem && f.alt == alt => return Ok(len - 1),
            Some(f) if f.elem == elem => {
                return Err("more than one type given for a choice element");
            }
            Some(f) if f.elem > elem => return self.insert_field(m, elem, alt),
            _ => {}
        }
        self.open_fields.push(OpenField {
            elem,
            alt,
            count: 0,
        });
        Ok(len)
    }

    /// `field` for an element before the node's last field (properties out of element order).
    #[inline(never)]
    fn insert_field(&mut self, m: &Mark, elem: u16, alt: u8) -> Result<usize, &'static str> {
        let pos = m.fields + self.open_fields[m.fields..].partition_point(|f| f.elem < elem);
        match self.open_fields[pos] {
            f if f.elem == elem && f.alt != alt => {
                Err("more than one type given for a choice element")
            }
            f if f.elem == elem => Ok(pos),
            _ => {
                self.open_fields.insert(
                    pos,
                    OpenField {
                        elem,
                        alt,
                        count: 0,
                    },
                );
                Ok(pos)
            }
        }
    }

    /// How many values field `fi` has so far.
    #[inline]
    pub(crate) fn count(&self, fi: usize) -> usize {
        self.open_fields[fi].count as usize
    }

    /// Appends a value to field `fi`.
    #[inline]
    pub(crate) fn push(&mut self, fi: usize, v: Value) {
        let f = &mut self.open_fields[fi];
        f.count += 1;
        self.open_elems.push(f.elem);
        self.open_values.push(v);
    }

    /// Where the values of field `fi` of the open node `m` are on the scratch stack (empty, without
    /// allocating, for a new field). JSON gives a primitive's values and its `_name` companion as separate
    /// properties in any order; the second one amends the items of the first through these slots.
    pub(crate) fn slots(&self, m: &Mark, fi: usize) -> Vec<usize> {
        if self.count(fi) == 0 {
            return Vec::new();
        }
        let elem = self.open_fields[fi].elem;
        (m.values..self.open_elems.len())
            .filter(|&i| self.open_elems[i] == elem)
            .collect()
    }

    /// Item `i` of primitive field `fi`: an existing one (`slots`, see [`slots`](Builder::slots)), or
    /// a new empty one appended (items are visited in order, so `i` is then the next one). `None` if the
    /// field holds nodes.
    pub(crate) fn prim_item(&mut self, fi: usize, slots: &[usize], i: usize) -> Option<&mut Prim> {
        let at = match slots.get(i) {
            Some(&at) => at,
            None => {
                self.push(fi, Value::Prim(Prim::default()));
                self.open_values.len() - 1
            }
        };
        match &mut self.open_values[at] {
            Value::Prim(p) => Some(p),
            Value::Node(_) => None,
        }
    }

    /// The alternative of element `elem` in the open node `m` (0 if it has no field).
    pub(crate) fn alt_of(&self, m: &Mark, elem: u16) -> u8 {
        self.open_fields[m.fields..]
            .iter()
            .find(|f| f.elem == elem)
            .map_or(0, |f| f.alt)
    }

    /// The values of the open node `m` (children already closed) and their elements.
    pub(crate) fn open_values(&self, m: &Mark) -> (&[u16], &[Value]) {
        (&self.open_elems[m.values..], &self.open_values[m.values..])
    }

    /// Replaces the values of field `fi` of the open node `m` by `values`.
    pub(crate) fn replace(&mut self, m: &Mark, fi: usize, values: impl IntoIterator<Item = Value>) {
        let elem = self.open_fields[fi].elem;
        let mut keep = m.values;
        for i in m.values..self.open_values.len() {
            if self.open_elems[i] != elem {
                self.open_elems.swap(keep, i);
                self.open_values.swap(keep, i);
                keep += 1;
            }
        }
        self.open_elems.truncate(keep);
        self.open_values.truncate(keep);
        self.open_fields[fi].count = 0;
        for v in values {
            self.push(fi, v);
        }
    }

    /// Finishes the open node `m`: its fields in element order (unknown properties last, as read), each
    /// field's values contiguous and in the order given.
    pub(crate) fn close(&mut self, m: Mark) -> NodeId {
        if !self.open_elems[m.values..].is_sorted() {
            self.sort_values(m.values);
        }
        let first = self.tree.fields.len() as u32;
        let mut next = self.tree.values.len() as u32;
        for f in &self.open_fields[m.fields..] {
            // A field may have been declared without values (an empty packed field): it is not kept.
            if f.count > 0 {
                self.tree.fields.push(Field {
                    elem: f.elem,
                    alt: f.alt,
                    first: next,
                    len: f.count,
                });
                next += f.count;
            }
        }
        self.tree
            .values
            .extend_from_slice(&self.open_values[m.values..]);
        self.open_values.truncate(m.values);
        self.open_elems.truncate(m.values);
        self.open_fields.truncate(m.fields);
        let id = self.tree.nodes.len() as NodeId;
        self.tree.nodes.push(NodeData {
            ty: m.ty,
            first,
            len: self.tree.fields.len() as u32 - first,
        });
        id
    }

    /// Groups the values from `from` on by element, keeping each element's values in order (properties
    /// given out of order, companions merged after the values).
    #[inline(never)]
    fn sort_values(&mut self, from: usize) {
        let mut pairs: Vec<(u16, Value)> = self.open_elems[from..]
            .iter()
            .copied()
            .zip(self.open_values[from..].iter().copied())
            .collect();
        pairs.sort_by_key(|p| p.0);
        for (i, (e, v)) in pairs.into_iter().enumerate() {
            self.open_elems[from + i] = e;
            self.open_values[from + i] = v;
        }
    }

    /// Starts collecting a primitive's extensions.
    pub(crate) fn open_exts(&self) -> ExtMark {
        ExtMark(self.open_exts.len())
    }

    /// Adds a closed extension node to the primitive being read.
    pub(crate) fn push_ext(&mut self, id: NodeId) {
        self.open_exts.push(id);
    }

    /// Finishes a primitive's id and extensions; [`NO_EXTRA`] when it has neither.
    pub(crate) fn close_exts(&mut self, m: ExtMark, id: Option<Span>) -> ExtraId {
        if id.is_none() && self.open_exts.len() == m.0 {
            return NO_EXTRA;
        }
        let first = self.tree.ext_nodes.len() as u32;
        self.tree.ext_nodes.extend(self.open_exts.drain(m.0..));
        self.tree.extras.push(Extra {
            id,
            first,
            len: self.tree.ext_nodes.len() as u32 - first,
        });
        self.tree.extras.len() as ExtraId - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::resource_type;

    fn prim(b: &mut Builder, s: &str) -> Value {
        let span = b.str(s).expect("small");
        Value::Prim(Prim {
            value: Some(PrimValue::Str(span)),
            extra: NO_EXTRA,
        })
    }

    #[test]
    fn fields_are_laid_out_in_element_order_whatever_the_reading_order() {
        let ty = resource_type("Patient").expect("Patient");
        let def = ty.def();
        let (gender, _) = def.find("gender").expect("gender");
        let (id, _) = def.find("id").expect("id");
        let mut b = Builder::new(64, 8, 8).expect("small");
        let m = b.open(ty);
        let g = b.field(&m, gender, 0).expect("new");
        let v = prim(&mut b, "male");
        b.push(g, v);
        let i = b.field(&m, id, 0).expect("new");
        let v = prim(&mut b, "x");
        b.push(i, v);
        let root = b.close(m);
        let t = b.finish();
        let n = t.node(root);
        let elems: Vec<u16> = t.fields(n).iter().map(|f| f.elem).collect();
        assert_eq!(elems, vec![id, gender]);
        let Value::Prim(Prim {
            value: Some(PrimValue::Str(s)),
            ..
        }) = t.values(&t.fields(n)[0])[0]
        else {
            panic!("a string")
        };
        assert_eq!(t.str(s), "x");
        assert!(t.same(root, &t.clone(), root));
    }

    #[test]
    fn a_second_choice_alternative_is_refused() {
        let ty = resource_type("Observation").expect("Observation");
        let (value, alt) = ty.def().find("valueString").expect("valueString");
        let (_, other) = ty.def().find("valueQuantity").expect("valueQuantity");
        let mut b = Builder::new(64, 8, 8).expect("small");
        let m = b.open(ty);
        b.field(&m, value, alt).expect("first");
        assert!(b.field(&m, value, other).is_err());
    }
}
