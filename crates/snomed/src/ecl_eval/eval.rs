//! Expressions, sub-expressions, hierarchy operators and member-of.
//!
//! Meaning choices:
//! - A concept id not in the release selects nothing (not an error), as in other servers.
//! - `*` selects the active concepts, unless the same sub-expression has a concept filter on `active`, in which
//!   case it starts from all concepts so `* {{ C active = 0 }}` finds inactive ones.
//! - `^ R` selects the referenced concepts of the active members of every refset in `R` (member filters on
//!   `active` override the default); `^ [f] R` selects the concepts named in field `f` instead.
//! - Filters apply to the result of the hierarchy operator: `< X {{ D term = "a" }}` filters the descendants.

use std::time::Instant;

use ecl::{
    ConceptFilter, ConstraintOperator, Expression, FilterConstraint, Focus, RefsetFields,
    SubExpression,
};
use roaring::RoaringBitmap;

use super::{AttributeCounting, EclError, EclSource, Limits};

/// Sets with more members than this expand hierarchy operators by one graph walk instead of per-member closures.
const WALK_THRESHOLD: u64 = 32;

pub(super) struct Ctx<'s, S: EclSource + ?Sized> {
    pub src: &'s S,
    pub limits: Limits,
    pub deadline: Instant,
    pub ticks: u32,
    /// How attribute cardinality counts an attribute repeated across groups.
    pub counting: AttributeCounting,
}

impl<S: EclSource + ?Sized> Ctx<'_, S> {
    /// Called in every loop over concepts, members or descriptions; checks the clock every 4096 calls.
    pub fn tick(&mut self) -> Result<(), EclError> {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks.is_multiple_of(4096) && Instant::now() > self.deadline {
            return Err(EclError::Timeout(self.limits.timeout));
        }
        Ok(())
    }

    pub fn check_size(&self, set: &RoaringBitmap) -> Result<(), EclError> {
        let size = set.len();
        if size > self.limits.max_results {
            return Err(EclError::TooLarge {
                size,
                limit: self.limits.max_results,
            });
        }
        Ok(())
    }

    pub fn expression(&mut self, e: &Expression) -> Result<RoaringBitmap, EclError> {
        match e {
            Expression::Sub(s) => self.sub(s),
            Expression::Refined(s, r) => {
                let focus = self.sub(s)?;
                self.refine(&focus, r)
            }
            Expression::And(items) => {
                let mut acc = self.sub(&items[0])?;
                for s in &items[1..] {
                    if acc.is_empty() {
                        break;
                    }
                    acc &= self.sub(s)?;
                }
                Ok(acc)
            }
            Expression::Or(items) => {
                let mut acc = RoaringBitmap::new();
                for s in items {
                    acc |= self.sub(s)?;
                }
                Ok(acc)
            }
            Expression::Minus(a, b) => {
                let mut acc = self.sub(a)?;
                if !acc.is_empty() {
                    acc -= self.sub(b)?;
                }
                Ok(acc)
            }
            Expression::Dotted(s, attributes) => {
                let mut acc = self.sub(s)?;
                for a in attributes {
                    let types = self.sub(a)?;
                    acc = self.dotted(&acc, &types)?;
                }
                Ok(acc)
            }
        }
    }

    pub fn sub(&mut self, s: &SubExpression) -> Result<RoaringBitmap, EclError> {
        let include_inactive = s.filters.iter().any(|f| match f {
            FilterConstraint::Concept(cf) => {
                cf.iter().any(|c| matches!(c, ConceptFilter::Active(..)))
            }
            FilterConstraint::Description(_) => false,
        });
        let focus = match &s.focus {
            Focus::Concept(c) => self.src.concept_index(c.id).into_iter().collect(),
            Focus::Wildcard => self.all_concepts(include_inactive || s.member_of.is_some())?,
            Focus::AltId(a) => match self.src.alternate_identifier(&a.scheme, &a.code) {
                Some(found) => found.into_iter().collect(),
                None => return Err(EclError::UnknownScheme(a.scheme.clone())),
            },
            Focus::Nested(e) => self.expression(e)?,
        };
        let mut set = match &s.member_of {
            Some(m) => self.member_of(&focus, m.fields.as_ref(), &s.member_filters)?,
            None => focus,
        };
        if let Some(op) = s.operator {
            set = self.hierarchy(op, &set)?;
        }
        self.check_size(&set)?;
        for f in &s.filters {
            if set.is_empty() {
                break;
            }
            set = match f {
                FilterConstraint::Description(filters) => {
                    self.description_filters(&set, filters)?
                }
                FilterConstraint::Concept(filters) => self.concept_filters(&set, filters)?,
            };
        }
        if let Some(h) = &s.history {
            set = self.history(set, h)?;
        }
        Ok(set)
    }

    pub fn all_concepts(&mut self, include_inactive: bool) -> Result<RoaringBitmap, EclError> {
        let n = self.src.concept_count();
        if include_inactive {
            let mut all = RoaringBitmap::new();
            all.insert_range(0..n);
            return Ok(all);
        }
        let mut out = RoaringBitmap::new();
        let mut run_start = None;
        for idx in 0..n {
            self.tick()?;
            match (self.src.concept(idx).active, run_start) {
                (true, None) => run_start = Some(idx),
                (false, Some(start)) => {
                    out.insert_range(start..idx);
                    run_start = None;
                }
                _ => {}
            }
        }
        if let Some(start) = run_start {
            out.insert_range(start..n);
        }
        Ok(out)
    }

    pub fn hierarchy(
        &mut self,
        op: ConstraintOperator,
        set: &RoaringBitmap,
    ) -> Result<RoaringBitmap, EclError> {
        use ConstraintOperator::*;
        Ok(match op {
            DescendantOf => self.closure(set, Direction::Down)?,
            DescendantOrSelfOf => self.closure(set, Direction::Down)? | set,
            ChildOf => self.adjacent(set, Direction::Down)?,
            ChildOrSelfOf => self.adjacent(set, Direction::Down)? | set,
            AncestorOf => self.closure(set, Direction::Up)?,
            AncestorOrSelfOf => self.closure(set, Direction::Up)? | set,
            ParentOf => self.adjacent(set, Direction::Up)?,
            ParentOrSelfOf => self.adjacent(set, Direction::Up)? | set,
            // The members with no proper ancestor (top) or descendant (bottom) in the set.
            Top => set - self.closure(set, Direction::Down)?,
            Bottom => set - self.closure(set, Direction::Up)?,
            _ => return Err(EclError::Unsupported(format!("constraint operator {op:?}"))),
        })
    }

    /// Proper descendants (Down) or ancestors (Up) of every member of `set`.
    pub fn closure(
        &mut self,
        set: &RoaringBitmap,
        dir: Direction,
    ) -> Result<RoaringBitmap, EclError> {
        if set.len() <= WALK_THRESHOLD {
            let mut out = RoaringBitmap::new();
            for idx in set {
                self.tick()?;
                let list = match dir {
                    Direction::Down => self.src.descendants(idx),
                    Direction::Up => self.src.ancestors(idx),
                };
                out |= bitmap_of(list);
            }
            return Ok(out);
        }
        // One breadth-first walk: each concept is expanded once however many members reach it.
        let mut out = RoaringBitmap::new();
        let mut frontier: Vec<u32> = set.iter().collect();
        while let Some(idx) = frontier.pop() {
            self.tick()?;
            let next = match dir {
                Direction::Down => self.src.children(idx),
                Direction::Up => self.src.parents(idx),
            };
            for &n in next {
                if out.insert(n) {
                    frontier.push(n);
                }
            }
        }
        Ok(out)
    }

    fn adjacent(&mut self, set: &RoaringBitmap, dir: Direction) -> Result<RoaringBitmap, EclError> {
        let mut out = RoaringBitmap::new();
        for idx in set {
            self.tick()?;
            let list = match dir {
                Direction::Down => self.src.children(idx),
                Direction::Up => self.src.parents(idx),
            };
            out.extend(list.iter().copied());
        }
        Ok(out)
    }

    fn member_of(
        &mut self,
        refsets: &RoaringBitmap,
        fields: Option<&RefsetFields>,
        member_filters: &[Vec<ecl::MemberFilter>],
    ) -> Result<RoaringBitmap, EclError> {
        let filters = self.compile_member_filters(member_filters)?;
        let mut out = RoaringBitmap::new();
        let mut error = None;
        for refset in refsets {
            let refset_id = self.src.concept_id(refset);
            let src = self.src;
            src.members(refset_id, &mut |m| {
                if error.is_some() {
                    return;
                }
                if let Err(e) = self.tick() {
                    error = Some(e);
                    return;
                }
                if !filters.matches(src, m) {
                    return;
                }
                match fields {
                    None => {
                        if let Some(idx) = m.referenced_idx {
                            out.insert(idx);
                        }
                    }
                    Some(selection) => {
                        for (name, value) in m.fields {
                            let wanted = match selection {
                                RefsetFields::All => true,
                                RefsetFields::Named(names) => {
                                    names.iter().any(|n| n.eq_ignore_ascii_case(name))
                                }
                            };
                            if let Some(idx) = wanted
                                .then(|| value.parse().ok())
                                .flatten()
                                .and_then(|id| src.concept_index(id))
                            {
                                out.insert(idx);
                            }
                        }
                        if let RefsetFields::Named(names) = selection
                            && names
                                .iter()
                                .any(|n| n.eq_ignore_ascii_case("referencedComponentId"))
                            && let Some(idx) = m.referenced_idx
                        {
                            out.insert(idx);
                        }
                    }
                }
            });
        }
        match error {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }
}

#[derive(Clone, Copy)]
pub(super) enum Direction {
    Down,
    Up,
}

/// A bitmap from a closure list (sorted in the store; tolerate any order).
pub(super) fn bitmap_of(list: &[u32]) -> RoaringBitmap {
    RoaringBitmap::from_sorted_iter(list.iter().copied())
        .unwrap_or_else(|_| list.iter().copied().collect())
}
