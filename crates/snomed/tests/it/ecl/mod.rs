//! ECL evaluation: the hand-built fixture with expected sets, and a differential test against a naive evaluator.

mod cardinality;
mod cases;
mod differential;
mod fixture;
mod naive;
mod release;
