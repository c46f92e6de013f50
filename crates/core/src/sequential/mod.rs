//! Sequential testing: stop sampling as soon as every check's verdict is
//! settled (`crates/core/STATISTICS.md`, *Sequential testing*).
//!
//! The unit is an input with all its M outputs: outputs of one input are
//! correlated, so once the intra-class correlation is above 0 more outputs
//! of the same inputs cannot shrink the between-input part of the
//! uncertainty, while more inputs can. In a sequential run N × M is the
//! budget: inputs are visited in a seeded random order
//! ([`input_order`]), in rounds of whole inputs ([`round_end`]); after each
//! round every check's confidence sequence
//! ([`crate::stats::sequential::BettingSequence`]) is fed the round's
//! inputs in that order, each input's observation being its pass share
//! over its judged outputs ([`input_share`]), and [`SequentialTest::decide`]
//! says whether to stop and why ([`StopReason`]).
//!
//! A random permutation of inputs drawn i.i.d. from a population is still
//! i.i.d., so the confidence sequence is for μ = the mean over the
//! population of inputs of their pass rates — what the fixed-size analysis
//! estimates with inputs as clusters.

pub mod test;

pub use crate::summary::sequential::{
    CheckSequence, RoundDesign, SequenceState, SequentialOutcome, StopReason,
};
pub use test::{
    design_for, input_order, input_share, max_outputs, replay, round_end, SequentialTest,
    FUTILITY_MIN_INPUTS, FUTILITY_MIN_OUTPUT_ROUNDS, MIN_ROUND_INPUTS, OUTPUT_ROUNDS_MAX_INPUTS,
};
