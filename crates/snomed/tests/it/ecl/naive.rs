//! A deliberately simple ECL evaluator over the plain collections of a [`Release`]: graph walks and linear
//! scans, no indexes, no bitmaps. The differential test checks the real evaluator against it.

use std::collections::{BTreeSet, HashMap, HashSet};

use ecl::{
    AttributeValue, ConceptFilter, ConstraintOperator, EqOp, Expression, FilterConstraint, Focus,
    Refinement, SubExpression,
};

use super::release::{IS_A, Release};

type Set = BTreeSet<u64>;

pub struct Naive<'r> {
    release: &'r Release,
    active: HashSet<u64>,
    all: HashSet<u64>,
    /// Active inferred relationships, is-a included: (source, type, destination, group).
    rels: Vec<(u64, u64, u64, u32)>,
    parents: HashMap<u64, Vec<u64>>,
    children: HashMap<u64, Vec<u64>>,
    /// Count an attribute repeated across groups once (`AttributeCounting::Distinct`) rather than per group.
    pub distinct: bool,
}

impl<'r> Naive<'r> {
    pub fn new(release: &'r Release) -> Self {
        let rels: Vec<(u64, u64, u64, u32)> = release
            .relationships
            .iter()
            .filter(|r| r.active && !r.stated)
            .map(|r| (r.source, r.type_id, r.dest, r.group))
            .collect();
        let mut parents: HashMap<u64, Vec<u64>> = HashMap::new();
        let mut children: HashMap<u64, Vec<u64>> = HashMap::new();
        for r in rels.iter().filter(|r| r.1 == IS_A) {
            parents.entry(r.0).or_default().push(r.2);
            children.entry(r.2).or_default().push(r.0);
        }
        Naive {
            parents,
            children,
            distinct: false,
            release,
            active: release
                .concepts
                .iter()
                .filter(|c| c.active)
                .map(|c| c.id)
                .collect(),
            all: release.concepts.iter().map(|c| c.id).collect(),
            rels,
        }
    }

    fn parents(&self, c: u64) -> Vec<u64> {
        self.parents.get(&c).cloned().unwrap_or_default()
    }

    fn children(&self, c: u64) -> Vec<u64> {
        self.children.get(&c).cloned().unwrap_or_default()
    }

    fn walk(&self, start: &Set, up: bool) -> Set {
        let mut seen = Set::new();
        let mut stack: Vec<u64> = start.iter().copied().collect();
        while let Some(c) = stack.pop() {
            for n in if up {
                self.parents(c)
            } else {
                self.children(c)
            } {
                if seen.insert(n) {
                    stack.push(n);
                }
            }
        }
        seen
    }

    pub fn eval(&self, e: &Expression) -> Set {
        match e {
            Expression::Sub(s) => self.sub(s),
            Expression::Refined(s, r) => self
                .sub(s)
                .into_iter()
                .filter(|c| self.refinement(*c, r))
                .collect(),
            Expression::And(items) => {
                let mut acc = self.sub(&items[0]);
                for s in &items[1..] {
                    let other = self.sub(s);
                    acc.retain(|c| other.contains(c));
                }
                acc
            }
            Expression::Or(items) => items.iter().flat_map(|s| self.sub(s)).collect(),
            Expression::Minus(a, b) => {
                let other = self.sub(b);
                self.sub(a)
                    .into_iter()
                    .filter(|c| !other.contains(c))
                    .collect()
            }
            Expression::Dotted(s, attrs) => {
                let mut acc = self.sub(s);
                for a in attrs {
                    let types = self.sub(a);
                    acc = self
                        .rels
                        .iter()
                        .filter(|r| acc.contains(&r.0) && types.contains(&r.1))
                        .map(|r| r.2)
                        .collect();
                }
                acc
            }
        }
    }

    fn sub(&self, s: &SubExpression) -> Set {
        let concept_active_filter = s.filters.iter().any(|f| {
            matches!(f, FilterConstraint::Concept(cf) if cf.iter().any(|c| matches!(c, ConceptFilter::Active(..))))
        });
        let mut set: Set = match &s.focus {
            Focus::Concept(c) => self
                .all
                .contains(&c.id)
                .then_some(c.id)
                .into_iter()
                .collect(),
            Focus::Wildcard if concept_active_filter || s.member_of.is_some() => {
                self.all.iter().copied().collect()
            }
            Focus::Wildcard => self.active.iter().copied().collect(),
            Focus::Nested(e) => self.eval(e),
            Focus::AltId(_) => panic!("not generated"),
        };
        if s.member_of.is_some() {
            set = self
                .release
                .simple
                .iter()
                .filter(|(refset, referenced, active)| {
                    *active && set.contains(refset) && self.all.contains(referenced)
                })
                .map(|m| m.1)
                .collect();
        }
        if let Some(op) = s.operator {
            use ConstraintOperator::*;
            let with_self = |mut x: Set| {
                x.extend(set.iter().copied());
                x
            };
            let adjacent = |up: bool| -> Set {
                set.iter()
                    .flat_map(|c| {
                        if up {
                            self.parents(*c)
                        } else {
                            self.children(*c)
                        }
                    })
                    .collect()
            };
            set = match op {
                DescendantOf => self.walk(&set, false),
                DescendantOrSelfOf => with_self(self.walk(&set, false)),
                ChildOf => adjacent(false),
                ChildOrSelfOf => with_self(adjacent(false)),
                AncestorOf => self.walk(&set, true),
                AncestorOrSelfOf => with_self(self.walk(&set, true)),
                ParentOf => adjacent(true),
                ParentOrSelfOf => with_self(adjacent(true)),
                Top => set
                    .iter()
                    .copied()
                    .filter(|c| self.walk(&[*c].into(), true).is_disjoint(&set))
                    .collect(),
                Bottom => set
                    .iter()
                    .copied()
                    .filter(|c| self.walk(&[*c].into(), false).is_disjoint(&set))
                    .collect(),
                _ => panic!("not generated"),
            };
        }
        for f in &s.filters {
            let FilterConstraint::Concept(filters) = f else {
                panic!("not generated")
            };
            for cf in filters {
                match cf {
                    ConceptFilter::Active(op, v) => {
                        let want = matches!(v, ecl::ActiveValue::True);
                        set.retain(|c| (self.active.contains(c) == want) != (*op == EqOp::Ne));
                    }
                    _ => panic!("not generated"),
                }
            }
        }
        set
    }

    /// Attributes (type, other end, group) of `c` matching an attribute: outbound (or inbound when reversed),
    /// in `group` if given; with `distinct`, the same (type, other end) in several groups counts once
    /// (`AttributeCounting::Distinct`), else once per group (`PerGroup`, the default).
    fn count(&self, c: u64, a: &ecl::Attribute, group: Option<u32>) -> u32 {
        let types = self.sub(&a.name);
        let AttributeValue::Expression(op, v) = &a.value else {
            panic!("not generated")
        };
        let values = self.sub(v);
        self.rels
            .iter()
            .filter_map(|r| {
                let (me, other) = if a.reverse { (r.2, r.0) } else { (r.0, r.2) };
                (me == c
                    && types.contains(&r.1)
                    && (values.contains(&other) != (*op == EqOp::Ne))
                    && group.is_none_or(|g| r.3 == g))
                .then_some((r.1, other, if self.distinct { 0 } else { r.3 }))
            })
            .collect::<BTreeSet<_>>()
            .len() as u32
    }

    fn refinement(&self, c: u64, r: &Refinement) -> bool {
        match r {
            Refinement::And(items) => items.iter().all(|i| self.refinement(c, i)),
            Refinement::Or(items) => items.iter().any(|i| self.refinement(c, i)),
            Refinement::Attribute(a) => in_range(a.cardinality, self.count(c, a, None)),
            Refinement::Group(g) => {
                // Groups: each group-0 relationship alone, each numbered group as a whole.
                let mut groups: Vec<Vec<(u64, u64, u64, u32)>> = Vec::new();
                let mut numbered: HashMap<u32, Vec<(u64, u64, u64, u32)>> = HashMap::new();
                for rel in self.rels.iter().filter(|r| r.0 == c) {
                    if rel.3 == 0 {
                        groups.push(vec![*rel]);
                    } else {
                        numbered.entry(rel.3).or_default().push(*rel);
                    }
                }
                groups.extend(numbered.into_values());
                let matching = groups
                    .iter()
                    .filter(|grp| self.group_holds(grp, &g.body))
                    .count() as u32;
                in_range(g.cardinality, matching)
            }
        }
    }

    fn group_holds(&self, rels: &[(u64, u64, u64, u32)], r: &Refinement) -> bool {
        match r {
            Refinement::And(items) => items.iter().all(|i| self.group_holds(rels, i)),
            Refinement::Or(items) => items.iter().any(|i| self.group_holds(rels, i)),
            Refinement::Attribute(a) => {
                let types = self.sub(&a.name);
                let AttributeValue::Expression(op, v) = &a.value else {
                    panic!("not generated")
                };
                let values = self.sub(v);
                let n = if a.reverse {
                    0
                } else {
                    rels.iter()
                        .filter(|r| {
                            types.contains(&r.1) && (values.contains(&r.2) != (*op == EqOp::Ne))
                        })
                        .map(|r| (r.1, r.2))
                        .collect::<BTreeSet<_>>()
                        .len()
                };
                in_range(a.cardinality, n as u32)
            }
            Refinement::Group(_) => panic!("nested group"),
        }
    }
}

fn in_range(c: Option<ecl::Cardinality>, n: u32) -> bool {
    let (min, max) = c.map_or((1, None), |c| (c.min, c.max));
    n >= min && max.is_none_or(|m| n <= m)
}
