//! Python callables as validators: `lambda o: …` and `lambda i, o: …`
//! (the paper's §2.1), each a column of the tensor.
//!
//! An output's plain predicates are handed to a caller thread together
//! ([`batch`], [`calls`]), an `async def`'s call to the package's event
//! loop; each is waited for without the GIL for at most its timeout, then
//! abandoned (interrupted, or cancelled) with an Error cell, so a
//! predicate that loops forever costs one timeout, not the run. What a
//! verdict may be: [`predicate`].

use crate::batch::{self, Plain};
use crate::inputs::PyInputs;
use crate::predicate::Predicate;
use crate::workers::Workers;
use probity_core::{Input, Validator, Verdict};
use pyo3::prelude::*;
use std::sync::Arc;
use std::time::Duration;

/// One Python validator as the package hands it over.
pub struct PyValidator {
    /// The column among the configuration's validators.
    pub column: usize,
    pub name: String,
    pub message: String,
    pub minimum_success_percentage: f64,
    pub weight: f64,
    /// 1: `f(output)`; 2: `f(input, output)`.
    pub arity: usize,
    pub callable: Py<PyAny>,
    /// An `async def`: run on the package's event loop.
    pub coroutine: bool,
    /// How long one call may take.
    pub timeout: Duration,
}

/// How a column gets its verdict for an input and an output.
type Check = Box<dyn Fn(&Input, &str) -> Verdict + Send + Sync>;

/// A validator's settings beside its predicate.
struct Column {
    column: usize,
    name: String,
    message: String,
    minimum_success_percentage: f64,
    weight: f64,
}

/// The validators calling the `validators`' callables, with their columns.
pub fn validators(
    validators: Vec<PyValidator>,
    inputs: Arc<PyInputs>,
    workers: Workers,
) -> Vec<(usize, Validator)> {
    let made: Vec<(Column, Arc<Predicate>)> = validators
        .into_iter()
        .map(|v| {
            let predicate = Arc::new(Predicate {
                callable: v.callable,
                arity: v.arity,
                coroutine: v.coroutine,
                timeout: v.timeout,
                inputs: inputs.clone(),
                workers: workers.clone(),
            });
            let column = Column {
                column: v.column,
                name: v.name,
                message: v.message,
                minimum_success_percentage: v.minimum_success_percentage,
                weight: v.weight,
            };
            (column, predicate)
        })
        .collect();
    let plain = Arc::new(Plain::new(
        made.iter()
            .filter(|(_, p)| !p.coroutine)
            .map(|(_, p)| p.clone())
            .collect(),
    ));
    let mut next_plain = 0;
    made.into_iter()
        .map(|(v, predicate)| {
            let label = v.name.clone();
            let check: Check = if predicate.coroutine {
                Box::new(move |input, output| predicate.on_the_loop(input, output))
            } else {
                let (plain, p) = (plain.clone(), next_plain);
                next_plain += 1;
                Box::new(move |input, output| batch::verdict(&plain, p, input, output))
            };
            let validator = Validator::new(v.name)
                .message(v.message)
                .minimum_success_percentage(v.minimum_success_percentage)
                .weight(v.weight)
                .check_verdict(
                    move |input: &Input, output: &str| match check(input, output) {
                        Verdict::Error { reason } => {
                            Verdict::error(format!("validator `{label}` {reason}"))
                        }
                        v => v,
                    },
                );
            (v.column, validator)
        })
        .collect()
}
