//! ECL evaluation: what concepts does this expression constraint select in this release?
//!
//! Sets are [`RoaringBitmap`]s of dense concept indexes; every operator is a bitmap operation or a walk over the
//! store's precomputed closures and relationship indexes. Evaluation is written against [`EclSource`], which the
//! store implements; a [`Limits`] value bounds the result size and the time spent, so a costly query is stopped
//! with [`EclError::TooLarge`] or [`EclError::Timeout`] rather than by exhausting memory.
//!
//! Meaning choices the specification leaves open are written down where they are made (`eval.rs`,
//! `refine.rs`, `filters.rs`, `history.rs`) and summarised in docs/ARCHITECTURE.md.

mod eval;
mod filters;
mod history;
mod refine;
mod source;
mod store_source;
mod text;

use std::time::{Duration, Instant};

pub use roaring::RoaringBitmap;

pub use source::{ConceptRow, ConcreteRel, Description, EclSource, Member, Rel, TypedEdge, ids};

/// Bounds on one evaluation.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The largest result (number of concepts) returned; larger results are an error.
    pub max_results: u64,
    /// Wall-clock budget for the whole evaluation.
    pub timeout: Duration,
}

impl Default for Limits {
    /// Up to a million concepts (more than any edition has) and 10 seconds.
    fn default() -> Self {
        Self {
            max_results: 1_000_000,
            timeout: Duration::from_secs(10),
        }
    }
}

/// Why an expression could not be evaluated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EclError {
    /// The text is not valid ECL.
    #[error("invalid ECL: {0}")]
    Parse(#[from] ecl::ParseError),
    /// The result would exceed [`Limits::max_results`].
    #[error("the result has {size} concepts, more than the limit of {limit}")]
    TooLarge {
        /// Size reached.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// Evaluation took longer than [`Limits::timeout`].
    #[error("evaluation took longer than {0:?}; narrow the expression")]
    Timeout(Duration),
    /// A dialect alias that is not in the specification's table.
    #[error("unknown dialect alias {0:?}; use dialectId = <language reference set> instead")]
    UnknownDialect(String),
    /// The release has no data for an alternate identifier scheme.
    #[error("no alternate identifier data for scheme {0:?} in this release")]
    UnknownScheme(String),
    /// The attribute of a refinement is not a concept model attribute (the specification requires
    /// 410662002 |Concept model attribute| or a descendant; `name` is the concept with its FSN).
    #[error(
        "{name} is not a concept model attribute{also}: the attribute of a refinement must be \
         410662002 |Concept model attribute| or one of its descendants (or 116680003 |Is a|)"
    )]
    NotAnAttribute {
        /// The first concept the attribute name selects that is not an attribute.
        id: u64,
        /// `id |fully specified name|`.
        name: String,
        /// How many other such concepts the attribute name selects, as text (empty when none).
        also: String,
    },
    /// A construct that cannot be evaluated as written (explained).
    #[error("{0}")]
    Unsupported(String),
}

/// Parses and evaluates `ecl` over `source`.
///
/// The SNOMED store implements [`EclSource`]; this is the entry point for expansion and search constraints.
pub fn evaluate_str<S: EclSource + ?Sized>(
    source: &S,
    ecl: &str,
    limits: &Limits,
) -> Result<RoaringBitmap, EclError> {
    let expression = ecl::parse(ecl)?;
    evaluate(source, &expression, limits)
}

/// How an attribute cardinality (`[n..m] a = v` outside a group, and its reverse form) counts a concept's
/// attributes when the same attribute value appears in more than one role group.
///
/// The specification (ECL, "Attribute cardinality") counts "non-redundant attributes that match the given
/// attribute criteria", "irrespective of the attribute group in which they are contained", in the
/// distribution normal form; its glossary defines a redundant attribute as one "with a value that is subsumed by
/// another attribute in the same group". The two readings below differ on one case only, the same (type, value)
/// in two groups; docs/CONFORMANCE.md ("ECL attribute cardinality and attribute names") has the details.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AttributeCounting {
    /// One attribute per (type, value, group): redundancy is a matter within a group, so the same finding site
    /// in two groups is two finding sites. The official FHIR terminology conformance suite requires this
    /// (`snomed-expand-ecl-refinement-cardinality`: `[1..1]` "excludes concepts with 2+ groups each containing a
    /// liver Finding site"), so `/fhir` and [`evaluate`] count this way.
    #[default]
    PerGroup,
    /// One attribute per distinct (type, value) across all groups: the same finding site in two groups is one
    /// finding site, two different ones are two. Hermes counts this way, and so does Thoth's Hermes-compatible
    /// API.
    Distinct,
}

/// What an evaluation is asked for beyond the expression.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Bounds on the evaluation.
    pub limits: Limits,
    /// How attribute cardinality counts attributes repeated across groups.
    pub counting: AttributeCounting,
    /// Add the inactive concepts that any historical association reference set points from to a member of the
    /// result, as `( ecl ) {{ +HISTORY-MAX }}`: Hermes's `includeHistoric` (its `expand-ecl-historic` follows
    /// every association refset). Built on the tree rather than the text so that parse errors keep their
    /// positions.
    pub history: bool,
}

/// Parses and evaluates `ecl` over `source` with `options`.
pub fn evaluate_str_with<S: EclSource + ?Sized>(
    source: &S,
    ecl: &str,
    options: &Options,
) -> Result<RoaringBitmap, EclError> {
    let mut expression = ecl::parse(ecl)?;
    if options.history {
        let mut wrapped = ecl::SubExpression::focus(ecl::Focus::Nested(Box::new(expression)));
        wrapped.history = Some(ecl::HistorySupplement::Profile(Some(
            ecl::HistoryProfile::Max,
        )));
        expression = ecl::Expression::Sub(Box::new(wrapped));
    }
    evaluate_with(source, &expression, options)
}

/// Evaluates a parsed expression over `source`: the dense indexes of the selected concepts. Attribute
/// cardinality counts per group ([`AttributeCounting::PerGroup`]).
pub fn evaluate<S: EclSource + ?Sized>(
    source: &S,
    expression: &ecl::Expression,
    limits: &Limits,
) -> Result<RoaringBitmap, EclError> {
    evaluate_with(
        source,
        expression,
        &Options {
            limits: *limits,
            ..Options::default()
        },
    )
}

/// Evaluates a parsed expression over `source` with `options` (its `history` flag is for the text forms, which
/// wrap the expression; here the caller builds the tree it wants).
pub fn evaluate_with<S: EclSource + ?Sized>(
    source: &S,
    expression: &ecl::Expression,
    options: &Options,
) -> Result<RoaringBitmap, EclError> {
    let limits = options.limits;
    let mut ctx = eval::Ctx {
        src: source,
        limits,
        deadline: Instant::now() + limits.timeout,
        ticks: 0,
        counting: options.counting,
    };
    let result = ctx.expression(expression)?;
    ctx.check_size(&result)?;
    Ok(result)
}

/// The concept ids of a result, ascending by dense index.
pub fn concept_ids<S: EclSource + ?Sized>(source: &S, result: &RoaringBitmap) -> Vec<u64> {
    result.iter().map(|idx| source.concept_id(idx)).collect()
}
