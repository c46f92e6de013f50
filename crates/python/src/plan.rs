//! The paper's retry planning (§4.2.2) from assumed per-validator rates,
//! for Python: core's [`RetryPlan`] and [`Geometric`], no arithmetic here.

use probity_core::retry::{Geometric, RetryPlan};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// `(p_pass, expected_attempts, expected_retries, attempts_exact,
/// attempts, success_within_attempts)` for validators passing at `rates`
/// (independent, §4.2.2) and the wanted probability `target` of an
/// output within m attempts. `None` where undefined (p_pass = 0).
#[pyfunction]
#[pyo3(signature = (rates, target=0.99))]
#[allow(clippy::type_complexity)]
pub fn retry_plan(
    rates: Vec<f64>,
    target: f64,
) -> PyResult<(
    f64,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<u32>,
    Option<f64>,
)> {
    let plan = RetryPlan::from_rates(&rates).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let g = Geometric::new(plan.p_independent).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let m = g
        .try_attempts_for(target)
        .map_err(|e| PyValueError::new_err(format!("target: {e}")))?;
    Ok((
        plan.p_independent,
        g.expected_attempts(),
        g.expected_retries(),
        g.attempts_exact(target),
        m,
        m.map(|m| g.success_within(m)),
    ))
}
