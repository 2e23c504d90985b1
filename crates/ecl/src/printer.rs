//! Prints a tree back to ECL text, in brief (`<<`, `^`, `*`) or long (`descendantOrSelfOf`, `memberOf`, `ANY`)
//! syntax, on one line, with terms kept. Parsing the output gives the same tree.

use std::fmt::{self, Display, Write};

use crate::ast::*;

/// Which keyword style to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Syntax {
    /// Symbols: `<<`, `^`, `*`, `!=`, `R`, `[0..*]`.
    #[default]
    Brief,
    /// Words: `descendantOrSelfOf`, `memberOf`, `ANY`, `NOT =`, `reverseOf`, `[0 to many]`.
    Long,
}

/// Prints `e` in the chosen syntax.
///
/// ```
/// let e = ecl::parse("<<73211009|Diabetes mellitus|").unwrap();
/// assert_eq!(ecl::print(&e, ecl::Syntax::Brief), "<< 73211009 |Diabetes mellitus|");
/// assert_eq!(ecl::print(&e, ecl::Syntax::Long), "descendantOrSelfOf 73211009 |Diabetes mellitus|");
/// ```
pub fn print(e: &Expression, syntax: Syntax) -> String {
    let mut out = String::new();
    Printer {
        out: &mut out,
        long: syntax == Syntax::Long,
    }
    .expression(e)
    .expect("writing to a String cannot fail");
    out
}

impl Display for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Printer {
            out: f,
            long: false,
        }
        .expression(self)
    }
}

impl Display for SubExpression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Printer {
            out: f,
            long: false,
        }
        .sub(self)
    }
}

impl Display for Refinement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Printer {
            out: f,
            long: false,
        }
        .refinement(self)
    }
}

struct Printer<'w, W: Write> {
    out: &'w mut W,
    long: bool,
}

impl<W: Write> Printer<'_, W> {
    fn s(&mut self, s: &str) -> fmt::Result {
        self.out.write_str(s)
    }

    fn pick(&mut self, brief: &str, long: &str) -> fmt::Result {
        if self.long {
            self.out.write_str(long)
        } else {
            self.out.write_str(brief)
        }
    }

    fn expression(&mut self, e: &Expression) -> fmt::Result {
        match e {
            Expression::Sub(s) => self.sub(s),
            Expression::Refined(s, r) => {
                self.sub(s)?;
                self.s(" : ")?;
                self.refinement(r)
            }
            Expression::And(items) => self.joined(items, " AND "),
            Expression::Or(items) => self.joined(items, " OR "),
            Expression::Minus(a, b) => {
                self.sub(a)?;
                self.s(" MINUS ")?;
                self.sub(b)
            }
            Expression::Dotted(s, attrs) => {
                self.sub(s)?;
                for a in attrs {
                    self.s(" . ")?;
                    self.sub(a)?;
                }
                Ok(())
            }
        }
    }

    fn joined(&mut self, items: &[SubExpression], sep: &str) -> fmt::Result {
        for (i, s) in items.iter().enumerate() {
            if i > 0 {
                self.s(sep)?;
            }
            self.sub(s)?;
        }
        Ok(())
    }

    fn sub(&mut self, s: &SubExpression) -> fmt::Result {
        if let Some(op) = s.operator {
            self.operator(op)?;
            self.s(" ")?;
        }
        if let Some(m) = &s.member_of {
            self.pick("^", "memberOf")?;
            match &m.fields {
                None => {}
                Some(RefsetFields::All) => self.s(" [*]")?,
                Some(RefsetFields::Named(names)) => {
                    self.s(" [")?;
                    self.s(&names.join(", "))?;
                    self.s("]")?;
                }
            }
            self.s(" ")?;
        }
        match &s.focus {
            Focus::Concept(c) => self.concept(c)?,
            Focus::Wildcard => self.pick("*", "ANY")?,
            Focus::AltId(a) => self.alt_id(a)?,
            Focus::Nested(e) => {
                self.s("(")?;
                self.expression(e)?;
                self.s(")")?;
            }
        }
        for filters in &s.member_filters {
            self.s(" {{ M ")?;
            self.list(filters, Self::member_filter)?;
            self.s(" }}")?;
        }
        for f in &s.filters {
            match f {
                FilterConstraint::Description(filters) => {
                    self.s(" {{ D ")?;
                    self.list(filters, Self::description_filter)?;
                }
                FilterConstraint::Concept(filters) => {
                    self.s(" {{ C ")?;
                    self.list(filters, Self::concept_filter)?;
                }
            }
            self.s(" }}")?;
        }
        match &s.history {
            None => Ok(()),
            Some(HistorySupplement::Profile(p)) => self.s(match p {
                None => " {{ +HISTORY }}",
                Some(HistoryProfile::Min) => " {{ +HISTORY-MIN }}",
                Some(HistoryProfile::Mod) => " {{ +HISTORY-MOD }}",
                Some(HistoryProfile::Max) => " {{ +HISTORY-MAX }}",
            }),
            Some(HistorySupplement::Subset(e)) => {
                self.s(" {{ +HISTORY (")?;
                self.expression(e)?;
                self.s(") }}")
            }
        }
    }

    fn list<T>(
        &mut self,
        items: &[T],
        mut one: impl FnMut(&mut Self, &T) -> fmt::Result,
    ) -> fmt::Result {
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.s(", ")?;
            }
            one(self, item)?;
        }
        Ok(())
    }

    /// `a` or `(a b c)`.
    fn set<T>(
        &mut self,
        items: &[T],
        mut one: impl FnMut(&mut Self, &T) -> fmt::Result,
    ) -> fmt::Result {
        if let [only] = items {
            return one(self, only);
        }
        self.s("(")?;
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.s(" ")?;
            }
            one(self, item)?;
        }
        self.s(")")
    }

    fn operator(&mut self, op: ConstraintOperator) -> fmt::Result {
        use ConstraintOperator::*;
        let (brief, long) = match op {
            DescendantOf => ("<", "descendantOf"),
            DescendantOrSelfOf => ("<<", "descendantOrSelfOf"),
            ChildOf => ("<!", "childOf"),
            ChildOrSelfOf => ("<<!", "childOrSelfOf"),
            AncestorOf => (">", "ancestorOf"),
            AncestorOrSelfOf => (">>", "ancestorOrSelfOf"),
            ParentOf => (">!", "parentOf"),
            ParentOrSelfOf => (">>!", "parentOrSelfOf"),
            Top => ("!!>", "top"),
            Bottom => ("!!<", "bottom"),
        };
        self.pick(brief, long)
    }

    fn concept(&mut self, c: &ConceptReference) -> fmt::Result {
        write!(self.out, "{}", c.id)?;
        self.term(c.term.as_deref())
    }

    fn term(&mut self, term: Option<&str>) -> fmt::Result {
        match term {
            Some(t) => write!(self.out, " |{t}|"),
            None => Ok(()),
        }
    }

    fn alt_id(&mut self, a: &AltIdentifier) -> fmt::Result {
        let plain = a
            .code
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'));
        if plain {
            write!(self.out, "{}#{}", a.scheme, a.code)?;
        } else {
            write!(self.out, "\"{}#{}\"", a.scheme, a.code)?;
        }
        self.term(a.term.as_deref())
    }

    fn refinement(&mut self, r: &Refinement) -> fmt::Result {
        match r {
            Refinement::Attribute(a) => self.attribute(a),
            Refinement::Group(g) => {
                self.cardinality(g.cardinality)?;
                self.s("{ ")?;
                self.refinement(&g.body)?;
                self.s(" }")
            }
            Refinement::And(items) => {
                self.refinements(items, if self.long { " AND " } else { ", " })
            }
            Refinement::Or(items) => self.refinements(items, " OR "),
        }
    }

    fn refinements(&mut self, items: &[Refinement], sep: &str) -> fmt::Result {
        for (i, r) in items.iter().enumerate() {
            if i > 0 {
                self.s(sep)?;
            }
            if matches!(r, Refinement::And(_) | Refinement::Or(_)) {
                self.s("(")?;
                self.refinement(r)?;
                self.s(")")?;
            } else {
                self.refinement(r)?;
            }
        }
        Ok(())
    }

    fn cardinality(&mut self, c: Option<Cardinality>) -> fmt::Result {
        let Some(c) = c else { return Ok(()) };
        let to = if self.long { " to " } else { ".." };
        match c.max {
            Some(max) => write!(self.out, "[{}{to}{max}] ", c.min),
            None => write!(
                self.out,
                "[{}{to}{}] ",
                c.min,
                if self.long { "many" } else { "*" }
            ),
        }
    }

    fn attribute(&mut self, a: &Attribute) -> fmt::Result {
        self.cardinality(a.cardinality)?;
        if a.reverse {
            self.pick("R ", "reverseOf ")?;
        }
        self.sub(&a.name)?;
        self.s(" ")?;
        match &a.value {
            AttributeValue::Expression(op, v) => {
                self.eq_op(*op)?;
                self.s(" ")?;
                self.sub(v)
            }
            AttributeValue::Numeric(op, n) => {
                self.cmp_op(*op)?;
                write!(self.out, " #{}", n.text)
            }
            AttributeValue::String(op, terms) => {
                self.eq_op(*op)?;
                self.s(" ")?;
                self.search_terms(terms)
            }
            AttributeValue::Boolean(op, b) => {
                self.eq_op(*op)?;
                self.s(if *b { " true" } else { " false" })
            }
        }
    }

    fn eq_op(&mut self, op: EqOp) -> fmt::Result {
        match op {
            EqOp::Eq => self.s("="),
            EqOp::Ne => self.pick("!=", "NOT ="),
        }
    }

    fn cmp_op(&mut self, op: CmpOp) -> fmt::Result {
        match op {
            CmpOp::Eq => self.s("="),
            CmpOp::Ne => self.pick("!=", "NOT ="),
            CmpOp::Lt => self.s("<"),
            CmpOp::Le => self.s("<="),
            CmpOp::Gt => self.s(">"),
            CmpOp::Ge => self.s(">="),
        }
    }

    fn search_terms(&mut self, terms: &[SearchTerm]) -> fmt::Result {
        self.set(terms, |p, t| match t.kind {
            SearchKind::Match => write!(p.out, "\"{}\"", t.raw),
            SearchKind::Wild => write!(p.out, "wild:\"{}\"", t.raw),
        })
    }

    fn concept_set(&mut self, set: &ConceptSet) -> fmt::Result {
        match set {
            ConceptSet::Expression(s) => self.sub(s),
            ConceptSet::List(items) => {
                self.s("(")?;
                for (i, c) in items.iter().enumerate() {
                    if i > 0 {
                        self.s(" ")?;
                    }
                    self.concept(c)?;
                }
                self.s(")")
            }
        }
    }

    fn times(&mut self, op: CmpOp, values: &[String]) -> fmt::Result {
        self.s("effectiveTime ")?;
        self.cmp_op(op)?;
        self.s(" ")?;
        self.set(values, |p, v| write!(p.out, "\"{v}\""))
    }

    fn active(&mut self, op: EqOp, v: ActiveValue) -> fmt::Result {
        self.s("active ")?;
        self.eq_op(op)?;
        self.s(match v {
            ActiveValue::True => " true",
            ActiveValue::False => " false",
            ActiveValue::Any => " *",
        })
    }

    fn module(&mut self, op: EqOp, set: &ConceptSet) -> fmt::Result {
        self.s("moduleId ")?;
        self.eq_op(op)?;
        self.s(" ")?;
        self.concept_set(set)
    }

    fn keyed(&mut self, key: &str, op: EqOp) -> fmt::Result {
        self.s(key)?;
        self.s(" ")?;
        self.eq_op(op)?;
        self.s(" ")
    }

    fn description_filter(&mut self, f: &DescriptionFilter) -> fmt::Result {
        match f {
            DescriptionFilter::Term(op, terms) => {
                self.keyed("term", *op)?;
                self.search_terms(terms)
            }
            DescriptionFilter::Language(op, codes) => {
                self.keyed("language", *op)?;
                self.set(codes, |p, c| p.s(c))
            }
            DescriptionFilter::TypeId(op, set) => {
                self.keyed("typeId", *op)?;
                self.concept_set(set)
            }
            DescriptionFilter::Type(op, types) => {
                self.keyed("type", *op)?;
                let long = self.long;
                self.set(types, |p, t| {
                    p.s(match (t, long) {
                        (DescriptionType::Synonym, false) => "syn",
                        (DescriptionType::Synonym, true) => "synonym",
                        (DescriptionType::FullySpecifiedName, false) => "fsn",
                        (DescriptionType::FullySpecifiedName, true) => "fullySpecifiedName",
                        (DescriptionType::Definition, false) => "def",
                        (DescriptionType::Definition, true) => "definition",
                    })
                })
            }
            DescriptionFilter::DialectId(op, ids, acceptability) => {
                self.keyed("dialectId", *op)?;
                match ids {
                    DialectIds::Expression(s) => self.sub(s)?,
                    DialectIds::List(items) => {
                        self.s("(")?;
                        for (i, (c, a)) in items.iter().enumerate() {
                            if i > 0 {
                                self.s(" ")?;
                            }
                            self.concept(c)?;
                            self.acceptability(a.as_ref())?;
                        }
                        self.s(")")?;
                    }
                }
                self.acceptability(acceptability.as_ref())
            }
            DescriptionFilter::Dialect(op, aliases, acceptability) => {
                self.keyed("dialect", *op)?;
                if let [(alias, None)] = aliases.as_slice() {
                    self.s(alias)?;
                } else {
                    self.s("(")?;
                    for (i, (alias, a)) in aliases.iter().enumerate() {
                        if i > 0 {
                            self.s(" ")?;
                        }
                        self.s(alias)?;
                        self.acceptability(a.as_ref())?;
                    }
                    self.s(")")?;
                }
                self.acceptability(acceptability.as_ref())
            }
            DescriptionFilter::Module(op, set) => self.module(*op, set),
            DescriptionFilter::EffectiveTime(op, values) => self.times(*op, values),
            DescriptionFilter::Active(op, v) => self.active(*op, *v),
            DescriptionFilter::Id(op, ids) => {
                self.keyed("id", *op)?;
                self.set(ids, |p, id| write!(p.out, "{id}"))
            }
        }
    }

    fn acceptability(&mut self, a: Option<&Acceptability>) -> fmt::Result {
        match a {
            None => Ok(()),
            Some(Acceptability::Tokens(tokens)) => {
                self.s(" (")?;
                for (i, t) in tokens.iter().enumerate() {
                    if i > 0 {
                        self.s(" ")?;
                    }
                    match t {
                        AcceptabilityToken::Acceptable => self.pick("accept", "acceptable")?,
                        AcceptabilityToken::Preferred => self.pick("prefer", "preferred")?,
                    }
                }
                self.s(")")
            }
            Some(Acceptability::Concepts(items)) => {
                self.s(" (")?;
                for (i, c) in items.iter().enumerate() {
                    if i > 0 {
                        self.s(" ")?;
                    }
                    self.concept(c)?;
                }
                self.s(")")
            }
        }
    }

    fn concept_filter(&mut self, f: &ConceptFilter) -> fmt::Result {
        match f {
            ConceptFilter::DefinitionStatusId(op, set) => {
                self.keyed("definitionStatusId", *op)?;
                self.concept_set(set)
            }
            ConceptFilter::DefinitionStatus(op, statuses) => {
                self.keyed("definitionStatus", *op)?;
                self.set(statuses, |p, s| {
                    p.s(match s {
                        DefinitionStatus::Primitive => "primitive",
                        DefinitionStatus::Defined => "defined",
                    })
                })
            }
            ConceptFilter::Module(op, set) => self.module(*op, set),
            ConceptFilter::EffectiveTime(op, values) => self.times(*op, values),
            ConceptFilter::Active(op, v) => self.active(*op, *v),
        }
    }

    fn member_filter(&mut self, f: &MemberFilter) -> fmt::Result {
        match f {
            MemberFilter::Module(op, set) => self.module(*op, set),
            MemberFilter::EffectiveTime(op, values) => self.times(*op, values),
            MemberFilter::Active(op, v) => self.active(*op, *v),
            MemberFilter::Field(name, cmp) => {
                self.s(name)?;
                self.s(" ")?;
                match cmp {
                    FieldComparison::Expression(op, s) => {
                        self.eq_op(*op)?;
                        self.s(" ")?;
                        self.sub(s)
                    }
                    FieldComparison::Numeric(op, n) => {
                        self.cmp_op(*op)?;
                        write!(self.out, " #{}", n.text)
                    }
                    FieldComparison::String(op, terms) => {
                        self.eq_op(*op)?;
                        self.s(" ")?;
                        self.search_terms(terms)
                    }
                    FieldComparison::Boolean(op, b) => {
                        self.eq_op(*op)?;
                        self.s(if *b { " true" } else { " false" })
                    }
                    FieldComparison::Time(op, values) => {
                        self.cmp_op(*op)?;
                        self.s(" ")?;
                        self.set(values, |p, v| write!(p.out, "\"{v}\""))
                    }
                }
            }
        }
    }
}
