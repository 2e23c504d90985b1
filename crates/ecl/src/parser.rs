//! A hand-written recursive-descent parser for ECL 2.2 (brief and long syntax) and the development additions.
//!
//! Errors use the "furthest failure" rule of PEG parsers: every alternative that fails records what it expected at
//! the byte where it failed, and the reported error is the set of expectations at the furthest byte reached. Some
//! errors are fatal and reported as they are (ambiguous operator mixes, invalid values, nesting depth).
//!
//! Backtracking happens only where the grammar needs it (a `(` in a refinement may open a bracketed refinement or
//! a nested attribute name; `(` after `dialectId =` may open a list or an expression); failures of bracketed
//! refinements are memoised per position, so the cost stays polynomial even on adversarial input.

use std::collections::HashSet;

use crate::ast::*;
use crate::error::{ParseError, ParseErrorKind};

/// Brackets and nested filters deeper than this are rejected (the parser recurses once per level).
pub const MAX_DEPTH: usize = 64;

/// Which language profile to accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Profile {
    /// Full ECL 2.2 plus the development-branch additions (`active = *`, concrete string sets).
    #[default]
    Full,
    /// ECL Lite: hierarchy operators, `^`, refinements without cardinality or reverse flags, compound and dotted
    /// expressions, `{{ C active = … }}` and history supplements.
    Lite,
}

/// Parses a full expression constraint.
///
/// ```
/// let e = ecl::parse("<< 73211009 |Diabetes mellitus| MINUS << 46635009").unwrap();
/// assert!(matches!(e, ecl::Expression::Minus(..)));
/// ```
pub fn parse(input: &str) -> Result<Expression, ParseError> {
    parse_with(input, Profile::Full)
}

/// Parses with a chosen [`Profile`].
pub fn parse_with(input: &str, profile: Profile) -> Result<Expression, ParseError> {
    let mut p = Parser {
        src: input,
        b: input.as_bytes(),
        pos: 0,
        depth: 0,
        furthest: 0,
        expected: Vec::new(),
        fatal: None,
        lite: profile == Profile::Lite,
        failed_refinements: HashSet::new(),
    };
    let result = p.expression_constraint().and_then(|e| {
        p.ws()?;
        if p.pos < p.b.len() {
            p.expect("end of input");
            return Err(Fail);
        }
        Ok(e)
    });
    match result {
        Ok(e) => Ok(e),
        Err(Fail) => Err(p.into_error()),
    }
}

/// A failed parse; details live in the parser (`fatal` or the furthest expectations).
#[derive(Debug)]
struct Fail;

type PResult<T> = Result<T, Fail>;

struct Parser<'a> {
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    depth: usize,
    furthest: usize,
    expected: Vec<&'static str>,
    fatal: Option<ParseError>,
    lite: bool,
    failed_refinements: HashSet<usize>,
}

#[derive(Clone, Copy, PartialEq)]
enum Joiner {
    And,
    Or,
    Minus,
}

impl Joiner {
    fn name(self) -> &'static str {
        match self {
            Joiner::And => "AND",
            Joiner::Or => "OR",
            Joiner::Minus => "MINUS",
        }
    }
}

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_'
}

impl<'a> Parser<'a> {
    // ---------------------------------------------------------------- error plumbing

    fn into_error(self) -> ParseError {
        if let Some(f) = self.fatal {
            return f;
        }
        let found = self.describe_at(self.furthest);
        let mut expected = self.expected;
        expected.dedup();
        ParseError {
            offset: self.furthest,
            kind: ParseErrorKind::Expected { expected, found },
        }
    }

    fn describe_at(&self, at: usize) -> String {
        if at >= self.b.len() {
            return "end of input".to_owned();
        }
        let rest = &self.src[at..];
        let excerpt: String = rest
            .chars()
            .take_while(|c| !c.is_whitespace())
            .take(12)
            .collect();
        if excerpt.is_empty() {
            format!("{:?}", rest.chars().next().unwrap_or(' '))
        } else {
            format!("'{excerpt}'")
        }
    }

    /// Records that `what` would have been accepted at the current position.
    fn expect(&mut self, what: &'static str) {
        if self.pos > self.furthest {
            self.furthest = self.pos;
            self.expected.clear();
        }
        if self.pos == self.furthest && !self.expected.contains(&what) {
            self.expected.push(what);
        }
    }

    fn fatal_at(&mut self, offset: usize, kind: ParseErrorKind) -> Fail {
        if self.fatal.is_none() {
            self.fatal = Some(ParseError { offset, kind });
        }
        Fail
    }

    fn invalid(&mut self, offset: usize, why: impl Into<String>) -> Fail {
        self.fatal_at(offset, ParseErrorKind::Invalid(why.into()))
    }

    fn not_lite(&mut self, offset: usize, what: &'static str) -> PResult<()> {
        if self.lite {
            Err(self.fatal_at(offset, ParseErrorKind::NotInLite(what)))
        } else {
            Ok(())
        }
    }

    /// Runs `f`; on a non-fatal failure restores the position and returns `None`.
    fn attempt<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<Option<T>> {
        let (start, depth) = (self.pos, self.depth);
        match f(self) {
            Ok(v) => Ok(Some(v)),
            Err(Fail) if self.fatal.is_some() => Err(Fail),
            Err(Fail) => {
                self.pos = start;
                self.depth = depth;
                Ok(None)
            }
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.fatal_at(self.pos, ParseErrorKind::TooDeep));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    // ---------------------------------------------------------------- lexical helpers

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn peek_at(&self, n: usize) -> Option<u8> {
        self.b.get(self.pos + n).copied()
    }

    fn starts_with(&self, s: &str) -> bool {
        self.b[self.pos..].starts_with(s.as_bytes())
    }

    fn starts_with_ci(&self, s: &str) -> bool {
        self.b.len() - self.pos >= s.len()
            && self.b[self.pos..self.pos + s.len()].eq_ignore_ascii_case(s.as_bytes())
    }

    /// Skips optional whitespace and comments. Returns whether anything was skipped.
    fn ws(&mut self) -> PResult<bool> {
        let start = self.pos;
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\r' | b'\n') => self.pos += 1,
                Some(b'/') if self.peek_at(1) == Some(b'*') => {
                    let open = self.pos;
                    match self.src[self.pos + 2..].find("*/") {
                        Some(i) => self.pos += 2 + i + 2,
                        None => return Err(self.invalid(open, "comment is not closed with */")),
                    }
                }
                _ => return Ok(self.pos > start),
            }
        }
    }

    fn eat(&mut self, s: &str) -> bool {
        if self.starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn expect_str(&mut self, s: &'static str, label: &'static str) -> PResult<()> {
        if self.eat(s) {
            Ok(())
        } else {
            self.expect(label);
            Err(Fail)
        }
    }

    /// The identifier-like word at the position (letters, digits, `-`, `_`), without consuming it.
    fn word(&self) -> &'a str {
        let end = self.b[self.pos..]
            .iter()
            .position(|&c| !is_ident_byte(c))
            .map_or(self.b.len(), |n| self.pos + n);
        &self.src[self.pos..end]
    }

    /// The run of ASCII letters at the position, without consuming it.
    fn alpha_word(&self) -> &'a str {
        let end = self.b[self.pos..]
            .iter()
            .position(|&c| !c.is_ascii_alphabetic())
            .map_or(self.b.len(), |n| self.pos + n);
        &self.src[self.pos..end]
    }

    /// A case-insensitive keyword that is a whole letter run (`typeId` does not match `type`).
    fn keyword(&mut self, kw: &str) -> bool {
        if self.alpha_word().eq_ignore_ascii_case(kw) {
            self.pos += kw.len();
            true
        } else {
            false
        }
    }

    /// `AND`/`,`, `OR`, `MINUS` (each keyword followed by mandatory whitespace), without consuming.
    fn peek_joiner(&mut self) -> PResult<Option<(Joiner, usize)>> {
        if self.peek() == Some(b',') {
            return Ok(Some((Joiner::And, 1)));
        }
        let w = self.alpha_word();
        let j = if w.eq_ignore_ascii_case("and") {
            Joiner::And
        } else if w.eq_ignore_ascii_case("or") {
            Joiner::Or
        } else if w.eq_ignore_ascii_case("minus") {
            Joiner::Minus
        } else {
            return Ok(None);
        };
        let len = w.len();
        let save = self.pos;
        self.pos += len;
        let spaced = self.ws()?;
        let after = self.pos;
        self.pos = save;
        if spaced {
            Ok(Some((j, after - save)))
        } else {
            Ok(None)
        }
    }

    // ---------------------------------------------------------------- expressions

    fn expression_constraint(&mut self) -> PResult<Expression> {
        self.ws()?;
        let first = self.sub_expression()?;
        let save = self.pos;
        self.ws()?;
        if self.eat(":") {
            self.ws()?;
            let refinement = self.refinement(true)?;
            return Ok(Expression::Refined(Box::new(first), refinement));
        }
        if self.peek() == Some(b'.') && self.peek_at(1) != Some(b'.') {
            let mut attributes = Vec::new();
            loop {
                let save = self.pos;
                self.ws()?;
                if !self.eat(".") {
                    self.expect("'.'");
                    self.pos = save;
                    break;
                }
                self.ws()?;
                attributes.push(self.sub_expression()?);
            }
            self.check_no_joiner(None)?;
            return Ok(Expression::Dotted(Box::new(first), attributes));
        }
        let Some((joiner, len)) = self.peek_joiner()? else {
            self.expect("AND");
            self.expect("OR");
            self.expect("MINUS");
            self.expect("':'");
            self.expect("'.'");
            self.pos = save;
            return Ok(Expression::Sub(Box::new(first)));
        };
        self.pos += len;
        self.ws()?;
        let mut operands = vec![first, self.sub_expression()?];
        if joiner != Joiner::Minus {
            loop {
                let save = self.pos;
                self.ws()?;
                match self.peek_joiner()? {
                    Some((j, len)) if j == joiner => {
                        self.pos += len;
                        self.ws()?;
                        operands.push(self.sub_expression()?);
                    }
                    _ => {
                        self.expect(joiner.name());
                        self.pos = save;
                        break;
                    }
                }
            }
        }
        self.check_no_joiner(Some(joiner))?;
        Ok(match joiner {
            Joiner::And => Expression::And(operands),
            Joiner::Or => Expression::Or(operands),
            Joiner::Minus => {
                let right = operands.pop().expect("two operands");
                let left = operands.pop().expect("two operands");
                Expression::Minus(Box::new(left), Box::new(right))
            }
        })
    }

    /// After a compound or dotted expression, a further `AND`/`OR`/`MINUS`/`.`/`:` would need brackets.
    fn check_no_joiner(&mut self, current: Option<Joiner>) -> PResult<()> {
        let save = self.pos;
        self.ws()?;
        let at = self.pos;
        let first = current.map_or("a dotted attribute", Joiner::name);
        if let Some((j, _)) = self.peek_joiner()? {
            return Err(self.fatal_at(
                at,
                ParseErrorKind::Ambiguous {
                    first,
                    second: j.name(),
                },
            ));
        }
        if current.is_some() && self.peek() == Some(b':') {
            return Err(self.fatal_at(
                at,
                ParseErrorKind::Ambiguous {
                    first,
                    second: "a refinement ':'",
                },
            ));
        }
        if current.is_some() && self.peek() == Some(b'.') && self.peek_at(1) != Some(b'.') {
            return Err(self.fatal_at(
                at,
                ParseErrorKind::Ambiguous {
                    first,
                    second: "a dotted attribute '.'",
                },
            ));
        }
        if current.is_none() && self.peek() == Some(b':') {
            return Err(self.fatal_at(
                at,
                ParseErrorKind::Ambiguous {
                    first,
                    second: "a refinement ':'",
                },
            ));
        }
        self.pos = save;
        Ok(())
    }

    fn sub_expression(&mut self) -> PResult<SubExpression> {
        self.enter()?;
        let r = self.sub_expression_inner();
        self.leave();
        r
    }

    fn sub_expression_inner(&mut self) -> PResult<SubExpression> {
        let operator = self.constraint_operator()?;
        if operator.is_some() {
            self.ws()?;
        }
        let member_of = self.member_of()?;
        if member_of.is_some() {
            self.ws()?;
        }
        let focus = self.focus()?;
        let mut sub = SubExpression::focus(focus);
        sub.operator = operator;
        sub.member_of = member_of;
        // Filters: member filters first, then description/concept filters, then one history supplement.
        loop {
            let save = self.pos;
            self.ws()?;
            if !self.starts_with("{{") {
                self.expect("'{{'");
                self.pos = save;
                break;
            }
            let open = self.pos;
            self.pos += 2;
            self.ws()?;
            if self.eat("+") {
                self.ws()?;
                sub.history = Some(self.history_supplement()?);
                break;
            }
            let w = self.alpha_word();
            if w.eq_ignore_ascii_case("m") {
                self.not_lite(open, "a member filter")?;
                if sub.member_of.is_none() {
                    return Err(
                        self.invalid(open, "member filters {{ M … }} apply only to ^ (member of)")
                    );
                }
                if !sub.filters.is_empty() {
                    return Err(self.invalid(
                        open,
                        "member filters {{ M … }} must come before other filters",
                    ));
                }
                self.pos += 1;
                let filters = self.filter_list(Self::member_filter)?;
                sub.member_filters.push(filters);
            } else if w.eq_ignore_ascii_case("c") {
                self.pos += 1;
                let filters = self.filter_list(Self::concept_filter)?;
                sub.filters.push(FilterConstraint::Concept(filters));
            } else {
                self.not_lite(open, "a description filter")?;
                if w.eq_ignore_ascii_case("d") {
                    self.pos += 1;
                } else {
                    self.expect("'D'");
                    self.expect("'C'");
                    self.expect("'M'");
                    self.expect("'+'");
                }
                let filters = self.filter_list(Self::description_filter)?;
                sub.filters.push(FilterConstraint::Description(filters));
            }
        }
        Ok(sub)
    }

    /// `ws filter *(ws "," ws filter) ws "}}"`, after the `{{` and the letter.
    fn filter_list<T>(&mut self, mut one: impl FnMut(&mut Self) -> PResult<T>) -> PResult<Vec<T>> {
        self.enter()?;
        let mut out = Vec::new();
        loop {
            self.ws()?;
            out.push(one(self)?);
            self.ws()?;
            if self.eat(",") {
                continue;
            }
            if self.eat("}}") {
                break;
            }
            self.expect("','");
            self.expect("'}}'");
            return Err(Fail);
        }
        self.leave();
        Ok(out)
    }

    fn constraint_operator(&mut self) -> PResult<Option<ConstraintOperator>> {
        use ConstraintOperator::*;
        const SYMBOLS: [(&str, ConstraintOperator); 10] = [
            ("<<!", ChildOrSelfOf),
            ("<<", DescendantOrSelfOf),
            ("<!", ChildOf),
            ("<", DescendantOf),
            (">>!", ParentOrSelfOf),
            (">>", AncestorOrSelfOf),
            (">!", ParentOf),
            (">", AncestorOf),
            ("!!>", Top),
            ("!!<", Bottom),
        ];
        for (s, op) in SYMBOLS {
            if self.eat(s) {
                return Ok(Some(op));
            }
        }
        const WORDS: [(&str, ConstraintOperator); 10] = [
            ("descendantOf", DescendantOf),
            ("descendantOrSelfOf", DescendantOrSelfOf),
            ("childOf", ChildOf),
            ("childOrSelfOf", ChildOrSelfOf),
            ("ancestorOf", AncestorOf),
            ("ancestorOrSelfOf", AncestorOrSelfOf),
            ("parentOf", ParentOf),
            ("parentOrSelfOf", ParentOrSelfOf),
            ("top", Top),
            ("bottom", Bottom),
        ];
        let w = self.word();
        if self.b.get(self.pos + w.len()) != Some(&b'#') {
            for (kw, op) in WORDS {
                if w.eq_ignore_ascii_case(kw) {
                    let save = self.pos;
                    self.pos += kw.len();
                    if self.ws()? {
                        return Ok(Some(op));
                    }
                    self.pos = save;
                }
            }
        }
        self.expect("constraint operator");
        Ok(None)
    }

    fn member_of(&mut self) -> PResult<Option<MemberOf>> {
        let w = self.word();
        let long =
            w.eq_ignore_ascii_case("memberOf") && self.b.get(self.pos + w.len()) != Some(&b'#');
        if !long && self.peek() != Some(b'^') {
            self.expect("'^'");
            return Ok(None);
        }
        self.pos += if long { w.len() } else { 1 };
        let save = self.pos;
        self.ws()?;
        if !self.eat("[") {
            self.pos = save;
            return Ok(Some(MemberOf { fields: None }));
        }
        self.not_lite(save, "refset field selection ^ [ … ]")?;
        self.ws()?;
        let fields = if self.eat("*") {
            RefsetFields::All
        } else {
            let mut names = Vec::new();
            loop {
                let name = self.alpha_word();
                if name.is_empty() {
                    self.expect("refset field name");
                    return Err(Fail);
                }
                self.pos += name.len();
                names.push(name.to_owned());
                self.ws()?;
                if !self.eat(",") {
                    break;
                }
                self.ws()?;
            }
            RefsetFields::Named(names)
        };
        self.ws()?;
        self.expect_str("]", "']'")?;
        Ok(Some(MemberOf {
            fields: Some(fields),
        }))
    }

    fn focus(&mut self) -> PResult<Focus> {
        match self.peek() {
            Some(b'(') => {
                self.pos += 1;
                let inner = self.expression_constraint()?;
                self.ws()?;
                self.expect_str(")", "')'")?;
                Ok(Focus::Nested(Box::new(inner)))
            }
            Some(b'*') => {
                self.pos += 1;
                Ok(Focus::Wildcard)
            }
            Some(b'1'..=b'9') => Ok(Focus::Concept(self.concept_reference()?)),
            Some(b'"') => {
                self.not_lite(self.pos, "an alternate identifier")?;
                self.alt_identifier_quoted()
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let w = self.word();
                if self.b.get(self.pos + w.len()) == Some(&b'#') {
                    self.not_lite(self.pos, "an alternate identifier")?;
                    return self.alt_identifier_plain();
                }
                if w.eq_ignore_ascii_case("any") {
                    self.pos += 3;
                    return Ok(Focus::Wildcard);
                }
                self.expect_focus();
                Err(Fail)
            }
            _ => {
                self.expect_focus();
                Err(Fail)
            }
        }
    }

    fn expect_focus(&mut self) {
        self.expect("concept id");
        self.expect("'*'");
        self.expect("'('");
        self.expect("alternate identifier");
    }

    fn sct_id(&mut self) -> PResult<SctId> {
        let start = self.pos;
        if !matches!(self.peek(), Some(b'1'..=b'9')) {
            self.expect("concept id");
            return Err(Fail);
        }
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        let digits = &self.src[start..self.pos];
        if !(6..=18).contains(&digits.len()) {
            return Err(self.invalid(start, format!("SCTID {digits} must have 6 to 18 digits")));
        }
        Ok(digits.parse().expect("at most 18 digits fit in u64"))
    }

    fn concept_reference(&mut self) -> PResult<ConceptReference> {
        let id = self.sct_id()?;
        let term = self.optional_term()?;
        Ok(ConceptReference { id, term })
    }

    fn optional_term(&mut self) -> PResult<Option<String>> {
        let save = self.pos;
        self.ws()?;
        if !self.eat("|") {
            self.expect("'|'");
            self.pos = save;
            return Ok(None);
        }
        let open = self.pos - 1;
        let Some(len) = self.src[self.pos..].find('|') else {
            return Err(self.invalid(open, "term is not closed with |"));
        };
        let term = self.src[self.pos..self.pos + len].trim();
        if term.is_empty() {
            return Err(self.invalid(open, "empty term between pipes"));
        }
        self.pos += len + 1;
        Ok(Some(term.to_owned()))
    }

    fn alt_identifier_plain(&mut self) -> PResult<Focus> {
        let scheme = self.word().to_owned();
        self.pos += scheme.len() + 1;
        let start = self.pos;
        while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'))
        {
            self.pos += 1;
        }
        if self.pos == start {
            self.expect("alternate identifier code");
            return Err(Fail);
        }
        let code = self.src[start..self.pos].to_owned();
        let term = self.optional_term()?;
        Ok(Focus::AltId(AltIdentifier { scheme, code, term }))
    }

    fn alt_identifier_quoted(&mut self) -> PResult<Focus> {
        let open = self.pos;
        self.pos += 1;
        let scheme = self.word();
        if scheme.is_empty() || !scheme.as_bytes()[0].is_ascii_alphabetic() || scheme.contains('_')
        {
            self.expect("alternate identifier scheme");
            return Err(Fail);
        }
        self.pos += scheme.len();
        self.expect_str("#", "'#'")?;
        let Some(len) = self.src[self.pos..].find('"') else {
            return Err(self.invalid(open, "alternate identifier is not closed with \""));
        };
        let code = &self.src[self.pos..self.pos + len];
        if code.is_empty() || code.contains('\\') {
            return Err(self.invalid(
                self.pos,
                "alternate identifier code must be non-empty and without \\",
            ));
        }
        self.pos += len + 1;
        let term = self.optional_term()?;
        Ok(Focus::AltId(AltIdentifier {
            scheme: scheme.to_owned(),
            code: code.to_owned(),
            term,
        }))
    }

    // ---------------------------------------------------------------- refinements

    /// `eclRefinement` (`groups`) or `eclAttributeSet` (`!groups`): sub-refinements joined by one operator.
    fn refinement(&mut self, groups: bool) -> PResult<Refinement> {
        self.enter()?;
        let first = self.sub_refinement(groups)?;
        let mut items = vec![first];
        let mut joiner: Option<Joiner> = None;
        loop {
            let save = self.pos;
            self.ws()?;
            let at = self.pos;
            match self.peek_joiner()? {
                Some((Joiner::Minus, _)) => {
                    return Err(self.invalid(
                        at,
                        "MINUS is not allowed between attributes; use != or [0..0]",
                    ));
                }
                Some((j, len)) => {
                    if let Some(current) = joiner
                        && current != j
                    {
                        return Err(self.fatal_at(
                            at,
                            ParseErrorKind::Ambiguous {
                                first: current.name(),
                                second: j.name(),
                            },
                        ));
                    }
                    joiner = Some(j);
                    self.pos += len;
                    items.push(self.sub_refinement(groups)?);
                }
                None => {
                    self.expect("','");
                    self.expect("AND");
                    self.expect("OR");
                    self.pos = save;
                    break;
                }
            }
        }
        self.leave();
        Ok(match joiner {
            None => items.pop().expect("one item"),
            Some(Joiner::Or) => Refinement::Or(items),
            Some(_) => Refinement::And(items),
        })
    }

    fn sub_refinement(&mut self, groups: bool) -> PResult<Refinement> {
        self.ws()?;
        let start = self.pos;
        if self.peek() == Some(b'(') && !self.failed_refinements.contains(&start) {
            // Either a bracketed refinement or an attribute whose name is a bracketed expression.
            let bracketed = self.attempt(|p| {
                p.pos += 1;
                let r = p.refinement(groups)?;
                p.ws()?;
                p.expect_str(")", "')'")?;
                Ok(r)
            })?;
            if let Some(r) = bracketed {
                return Ok(r);
            }
            self.failed_refinements.insert(start);
        }
        let cardinality = self.cardinality()?;
        if cardinality.is_some() {
            self.ws()?;
        }
        if self.peek() == Some(b'{') {
            if !groups {
                return Err(self.invalid(self.pos, "attribute groups cannot be nested"));
            }
            self.pos += 1;
            let body = self.refinement(false)?;
            self.ws()?;
            self.expect_str("}", "'}'")?;
            return Ok(Refinement::Group(AttributeGroup {
                cardinality,
                body: Box::new(body),
            }));
        }
        if groups {
            self.expect("'{'");
        }
        self.attribute(cardinality)
            .map(|a| Refinement::Attribute(Box::new(a)))
    }

    fn cardinality(&mut self) -> PResult<Option<Cardinality>> {
        if self.peek() != Some(b'[') {
            self.expect("'['");
            return Ok(None);
        }
        let open = self.pos;
        self.not_lite(open, "cardinality")?;
        self.pos += 1;
        self.ws()?;
        let min = self.small_integer()?;
        let save = self.pos;
        if !self.eat("..") {
            // Long syntax: mws "to" mws.
            let spaced = self.ws()?;
            if !(spaced && self.keyword("to") && self.ws()?) {
                self.pos = save;
                self.expect("'..'");
                return Err(Fail);
            }
        }
        let max = if self.eat("*") || self.keyword("many") {
            None
        } else if matches!(self.peek(), Some(b'0'..=b'9')) {
            Some(self.small_integer()?)
        } else {
            self.expect("maximum cardinality or '*'");
            return Err(Fail);
        };
        self.ws()?;
        self.expect_str("]", "']'")?;
        if let Some(max) = max
            && max < min
        {
            return Err(self.invalid(
                open,
                format!("cardinality [{min}..{max}] has its maximum below its minimum"),
            ));
        }
        Ok(Some(Cardinality { min, max }))
    }

    /// `nonNegativeIntegerValue` as u32.
    fn small_integer(&mut self) -> PResult<u32> {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        let digits = &self.src[start..self.pos];
        if digits.is_empty() {
            self.expect("integer");
            return Err(Fail);
        }
        if digits.len() > 1 && digits.starts_with('0') {
            return Err(self.invalid(start, format!("integer {digits} has a leading zero")));
        }
        digits
            .parse()
            .map_err(|_| self.invalid(start, format!("integer {digits} is too large")))
    }

    fn attribute(&mut self, cardinality: Option<Cardinality>) -> PResult<Attribute> {
        let reverse = self.reverse_flag()?;
        let name = self.sub_expression()?;
        self.ws()?;
        let op_at = self.pos;
        let op = self.comparison_operator()?;
        self.ws()?;
        let value = match self.peek() {
            Some(b'#') => {
                self.pos += 1;
                AttributeValue::Numeric(op, self.number()?)
            }
            _ if self.peek_search_term() => {
                let eq = self.eq_only(op, op_at, "a string value")?;
                AttributeValue::String(eq, self.search_terms()?)
            }
            _ => {
                if let Some(b) = self.boolean() {
                    AttributeValue::Boolean(self.eq_only(op, op_at, "a boolean value")?, b)
                } else {
                    let eq = match op {
                        CmpOp::Eq => EqOp::Eq,
                        CmpOp::Ne => EqOp::Ne,
                        _ => {
                            self.expect("'#'");
                            return Err(Fail);
                        }
                    };
                    AttributeValue::Expression(eq, self.sub_expression()?)
                }
            }
        };
        Ok(Attribute {
            cardinality,
            reverse,
            name,
            value,
        })
    }

    fn reverse_flag(&mut self) -> PResult<bool> {
        let start = self.pos;
        let w = self.word();
        let next = self.b.get(self.pos + w.len()).copied();
        if next == Some(b'#') {
            return Ok(false);
        }
        if w.eq_ignore_ascii_case("R") || w.eq_ignore_ascii_case("reverseOf") {
            self.not_lite(start, "a reverse attribute")?;
            self.pos += w.len();
            self.ws()?;
            return Ok(true);
        }
        // `R` directly followed by a concept id (whitespace is optional in the grammar).
        if matches!(self.peek(), Some(b'R' | b'r'))
            && w.len() > 1
            && w.as_bytes()[1].is_ascii_digit()
        {
            self.not_lite(start, "a reverse attribute")?;
            self.pos += 1;
            return Ok(true);
        }
        self.expect("'R'");
        Ok(false)
    }

    /// `=`, `!=`, `<=`, `<`, `>=`, `>` and the long forms `NOT =`, `<>`.
    fn comparison_operator(&mut self) -> PResult<CmpOp> {
        for (s, op) in [
            ("!=", CmpOp::Ne),
            ("<>", CmpOp::Ne),
            ("<=", CmpOp::Le),
            (">=", CmpOp::Ge),
            ("=", CmpOp::Eq),
        ] {
            if self.eat(s) {
                return Ok(op);
            }
        }
        if self.eat("<") {
            return Ok(CmpOp::Lt);
        }
        if self.eat(">") {
            return Ok(CmpOp::Gt);
        }
        let save = self.pos;
        if self.keyword("not") {
            self.ws()?;
            if self.eat("=") {
                return Ok(CmpOp::Ne);
            }
            self.pos = save;
        }
        self.expect("comparison operator");
        Err(Fail)
    }

    fn eq_only(&mut self, op: CmpOp, at: usize, what: &str) -> PResult<EqOp> {
        match op {
            CmpOp::Eq => Ok(EqOp::Eq),
            CmpOp::Ne => Ok(EqOp::Ne),
            _ => Err(self.invalid(at, format!("only = and != can compare {what}"))),
        }
    }

    fn eq_operator(&mut self) -> PResult<EqOp> {
        let at = self.pos;
        let op = self.comparison_operator()?;
        self.eq_only(op, at, "this value")
    }

    /// `=`/`!=` and the whitespace after it.
    fn eq_ws(&mut self) -> PResult<EqOp> {
        let op = self.eq_operator()?;
        self.ws()?;
        Ok(op)
    }

    /// Any comparison operator and the whitespace after it.
    fn cmp_ws(&mut self) -> PResult<CmpOp> {
        let op = self.comparison_operator()?;
        self.ws()?;
        Ok(op)
    }

    fn boolean(&mut self) -> Option<bool> {
        let w = self.word();
        let next = self.b.get(self.pos + w.len()).copied();
        if next == Some(b'#') {
            return None;
        }
        if w.eq_ignore_ascii_case("true") {
            self.pos += 4;
            Some(true)
        } else if w.eq_ignore_ascii_case("false") {
            self.pos += 5;
            Some(false)
        } else {
            None
        }
    }

    /// `numericValue`: optional sign, integer without leading zeros, optional fraction.
    fn number(&mut self) -> PResult<Number> {
        let start = self.pos;
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.pos += 1;
        }
        let int_start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        let int = &self.src[int_start..self.pos];
        if int.is_empty() {
            self.expect("number");
            return Err(Fail);
        }
        if int.len() > 1 && int.starts_with('0') {
            return Err(self.invalid(int_start, format!("number {int} has a leading zero")));
        }
        if self.peek() == Some(b'.') && matches!(self.peek_at(1), Some(b'0'..=b'9')) {
            self.pos += 1;
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.pos += 1;
            }
        }
        Ok(Number {
            text: self.src[start..self.pos].to_owned(),
        })
    }

    // ---------------------------------------------------------------- search terms

    /// Whether a (typed) search term or a set of them starts here.
    fn peek_search_term(&self) -> bool {
        let mut i = self.pos;
        if self.b.get(i) == Some(&b'(') {
            i += 1;
            while matches!(self.b.get(i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
                i += 1;
            }
        }
        match self.b.get(i) {
            Some(b'"') => true,
            Some(_) => {
                let rest = &self.b[i..];
                let word_len = rest
                    .iter()
                    .position(|c| !c.is_ascii_alphabetic())
                    .unwrap_or(rest.len());
                let word = &rest[..word_len];
                (word.eq_ignore_ascii_case(b"match") || word.eq_ignore_ascii_case(b"wild"))
                    && rest[word_len..].iter().find(|c| !c.is_ascii_whitespace()) == Some(&b':')
            }
            None => false,
        }
    }

    /// `typedSearchTerm / typedSearchTermSet`.
    fn search_terms(&mut self) -> PResult<Vec<SearchTerm>> {
        if !self.eat("(") {
            return Ok(vec![self.typed_search_term()?]);
        }
        self.ws()?;
        let mut out = vec![self.typed_search_term()?];
        loop {
            let save = self.pos;
            self.ws()?;
            if self.eat(")") {
                return Ok(out);
            }
            if self.pos == save {
                self.expect("')'");
                return Err(Fail);
            }
            out.push(self.typed_search_term()?);
        }
    }

    fn typed_search_term(&mut self) -> PResult<SearchTerm> {
        let mut kind = SearchKind::Match;
        let at = self.pos;
        if self.keyword("match") || self.keyword("wild") {
            if self.b[at] | 0x20 == b'w' {
                kind = SearchKind::Wild;
            }
            self.not_lite(at, "match: and wild: search terms")?;
            self.ws()?;
            self.expect_str(":", "':'")?;
            self.ws()?;
        }
        if self.peek() != Some(b'"') {
            self.expect("'\"'");
            self.expect("match:");
            self.expect("wild:");
            return Err(Fail);
        }
        let open = self.pos;
        self.pos += 1;
        let start = self.pos;
        loop {
            match self.peek() {
                None => return Err(self.invalid(open, "search term is not closed with \"")),
                Some(b'"') => break,
                Some(b'\\') => {
                    let ok = match self.peek_at(1) {
                        Some(b'"' | b'\\') => true,
                        Some(b'*') => kind == SearchKind::Wild,
                        _ => false,
                    };
                    if !ok {
                        let allowed = if kind == SearchKind::Wild {
                            "\\\", \\\\ or \\*"
                        } else {
                            "\\\" or \\\\"
                        };
                        return Err(self.invalid(
                            self.pos,
                            format!("invalid escape; only {allowed} are allowed"),
                        ));
                    }
                    self.pos += 2;
                }
                Some(_) => self.pos += 1,
            }
        }
        let raw = &self.src[start..self.pos];
        self.pos += 1;
        if raw.trim().is_empty() {
            return Err(self.invalid(open, "empty search term"));
        }
        Ok(SearchTerm {
            kind,
            raw: raw.to_owned(),
        })
    }

    // ---------------------------------------------------------------- filters

    fn description_filter(&mut self) -> PResult<DescriptionFilter> {
        let at = self.pos;
        let w = self.alpha_word();
        let kw = w.to_ascii_lowercase();
        self.pos += w.len();
        self.ws()?;
        let filter = match kw.as_str() {
            "term" => {
                let op = self.eq_operator()?;
                self.ws()?;
                if !self.peek_search_term() {
                    self.expect("search term");
                    return Err(Fail);
                }
                DescriptionFilter::Term(op, self.search_terms()?)
            }
            "language" => {
                DescriptionFilter::Language(self.eq_ws()?, self.token_list(Self::language_code)?)
            }
            "typeid" => DescriptionFilter::TypeId(self.eq_ws()?, self.concept_set()?),
            "type" => {
                DescriptionFilter::Type(self.eq_ws()?, self.token_list(Self::description_type)?)
            }
            "dialectid" => {
                let op = self.eq_operator()?;
                self.ws()?;
                let list = self.attempt(|p| {
                    p.expect_str("(", "'('")?;
                    p.set_items(|p| {
                        let r = p.concept_reference()?;
                        Ok((r, p.trailing_acceptability()?))
                    })
                })?;
                let ids = match list {
                    Some(list) => DialectIds::List(list),
                    None => DialectIds::Expression(Box::new(self.sub_expression()?)),
                };
                DescriptionFilter::DialectId(op, ids, self.trailing_acceptability()?)
            }
            "dialect" => {
                let op = self.eq_operator()?;
                self.ws()?;
                let aliases = if self.eat("(") {
                    self.set_items(|p| {
                        let a = p.dialect_alias()?;
                        Ok((a, p.trailing_acceptability()?))
                    })?
                } else {
                    vec![(self.dialect_alias()?, None)]
                };
                DescriptionFilter::Dialect(op, aliases, self.trailing_acceptability()?)
            }
            "moduleid" => DescriptionFilter::Module(self.eq_ws()?, self.concept_set()?),
            "effectivetime" => {
                DescriptionFilter::EffectiveTime(self.cmp_ws()?, self.time_values()?)
            }
            "active" => DescriptionFilter::Active(self.eq_ws()?, self.active_value()?),
            "id" => DescriptionFilter::Id(self.eq_ws()?, self.token_list(Self::sct_id)?),
            _ => {
                self.pos = at;
                self.expect("description filter (term, language, type, typeId, dialect, dialectId, moduleId, effectiveTime, active, id)");
                return Err(Fail);
            }
        };
        Ok(filter)
    }

    fn concept_filter(&mut self) -> PResult<ConceptFilter> {
        let at = self.pos;
        let w = self.alpha_word();
        let kw = w.to_ascii_lowercase();
        if self.lite && kw != "active" {
            return Err(self.fatal_at(
                at,
                ParseErrorKind::NotInLite("a concept filter other than active"),
            ));
        }
        self.pos += w.len();
        self.ws()?;
        let filter = match kw.as_str() {
            "definitionstatusid" => {
                ConceptFilter::DefinitionStatusId(self.eq_ws()?, self.concept_set()?)
            }
            "definitionstatus" => ConceptFilter::DefinitionStatus(
                self.eq_ws()?,
                self.token_list(Self::definition_status)?,
            ),
            "moduleid" => ConceptFilter::Module(self.eq_ws()?, self.concept_set()?),
            "effectivetime" => ConceptFilter::EffectiveTime(self.cmp_ws()?, self.time_values()?),
            "active" => ConceptFilter::Active(self.eq_ws()?, self.active_value()?),
            _ => {
                self.pos = at;
                self.expect("concept filter (definitionStatus, definitionStatusId, moduleId, effectiveTime, active)");
                return Err(Fail);
            }
        };
        Ok(filter)
    }

    fn member_filter(&mut self) -> PResult<MemberFilter> {
        let at = self.pos;
        let w = self.alpha_word();
        if w.is_empty() {
            self.expect("member filter (moduleId, effectiveTime, active or a refset field name)");
            return Err(Fail);
        }
        let kw = w.to_ascii_lowercase();
        self.pos += w.len();
        self.ws()?;
        let filter = match kw.as_str() {
            "moduleid" => MemberFilter::Module(self.eq_ws()?, self.concept_set()?),
            "effectivetime" => MemberFilter::EffectiveTime(self.cmp_ws()?, self.time_values()?),
            "active" => MemberFilter::Active(self.eq_ws()?, self.active_value()?),
            _ => {
                let name = self.src[at..at + w.len()].to_owned();
                let op_at = self.pos;
                let op = self.comparison_operator()?;
                self.ws()?;
                let cmp = if self.eat("#") {
                    FieldComparison::Numeric(op, self.number()?)
                } else if !matches!(op, CmpOp::Eq | CmpOp::Ne) {
                    if !matches!(self.peek(), Some(b'"' | b'(')) {
                        self.expect("'#'");
                        self.expect("time value");
                        return Err(Fail);
                    }
                    FieldComparison::Time(op, self.time_values()?)
                } else if self.peek_search_term() {
                    FieldComparison::String(
                        self.eq_only(op, op_at, "a string")?,
                        self.search_terms()?,
                    )
                } else if let Some(b) = self.boolean() {
                    FieldComparison::Boolean(self.eq_only(op, op_at, "a boolean")?, b)
                } else {
                    FieldComparison::Expression(
                        self.eq_only(op, op_at, "concepts")?,
                        self.sub_expression()?,
                    )
                };
                MemberFilter::Field(name, cmp)
            }
        };
        Ok(filter)
    }

    /// `(a b c)` with mandatory whitespace between items, after the `(`.
    fn set_items<T>(&mut self, mut one: impl FnMut(&mut Self) -> PResult<T>) -> PResult<Vec<T>> {
        self.ws()?;
        let mut out = vec![one(self)?];
        loop {
            let spaced = self.ws()?;
            if self.eat(")") {
                return Ok(out);
            }
            if !spaced {
                self.expect("')'");
                self.expect("whitespace");
                return Err(Fail);
            }
            out.push(one(self)?);
        }
    }

    /// One token, or `( token token … )`.
    fn token_list<T>(&mut self, mut one: impl FnMut(&mut Self) -> PResult<T>) -> PResult<Vec<T>> {
        if self.eat("(") {
            self.set_items(one)
        } else {
            Ok(vec![one(self)?])
        }
    }

    /// `eclConceptReferenceSet` (two or more) or a sub-expression.
    fn concept_set(&mut self) -> PResult<ConceptSet> {
        if self.peek() == Some(b'(') {
            let list = self.attempt(|p| {
                p.pos += 1;
                let items = p.set_items(Self::concept_reference)?;
                if items.len() < 2 {
                    p.expect("second concept id");
                    return Err(Fail);
                }
                Ok(items)
            })?;
            if let Some(list) = list {
                return Ok(ConceptSet::List(list));
            }
        }
        Ok(ConceptSet::Expression(Box::new(self.sub_expression()?)))
    }

    fn language_code(&mut self) -> PResult<String> {
        let w = self.alpha_word();
        if w.len() != 2 {
            self.expect("two-letter language code");
            return Err(Fail);
        }
        self.pos += 2;
        Ok(w.to_owned())
    }

    fn description_type(&mut self) -> PResult<DescriptionType> {
        let w = self.alpha_word().to_ascii_lowercase();
        let t = match w.as_str() {
            "syn" | "synonym" => DescriptionType::Synonym,
            "fsn" | "fullyspecifiedname" => DescriptionType::FullySpecifiedName,
            "def" | "definition" => DescriptionType::Definition,
            _ => {
                self.expect("syn, fsn or def");
                return Err(Fail);
            }
        };
        self.pos += w.len();
        Ok(t)
    }

    fn definition_status(&mut self) -> PResult<DefinitionStatus> {
        let w = self.alpha_word().to_ascii_lowercase();
        let t = match w.as_str() {
            "primitive" => DefinitionStatus::Primitive,
            "defined" => DefinitionStatus::Defined,
            _ => {
                self.expect("primitive or defined");
                return Err(Fail);
            }
        };
        self.pos += w.len();
        Ok(t)
    }

    fn dialect_alias(&mut self) -> PResult<String> {
        let w = self.word();
        if w.is_empty() || !w.as_bytes()[0].is_ascii_alphabetic() || w.contains('_') {
            self.expect("dialect alias");
            return Err(Fail);
        }
        self.pos += w.len();
        Ok(w.to_owned())
    }

    /// `[ws acceptabilitySet]` after a dialect or dialect list.
    fn trailing_acceptability(&mut self) -> PResult<Option<Acceptability>> {
        let save = self.pos;
        self.ws()?;
        if self.peek() != Some(b'(') {
            self.pos = save;
            return Ok(None);
        }
        let set = self.attempt(|p| {
            p.pos += 1;
            p.ws()?;
            if matches!(p.peek(), Some(b'1'..=b'9')) {
                Ok(Acceptability::Concepts(
                    p.set_items(Self::concept_reference)?,
                ))
            } else {
                Ok(Acceptability::Tokens(
                    p.set_items(Self::acceptability_token)?,
                ))
            }
        })?;
        if set.is_none() {
            self.pos = save;
        }
        Ok(set)
    }

    fn acceptability_token(&mut self) -> PResult<AcceptabilityToken> {
        let w = self.alpha_word().to_ascii_lowercase();
        let t = match w.as_str() {
            "accept" | "acceptable" => AcceptabilityToken::Acceptable,
            "prefer" | "preferred" => AcceptabilityToken::Preferred,
            _ => {
                self.expect("accept or prefer");
                return Err(Fail);
            }
        };
        self.pos += w.len();
        Ok(t)
    }

    fn active_value(&mut self) -> PResult<ActiveValue> {
        if self.eat("1") {
            return Ok(ActiveValue::True);
        }
        if self.eat("0") {
            return Ok(ActiveValue::False);
        }
        if self.eat("*") {
            return Ok(ActiveValue::Any);
        }
        match self.boolean() {
            Some(true) => Ok(ActiveValue::True),
            Some(false) => Ok(ActiveValue::False),
            None => {
                self.expect("1, 0, true, false or *");
                Err(Fail)
            }
        }
    }

    /// `timeValue / timeValueSet`: `"YYYYMMDD"` or `""`.
    fn time_values(&mut self) -> PResult<Vec<String>> {
        self.token_list(Self::time_value)
    }

    fn time_value(&mut self) -> PResult<String> {
        let open = self.pos;
        self.expect_str("\"", "'\"'")?;
        let rest = &self.src[self.pos..];
        let Some(len) = rest.find('"') else {
            return Err(self.invalid(open, "time value is not closed with \""));
        };
        let v = &rest[..len];
        if !v.is_empty() && !valid_date(v) {
            return Err(self.invalid(open, format!("time value \"{v}\" is not a date YYYYMMDD")));
        }
        self.pos += len + 1;
        Ok(v.to_owned())
    }

    fn history_supplement(&mut self) -> PResult<HistorySupplement> {
        if !self.starts_with_ci("history") {
            self.expect("HISTORY");
            return Err(Fail);
        }
        self.pos += 7;
        let profile = if matches!(self.peek(), Some(b'-' | b'_')) {
            self.pos += 1;
            let w = self.alpha_word().to_ascii_lowercase();
            let p = match w.as_str() {
                "min" => HistoryProfile::Min,
                "mod" => HistoryProfile::Mod,
                "max" => HistoryProfile::Max,
                _ => {
                    self.expect("MIN, MOD or MAX");
                    return Err(Fail);
                }
            };
            self.pos += 3;
            Some(HistorySupplement::Profile(Some(p)))
        } else {
            None
        };
        self.ws()?;
        let supplement = match profile {
            Some(p) => p,
            None if self.eat("(") => {
                let e = self.expression_constraint()?;
                self.ws()?;
                self.expect_str(")", "')'")?;
                self.ws()?;
                HistorySupplement::Subset(Box::new(e))
            }
            None => {
                self.expect("'('");
                self.expect("'-MIN'");
                HistorySupplement::Profile(None)
            }
        };
        self.expect_str("}}", "'}}'")?;
        Ok(supplement)
    }
}

fn valid_date(v: &str) -> bool {
    let b = v.as_bytes();
    if b.len() != 8 || !b.iter().all(u8::is_ascii_digit) || b[0] == b'0' {
        return false;
    }
    let month = (b[4] - b'0') * 10 + (b[5] - b'0');
    let day = (b[6] - b'0') * 10 + (b[7] - b'0');
    (1..=12).contains(&month) && (1..=31).contains(&day)
}
