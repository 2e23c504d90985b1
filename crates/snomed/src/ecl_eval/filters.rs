//! Description filters `{{ D … }}`, concept filters `{{ C … }}` and member filters `{{ M … }}`.
//!
//! Meaning choices:
//! - Within one `{{ D … }}` block all filters must hold for the same description; separate blocks may be
//!   satisfied by different descriptions. Only active descriptions count unless the block filters on `active`.
//! - A set of values (`term = ("a" "b")`, `language = (en sv)`) matches if any value matches; `!=` negates that.
//! - `effectiveTime = ""` selects unpublished components (no effective time).
//! - Member filters: all must hold for one member; members are active ones unless a filter says otherwise.
//!   String fields compare ignoring case with a plain term and by pattern with `wild:`.

use std::borrow::Cow;
use std::collections::HashSet;

use ecl::{
    Acceptability, AcceptabilityToken, ActiveValue, CmpOp, ConceptFilter, ConceptSet,
    DefinitionStatus, DescriptionFilter, DescriptionType, DialectIds, EqOp, FieldComparison,
    MemberFilter, SearchKind, SearchTerm,
};
use roaring::RoaringBitmap;

use super::EclError;
use super::eval::Ctx;
use super::source::{Description, EclSource, Member, ids};
use super::text::{match_words, wild_match, words};

/// A search term ready to test.
enum Term {
    Match(Vec<String>),
    Wild(String),
}

impl Term {
    fn new(t: &SearchTerm) -> Self {
        match t.kind {
            SearchKind::Match => Term::Match(words(&t.unescaped())),
            SearchKind::Wild => Term::Wild(t.unescaped()),
        }
    }

    fn matches(&self, text: &str) -> bool {
        match self {
            Term::Match(w) => match_words(text, w),
            Term::Wild(p) => wild_match(text, p),
        }
    }
}

/// Which acceptabilities a dialect constraint accepts; both when unconstrained.
#[derive(Clone, Copy)]
struct Accept {
    preferred: bool,
    acceptable: bool,
}

enum DFilter {
    Term(bool, Vec<Term>),
    Language(bool, Vec<[u8; 2]>),
    Type(bool, HashSet<u64>),
    Dialect(bool, Vec<(u64, Accept)>),
    Module(bool, HashSet<u64>),
    Effective(CmpOp, Vec<u32>),
    Active(bool, ActiveValue),
    Id(bool, Vec<u64>),
}

fn active_ok(ne: bool, wanted: ActiveValue, active: bool) -> bool {
    let hit = match wanted {
        ActiveValue::True => active,
        ActiveValue::False => !active,
        ActiveValue::Any => true,
    };
    hit != ne
}

fn effective_ok(op: CmpOp, values: &[u32], effective: u32) -> bool {
    if op == CmpOp::Ne {
        values.iter().all(|v| effective != *v)
    } else {
        values.iter().any(|v| op.holds(effective.cmp(v)))
    }
}

fn parse_times(values: &[String]) -> Vec<u32> {
    values.iter().map(|v| v.parse().unwrap_or(0)).collect()
}

impl DFilter {
    fn holds(&self, d: &Description<'_>) -> bool {
        match self {
            DFilter::Term(ne, terms) => terms.iter().any(|t| t.matches(d.term)) != *ne,
            DFilter::Language(ne, codes) => codes.contains(&d.lang) != *ne,
            DFilter::Type(ne, types) => types.contains(&d.type_id) != *ne,
            DFilter::Dialect(ne, wanted) => {
                let hit = wanted.iter().any(|(refset, accept)| {
                    d.acceptability.iter().any(|(r, preferred)| {
                        r == refset
                            && if *preferred {
                                accept.preferred
                            } else {
                                accept.acceptable
                            }
                    })
                });
                hit != *ne
            }
            DFilter::Module(ne, modules) => modules.contains(&d.module) != *ne,
            DFilter::Effective(op, values) => effective_ok(*op, values, d.effective),
            DFilter::Active(ne, v) => active_ok(*ne, *v, d.active),
            DFilter::Id(ne, list) => list.contains(&d.id) != *ne,
        }
    }
}

fn eq_ne(op: EqOp) -> bool {
    op == EqOp::Ne
}

fn accept_of(a: Option<&Acceptability>) -> Accept {
    match a {
        None => Accept {
            preferred: true,
            acceptable: true,
        },
        Some(Acceptability::Tokens(t)) => Accept {
            preferred: t.contains(&AcceptabilityToken::Preferred),
            acceptable: t.contains(&AcceptabilityToken::Acceptable),
        },
        Some(Acceptability::Concepts(c)) => Accept {
            preferred: c.iter().any(|r| r.id == ids::PREFERRED),
            acceptable: c.iter().any(|r| r.id == ids::ACCEPTABLE),
        },
    }
}

/// Compiled member filters of one `^`.
pub(super) struct MemberFilters {
    blocks: Vec<MFilter>,
    default_active: bool,
}

enum MFilter {
    Module(bool, HashSet<u64>),
    Effective(CmpOp, Vec<u32>),
    Active(bool, ActiveValue),
    Concepts(String, bool, RoaringBitmap),
    Numeric(String, CmpOp, f64),
    String(String, bool, Vec<Term>),
    Boolean(String, bool, bool),
    Time(String, CmpOp, Vec<u32>),
}

/// A member's field by name; `referencedComponentId` is a field too.
fn field<'a>(m: &Member<'a>, name: &str) -> Option<Cow<'a, str>> {
    if name.eq_ignore_ascii_case("referencedComponentId") {
        return Some(Cow::Owned(m.referenced.to_string()));
    }
    m.fields
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| Cow::Borrowed(*v))
}

impl MemberFilters {
    pub fn matches<S: EclSource + ?Sized>(&self, src: &S, m: &Member<'_>) -> bool {
        if self.default_active && !m.active {
            return false;
        }
        self.blocks.iter().all(|f| match f {
            MFilter::Module(ne, set) => set.contains(&m.module) != *ne,
            MFilter::Effective(op, values) => effective_ok(*op, values, m.effective),
            MFilter::Active(ne, v) => active_ok(*ne, *v, m.active),
            MFilter::Concepts(name, ne, set) => {
                let hit = field(m, name).is_some_and(|v| {
                    v.parse()
                        .ok()
                        .and_then(|id| src.concept_index(id))
                        .is_some_and(|idx| set.contains(idx))
                });
                // `!=` needs the field to be present with another value.
                if *ne {
                    field(m, name).is_some() && !hit
                } else {
                    hit
                }
            }
            MFilter::Numeric(name, op, wanted) => field(m, name)
                .and_then(|v| v.trim_start_matches('#').parse::<f64>().ok())
                .and_then(|v| v.partial_cmp(wanted))
                .is_some_and(|o| op.holds(o)),
            MFilter::String(name, ne, terms) => field(m, name).is_some_and(|v| {
                terms.iter().any(|t| match t {
                    Term::Match(_) => false,
                    Term::Wild(p) => wild_match(&v, p),
                }) != *ne
            }),
            MFilter::Boolean(name, ne, wanted) => field(m, name)
                .and_then(|v| match v.to_ascii_lowercase().as_str() {
                    "1" | "true" => Some(true),
                    "0" | "false" => Some(false),
                    _ => None,
                })
                .is_some_and(|b| (b == *wanted) != *ne),
            MFilter::Time(name, op, values) => field(m, name)
                .and_then(|v| v.parse().ok())
                .is_some_and(|t| effective_ok(*op, values, t)),
        })
    }
}

impl<S: EclSource + ?Sized> Ctx<'_, S> {
    fn id_set(&mut self, set: &ConceptSet) -> Result<HashSet<u64>, EclError> {
        Ok(match set {
            ConceptSet::List(refs) => refs.iter().map(|r| r.id).collect(),
            ConceptSet::Expression(s) => {
                let bits = self.sub(s)?;
                let mut out: HashSet<u64> = bits.iter().map(|i| self.src.concept_id(i)).collect();
                // A module or type that is not a concept in this release is still matched by its id.
                if let ecl::Focus::Concept(c) = &s.focus
                    && s.operator.is_none()
                    && s.member_of.is_none()
                {
                    out.insert(c.id);
                }
                out
            }
        })
    }

    fn compile_description_filter(&mut self, f: &DescriptionFilter) -> Result<DFilter, EclError> {
        Ok(match f {
            DescriptionFilter::Term(op, terms) => {
                for t in terms {
                    crate::check_search_words(&super::text::words(&t.unescaped()))
                        .map_err(|e| EclError::Unsupported(format!("term filter: {e}")))?;
                }
                DFilter::Term(eq_ne(*op), terms.iter().map(Term::new).collect())
            }
            DescriptionFilter::Language(op, codes) => DFilter::Language(
                eq_ne(*op),
                codes
                    .iter()
                    .map(|c| {
                        let b = c.to_ascii_lowercase().into_bytes();
                        [b[0], b[1]]
                    })
                    .collect(),
            ),
            DescriptionFilter::TypeId(op, set) => DFilter::Type(eq_ne(*op), self.id_set(set)?),
            DescriptionFilter::Type(op, types) => DFilter::Type(
                eq_ne(*op),
                types
                    .iter()
                    .map(|t| match t {
                        DescriptionType::Synonym => ids::SYNONYM,
                        DescriptionType::FullySpecifiedName => ids::FSN,
                        DescriptionType::Definition => ids::DEFINITION,
                    })
                    .collect(),
            ),
            DescriptionFilter::DialectId(op, dialects, acceptability) => {
                let outer = acceptability.as_ref();
                let list = match dialects {
                    DialectIds::Expression(s) => {
                        let accept = accept_of(outer);
                        let set = self.id_set(&ConceptSet::Expression(s.clone()))?;
                        set.into_iter().map(|id| (id, accept)).collect()
                    }
                    DialectIds::List(items) => items
                        .iter()
                        .map(|(r, a)| (r.id, accept_of(a.as_ref().or(outer))))
                        .collect(),
                };
                DFilter::Dialect(eq_ne(*op), list)
            }
            DescriptionFilter::Dialect(op, aliases, acceptability) => {
                let mut list = Vec::new();
                for (alias, a) in aliases {
                    let refset = ids::dialect(alias)
                        .ok_or_else(|| EclError::UnknownDialect(alias.clone()))?;
                    list.push((refset, accept_of(a.as_ref().or(acceptability.as_ref()))));
                }
                DFilter::Dialect(eq_ne(*op), list)
            }
            DescriptionFilter::Module(op, set) => DFilter::Module(eq_ne(*op), self.id_set(set)?),
            DescriptionFilter::EffectiveTime(op, values) => {
                DFilter::Effective(*op, parse_times(values))
            }
            DescriptionFilter::Active(op, v) => DFilter::Active(eq_ne(*op), *v),
            DescriptionFilter::Id(op, list) => DFilter::Id(eq_ne(*op), list.clone()),
            other => {
                return Err(EclError::Unsupported(format!(
                    "description filter {other:?}"
                )));
            }
        })
    }

    /// The members of `set` with at least one description passing every filter of the block.
    pub fn description_filters(
        &mut self,
        set: &RoaringBitmap,
        filters: &[DescriptionFilter],
    ) -> Result<RoaringBitmap, EclError> {
        let compiled: Vec<DFilter> = filters
            .iter()
            .map(|f| self.compile_description_filter(f))
            .collect::<Result<_, _>>()?;
        let only_active = !compiled.iter().any(|f| matches!(f, DFilter::Active(..)));
        let mut out = RoaringBitmap::new();
        let src = self.src;
        for c in set {
            self.tick()?;
            let mut hit = false;
            src.descriptions(c, &mut |d| {
                if !hit && (!only_active || d.active) && compiled.iter().all(|f| f.holds(d)) {
                    hit = true;
                }
            });
            if hit {
                out.insert(c);
            }
        }
        Ok(out)
    }

    /// The members of `set` passing every concept filter.
    pub fn concept_filters(
        &mut self,
        set: &RoaringBitmap,
        filters: &[ConceptFilter],
    ) -> Result<RoaringBitmap, EclError> {
        enum CFilter {
            Status(bool, HashSet<u64>),
            Module(bool, HashSet<u64>),
            Effective(CmpOp, Vec<u32>),
            Active(bool, ActiveValue),
        }
        let mut compiled = Vec::new();
        for f in filters {
            compiled.push(match f {
                ConceptFilter::DefinitionStatusId(op, s) => {
                    CFilter::Status(eq_ne(*op), self.id_set(s)?)
                }
                ConceptFilter::DefinitionStatus(op, tokens) => CFilter::Status(
                    eq_ne(*op),
                    tokens
                        .iter()
                        .map(|t| match t {
                            DefinitionStatus::Primitive => ids::PRIMITIVE,
                            DefinitionStatus::Defined => ids::DEFINED,
                        })
                        .collect(),
                ),
                ConceptFilter::Module(op, s) => CFilter::Module(eq_ne(*op), self.id_set(s)?),
                ConceptFilter::EffectiveTime(op, v) => CFilter::Effective(*op, parse_times(v)),
                ConceptFilter::Active(op, v) => CFilter::Active(eq_ne(*op), *v),
                other => return Err(EclError::Unsupported(format!("concept filter {other:?}"))),
            });
        }
        let mut out = RoaringBitmap::new();
        for c in set {
            self.tick()?;
            let row = self.src.concept(c);
            let ok = compiled.iter().all(|f| match f {
                CFilter::Status(ne, s) => s.contains(&row.definition_status) != *ne,
                CFilter::Module(ne, s) => s.contains(&row.module) != *ne,
                CFilter::Effective(op, v) => effective_ok(*op, v, row.effective),
                CFilter::Active(ne, v) => active_ok(*ne, *v, row.active),
            });
            if ok {
                out.insert(c);
            }
        }
        Ok(out)
    }

    pub fn compile_member_filters(
        &mut self,
        blocks: &[Vec<MemberFilter>],
    ) -> Result<MemberFilters, EclError> {
        let mut out = Vec::new();
        for f in blocks.iter().flatten() {
            out.push(match f {
                MemberFilter::Module(op, s) => MFilter::Module(eq_ne(*op), self.id_set(s)?),
                MemberFilter::EffectiveTime(op, v) => MFilter::Effective(*op, parse_times(v)),
                MemberFilter::Active(op, v) => MFilter::Active(eq_ne(*op), *v),
                MemberFilter::Field(name, cmp) => match cmp {
                    FieldComparison::Expression(op, s) => {
                        MFilter::Concepts(name.clone(), eq_ne(*op), self.sub(s)?)
                    }
                    FieldComparison::Numeric(op, n) => {
                        MFilter::Numeric(name.clone(), *op, n.value())
                    }
                    FieldComparison::String(op, terms) => MFilter::String(
                        name.clone(),
                        eq_ne(*op),
                        // A plain term compares the whole field ignoring case: a pattern without stars.
                        terms
                            .iter()
                            .map(|t| match t.kind {
                                SearchKind::Match => Term::Wild(t.unescaped().replace('*', "\\*")),
                                SearchKind::Wild => Term::Wild(t.unescaped()),
                            })
                            .collect(),
                    ),
                    FieldComparison::Boolean(op, b) => {
                        MFilter::Boolean(name.clone(), eq_ne(*op), *b)
                    }
                    FieldComparison::Time(op, v) => {
                        MFilter::Time(name.clone(), *op, parse_times(v))
                    }
                },
                other => return Err(EclError::Unsupported(format!("member filter {other:?}"))),
            });
        }
        let default_active = !out.iter().any(|f| matches!(f, MFilter::Active(..)));
        Ok(MemberFilters {
            blocks: out,
            default_active,
        })
    }
}
