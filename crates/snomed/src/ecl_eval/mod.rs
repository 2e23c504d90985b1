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

/// Evaluates a parsed expression over `source`: the dense indexes of the selected concepts.
pub fn evaluate<S: EclSource + ?Sized>(
    source: &S,
    expression: &ecl::Expression,
    limits: &Limits,
) -> Result<RoaringBitmap, EclError> {
    let mut ctx = eval::Ctx {
        src: source,
        limits: *limits,
        deadline: Instant::now() + limits.timeout,
        ticks: 0,
    };
    let result = ctx.expression(expression)?;
    ctx.check_size(&result)?;
    Ok(result)
}

/// The concept ids of a result, ascending by dense index.
pub fn concept_ids<S: EclSource + ?Sized>(source: &S, result: &RoaringBitmap) -> Vec<u64> {
    result.iter().map(|idx| source.concept_id(idx)).collect()
}
