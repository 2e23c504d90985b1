//! The abstract syntax tree of an expression constraint.
//!
//! The tree keeps what changes the meaning (and the terms between pipes, which people read) and drops what does
//! not: whitespace, comments, brief or long keyword spelling, `,` versus `AND`. Brackets that change grouping are
//! kept as nesting ([`Focus::Nested`], nested [`Refinement`] lists), so printing a tree and parsing the text
//! gives the same tree back.

/// A SNOMED CT identifier as written (6 to 18 digits, no leading zero).
pub type SctId = u64;

/// A whole expression constraint (`expressionConstraint` in the grammar).
#[derive(Debug, Clone, PartialEq)]
pub enum Expression {
    /// A single sub-expression: `<< 73211009 |Diabetes mellitus|`.
    Sub(Box<SubExpression>),
    /// A refined expression: `< 404684003 : 363698007 = << 39057004`.
    Refined(Box<SubExpression>, Refinement),
    /// Two or more sub-expressions joined by `AND` (or `,`).
    And(Vec<SubExpression>),
    /// Two or more sub-expressions joined by `OR`.
    Or(Vec<SubExpression>),
    /// `left MINUS right`; exclusion is binary, a chain needs brackets.
    Minus(Box<SubExpression>, Box<SubExpression>),
    /// A dotted expression: the values of the attributes named after each `.`, applied left to right.
    Dotted(Box<SubExpression>, Vec<SubExpression>),
}

/// One operand: an optional hierarchy operator, an optional member-of, a focus and its filters.
#[derive(Debug, Clone, PartialEq)]
pub struct SubExpression {
    /// `<`, `<<`, `>!`, … applied to the focus (after member-of and member filters).
    pub operator: Option<ConstraintOperator>,
    /// `^` (with optional refset field selection): the focus names reference sets.
    pub member_of: Option<MemberOf>,
    /// The concept, wildcard, alternate identifier or bracketed expression.
    pub focus: Focus,
    /// `{{ M … }}` filters on the reference set members (only with `member_of`).
    pub member_filters: Vec<Vec<MemberFilter>>,
    /// `{{ D … }}` and `{{ C … }}` filters, in source order.
    pub filters: Vec<FilterConstraint>,
    /// `{{ +HISTORY… }}`.
    pub history: Option<HistorySupplement>,
}

impl SubExpression {
    /// A bare focus with no operator, member-of or filters.
    pub fn focus(focus: Focus) -> Self {
        Self {
            operator: None,
            member_of: None,
            focus,
            member_filters: Vec::new(),
            filters: Vec::new(),
            history: None,
        }
    }
}

/// Hierarchy operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConstraintOperator {
    /// `<` descendantOf
    DescendantOf,
    /// `<<` descendantOrSelfOf
    DescendantOrSelfOf,
    /// `<!` childOf
    ChildOf,
    /// `<<!` childOrSelfOf
    ChildOrSelfOf,
    /// `>` ancestorOf
    AncestorOf,
    /// `>>` ancestorOrSelfOf
    AncestorOrSelfOf,
    /// `>!` parentOf
    ParentOf,
    /// `>>!` parentOrSelfOf
    ParentOrSelfOf,
    /// `!!>` top: the members of the set that have no ancestor in the set
    Top,
    /// `!!<` bottom: the members of the set that have no descendant in the set
    Bottom,
}

/// `^`, optionally with `[field, …]` or `[*]` selecting what each member contributes.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberOf {
    /// `None`: the referenced components (plain `^`).
    pub fields: Option<RefsetFields>,
}

/// Which reference set fields `^ [ … ]` returns.
#[derive(Debug, Clone, PartialEq)]
pub enum RefsetFields {
    /// `[*]`: every field.
    All,
    /// Named fields, e.g. `[targetComponentId]`.
    Named(Vec<String>),
}

/// What a sub-expression starts from.
#[derive(Debug, Clone, PartialEq)]
pub enum Focus {
    /// A concept id, optionally with its term.
    Concept(ConceptReference),
    /// `*` (long syntax `ANY`): every concept.
    Wildcard,
    /// An alternate identifier such as `LOINC#54486-6`.
    AltId(AltIdentifier),
    /// A bracketed expression constraint.
    Nested(Box<Expression>),
}

/// `404684003 |Clinical finding|`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConceptReference {
    /// The identifier.
    pub id: SctId,
    /// The term between pipes, trimmed; informative only.
    pub term: Option<String>,
}

impl ConceptReference {
    /// A reference without a term.
    pub fn new(id: SctId) -> Self {
        Self { id, term: None }
    }
}

/// `scheme#code`, e.g. `LOINC#54486-6` or `"http://loinc.org#54486-6"`.
#[derive(Debug, Clone, PartialEq)]
pub struct AltIdentifier {
    /// The scheme alias before `#`.
    pub scheme: String,
    /// The code after `#`.
    pub code: String,
    /// The term between pipes, trimmed.
    pub term: Option<String>,
}

/// A refinement after `:`.
#[derive(Debug, Clone, PartialEq)]
pub enum Refinement {
    /// One attribute constraint.
    Attribute(Box<Attribute>),
    /// `[n..m] { … }`: the inner constraints must hold within one role group.
    Group(AttributeGroup),
    /// All must hold (`,` or `AND`).
    And(Vec<Refinement>),
    /// At least one must hold.
    Or(Vec<Refinement>),
}

/// `[cardinality] { attribute set }`.
#[derive(Debug, Clone, PartialEq)]
pub struct AttributeGroup {
    /// How many groups must match; default `[1..*]`.
    pub cardinality: Option<Cardinality>,
    /// The attribute set (attributes, `And` and `Or` only; never a group).
    pub body: Box<Refinement>,
}

/// `[cardinality] [R] name op value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    /// How many non-redundant attributes must match (the specification counts attributes of the concept's
    /// definition, not relationship rows: see `snomed::ecl_eval`); default `[1..*]`.
    pub cardinality: Option<Cardinality>,
    /// `R`: the relationship points from the value to the focus concept.
    pub reverse: bool,
    /// The attribute type(s).
    pub name: SubExpression,
    /// The value constraint.
    pub value: AttributeValue,
}

/// `[min..max]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cardinality {
    /// Minimum count.
    pub min: u32,
    /// Maximum count; `None` is `*` (many).
    pub max: Option<u32>,
}

/// `=` or `!=` (long syntax also `NOT =`, `<>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EqOp {
    /// `=`
    Eq,
    /// `!=`
    Ne,
}

/// Comparison operators for numbers and times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// Whether `ordering` (the left value compared with the right) satisfies this operator.
    pub fn holds(self, ordering: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match self {
            CmpOp::Eq => ordering == Equal,
            CmpOp::Ne => ordering != Equal,
            CmpOp::Lt => ordering == Less,
            CmpOp::Le => ordering != Greater,
            CmpOp::Gt => ordering == Greater,
            CmpOp::Ge => ordering != Less,
        }
    }
}

/// The right-hand side of an attribute constraint.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    /// `= << 39057004`.
    Expression(EqOp, SubExpression),
    /// `>= #500`.
    Numeric(CmpOp, Number),
    /// `= "PANADOL"`, `= ("a" "b")`, `= wild:"PAN*"`.
    String(EqOp, Vec<SearchTerm>),
    /// `= true`.
    Boolean(EqOp, bool),
}

/// A decimal or integer as written (`500`, `-2.5`, `+3`); compared numerically.
#[derive(Debug, Clone, PartialEq)]
pub struct Number {
    /// The source text: optional sign, digits, optional fraction.
    pub text: String,
}

impl Number {
    /// The value as a float (exact for the integers and short decimals that occur in SNOMED CT).
    pub fn value(&self) -> f64 {
        self.text.parse().unwrap_or(f64::NAN)
    }
}

/// How a search term matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SearchKind {
    /// Word-prefix match (`match:` or no keyword).
    Match,
    /// Wildcard pattern with `*` (`wild:`).
    Wild,
}

/// A quoted search term.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchTerm {
    /// Match or wild.
    pub kind: SearchKind,
    /// The text between the quotes exactly as written, escapes (`\"`, `\\`, `\*`) included.
    pub raw: String,
}

impl SearchTerm {
    /// The text with `\"` and `\\` unescaped; for wild terms `\*` stays escaped so a literal star can be told
    /// from a wildcard.
    pub fn unescaped(&self) -> String {
        let mut out = String::with_capacity(self.raw.len());
        let mut chars = self.raw.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some('*') => out.push_str("\\*"),
                    Some(other) => out.push(other),
                    None => out.push('\\'),
                }
            } else {
                out.push(c);
            }
        }
        out
    }
}

/// `{{ D … }}` or `{{ C … }}`.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterConstraint {
    /// Description filters; a concept passes if one of its descriptions passes all of them.
    Description(Vec<DescriptionFilter>),
    /// Concept filters; all must hold.
    Concept(Vec<ConceptFilter>),
}

/// A concept set given by an expression or an explicit list `(id id …)`.
#[derive(Debug, Clone, PartialEq)]
pub enum ConceptSet {
    /// A sub-expression.
    Expression(Box<SubExpression>),
    /// An explicit list of two or more concepts.
    List(Vec<ConceptReference>),
}

/// One filter inside `{{ D … }}`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DescriptionFilter {
    /// `term = "heart att"`: matches if any of the terms matches.
    Term(EqOp, Vec<SearchTerm>),
    /// `language = en` (two-letter codes).
    Language(EqOp, Vec<String>),
    /// `typeId = 900000000000013009`.
    TypeId(EqOp, ConceptSet),
    /// `type = syn`.
    Type(EqOp, Vec<DescriptionType>),
    /// `dialectId = 900000000000509007 (prefer)`.
    DialectId(EqOp, DialectIds, Option<Acceptability>),
    /// `dialect = en-gb (accept)`.
    Dialect(
        EqOp,
        Vec<(String, Option<Acceptability>)>,
        Option<Acceptability>,
    ),
    /// `moduleId = …`.
    Module(EqOp, ConceptSet),
    /// `effectiveTime >= "20200131"`.
    EffectiveTime(CmpOp, Vec<String>),
    /// `active = true`.
    Active(EqOp, ActiveValue),
    /// `id = 670169018`.
    Id(EqOp, Vec<SctId>),
}

/// The value of a `dialectId` filter.
#[derive(Debug, Clone, PartialEq)]
pub enum DialectIds {
    /// A sub-expression giving language reference sets.
    Expression(Box<SubExpression>),
    /// `( id [acceptability] … )`.
    List(Vec<(ConceptReference, Option<Acceptability>)>),
}

/// Acceptability constraint after a dialect.
#[derive(Debug, Clone, PartialEq)]
pub enum Acceptability {
    /// `(accept prefer)`.
    Tokens(Vec<AcceptabilityToken>),
    /// `(900000000000548007 |Preferred|)`.
    Concepts(Vec<ConceptReference>),
}

/// `accept` / `prefer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AcceptabilityToken {
    /// 900000000000549004 |Acceptable|
    Acceptable,
    /// 900000000000548007 |Preferred|
    Preferred,
}

/// `syn` / `fsn` / `def`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DescriptionType {
    /// 900000000000013009 |Synonym|
    Synonym,
    /// 900000000000003001 |Fully specified name|
    FullySpecifiedName,
    /// 900000000000550004 |Definition|
    Definition,
}

/// `active = …`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActiveValue {
    /// `1` / `true`.
    True,
    /// `0` / `false`.
    False,
    /// `*`: active or not.
    Any,
}

/// One filter inside `{{ C … }}`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ConceptFilter {
    /// `definitionStatusId = 900000000000074008`.
    DefinitionStatusId(EqOp, ConceptSet),
    /// `definitionStatus = primitive`.
    DefinitionStatus(EqOp, Vec<DefinitionStatus>),
    /// `moduleId = …`.
    Module(EqOp, ConceptSet),
    /// `effectiveTime >= "20200131"`.
    EffectiveTime(CmpOp, Vec<String>),
    /// `active = true`.
    Active(EqOp, ActiveValue),
}

/// `primitive` / `defined`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DefinitionStatus {
    /// 900000000000074008 |Primitive|
    Primitive,
    /// 900000000000073002 |Defined|
    Defined,
}

/// One filter inside `{{ M … }}`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum MemberFilter {
    /// `moduleId = …`.
    Module(EqOp, ConceptSet),
    /// `effectiveTime >= "20200131"`.
    EffectiveTime(CmpOp, Vec<String>),
    /// `active = true`.
    Active(EqOp, ActiveValue),
    /// `mapTarget = "J45.9"`, `mapGroup = #2`, `targetComponentId = << 123`.
    Field(String, FieldComparison),
}

/// How a reference set field is compared.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldComparison {
    /// Concept-valued field against an expression.
    Expression(EqOp, SubExpression),
    /// Numeric field.
    Numeric(CmpOp, Number),
    /// String field against search terms.
    String(EqOp, Vec<SearchTerm>),
    /// Boolean field.
    Boolean(EqOp, bool),
    /// Time field with an ordering comparison (`=`/`!=` with quotes parse as `String`).
    Time(CmpOp, Vec<String>),
}

/// `{{ +HISTORY… }}`.
#[derive(Debug, Clone, PartialEq)]
pub enum HistorySupplement {
    /// `HISTORY-MIN`, `HISTORY-MOD`, `HISTORY-MAX`, or plain `HISTORY` (`None`, which means the maximum).
    Profile(Option<HistoryProfile>),
    /// `HISTORY (expression)`: the association reference sets to follow.
    Subset(Box<Expression>),
}

/// The history profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HistoryProfile {
    /// SAME AS only.
    Min,
    /// SAME AS, REPLACED BY, WAS A, PARTIALLY EQUIVALENT TO.
    Mod,
    /// Every historical association.
    Max,
}

impl Expression {
    /// The concept ids the expression names as a focus, an attribute name or an attribute value, at any depth
    /// (not those inside `{{ }}` filters). An API that refuses malformed identifiers checks these, so that an
    /// expression answers the same as the concept route for an id with a wrong check digit.
    pub fn concept_ids(&self) -> Vec<SctId> {
        let mut out = Vec::new();
        collect_expression(self, &mut out);
        out
    }
}

fn collect_expression(e: &Expression, out: &mut Vec<SctId>) {
    match e {
        Expression::Sub(s) => collect_sub(s, out),
        Expression::Refined(s, r) => {
            collect_sub(s, out);
            collect_refinement(r, out);
        }
        Expression::And(v) | Expression::Or(v) => v.iter().for_each(|s| collect_sub(s, out)),
        Expression::Minus(a, b) => {
            collect_sub(a, out);
            collect_sub(b, out);
        }
        Expression::Dotted(s, v) => {
            collect_sub(s, out);
            v.iter().for_each(|s| collect_sub(s, out));
        }
    }
}

fn collect_sub(s: &SubExpression, out: &mut Vec<SctId>) {
    match &s.focus {
        Focus::Concept(c) => out.push(c.id),
        Focus::Nested(e) => collect_expression(e, out),
        Focus::Wildcard | Focus::AltId(_) => {}
    }
}

fn collect_refinement(r: &Refinement, out: &mut Vec<SctId>) {
    match r {
        Refinement::Attribute(a) => {
            collect_sub(&a.name, out);
            if let AttributeValue::Expression(_, v) = &a.value {
                collect_sub(v, out);
            }
        }
        Refinement::Group(g) => collect_refinement(&g.body, out),
        Refinement::And(v) | Refinement::Or(v) => v.iter().for_each(|r| collect_refinement(r, out)),
    }
}
