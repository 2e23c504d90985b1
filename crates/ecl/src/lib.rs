//! The SNOMED CT Expression Constraint Language (ECL): grammar, abstract syntax tree and printer.
//!
//! This crate answers "what does this ECL expression mean?" as a tree; it knows nothing of any store. Evaluation
//! over a SNOMED CT release lives in the `snomed` crate.
//!
//! It follows ECL 2.2 (brief and long syntax) and the additions of the specification's development branch
//! (`active = *`, concrete string sets), and can restrict input to the ECL Lite profile.
//!
//! ```
//! use ecl::{parse, print, Expression, Syntax};
//!
//! let e = parse("< 404684003 |Clinical finding| : 363698007 |Finding site| = << 39057004").unwrap();
//! assert!(matches!(e, Expression::Refined(..)));
//! // Printing and parsing again gives the same tree.
//! assert_eq!(parse(&print(&e, Syntax::Long)).unwrap(), e);
//!
//! // Mixing AND and OR without brackets is an error, with its byte offset.
//! let err = parse("< 1234567 AND < 2345678 OR < 3456789").unwrap_err();
//! assert_eq!(err.offset, 24);
//! ```

mod ast;
mod error;
mod parser;
mod printer;

pub use ast::{
    Acceptability, AcceptabilityToken, ActiveValue, AltIdentifier, Attribute, AttributeGroup,
    AttributeValue, Cardinality, CmpOp, ConceptFilter, ConceptReference, ConceptSet,
    ConstraintOperator, DefinitionStatus, DescriptionFilter, DescriptionType, DialectIds, EqOp,
    Expression, FieldComparison, FilterConstraint, Focus, HistoryProfile, HistorySupplement,
    MemberFilter, MemberOf, Number, Refinement, RefsetFields, SctId, SearchKind, SearchTerm,
    SubExpression,
};
pub use error::{ParseError, ParseErrorKind};
pub use parser::{MAX_DEPTH, Profile, parse, parse_with};
pub use printer::{Syntax, print};
