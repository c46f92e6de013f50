//! Bad input to the statistics: an error value, never a silent clamp.

use thiserror::Error;

/// Input outside the domain of a statistic. Every fallible (`try_…`)
/// function in [`crate::stats`] returns one of these instead of adjusting
/// the input (clamping a count, reading 95 as 0.95, treating NaN as 0).
#[derive(Debug, Clone, Copy, PartialEq, Error)]
pub enum StatsError {
    /// A confidence level must lie strictly between 0 and 1.
    #[error("confidence {0} must be strictly between 0 and 1 (e.g. 0.95)")]
    Confidence(f64),
    /// A threshold (minimum success rate) must be a fraction in [0, 1].
    #[error("threshold {0} must be a fraction between 0 and 1 (e.g. 0.95, not 95)")]
    Threshold(f64),
    /// A rate or probability must be a number in [0, 1].
    #[error("rate {0} must be a number between 0 and 1")]
    Rate(f64),
    /// Successes must be a finite number in [0, trials].
    #[error("{successes} successes out of {trials} trials: successes must lie in [0, trials]")]
    Counts { successes: f64, trials: f64 },
    /// Trials must be finite and > 0.
    #[error("{0} trials: the number of trials must be finite and greater than 0")]
    Trials(f64),
    /// A score (one output's value) must lie in [0, 1]; a cluster's sums
    /// must be those of such scores.
    #[error("cluster #{cluster}: sum {sum} (of squares {sum_sq}) over {count} scores is not a sum of scores in [0, 1]")]
    Scores {
        cluster: usize,
        sum: f64,
        sum_sq: f64,
        count: u64,
    },
    /// Nothing was observed: an empty tensor, or every cell missing.
    #[error("nothing was observed: no evaluated cell to estimate a rate from")]
    Empty,
    /// Input weights must be one finite, non-negative number per input,
    /// not all zero.
    #[error("input weights: expected {expected} finite, non-negative weights (one per input), not all zero")]
    Weights { expected: usize },
    /// A margin of error must be a number in (0, 1].
    #[error("margin {0} must be greater than 0 and at most 1 (e.g. 0.03 for ±3 points)")]
    Margin(f64),
    /// Two paired samples must have one value per input each.
    #[error("paired samples of different lengths ({a} and {b}): give one value per input in each")]
    Lengths { a: usize, b: usize },
    /// `k` for pass^k / pass@k must be ≥ 1.
    #[error("k = {0}: pass^k and pass@k need k ≥ 1")]
    K(u32),
}

/// `Ok(c)` for a confidence in the open interval (0, 1).
pub fn check_confidence(c: f64) -> Result<f64, StatsError> {
    if c > 0.0 && c < 1.0 {
        Ok(c)
    } else {
        Err(StatsError::Confidence(c))
    }
}

/// `Ok(t)` for a threshold in [0, 1].
pub fn check_threshold(t: f64) -> Result<f64, StatsError> {
    if (0.0..=1.0).contains(&t) {
        Ok(t)
    } else {
        Err(StatsError::Threshold(t))
    }
}

/// `Ok(p)` for a rate in [0, 1].
pub fn check_rate(p: f64) -> Result<f64, StatsError> {
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(StatsError::Rate(p))
    }
}
