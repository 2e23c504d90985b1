//! Refinements (`:`), attribute groups, cardinality, reverse attributes, concrete values and dotted attributes.
//!
//! Meaning choices:
//! - Relationships are the active defining ones the source reports (is-a included, so `116680003 = X` means a
//!   direct parent in `X`).
//! - Cardinality counts non-redundant attributes. The specification (ECL, "Attribute cardinality"): "A minimum
//!   cardinality of X constrains the valid clinical meanings to those which have at least (i.e. >=) X
//!   non-redundant attributes that match the given attribute criteria", evaluated against concept definitions
//!   "represented in the SNOMED CT distribution view" (the distribution normal form, where the classifier has
//!   already removed the attributes made redundant within a group); its example
//!   `< 404684003 |Clinical finding|: [2..*] 363698007 |Finding site| = < 91723000 |Anatomical structure|` is
//!   "satisfied by any clinical finding whose definition has two or more non-redundant finding sites,
//!   irrespective of the attribute group in which they are contained", and its glossary calls an attribute
//!   redundant when its value "is subsumed by another attribute in the same group". Outside a group, an
//!   attribute is therefore a (type, value) pair, counted across every group; whether the same pair in two
//!   groups is one attribute or two is [`AttributeCounting`]'s choice (per group for `/fhir`, as the official
//!   FHIR conformance suite requires; distinct across groups for the Hermes API, as Hermes counts). A repeated
//!   row never counts twice. Inside `{ }` the count is within each group. A reverse attribute counts (type,
//!   source concept) pairs the same way.
//! - The attribute of a refinement must be a concept model attribute: 410662002 |Concept model attribute| or a
//!   descendant (or 116680003 |Is a|, which the International Edition keeps beside 410662002 under 246061005
//!   |Attribute|, and which ECL uses for direct parents). A concept the attribute name refers to by id that is
//!   not one is refused with [`EclError::NotAnAttribute`] naming it; what an operator or `*` adds beyond the
//!   named concepts is narrowed to the concept model attributes (`>> 246075003 |Causative agent|`, an example
//!   of the specification, reaches 410662002's own ancestors). A release without 410662002 (a hand-made test
//!   release) has no concept model to check against and is not checked.
//! - Inside `{ }`, each relationship in group 0 is a group of its own; numbered groups are taken as they are.
//! - `a != V` counts attributes of type `a` whose value is not in `V`.
//! - String concrete values compare exactly (case-sensitive) with a plain term, by pattern with `wild:`.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use ecl::{AttributeValue, CmpOp, EqOp, Focus, Refinement, SearchKind, SearchTerm};
use roaring::RoaringBitmap;

use super::eval::Ctx;
use super::source::{ConcreteRel, Rel, ids};
use super::text::wild_match;
use super::{AttributeCounting, EclError, EclSource};

/// A wildcard or very broad attribute name would merge hundreds of thousands of slices; walk instead.
const MAX_TYPED_MERGES: u64 = 64;

/// The number of leading elements of `items` for which `before` holds (`before` must be true for a prefix and
/// false after it): exponential then binary search, so skipping k elements costs O(log k).
fn gallop<T>(items: &[T], before: impl Fn(&T) -> bool) -> usize {
    let mut hi = 1;
    while hi < items.len() && before(&items[hi - 1]) {
        hi *= 2;
    }
    let lo = hi / 2;
    let hi = hi.min(items.len());
    lo + items[lo..hi].partition_point(before)
}

/// An attribute constraint with its sets evaluated.
#[derive(Clone)]
struct Attr {
    min: u32,
    max: Option<u32>,
    reverse: bool,
    types: RoaringBitmap,
    value: Value,
}

#[derive(Clone)]
enum Value {
    Concepts { ne: bool, set: RoaringBitmap },
    Numeric(CmpOp, f64),
    String(EqOp, Vec<SearchTerm>),
    Boolean(EqOp, bool),
}

impl Attr {
    fn is_concrete(&self) -> bool {
        !matches!(self.value, Value::Concepts { .. })
    }

    fn matches_rel(&self, r: Rel) -> bool {
        match &self.value {
            Value::Concepts { ne, set } => {
                self.types.contains(r.type_idx) && (set.contains(r.other) != *ne)
            }
            _ => false,
        }
    }

    fn matches_concrete(&self, c: ConcreteRel<'_>) -> bool {
        self.types.contains(c.type_idx) && concrete_matches(&self.value, c.value)
    }

    fn count_ok(&self, n: u32) -> bool {
        n >= self.min && self.max.is_none_or(|max| n <= max)
    }
}

fn concrete_matches(value: &Value, raw: &str) -> bool {
    match value {
        Value::Concepts { .. } => false,
        Value::Numeric(op, wanted) => {
            match raw.strip_prefix('#').and_then(|n| n.parse::<f64>().ok()) {
                Some(n) => n.partial_cmp(wanted).is_some_and(|o| op.holds(o)),
                None => false,
            }
        }
        Value::String(op, terms) => {
            let Some(inner) = raw.strip_prefix('"').and_then(|s| s.strip_suffix('"')) else {
                return false;
            };
            let text = inner.replace("\\\"", "\"").replace("\\\\", "\\");
            let any = terms.iter().any(|t| match t.kind {
                SearchKind::Match => t.unescaped() == text,
                SearchKind::Wild => wild_match(&text, &t.unescaped()),
            });
            any == (*op == EqOp::Eq)
        }
        Value::Boolean(op, wanted) => {
            let b = if raw.eq_ignore_ascii_case("true") {
                true
            } else if raw.eq_ignore_ascii_case("false") {
                false
            } else {
                return false;
            };
            (b == *wanted) == (*op == EqOp::Eq)
        }
    }
}

/// Relationships and concrete values of one role group of one concept.
struct Group {
    rels: Vec<Rel>,
    concrete: Vec<(u32, String)>,
}

impl<S: EclSource + ?Sized> Ctx<'_, S> {
    /// The members of `focus` that satisfy `r`.
    pub fn refine(
        &mut self,
        focus: &RoaringBitmap,
        r: &Refinement,
    ) -> Result<RoaringBitmap, EclError> {
        match r {
            Refinement::And(items) => {
                let mut acc = focus.clone();
                for item in items {
                    if acc.is_empty() {
                        break;
                    }
                    acc = self.refine(&acc, item)?;
                }
                Ok(acc)
            }
            Refinement::Or(items) => {
                let mut acc = RoaringBitmap::new();
                for item in items {
                    let rest = focus - &acc;
                    if rest.is_empty() {
                        break;
                    }
                    acc |= self.refine(&rest, item)?;
                }
                Ok(acc)
            }
            Refinement::Attribute(a) => {
                let attr = self.compile_attr(a)?;
                self.attribute(focus, &attr)
            }
            Refinement::Group(g) => self.group(focus, g),
        }
    }

    fn compile_attr(&mut self, a: &ecl::Attribute) -> Result<Attr, EclError> {
        let types = self.attribute_types(&a.name)?;
        let value = match &a.value {
            AttributeValue::Expression(op, v) => Value::Concepts {
                ne: *op == EqOp::Ne,
                set: self.sub(v)?,
            },
            AttributeValue::Numeric(op, n) => Value::Numeric(*op, n.value()),
            AttributeValue::String(op, terms) => Value::String(*op, terms.clone()),
            AttributeValue::Boolean(op, b) => Value::Boolean(*op, *b),
        };
        let (min, max) = a.cardinality.map_or((1, None), |c| (c.min, c.max));
        if a.reverse && !matches!(value, Value::Concepts { .. }) {
            return Err(EclError::Unsupported(
                "a reverse attribute (R) needs a concept value, not a concrete one".into(),
            ));
        }
        Ok(Attr {
            min,
            max,
            reverse: a.reverse,
            types,
            value,
        })
    }

    /// The concepts an attribute name selects, checked to be concept model attributes (see the module notes).
    fn attribute_types(&mut self, name: &ecl::SubExpression) -> Result<RoaringBitmap, EclError> {
        let types = self.sub(name)?;
        let src = self.src;
        let Some(model) = src.concept_index(ids::CONCEPT_MODEL_ATTRIBUTE) else {
            return Ok(types);
        };
        let is_a = src.concept_index(ids::IS_A);
        let allowed = |t: u32| t == model || Some(t) == is_a || src.ancestors(t).contains(&model);
        let mut named = Vec::new();
        named_in_sub(name, &mut named);
        let mut refused = named
            .into_iter()
            .filter_map(|id| src.concept_index(id))
            .filter(|&t| !allowed(t));
        if let Some(first) = refused.next() {
            let also = match refused.count() {
                0 => String::new(),
                n => format!(" (nor are {n} other concepts the attribute name refers to)"),
            };
            return Err(EclError::NotAnAttribute {
                id: src.concept_id(first),
                name: self.display(first),
                also,
            });
        }
        // What an operator or a wildcard adds beyond the named attributes is not an attribute: `>> 246075003
        // |Causative agent|` (the specification's own example) reaches 410662002's ancestors and the root,
        // and `*` selects every concept. Keep the concept model attributes among them.
        let mut attributes = super::eval::bitmap_of(src.descendants(model));
        attributes.insert(model);
        attributes.extend(is_a);
        Ok(types & attributes)
    }

    /// A concept as `id |fully specified name|` (or its id alone when it has no active FSN), for messages.
    fn display(&self, idx: u32) -> String {
        let id = self.src.concept_id(idx);
        let mut fsn = None;
        self.src.descriptions(idx, &mut |d| {
            if fsn.is_none() && d.active && d.type_id == ids::FSN {
                fsn = Some(d.term.to_owned());
            }
        });
        match fsn {
            Some(t) => format!("{id} |{t}|"),
            None => id.to_string(),
        }
    }

    /// Members of `cands` whose number of matching non-redundant attributes is within the cardinality.
    fn attribute(&mut self, cands: &RoaringBitmap, a: &Attr) -> Result<RoaringBitmap, EclError> {
        if a.max.is_none() && a.min <= 1 {
            // `[0..*]` holds for everyone; `[1..*]` (the default) needs only a yes/no per candidate.
            if a.min == 0 {
                return Ok(cands.clone());
            }
            let mut hits = RoaringBitmap::new();
            self.scan(cands, a, &mut |idx, _| {
                hits.insert(idx);
            })?;
            return Ok(hits);
        }
        // Count attributes, not rows: keys are (type, value), with the group when counting per group (see the
        // module notes for the specification's wording), so a key reported twice is one attribute.
        let mut found: Vec<(u32, AttrKey)> = Vec::new();
        self.scan(cands, a, &mut |idx, key| found.push((idx, key)))?;
        found.sort_unstable();
        found.dedup();
        let mut out = if a.min == 0 {
            cands.clone()
        } else {
            RoaringBitmap::new()
        };
        for run in found.chunk_by(|x, y| x.0 == y.0) {
            let idx = run[0].0;
            if a.count_ok(run.len() as u32) {
                out.insert(idx);
            } else {
                out.remove(idx);
            }
        }
        Ok(out)
    }

    /// Reports `(candidate, attribute)` for every matching relationship of every candidate (the same attribute
    /// may be reported more than once).
    fn scan(
        &mut self,
        cands: &RoaringBitmap,
        a: &Attr,
        record: &mut dyn FnMut(u32, AttrKey),
    ) -> Result<(), EclError> {
        let src = self.src;
        // The group is part of the attribute when counting per group, and left out when counting distinct
        // values across groups (see `AttributeCounting`).
        let per_group = self.counting == AttributeCounting::PerGroup;
        let g = |group: u32| if per_group { group } else { 0 };
        match &a.value {
            // With an index by type, merge each type's relationships (sorted by destination) with the sorted
            // value set, galloping over destinations that are not values: sequential reads, no per-value probes.
            Value::Concepts { ne: false, set } if !a.reverse && self.has_typed_index(&a.types) => {
                for t in &a.types {
                    self.tick()?;
                    let edges = src.edges_of_type(t).unwrap_or_default();
                    let mut pos = 0;
                    for v in set {
                        pos += gallop(&edges[pos..], |e| e.dest < v);
                        if pos == edges.len() {
                            break;
                        }
                        while let Some(e) = edges.get(pos).filter(|e| e.dest == v) {
                            if cands.contains(e.source) {
                                record(e.source, AttrKey::of(t, e.dest, g(e.group)));
                            }
                            pos += 1;
                        }
                    }
                }
            }
            // Few values: walk from the values to the candidates through the relationship indexes.
            Value::Concepts { ne: false, set } if set.len() < cands.len() => {
                let few_types = (a.types.len() <= 4).then(|| a.types.iter().collect::<Vec<u32>>());
                for v in set {
                    self.tick()?;
                    match (&few_types, a.reverse) {
                        // Reverse: the candidates are the destinations of the value's relationships; the
                        // attribute is (type, source) with the value as the source.
                        (_, true) => src.relationships(v, &mut |r: Rel| {
                            if a.types.contains(r.type_idx) && cands.contains(r.other) {
                                record(r.other, AttrKey::of(r.type_idx, v, g(r.group)));
                            }
                        }),
                        (Some(types), false) => {
                            for &t in types {
                                src.inbound_of_type(v, t, &mut |r: Rel| {
                                    if cands.contains(r.other) {
                                        record(r.other, AttrKey::of(r.type_idx, v, g(r.group)));
                                    }
                                });
                            }
                        }
                        (None, false) => src.inbound(v, &mut |r: Rel| {
                            if a.types.contains(r.type_idx) && cands.contains(r.other) {
                                record(r.other, AttrKey::of(r.type_idx, v, g(r.group)));
                            }
                        }),
                    }
                }
            }
            Value::Concepts { .. } => {
                for c in cands {
                    self.tick()?;
                    let mut visit = |r: Rel| {
                        if a.matches_rel(r) {
                            record(c, AttrKey::of(r.type_idx, r.other, g(r.group)));
                        }
                    };
                    if a.reverse {
                        src.inbound(c, &mut visit)
                    } else {
                        src.relationships(c, &mut visit)
                    }
                }
            }
            _ => {
                for c in cands {
                    self.tick()?;
                    src.concrete(c, &mut |r| {
                        if a.matches_concrete(r) {
                            record(c, AttrKey::concrete(r.type_idx, r.value, g(r.group)));
                        }
                    });
                }
            }
        }
        Ok(())
    }

    /// Whether the source indexes relationships by type (and the attribute names few enough types for a merge
    /// per type to beat one walk).
    fn has_typed_index(&self, types: &RoaringBitmap) -> bool {
        types.len() <= MAX_TYPED_MERGES
            && types
                .min()
                .is_some_and(|t| self.src.edges_of_type(t).is_some())
    }

    fn group(
        &mut self,
        cands: &RoaringBitmap,
        g: &ecl::AttributeGroup,
    ) -> Result<RoaringBitmap, EclError> {
        let (min, max) = g.cardinality.map_or((1, None), |c| (c.min, c.max));
        let compiled = self.compile_set(&g.body)?;
        // Only concepts that could have one matching group need their groups examined; the rest have zero.
        let possible = self.necessary(cands, &compiled)?;
        let mut out = if min == 0 {
            cands.clone()
        } else {
            RoaringBitmap::new()
        };
        for c in &possible {
            self.tick()?;
            let n = self
                .groups_of(c)
                .iter()
                .filter(|grp| holds(grp, &compiled))
                .count() as u32;
            if n >= min && max.is_none_or(|m| n <= m) {
                out.insert(c);
            } else {
                out.remove(c);
            }
        }
        Ok(out)
    }

    fn compile_set(&mut self, r: &Refinement) -> Result<CSet, EclError> {
        Ok(match r {
            Refinement::Attribute(a) => CSet::Attr(self.compile_attr(a)?),
            Refinement::And(items) => CSet::And(
                items
                    .iter()
                    .map(|i| self.compile_set(i))
                    .collect::<Result<_, _>>()?,
            ),
            Refinement::Or(items) => CSet::Or(
                items
                    .iter()
                    .map(|i| self.compile_set(i))
                    .collect::<Result<_, _>>()?,
            ),
            Refinement::Group(_) => {
                return Err(EclError::Unsupported(
                    "attribute groups cannot be nested".into(),
                ));
            }
        })
    }

    /// The candidates that satisfy `set` ungrouped with every minimum relaxed to 1: a superset of those with a
    /// group satisfying it.
    fn necessary(&mut self, cands: &RoaringBitmap, set: &CSet) -> Result<RoaringBitmap, EclError> {
        match set {
            CSet::Attr(a) if a.min >= 1 => {
                let relaxed = Attr {
                    min: 1,
                    max: None,
                    ..a.clone()
                };
                self.attribute(cands, &relaxed)
            }
            CSet::Attr(_) => Ok(cands.clone()),
            CSet::And(items) => {
                let mut acc = cands.clone();
                for i in items {
                    acc = self.necessary(&acc, i)?;
                }
                Ok(acc)
            }
            CSet::Or(items) => {
                let mut acc = RoaringBitmap::new();
                for i in items {
                    acc |= self.necessary(cands, i)?;
                }
                Ok(acc)
            }
        }
    }

    /// The role groups of a concept; every group-0 relationship is a group of its own.
    fn groups_of(&self, c: u32) -> Vec<Group> {
        let mut numbered: HashMap<u32, Group> = HashMap::new();
        let mut singles = Vec::new();
        self.src.relationships(c, &mut |r| {
            if r.group == 0 {
                singles.push(Group {
                    rels: vec![r],
                    concrete: Vec::new(),
                });
            } else {
                numbered
                    .entry(r.group)
                    .or_insert_with(|| Group {
                        rels: Vec::new(),
                        concrete: Vec::new(),
                    })
                    .rels
                    .push(r);
            }
        });
        self.src.concrete(c, &mut |r| {
            if r.group == 0 {
                singles.push(Group {
                    rels: Vec::new(),
                    concrete: vec![(r.type_idx, r.value.to_owned())],
                });
            } else {
                numbered
                    .entry(r.group)
                    .or_insert_with(|| Group {
                        rels: Vec::new(),
                        concrete: Vec::new(),
                    })
                    .concrete
                    .push((r.type_idx, r.value.to_owned()));
            }
        });
        singles.extend(numbered.into_values());
        singles
    }

    /// `X . attribute`: the values of the attributes of type `types` of the members of `set`.
    pub fn dotted(
        &mut self,
        set: &RoaringBitmap,
        types: &RoaringBitmap,
    ) -> Result<RoaringBitmap, EclError> {
        let mut out = RoaringBitmap::new();
        let src = self.src;
        for c in set {
            self.tick()?;
            src.relationships(c, &mut |r| {
                if types.contains(r.type_idx) {
                    out.insert(r.other);
                }
            });
        }
        Ok(out)
    }
}

/// One attribute of a concept's definition, for counting distinct ones: the attribute type and the concept at
/// the other end, or for a concrete value a hash of the value as in RF2 (two different values of one type on
/// one concept colliding in 64 bits is not a practical concern).
/// `group` is the role group when counting per group, 0 when counting distinct values across groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct AttrKey {
    type_idx: u32,
    value: u64,
    group: u32,
}

impl AttrKey {
    fn of(type_idx: u32, other: u32, group: u32) -> Self {
        Self {
            type_idx,
            value: u64::from(other),
            group,
        }
    }

    fn concrete(type_idx: u32, raw: &str, group: u32) -> Self {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        raw.hash(&mut h);
        Self {
            type_idx,
            // Keep concrete keys apart from concept keys (which fit in 32 bits).
            value: h.finish() | (1 << 63),
            group,
        }
    }
}

/// The concepts an attribute name refers to by id (its focus concepts, through brackets and `AND`/`OR`/`MINUS`),
/// which must be concept model attributes. Not the refsets of `^`, nor the values of a dotted expression: those
/// name other things, and what they select is filtered instead.
fn named_in_sub(s: &ecl::SubExpression, out: &mut Vec<u64>) {
    if s.member_of.is_some() {
        return;
    }
    match &s.focus {
        Focus::Concept(c) => out.push(c.id),
        Focus::Nested(e) => named_in_expression(e, out),
        Focus::Wildcard | Focus::AltId(_) => {}
    }
}

fn named_in_expression(e: &ecl::Expression, out: &mut Vec<u64>) {
    use ecl::Expression::*;
    match e {
        Sub(s) | Refined(s, _) => named_in_sub(s, out),
        And(items) | Or(items) => items.iter().for_each(|s| named_in_sub(s, out)),
        Minus(a, b) => {
            named_in_sub(a, out);
            named_in_sub(b, out);
        }
        Dotted(..) => {}
    }
}

/// A compiled attribute set (the body of a group).
enum CSet {
    Attr(Attr),
    And(Vec<CSet>),
    Or(Vec<CSet>),
}

/// Whether one group satisfies a compiled attribute set, counting within the group.
fn holds(g: &Group, set: &CSet) -> bool {
    match set {
        CSet::Attr(a) => {
            // Within the group, each (type, value) counts once, as outside (a repeated row is not a second
            // attribute).
            let mut keys: Vec<AttrKey> = if a.is_concrete() {
                g.concrete
                    .iter()
                    .filter(|(t, v)| {
                        a.matches_concrete(ConcreteRel {
                            type_idx: *t,
                            group: 0,
                            value: v,
                        })
                    })
                    .map(|(t, v)| AttrKey::concrete(*t, v, 0))
                    .collect()
            } else if a.reverse {
                Vec::new()
            } else {
                g.rels
                    .iter()
                    .filter(|r| a.matches_rel(**r))
                    .map(|r| AttrKey::of(r.type_idx, r.other, 0))
                    .collect()
            };
            keys.sort_unstable();
            keys.dedup();
            a.count_ok(keys.len() as u32)
        }
        CSet::And(items) => items.iter().all(|i| holds(g, i)),
        CSet::Or(items) => items.iter().any(|i| holds(g, i)),
    }
}
