//! The ranges every number read from a configuration must fall in, checked
//! when it is loaded: what keeps a hostile or mistyped value (`timeout_s =
//! 1e308`, `outputs_per_input = 4294967295`) from becoming a panic or an
//! allocation the machine cannot make, and turns it into a message naming
//! the field.
//!
//! Work caps of the things a configuration runs live next to them:
//! expressions in [`probity_core::validator::expr`] (operations, sizes,
//! time, stack), templates in [`crate::config::template`] (fuel, recursion, size).

use std::time::Duration;

/// Longest duration a setting may ask for, in seconds: 30 days. Far beyond
/// any call or run, far below what `Duration` or `Instant` overflow on.
pub const MAX_SECONDS: f64 = 30.0 * 24.0 * 3600.0;
/// Largest M (outputs per input).
pub const MAX_OUTPUTS_PER_INPUT: usize = 1_000_000;
/// Largest N × M, the samples of one run.
pub const MAX_SAMPLES: usize = 10_000_000;
/// Largest N × M × K, the cells of one run's tensor.
pub const MAX_CELLS: usize = 1_000_000_000;
/// Most checks (validators and verifiers) in one configuration.
pub const MAX_CHECKS: usize = 10_000;
/// Largest number of calls in flight at once.
pub const MAX_CONCURRENCY: usize = 10_000;
/// Most attempts per call, or per guarded sample.
pub const MAX_ATTEMPTS: u32 = 1_000;

/// `v` seconds as a duration, when positive, finite and at most
/// [`MAX_SECONDS`]; otherwise a message naming `field`.
pub fn seconds(field: &str, v: f64) -> Result<Duration, String> {
    if v.is_finite() && v > 0.0 && v <= MAX_SECONDS {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(format!(
            "{field} = {v} must be a positive number of seconds, at most {MAX_SECONDS} (30 days)"
        ))
    }
}

/// A duration already checked by [`seconds`], clamped for code paths that
/// were not (an [`crate::Experiment`] built in code).
pub fn clamp_seconds(v: f64) -> Duration {
    if v.is_finite() && v > 0.0 {
        Duration::from_secs_f64(v.min(MAX_SECONDS))
    } else {
        Duration::ZERO
    }
}

/// Whether N inputs × M outputs × K checks are within the bounds; a
/// message naming them otherwise.
pub fn shape(n: usize, m: usize, k: usize) -> Result<(), String> {
    if m > MAX_OUTPUTS_PER_INPUT {
        return Err(format!(
            "outputs_per_input = {m} is more than {MAX_OUTPUTS_PER_INPUT}"
        ));
    }
    if k > MAX_CHECKS {
        return Err(format!("{k} checks are more than {MAX_CHECKS}"));
    }
    match n.checked_mul(m) {
        Some(s) if s <= MAX_SAMPLES => {}
        _ => {
            return Err(format!(
                "{n} inputs × outputs_per_input = {m} is more than {MAX_SAMPLES} samples"
            ))
        }
    }
    match n.checked_mul(m).and_then(|s| s.checked_mul(k)) {
        Some(c) if c <= MAX_CELLS => Ok(()),
        _ => Err(format!(
            "{n} inputs × {m} outputs × {k} checks is more than {MAX_CELLS} cells"
        )),
    }
}
