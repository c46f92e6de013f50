//! Python callables as validators: `lambda o: …` and `lambda i, o: …`
//! (the paper's §2.1), each a column of the tensor.
//!
//! A callable is called with the GIL held, off the async workers (core's
//! `Check::External`); its result's truth is the verdict. An exception is
//! an Error cell whose cause is the exception's type and message, and
//! `None` (a forgotten `return`) is an Error cell too — never a crash.

use crate::inputs::PyInputs;
use probity_core::{Input, Validator, Verdict};
use pyo3::prelude::*;
use std::sync::Arc;

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
}

/// The validator calling `v.callable`.
pub fn validator(v: PyValidator, inputs: Arc<PyInputs>) -> Validator {
    let PyValidator {
        name,
        message,
        minimum_success_percentage,
        weight,
        arity,
        callable,
        ..
    } = v;
    let label = name.clone();
    Validator::new(name)
        .message(message)
        .minimum_success_percentage(minimum_success_percentage)
        .weight(weight)
        .check_verdict(move |input: &Input, output: &str| {
            crate::thread_state::keep();
            Python::attach(
                |py| match call(py, &callable, &inputs, arity, input, output) {
                    Ok(v) => v,
                    Err(e) => Verdict::error(format!("validator `{label}` raised {e}")),
                },
            )
        })
}

fn call(
    py: Python<'_>,
    f: &Py<PyAny>,
    inputs: &PyInputs,
    arity: usize,
    input: &Input,
    output: &str,
) -> PyResult<Verdict> {
    let result = if arity == 2 {
        f.bind(py).call1((inputs.get(py, input)?, output))?
    } else {
        f.bind(py).call1((output,))?
    };
    if result.is_none() {
        return Ok(Verdict::error(
            "the validator returned None; it must return True or False",
        ));
    }
    Ok(Verdict::from_bool(result.is_truthy()?))
}
