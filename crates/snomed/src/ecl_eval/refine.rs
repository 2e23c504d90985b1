//! Refinements (`:`), attribute groups, cardinality, reverse attributes, concrete values and dotted attributes.
//!
//! Meaning choices:
//! - Relationships are the active defining ones the source reports (is-a included, so `116680003 = X` means a
//!   direct parent in `X`).
//! - An ungrouped attribute's cardinality counts matching relationships in every group.
//! - Inside `{ }`, each relationship in group 0 is a group of its own; numbered groups are taken as they are.
//! - `a != V` counts relationships of type `a` whose value is not in `V`.
//! - String concrete values compare exactly (case-sensitive) with a plain term, by pattern with `wild:`.

use std::collections::HashMap;

use ecl::{AttributeValue, CmpOp, EqOp, Refinement, SearchKind, SearchTerm};
use roaring::RoaringBitmap;

use super::eval::Ctx;
use super::source::{ConcreteRel, Rel};
use super::text::wild_match;
use super::{EclError, EclSource};

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
        let types = self.sub(&a.name)?;
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

    /// Members of `cands` whose number of matching relationships is within the attribute's cardinality.
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
        let mut counts: HashMap<u32, u32> = HashMap::new();
        self.scan(cands, a, &mut |idx, n| *counts.entry(idx).or_default() += n)?;
        let mut out = if a.min == 0 {
            cands.clone()
        } else {
            RoaringBitmap::new()
        };
        for (idx, n) in counts {
            if a.count_ok(n) {
                out.insert(idx);
            } else {
                out.remove(idx);
            }
        }
        Ok(out)
    }

    /// Reports `(candidate, number of matching relationships)`, possibly in several parts per candidate, for
    /// every candidate with at least one.
    fn scan(
        &mut self,
        cands: &RoaringBitmap,
        a: &Attr,
        record: &mut dyn FnMut(u32, u32),
    ) -> Result<(), EclError> {
        let src = self.src;
        match &a.value {
            // With an index by type, merge each type's relationships (sorted by destination) with the sorted
            // value set, galloping over destinations that are not values: sequential reads, no per-value probes.
            Value::Concepts { ne: false, set } if !a.reverse && self.has_typed_index(&a.types) => {
                let mut sources = Vec::new();
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
                            sources.push(e.source);
                            pos += 1;
                        }
                    }
                }
                // One record per candidate with its count: sorted runs of equal sources.
                sources.sort_unstable();
                for run in sources.chunk_by(|a, b| a == b) {
                    if cands.contains(run[0]) {
                        record(run[0], run.len() as u32);
                    }
                }
            }
            // Few values: walk from the values to the candidates through the relationship indexes.
            Value::Concepts { ne: false, set } if set.len() < cands.len() => {
                let few_types = (a.types.len() <= 4).then(|| a.types.iter().collect::<Vec<u32>>());
                for v in set {
                    self.tick()?;
                    let mut visit = |r: Rel| {
                        if a.types.contains(r.type_idx) && cands.contains(r.other) {
                            record(r.other, 1);
                        }
                    };
                    match (&few_types, a.reverse) {
                        (_, true) => src.relationships(v, &mut visit),
                        (Some(types), false) => {
                            for &t in types {
                                src.inbound_of_type(v, t, &mut visit);
                            }
                        }
                        (None, false) => src.inbound(v, &mut visit),
                    }
                }
            }
            Value::Concepts { .. } => {
                for c in cands {
                    self.tick()?;
                    let mut n = 0;
                    let mut visit = |r: Rel| n += u32::from(a.matches_rel(r));
                    if a.reverse {
                        src.inbound(c, &mut visit)
                    } else {
                        src.relationships(c, &mut visit)
                    }
                    if n > 0 {
                        record(c, n);
                    }
                }
            }
            _ => {
                for c in cands {
                    self.tick()?;
                    let mut n = 0;
                    src.concrete(c, &mut |r| n += u32::from(a.matches_concrete(r)));
                    if n > 0 {
                        record(c, n);
                    }
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
            let n = if a.is_concrete() {
                g.concrete
                    .iter()
                    .filter(|(t, v)| {
                        a.matches_concrete(ConcreteRel {
                            type_idx: *t,
                            group: 0,
                            value: v,
                        })
                    })
                    .count()
            } else if a.reverse {
                0
            } else {
                g.rels.iter().filter(|r| a.matches_rel(**r)).count()
            };
            a.count_ok(n as u32)
        }
        CSet::And(items) => items.iter().all(|i| holds(g, i)),
        CSet::Or(items) => items.iter().any(|i| holds(g, i)),
    }
}
