//! The guide's conditions (`IF PID-7 LENGTH GREATER THAN 8`, `IF PRT-4.1 EQUALS "PP" AND PRT-4.3 EQUALS
//! "HL70443"`), parsed once when the maps are compiled and evaluated per segment or value.
//!
//! The grammar is the guide's (`antlr_condition_syntax.md`: references, `VALUED`, `EQUAL`/`NOT EQUAL`, `IN`,
//! `AND`/`OR`/`NOT`, parentheses) widened to the spellings the published tables actually use: `IS`, `IS NOT`,
//! `EQUALS`, `=`, `IS VALUED`, `IS EMPTY`, `DOES NOT EXIST`, `LST.count` / `COUNT` comparisons, `LENGTH`
//! comparisons, `IF` repeated inside a condition, and shared predicates (`PID-33 AND PID-34 VALUED` means both
//! are valued). A condition that still does not parse is [`Cond::Unparsed`]: it never holds, and the converter
//! reports the rows it skipped because of it.

/// A reference to a v2 element: `PID-11.9` (segment, field, component) or `CX.4` (a component of the value the
/// data type map is applied to). `segment` is `None` for data-type references and for the row's own element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ref {
    /// Segment id for segment references; `None` for data type references.
    pub(crate) segment: Option<Box<str>>,
    /// 1-based field (segment references) or component (data type references); 0 = the element itself.
    pub(crate) first: u16,
    /// 1-based component (segment references) or subcomponent (data type references); 0 = none.
    pub(crate) second: u16,
}

/// How a number compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    pub(crate) fn holds(self, a: usize, b: usize) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
        }
    }
}

/// A compiled condition.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Cond {
    /// No condition: the row always applies.
    Always,
    Valued(Ref),
    /// A segment of the message is present (`IF ORC VALUED`).
    SegmentPresent(Box<str>),
    Equals(Ref, Box<str>),
    /// Both references valued and equal.
    EqualsRef(Ref, Ref),
    In(Ref, Vec<Box<str>>),
    /// Number of repetitions of the element.
    Count(Ref, Cmp, usize),
    /// Length of the element's text.
    Length(Ref, Cmp, usize),
    Not(Box<Cond>),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    /// The text could not be read as a condition; it never holds.
    Unparsed,
}

/// What a condition asks of the message: implemented by the converter over a segment or a value.
pub(crate) trait Facts {
    /// Visits the repetitions (the non-empty, trimmed text of each) of the referenced element in order, while
    /// `visit` returns true; none when it is not valued. A visitor rather than a list: most conditions need the
    /// first repetition only, and none needs a copy of the text.
    fn values(&self, r: &Ref, visit: &mut dyn FnMut(&str) -> bool);
    /// The first of [`Facts::values`] (`None`: not valued), given to `visit`.
    fn first(&self, r: &Ref, visit: &mut dyn FnMut(Option<&str>)) {
        first_of_values(self, r, visit);
    }
    /// Whether the referenced element is valued: [`Facts::first`] gives it text. An implementation may know
    /// without decoding the text.
    fn valued(&self, r: &Ref) -> bool {
        first_is(self, r, |_| true)
    }
    /// A segment with this id is present where the row applies.
    fn segment_present(&self, id: &str) -> bool;
    /// How many of [`Facts::values`] there are (`LST.count`, `COUNT`).
    fn count(&self, r: &Ref) -> usize {
        count_of_values(self, r)
    }
}

/// How many of `facts`' [`Facts::values`] of `r` there are: what [`Facts::count`] gives unless an implementation
/// knows a shorter way.
pub(crate) fn count_of_values<F: Facts + ?Sized>(facts: &F, r: &Ref) -> usize {
    let mut n = 0;
    facts.values(r, &mut |_| {
        n += 1;
        true
    });
    n
}

/// The first of `facts`' [`Facts::values`] of `r` (`None`: not valued), given to `visit`: what [`Facts::first`]
/// gives unless an implementation knows a shorter way.
pub(crate) fn first_of_values<F: Facts + ?Sized>(
    facts: &F,
    r: &Ref,
    visit: &mut dyn FnMut(Option<&str>),
) {
    let mut done = false;
    facts.values(r, &mut |t| {
        visit(Some(t));
        done = true;
        false
    });
    if !done {
        visit(None);
    }
}

/// `a == b` for the few bytes of a code or segment id, compared in place (`==` on strings calls `memcmp`).
pub(crate) fn eq_short(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
}

/// Whether the first repetition of `r` exists and satisfies `test`.
pub(crate) fn first_is<F: Facts + ?Sized>(facts: &F, r: &Ref, test: impl Fn(&str) -> bool) -> bool {
    let mut out = false;
    facts.first(r, &mut |t| out = t.is_some_and(&test));
    out
}

/// A condition's leading test of one element against literals (`OBX-2 EQUALS "NM"`, `OBX-2 IN ("ST", "FT")`, the
/// first conjunct of `OBX-2 EQUALS "SN" AND OBX-5.1 ...`). The converter tests it first, reading the element once
/// for all the neighbouring rows that test it: the OBX map's 25 alternatives for OBX-5 each test OBX-2, and
/// evaluating their conditions whole was a tenth of an ORU^R01's conversion.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Guard {
    /// The element tested.
    pub(crate) r: Ref,
    /// The test passes when the element's first value is one of these.
    pub(crate) any_of: Box<[Box<str>]>,
    /// `any_of` packed ([`pack`]), the ones short enough: a value is tested by comparing integers.
    packed: Box<[u128]>,
    /// The test is the whole condition: when it passes, the condition holds.
    pub(crate) decides: bool,
}

impl Guard {
    fn new(r: &Ref, any_of: Box<[Box<str>]>) -> Guard {
        Guard {
            r: r.clone(),
            packed: any_of.iter().filter_map(|v| pack(v.as_bytes())).collect(),
            any_of,
            decides: true,
        }
    }
}

/// A text of at most 15 bytes as one integer (its bytes, then its length in the last byte): two are equal when
/// the texts are.
fn pack(t: &[u8]) -> Option<u128> {
    if t.len() > 15 {
        return None;
    }
    let mut b = [0u8; 16];
    b[..t.len()].copy_from_slice(t);
    b[15] = t.len() as u8;
    Some(u128::from_le_bytes(b))
}

/// The first value of a [`Guard`]'s element, as [`Facts::first`] gives it, kept by value (codes are short).
#[derive(Clone, Copy, Debug)]
pub(crate) enum GuardValue {
    /// The element is not valued.
    Absent,
    /// Its text, when it fits, packed ([`pack`]).
    Short(u128),
    /// Longer than any code: the condition is evaluated whole.
    Long,
}

impl GuardValue {
    /// Reads the first value of `r`.
    pub(crate) fn read(facts: &dyn Facts, r: &Ref) -> GuardValue {
        let mut out = GuardValue::Absent;
        facts.first(r, &mut |t| {
            out = match t {
                None => GuardValue::Absent,
                Some(t) => pack(t.as_bytes()).map_or(GuardValue::Long, GuardValue::Short),
            }
        });
        out
    }

    /// Whether the guard's test passes on this value (`None`: not known from a value this long).
    pub(crate) fn passes(&self, guard: &Guard) -> Option<bool> {
        match self {
            GuardValue::Absent => Some(false),
            GuardValue::Short(v) => Some(guard.packed.contains(v)),
            GuardValue::Long => None,
        }
    }
}

impl Cond {
    /// The condition's leading test of one element against literals, when it has one.
    pub(crate) fn guard(&self) -> Option<Guard> {
        match self {
            Cond::Equals(r, v) => Some(Guard::new(r, Box::new([v.clone()]))),
            Cond::In(r, list) => Some(Guard::new(r, list.clone().into_boxed_slice())),
            Cond::And(a, _) => a.guard().map(|g| Guard {
                decides: false,
                ..g
            }),
            _ => None,
        }
    }

    /// Evaluates the condition; an unparsed condition never holds.
    pub(crate) fn holds(&self, facts: &dyn Facts) -> bool {
        match self {
            Cond::Always => true,
            Cond::Valued(r) => facts.valued(r),
            Cond::SegmentPresent(s) => facts.segment_present(s),
            Cond::Equals(r, v) => first_is(facts, r, |x| eq_short(x, v)),
            Cond::EqualsRef(a, b) => {
                let mut first_a = None;
                facts.first(a, &mut |t| first_a = t.map(str::to_string));
                first_a.is_some_and(|x| first_is(facts, b, |y| x == y))
            }
            Cond::In(r, list) => first_is(facts, r, |x| list.iter().any(|v| eq_short(x, v))),
            Cond::Count(r, cmp, n) => cmp.holds(facts.count(r), *n),
            Cond::Length(r, cmp, n) => {
                let mut len = 0;
                facts.first(r, &mut |t| len = t.map_or(0, str::len));
                cmp.holds(len, *n)
            }
            Cond::Not(c) => !c.holds(facts),
            Cond::And(a, b) => a.holds(facts) && b.holds(facts),
            Cond::Or(a, b) => a.holds(facts) || b.holds(facts),
            Cond::Unparsed => false,
        }
    }

    /// The condition holds only when `r` is not valued (`XTN.3 NOT VALUED AND XTN.4 VALUED` for XTN.3).
    pub(crate) fn requires_empty(&self, r: &Ref) -> bool {
        match self {
            Cond::Not(c) => matches!(&**c, Cond::Valued(v) if v == r),
            Cond::And(a, b) => a.requires_empty(r) || b.requires_empty(r),
            _ => false,
        }
    }

    /// The condition reads segments only (no component of the value a data type map applies to): it has one
    /// value per segment, whatever row or value asks.
    pub(crate) fn segment_only(&self) -> bool {
        match self {
            Cond::Always | Cond::Unparsed | Cond::SegmentPresent(_) => true,
            Cond::Valued(r) | Cond::Equals(r, _) | Cond::In(r, _) => r.segment.is_some(),
            Cond::Count(r, _, _) | Cond::Length(r, _, _) => r.segment.is_some(),
            Cond::EqualsRef(a, b) => a.segment.is_some() && b.segment.is_some(),
            Cond::Not(c) => c.segment_only(),
            Cond::And(a, b) | Cond::Or(a, b) => a.segment_only() && b.segment_only(),
        }
    }

    /// The condition reads a segment (a segment's element, or whether a segment is present).
    pub(crate) fn reads_segment(&self) -> bool {
        match self {
            Cond::SegmentPresent(_) => true,
            Cond::Always | Cond::Unparsed => false,
            Cond::Valued(r) | Cond::Equals(r, _) | Cond::In(r, _) => r.segment.is_some(),
            Cond::Count(r, _, _) | Cond::Length(r, _, _) => r.segment.is_some(),
            Cond::EqualsRef(a, b) => a.segment.is_some() || b.segment.is_some(),
            Cond::Not(c) => c.reads_segment(),
            Cond::And(a, b) | Cond::Or(a, b) => a.reads_segment() || b.reads_segment(),
        }
    }

    /// The condition (or a part of it) could not be read.
    pub(crate) fn is_unparsed(&self) -> bool {
        match self {
            Cond::Unparsed => true,
            Cond::Not(c) => c.is_unparsed(),
            Cond::And(a, b) | Cond::Or(a, b) => a.is_unparsed() || b.is_unparsed(),
            _ => false,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Word(String),
    Str(String),
    Num(usize),
    Open,
    Close,
    Comma,
    Sym(&'static str),
}

fn tokenize(s: &str) -> Option<Vec<Tok>> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' => i += 1,
            b'(' => {
                out.push(Tok::Open);
                i += 1
            }
            b')' => {
                out.push(Tok::Close);
                i += 1
            }
            b',' => {
                out.push(Tok::Comma);
                i += 1
            }
            b'"' | b'\'' => {
                let end = s[i + 1..].find(c as char)? + i + 1;
                out.push(Tok::Str(s[i + 1..end].to_string()));
                i = end + 1;
            }
            b'=' => {
                out.push(Tok::Sym("="));
                i += 1
            }
            b'>' | b'<' => {
                let two = b.get(i + 1) == Some(&b'=');
                out.push(Tok::Sym(match (c, two) {
                    (b'>', true) => ">=",
                    (b'>', false) => ">",
                    (_, true) => "<=",
                    _ => "<",
                }));
                i += 1 + usize::from(two);
            }
            b'!' if b.get(i + 1) == Some(&b'=') => {
                out.push(Tok::Sym("!="));
                i += 2
            }
            _ if c.is_ascii_digit() => {
                let start = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                out.push(Tok::Num(s[start..i].parse().ok()?));
            }
            _ if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' => {
                let start = i;
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'-' | b'.' | b'_' | b'$'))
                {
                    i += 1;
                }
                out.push(Tok::Word(s[start..i].trim_end_matches('.').to_string()));
            }
            _ => return None,
        }
    }
    Some(out)
}

/// Reads `PID-11.9`, `CX.4`, `HD-3` (a data type reference written with a dash), `PL3` (the typo `PL3.NOT`),
/// or a bare segment id (`ORC`). `data_type` is the type a data type map applies to, so that `HD-3` inside the
/// HD maps reads as a component.
fn parse_ref(word: &str, data_type: Option<&str>) -> Option<Ref> {
    let (head, rest) = match word.find(['-', '.']) {
        Some(i) => (&word[..i], &word[i + 1..]),
        None => (word, ""),
    };
    if head.len() < 2
        || head.len() > 3
        || !head
            .bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        return None;
    }
    let mut nums = rest.split('.').filter(|s| !s.is_empty());
    let first = match nums.next() {
        Some(n) => n.parse().ok()?,
        None => 0,
    };
    let second = match nums.next() {
        Some(n) => n.parse().ok()?,
        None => 0,
    };
    let is_type = data_type == Some(head)
        || (word.as_bytes().get(head.len()) == Some(&b'.') && data_type.is_some());
    Some(Ref {
        segment: (!is_type).then(|| head.into()),
        first,
        second,
    })
}

struct Parser<'t> {
    toks: &'t [Tok],
    pos: usize,
    data_type: Option<&'t str>,
    /// The row's own element, for conditions without a subject (`IF NOT VALUED`).
    own: Ref,
}

/// A primary that may still be waiting for its predicate (`PID-33` in `PID-33 AND PID-34 VALUED`).
enum Prim {
    Done(Cond),
    Bare(Ref),
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Word(x)) if x.eq_ignore_ascii_case(w))
    }
    fn eat(&mut self, w: &str) -> bool {
        let yes = self.word(w);
        if yes {
            self.pos += 1;
        }
        yes
    }
    fn skip_if(&mut self) {
        while self.eat("IF") {}
    }

    fn expr(&mut self) -> Option<Cond> {
        // A chain of primaries joined by AND/OR, AND binding tighter; bare references take the predicate of the
        // next primary that has one.
        let mut items: Vec<Prim> = vec![self.prim()?];
        let mut ops: Vec<bool> = Vec::new(); // true = AND
        loop {
            if self.eat("AND") {
                ops.push(true);
            } else if self.eat("OR") {
                ops.push(false);
            } else {
                break;
            }
            self.skip_if();
            items.push(self.prim()?);
        }
        let mut conds: Vec<Cond> = Vec::with_capacity(items.len());
        let mut pending: Vec<(usize, Ref)> = Vec::new();
        for item in items {
            match item {
                Prim::Bare(r) => {
                    pending.push((conds.len(), r));
                    conds.push(Cond::Unparsed);
                }
                Prim::Done(c) => {
                    for (at, r) in pending.drain(..) {
                        conds[at] = with_subject(&c, r)?;
                    }
                    conds.push(c);
                }
            }
        }
        for (at, r) in pending {
            // A bare reference at the end: `IF PRT-10 VALUED OR PRT-9` reads as valued.
            conds[at] = Cond::Valued(r);
        }
        // AND before OR.
        let mut or_terms: Vec<Cond> = Vec::new();
        let mut cur = conds.remove(0);
        for (op, c) in ops.into_iter().zip(conds) {
            if op {
                cur = Cond::And(Box::new(cur), Box::new(c));
            } else {
                or_terms.push(std::mem::replace(&mut cur, c));
            }
        }
        Some(
            or_terms
                .into_iter()
                .rev()
                .fold(cur, |acc, t| Cond::Or(Box::new(t), Box::new(acc))),
        )
    }

    fn prim(&mut self) -> Option<Prim> {
        self.skip_if();
        match self.peek()? {
            Tok::Open => {
                self.pos += 1;
                let c = self.expr()?;
                if self.peek() == Some(&Tok::Close) {
                    self.pos += 1;
                }
                Some(Prim::Done(c))
            }
            Tok::Word(w) if w.eq_ignore_ascii_case("NOT") => {
                // `IF NOT VALUED` / `IF NOT IN (...)` / `IF NOT EQUAL TO "="`: about the row's own element.
                let own = self.own.clone();
                match self.predicate(own)? {
                    Some(c) => Some(Prim::Done(c)),
                    None => {
                        self.pos += 1;
                        match self.prim()? {
                            Prim::Done(c) => Some(Prim::Done(Cond::Not(Box::new(c)))),
                            Prim::Bare(r) => Some(Prim::Done(Cond::Not(Box::new(Cond::Valued(r))))),
                        }
                    }
                }
            }
            Tok::Word(w) => {
                let w = w.clone();
                if w.eq_ignore_ascii_case("VALUED") || w.eq_ignore_ascii_case("VALUE") {
                    let own = self.own.clone();
                    return self.predicate(own)?.map(Prim::Done);
                }
                let r = parse_ref(&w, self.data_type)?;
                self.pos += 1;
                // A bare segment id names a segment's presence (`IF ORC VALUED`, `IF PID NOT VALUED`).
                match self.predicate(r.clone())? {
                    Some(c) => Some(Prim::Done(segment_presence(c))),
                    None => Some(Prim::Bare(r)),
                }
            }
            _ => None,
        }
    }

    /// The predicate after a reference; `Ok(None)` (as `Some(None)`) when none follows (a bare reference).
    fn predicate(&mut self, r: Ref) -> Option<Option<Cond>> {
        let start = self.pos;
        let mut neg = false;
        let _ = self.eat("IS") || self.eat("AREA");
        if self.eat("NOT") {
            neg = true;
        }
        let _ = self.eat("IS");
        let c = if self.eat("VALUED") || self.eat("VALUE") {
            // `IS VALUED NOT EQUAL PID-12`
            if self.word("NOT")
                && matches!(self.toks.get(self.pos + 1), Some(Tok::Word(x)) if x.eq_ignore_ascii_case("EQUAL"))
            {
                self.pos += 2;
                let other = self.operand_ref()?;
                Cond::And(
                    Box::new(Cond::Valued(r.clone())),
                    Box::new(Cond::Not(Box::new(Cond::EqualsRef(r, other)))),
                )
            } else {
                Cond::Valued(r)
            }
        } else if self.eat("EMPTY") {
            Cond::Not(Box::new(Cond::Valued(r)))
        } else if self.eat("DOES") {
            let n = self.eat("NOT");
            if !self.eat("EXIST") {
                return None;
            }
            neg ^= n;
            Cond::Valued(r)
        } else if self.eat("IN") {
            Cond::In(r, self.list()?)
        } else if self.eat("EQUALS") || self.eat("EQUAL") || self.eat_sym("=") {
            let _ = self.eat("TO");
            self.equals(r)?
        } else if self.eat_sym("!=") {
            neg = !neg;
            self.equals(r)?
        } else if self.eat("LST.count") || self.eat("LST.COUNT") || self.eat("COUNT") {
            let (cmp, n) = self.comparison()?;
            Cond::Count(r, cmp, n)
        } else if self.eat("LENGTH") {
            let (cmp, n) = self.comparison()?;
            Cond::Length(r, cmp, n)
        } else if matches!(self.peek(), Some(Tok::Str(_))) {
            // `IS "NA"`, `IS NOT "NA"`, `NOT "SEL"`
            self.equals(r)?
        } else {
            self.pos = start;
            return Some(None);
        };
        Some(Some(if neg { Cond::Not(Box::new(c)) } else { c }))
    }

    fn eat_sym(&mut self, s: &str) -> bool {
        let yes = matches!(self.peek(), Some(Tok::Sym(x)) if *x == s);
        if yes {
            self.pos += 1;
        }
        yes
    }

    fn equals(&mut self, r: Ref) -> Option<Cond> {
        match self.peek()? {
            Tok::Str(s) => {
                let s = s.clone();
                self.pos += 1;
                Some(Cond::Equals(r, s.into()))
            }
            Tok::Num(n) => {
                let n = *n;
                self.pos += 1;
                Some(Cond::Equals(r, n.to_string().into()))
            }
            Tok::Word(_) => {
                let other = self.operand_ref()?;
                Some(Cond::EqualsRef(r, other))
            }
            _ => None,
        }
    }

    fn operand_ref(&mut self) -> Option<Ref> {
        match self.peek()? {
            Tok::Word(w) => {
                let r = parse_ref(w, self.data_type)?;
                self.pos += 1;
                Some(r)
            }
            _ => None,
        }
    }

    fn list(&mut self) -> Option<Vec<Box<str>>> {
        if self.peek() != Some(&Tok::Open) {
            return None; // `IN http://...`: a list the converter cannot read.
        }
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            match self.peek()? {
                Tok::Str(s) => out.push(s.as_str().into()),
                Tok::Num(n) => out.push(n.to_string().into()),
                Tok::Close => {
                    self.pos += 1;
                    return Some(out);
                }
                Tok::Comma => {}
                _ => return None,
            }
            self.pos += 1;
        }
    }

    fn comparison(&mut self) -> Option<(Cmp, usize)> {
        let cmp = if self.eat_sym(">") {
            Cmp::Gt
        } else if self.eat_sym(">=") {
            Cmp::Ge
        } else if self.eat_sym("<") {
            Cmp::Lt
        } else if self.eat_sym("<=") {
            Cmp::Le
        } else if self.eat_sym("=") || self.eat("EQUALS") || self.eat("EQUAL") {
            Cmp::Eq
        } else if self.eat("GREATER") {
            let _ = self.eat("THAN");
            if self.eat("OR") {
                let _ = self.eat("EQUALS") || self.eat("EQUAL");
                Cmp::Ge
            } else {
                Cmp::Gt
            }
        } else if self.eat("LESS") {
            let _ = self.eat("THAN");
            if self.eat("OR") {
                let _ = self.eat("EQUALS") || self.eat("EQUAL");
                Cmp::Le
            } else {
                Cmp::Lt
            }
        } else {
            return None;
        };
        match self.peek()? {
            Tok::Num(n) => {
                let n = *n;
                self.pos += 1;
                Some((cmp, n))
            }
            _ => None,
        }
    }
}

/// `ORC VALUED` (a reference with no field) asks whether the segment is there.
fn segment_presence(c: Cond) -> Cond {
    match c {
        Cond::Valued(Ref {
            segment: Some(s),
            first: 0,
            ..
        }) => Cond::SegmentPresent(s),
        Cond::Not(inner) => Cond::Not(Box::new(segment_presence(*inner))),
        other => other,
    }
}

/// The predicate of `c` applied to another subject (`PID-33` borrowing `VALUED` from `PID-34 VALUED`).
fn with_subject(c: &Cond, r: Ref) -> Option<Cond> {
    Some(match c {
        Cond::Valued(_) => Cond::Valued(r),
        Cond::SegmentPresent(_) => Cond::Valued(r),
        Cond::Equals(_, v) => Cond::Equals(r, v.clone()),
        Cond::In(_, l) => Cond::In(r, l.clone()),
        Cond::Not(inner) => Cond::Not(Box::new(with_subject(inner, r)?)),
        _ => return None,
    })
}

/// Parses a condition cell. `own` is the row's element; `data_type` the type a data type map applies to.
pub(crate) fn parse(text: &str, own: Ref, data_type: Option<&str>) -> Cond {
    let text = text.trim();
    if text.is_empty() {
        return Cond::Always;
    }
    let Some(toks) = tokenize(text) else {
        return Cond::Unparsed;
    };
    let mut p = Parser {
        toks: &toks,
        pos: 0,
        data_type,
        own,
    };
    match p.expr() {
        Some(c) if p.pos == toks.len() => segment_presence(c),
        // `IF OBR-25 NOT VALUED ERROR`: trailing words the grammar has no place for.
        _ => Cond::Unparsed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Facts where one element has one value and nothing else is valued.
    struct One<'x>(&'x Ref, Option<&'x str>);

    impl Facts for One<'_> {
        fn values(&self, r: &Ref, visit: &mut dyn FnMut(&str) -> bool) {
            if r == self.0
                && let Some(v) = self.1
            {
                visit(v);
            }
        }
        fn segment_present(&self, _: &str) -> bool {
            false
        }
    }

    #[test]
    fn a_guard_never_contradicts_its_condition_over_every_guarded_row_of_the_guide() {
        let mut guarded = 0;
        for map in &crate::maps::maps().elements {
            for row in &map.rows {
                let Some(g) = &row.guard else { continue };
                guarded += 1;
                let long = "X".repeat(20);
                let mut values: Vec<Option<&str>> =
                    vec![None, Some(""), Some("ZZ-other"), Some(&long)];
                values.extend(g.any_of.iter().map(|v| Some(&**v)));
                for v in values {
                    let facts = One(&g.r, v.filter(|t| !t.is_empty()));
                    let holds = row.cond.holds(&facts);
                    match GuardValue::read(&facts, &g.r).passes(g) {
                        Some(false) => assert!(
                            !holds,
                            "{:?} with {v:?}: the guard fails, the condition holds",
                            row.cond
                        ),
                        Some(true) if g.decides => {
                            assert!(
                                holds,
                                "{:?} with {v:?}: the guard decides, the condition fails",
                                row.cond
                            )
                        }
                        _ => {}
                    }
                }
            }
        }
        // The OBX map's alternatives for OBX-5 among them.
        assert!(guarded > 100, "{guarded} guarded rows");
    }

    fn seg(s: &str, f: u16, c: u16) -> Ref {
        Ref {
            segment: Some(s.into()),
            first: f,
            second: c,
        }
    }

    #[test]
    fn reads_the_spellings_the_tables_use() {
        let own = seg("PID", 7, 0);
        assert_eq!(
            parse("IF PID-7 LENGTH GREATER THAN 8", own.clone(), None),
            Cond::Length(seg("PID", 7, 0), Cmp::Gt, 8)
        );
        assert_eq!(
            parse("IF PID-33 AND PID-34 VALUED", own.clone(), None),
            Cond::And(
                Box::new(Cond::Valued(seg("PID", 33, 0))),
                Box::new(Cond::Valued(seg("PID", 34, 0)))
            )
        );
        assert_eq!(
            parse(
                r#"IF OBX-5 LST.count LESS THAN OR EQUALS 1 OR OBX-2 IS "NA""#,
                own.clone(),
                None
            ),
            Cond::Or(
                Box::new(Cond::Count(seg("OBX", 5, 0), Cmp::Le, 1)),
                Box::new(Cond::Equals(seg("OBX", 2, 0), "NA".into()))
            )
        );
        assert_eq!(
            parse("IF ORC VALUED", own.clone(), None),
            Cond::SegmentPresent("ORC".into())
        );
        assert_eq!(
            parse("IF NOT VALUED", own.clone(), None),
            Cond::Not(Box::new(Cond::Valued(own.clone())))
        );
        let hd = parse(r#"IF HD-3 = "UUID""#, own.clone(), Some("HD"));
        assert_eq!(
            hd,
            Cond::Equals(
                Ref {
                    segment: None,
                    first: 3,
                    second: 0
                },
                "UUID".into()
            )
        );
        assert_eq!(
            parse("IF OBR-25 NOT VALUED ERROR", own.clone(), None),
            Cond::Unparsed
        );
        assert!(
            matches!(parse(r#"IF PRT-2 IS IN ("A", "S")"#, own, None), Cond::In(_, l) if l.len() == 2)
        );
    }
}
