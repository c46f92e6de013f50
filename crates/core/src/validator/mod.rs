//! Validators (paper §2.1, §3.1): named checks with a message, a predicate
//! over the output (or over input and output), a minimum success percentage
//! and a weight. (TO BE IMPLEMENTED: builtin kinds, expressions, evaluation.)

use crate::model::Input;
use crate::verdict::Verdict;
use std::sync::Arc;

/// The predicate behind a validator.
#[derive(Clone)]
pub enum Check {
    /// A Rust closure over the output: the paper's `lambda o`.
    Output(Arc<dyn Fn(&str) -> bool + Send + Sync>),
    /// A Rust closure over input and output: the paper's `lambda i, o`.
    InputOutput(Arc<dyn Fn(&Input, &str) -> bool + Send + Sync>),
}

/// A named check. Build one with [`Validator::new`].
#[derive(Clone)]
pub struct Validator {
    pub name: String,
    pub message: String,
    pub minimum_success_percentage: f64,
    pub weight: f64,
    pub check: Check,
}

impl Validator {
    /// Apply the check to one output of `input`.
    pub fn evaluate(&self, input: &Input, output: &str) -> Verdict {
        match &self.check {
            Check::Output(f) => Verdict::from_bool(f(output)),
            Check::InputOutput(f) => Verdict::from_bool(f(input, output)),
        }
    }
}
