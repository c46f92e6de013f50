//! The ranges every number read from a configuration must fall in, checked
//! when it is loaded: what keeps a hostile or mistyped value (`timeout_s =
//! 1e308`, `outputs_per_input = 4294967295`) from becoming a panic or an
//! allocation the machine cannot make, and turns it into a message naming
//! the field.
//!
//! Work caps of the things a configuration runs live next to them:
//! expressions in [`probity_core::validator::expr`] (operations, sizes,
//! time, stack), templates in [`crate::provider::template`] (fuel, recursion, size).

use std::time::Duration;

/// Longest duration a setting may ask for, in seconds: 30 days. Far beyond
/// any call or run, far below what `Duration` or `Instant` overflow on.
pub const MAX_SECONDS: f64 = 30.0 * 24.0 * 3600.0;
/// Largest M (outputs per input).
pub const MAX_OUTPUTS_PER_INPUT: usize = 1_000_000;
/// Largest N × M, the samples of one run.
pub const MAX_SAMPLES: usize = 10_000_000;
/// Largest N × M × K, the cells of one run's tensor.
pub(crate) const MAX_CELLS: usize = 1_000_000_000;
/// Most checks (validators and verifiers) in one configuration.
pub(crate) const MAX_CHECKS: usize = 10_000;
/// Largest number of calls in flight at once.
pub const MAX_CONCURRENCY: usize = 10_000;
/// Most attempts per call, or per guarded sample.
pub const MAX_ATTEMPTS: u32 = 1_000;

/// The one rule for a count a setting gives — outputs per input,
/// concurrency, call attempts: from 1 to `most` — with one wording, whichever
/// door the value came through (the file's field, `--set`, a flag, Python):
/// `FIELD must be from 1 to MOST, not V`. `v` is `None` when the value does
/// not even fit a 64-bit count; `shown` is the value as it was given.
pub fn count(
    field: &str,
    v: Option<u64>,
    shown: &dyn std::fmt::Display,
    most: usize,
) -> Result<usize, String> {
    match v {
        Some(v) if v >= 1 && v <= most as u64 => Ok(v as usize),
        _ => Err(format!(
            "{field} must be from 1 to {}, not {shown}",
            grouped(most as u64)
        )),
    }
}

/// [`count`] for a value already held as a `usize`.
pub fn within(field: &str, v: usize, most: usize) -> Result<usize, String> {
    count(field, Some(v as u64), &v, most)
}

/// `n` with its thousands grouped (`1,000,000`), as a person reads a bound.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (at, c) in digits.chars().enumerate() {
        if at > 0 && (digits.len() - at).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

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
pub(crate) fn clamp_seconds(v: f64) -> Duration {
    if v.is_finite() && v > 0.0 {
        Duration::from_secs_f64(v.min(MAX_SECONDS))
    } else {
        Duration::ZERO
    }
}

/// Whether N inputs × M outputs × K checks are within the bounds; a
/// message naming them otherwise.
pub fn shape(n: usize, m: usize, k: usize) -> Result<(), String> {
    within("outputs_per_input", m, MAX_OUTPUTS_PER_INPUT)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_has_one_rule_and_one_wording() {
        assert_eq!(within("concurrency", 16, MAX_CONCURRENCY), Ok(16));
        assert_eq!(
            within("--outputs", 0, MAX_OUTPUTS_PER_INPUT),
            Err("--outputs must be from 1 to 1,000,000, not 0".into())
        );
        assert_eq!(
            within("outputs_per_input", 2_000_001, MAX_OUTPUTS_PER_INPUT),
            Err("outputs_per_input must be from 1 to 1,000,000, not 2000001".into())
        );
        // A value past 64 bits is named as it was given.
        assert_eq!(
            count("outputs_per_input", None, &"1180591620717411303424", 10),
            Err("outputs_per_input must be from 1 to 10, not 1180591620717411303424".into())
        );
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(10_000), "10,000");
    }
}
