//! Verdicts against a minimum success percentage, and sample sizes
//! (docs/architecture.md, Design decisions: "Verdict per validator against its minimum
//! success percentage").

use super::error::{check_confidence, check_threshold, StatsError};
use super::interval::{normal_quantile, proportion_interval, z_value, Interval, IntervalMethod};
use super::rate::{RateEstimate, Scope, MIN_INPUTS};
use super::reason::{NotEstablished, TheseInputs};
use serde::{Deserialize, Serialize};

/// How a rate is compared with its threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "kebab-case")]
pub enum VerdictMode {
    /// The paper: pass iff p̂ ≥ threshold.
    #[default]
    Point,
    /// Pass iff the interval's lower end ≥ threshold, fail otherwise.
    LowerBound,
    /// Pass iff lower ≥ threshold, fail iff upper < threshold, otherwise
    /// inconclusive.
    ThreeWay,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum Decision {
    Pass,
    Fail,
    Inconclusive,
}

/// The verdict of one rate against one threshold.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ThresholdVerdict {
    pub decision: Decision,
    pub threshold: f64,
    /// The interval lies entirely on the decided side of the threshold: a
    /// pass is established iff lower ≥ threshold, a fail iff
    /// upper < threshold; an inconclusive verdict never is.
    pub established: bool,
    /// Total observations (raw samples, design effect included) at which
    /// the verdict is established if p̂ stays where it is: `Some(rate.n)`
    /// when already established, `None` when it can never be (p̂ exactly at
    /// the threshold, nothing observed, an invalid threshold or confidence,
    /// or more than [`MAX_SAMPLES`] samples needed).
    pub samples_needed: Option<u64>,
    /// Why it is not established and what would settle it; `None` when
    /// established.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<NotEstablished>,
}

impl ThresholdVerdict {
    /// How many samples beyond the `n` already observed would establish the
    /// verdict (0 when it is established); `None` as for `samples_needed`.
    pub fn additional_samples(&self, n: u64) -> Option<u64> {
        self.samples_needed.map(|m| m.saturating_sub(n))
    }
}

/// The largest sample size [`judge`] projects to (10¹²); beyond it
/// `samples_needed` is `None`.
pub const MAX_SAMPLES: u64 = 1_000_000_000_000;

/// Judge `rate` against `threshold` (a minimum success rate in [0, 1]).
///
/// With p̂ = `rate.estimate` and [lower, upper] = `rate.interval` (computed
/// with `method` at `rate.confidence`):
///
/// * [`VerdictMode::Point`] (the paper, §3.3): Pass iff p̂ ≥ threshold;
/// * [`VerdictMode::LowerBound`]: Pass iff lower ≥ threshold, else Fail;
/// * [`VerdictMode::ThreeWay`]: Pass iff lower ≥ threshold, Fail iff
///   upper < threshold, else Inconclusive.
///
/// `established`: Pass and lower ≥ threshold, or Fail and upper < threshold.
///
/// `samples_needed`: `Some(rate.n)` when established. Otherwise the smallest
/// total raw sample count N such that the interval of `method` at
/// `rate.confidence` around the current p̂, computed at the effective size
/// N / deff (deff = `rate.design_effect`), excludes the threshold on p̂'s
/// side (lower ≥ threshold if p̂ > threshold, upper < threshold if
/// p̂ < threshold) — found by doubling then binary search over N. In
/// lower-bound mode a not-established Fail with p̂ > threshold therefore
/// gets the size at which it would turn into an established Pass.
///
/// Scope: a verdict is established only when the interval it rests on is
/// about the population of inputs ([`Scope::Population`]); a rate about
/// these inputs only (one input, fewer than [`super::rate::MIN_INPUTS`]) can pass
/// or fail in point mode but is never established, and in lower-bound and
/// three-way mode it is Inconclusive (three-way) or a not-established Fail.
///
/// A threshold that is NaN or outside [0, 1] (e.g. 95 for 95 %) gives
/// Inconclusive, not established, no projection; [`try_judge`] returns it
/// as an error instead. A rate over nothing (n = 0: every output erred, or
/// none was taken) is Inconclusive in every mode, with why
/// [`NotEstablished::NothingObserved`]: no data is not a failure of the
/// system.
pub fn judge(
    rate: &RateEstimate,
    threshold: f64,
    mode: VerdictMode,
    method: IntervalMethod,
) -> ThresholdVerdict {
    let p = rate.estimate;
    let iv = rate.interval;
    if !(0.0..=1.0).contains(&threshold) || p.is_nan() {
        return ThresholdVerdict {
            decision: Decision::Inconclusive,
            threshold,
            established: false,
            samples_needed: None,
            why_not: Some(NotEstablished::InvalidThreshold),
        };
    }
    if rate.n == 0 {
        return ThresholdVerdict {
            decision: Decision::Inconclusive,
            threshold,
            established: false,
            samples_needed: None,
            why_not: Some(NotEstablished::NothingObserved),
        };
    }
    let valid_scope = rate.scope == Scope::Population;
    let pass_est = valid_scope && iv.lower >= threshold;
    let fail_est = valid_scope && iv.upper < threshold;
    let decision = match mode {
        VerdictMode::Point => {
            if p >= threshold {
                Decision::Pass
            } else {
                Decision::Fail
            }
        }
        VerdictMode::LowerBound => {
            if pass_est {
                Decision::Pass
            } else {
                Decision::Fail
            }
        }
        VerdictMode::ThreeWay => {
            if pass_est {
                Decision::Pass
            } else if fail_est {
                Decision::Fail
            } else {
                Decision::Inconclusive
            }
        }
    };
    let established = match decision {
        Decision::Pass => pass_est,
        Decision::Fail => fail_est,
        Decision::Inconclusive => false,
    };
    let samples_needed = if established {
        Some(rate.n)
    } else if !valid_scope {
        // More outputs of the same few inputs cannot establish a claim
        // about inputs in general.
        None
    } else {
        samples_to_establish(
            p,
            threshold,
            rate.n,
            rate.design_effect,
            rate.confidence,
            method,
        )
    };
    let why_not = (!established).then(|| {
        if rate.n == 0 {
            NotEstablished::NothingObserved
        } else if rate.scope == Scope::TheseInputs && rate.inputs < MIN_INPUTS {
            NotEstablished::TooFewInputs {
                inputs: rate.inputs,
                inputs_needed: MIN_INPUTS,
            }
        } else if rate.scope == Scope::TheseInputs {
            NotEstablished::Unclustered {
                inputs: rate.inputs,
            }
        } else if let Some(u) = unseen_minority(rate, threshold) {
            u
        } else {
            NotEstablished::Straddles {
                lower: iv.lower,
                upper: iv.upper,
                samples_needed,
            }
        }
    });
    // Only more inputs settle an unseen minority: its samples are those
    // inputs' outputs, at the outputs per input the run has.
    let samples_needed = match why_not {
        Some(NotEstablished::UnseenMinority { inputs_needed, .. }) => {
            inputs_needed.map(|g| samples_of_inputs(rate, g))
        }
        _ => samples_needed,
    };
    ThresholdVerdict {
        decision,
        threshold,
        established,
        samples_needed,
        why_not,
    }
}

/// [`NotEstablished::UnseenMinority`] when the interval's end on the
/// estimate's side of `threshold` is the allowance for an unseen minority
/// ([`super::unseen::allowance`], which the default clustered interval
/// reaches at least to) and that allowance is what keeps the verdict from
/// being established; `None` otherwise (a rate about these inputs only,
/// one output per input, an interval that reaches further on its own).
fn unseen_minority(rate: &RateEstimate, threshold: f64) -> Option<NotEstablished> {
    let a = super::unseen::allowance(rate.estimate, rate.inputs, rate.confidence);
    // The interval's end is the allowance, or the all-pass sample's end
    // below it (`unseen::all_pass_lower`): both are what few inputs allow.
    let cap = super::unseen::all_pass_lower(rate.inputs, rate.confidence);
    let reach = if cap.is_finite() {
        Interval {
            lower: a.lower.min(cap),
            upper: a.upper.max(1.0 - cap),
        }
    } else {
        a
    };
    unseen_minority_within(rate, threshold, a, reach)
}

/// The outputs `g` inputs are at the run's outputs per input.
pub fn samples_of_inputs(rate: &RateEstimate, g: u64) -> u64 {
    (g as f64 * rate.n as f64 / rate.inputs.max(1) as f64).ceil() as u64
}

/// [`NotEstablished::UnseenMinority`] when `rate`'s interval ends where
/// an unseen minority's allowance `a` takes it (at `reach` or beyond: the
/// allowance as an interval built on it widens it, e.g. the
/// judge-corrected one by the judge's own uncertainty) and `a` is what
/// keeps the verdict from being established; `None` otherwise.
pub fn unseen_minority_within(
    rate: &RateEstimate,
    threshold: f64,
    a: Interval,
    reach: Interval,
) -> Option<NotEstablished> {
    let (p, iv) = (rate.estimate, rate.interval);
    if rate.scope != Scope::Population || rate.n <= rate.inputs || p == threshold {
        return None;
    }
    let (reach_lower, reach_upper) = (reach.lower, reach.upper);
    let failing = p > threshold;
    let binding = if failing {
        iv.lower >= reach_lower - 1e-12 && a.lower < threshold
    } else {
        iv.upper <= reach_upper + 1e-12 && a.upper >= threshold
    };
    if !binding {
        return None;
    }
    let these = proportion_interval(
        p * rate.n as f64,
        rate.n as f64,
        rate.confidence,
        IntervalMethod::ClopperPearson,
    );
    Some(NotEstablished::UnseenMinority {
        inputs: rate.inputs,
        share: super::unseen::unseen_share(rate.inputs, rate.confidence),
        failing,
        inputs_needed: super::unseen::inputs_to_rule_out(p, threshold, rate.confidence),
        these_inputs: TheseInputs {
            lower: these.lower,
            upper: these.upper,
            established: if failing {
                these.lower >= threshold
            } else {
                these.upper < threshold
            },
        },
    })
}

/// [`judge`] with invalid input as an error: a threshold outside [0, 1]
/// or NaN ([`StatsError::Threshold`]), a rate's confidence outside (0, 1)
/// ([`StatsError::Confidence`]), or an estimate outside [0, 1]
/// ([`StatsError::Rate`]).
pub fn try_judge(
    rate: &RateEstimate,
    threshold: f64,
    mode: VerdictMode,
    method: IntervalMethod,
) -> Result<ThresholdVerdict, StatsError> {
    check_threshold(threshold)?;
    check_confidence(rate.confidence)?;
    super::error::check_rate(rate.estimate)?;
    Ok(judge(rate, threshold, mode, method))
}

/// Whether the interval around `p` at raw size `n_raw` (effective size
/// `n_raw / deff`) excludes `threshold` on `p`'s side.
pub fn excludes_threshold(
    p: f64,
    threshold: f64,
    n_raw: u64,
    design_effect: f64,
    confidence: f64,
    method: IntervalMethod,
) -> bool {
    let deff = if design_effect.is_finite() && design_effect > 0.0 {
        design_effect
    } else {
        1.0
    };
    let n_eff = n_raw as f64 / deff;
    let iv = proportion_interval(p * n_eff, n_eff, confidence, method);
    if p > threshold {
        iv.lower >= threshold
    } else if p < threshold {
        iv.upper < threshold
    } else {
        false
    }
}

/// Smallest raw N ≥ 1 with [`excludes_threshold`], or None (see [`judge`]).
fn samples_to_establish(
    p: f64,
    threshold: f64,
    n: u64,
    deff: f64,
    confidence: f64,
    method: IntervalMethod,
) -> Option<u64> {
    if n == 0 || p == threshold || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let ok = |m: u64| excludes_threshold(p, threshold, m, deff, confidence, method);
    // Doubling from the current size to find a bracket (lo fails, hi works).
    let mut hi = n.max(1);
    let mut lo = 0u64;
    while !ok(hi) {
        lo = hi;
        if hi >= MAX_SAMPLES {
            return None;
        }
        hi = hi.saturating_mul(2).min(MAX_SAMPLES);
    }
    // Shrink the bracket: invariant !ok(lo) (or lo = 0) and ok(hi).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// Sample size for a target margin of error: the smallest n ≥ 1 with Wald
/// half-width z·sqrt(p(1−p)/n) ≤ `margin` (paper §3.4), i.e.
/// n = ⌈z² p(1−p) / margin²⌉ with z = [`z_value`]`(confidence)`.
///
/// Errors: `p` outside [0, 1] or NaN ([`StatsError::Rate`]: 1.5 is not a
/// rate), `margin` not in (0, 1] ([`StatsError::Margin`]), confidence
/// outside (0, 1). The result saturates at `u64::MAX`.
pub fn sample_size_for_margin(p: f64, margin: f64, confidence: f64) -> Result<u64, StatsError> {
    super::error::check_rate(p)?;
    if !(margin > 0.0 && margin <= 1.0) {
        return Err(StatsError::Margin(margin));
    }
    check_confidence(confidence)?;
    let z = z_value(confidence);
    let var = p * (1.0 - p);
    let half = |n: u64| z * (var / n as f64).sqrt();
    let raw = (z * z * var / (margin * margin)).ceil();
    if raw.is_nan() || raw >= 1.8e19 {
        return Ok(u64::MAX);
    }
    let mut n = (raw as u64).max(1);
    // Settle floating-point rounding of the ceiling.
    while half(n) > margin && n < u64::MAX {
        n += 1;
    }
    while n > 1 && half(n - 1) <= margin {
        n -= 1;
    }
    Ok(n)
}

/// Samples needed by a one-sided one-sample binomial test (normal
/// approximation) at level `alpha` to detect a true rate `p1` against the
/// null `p0` with probability `power`:
/// n = ⌈((z_α·sqrt(p0(1−p0)) + z_β·sqrt(p1(1−p1))) / (p1 − p0))²⌉,
/// z_α = Φ⁻¹(1 − α), z_β = Φ⁻¹(power). At least 1.
///
/// `p1 == p0`, NaN inputs, rates outside [0, 1] or `alpha`/`power` outside
/// (0, 1) give `u64::MAX` (not reachable); the result saturates.
pub fn samples_to_detect(p0: f64, p1: f64, alpha: f64, power: f64) -> u64 {
    let unit = |v: f64| (0.0..=1.0).contains(&v);
    let open = |v: f64| v > 0.0 && v < 1.0;
    if !(unit(p0) && unit(p1) && open(alpha) && open(power)) || p0 == p1 {
        return u64::MAX;
    }
    let za = normal_quantile(1.0 - alpha);
    let zb = normal_quantile(power);
    let num = za * (p0 * (1.0 - p0)).sqrt() + zb * (p1 * (1.0 - p1)).sqrt();
    let n = (num / (p1 - p0)).powi(2).ceil();
    if n.is_nan() || n >= 1.8e19 {
        return u64::MAX;
    }
    (n as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn margin_textbook() {
        // The classic 1.96² · 0.25 / 0.03² = 1067.07 → 1068 (scipy).
        assert_eq!(sample_size_for_margin(0.5, 0.03, 0.95), Ok(1068));
        assert_eq!(sample_size_for_margin(0.0, 0.01, 0.95), Ok(1));
    }

    /// The case: 1.5 is not a rate; a margin of 0 is never
    /// reached; each an error with a message, never 1 or u64::MAX.
    #[test]
    fn margin_bad_input_is_an_error() {
        let e = sample_size_for_margin(1.5, 0.03, 0.95).unwrap_err();
        assert_eq!(e, StatsError::Rate(1.5));
        assert!(e.to_string().contains("between 0 and 1"), "{e}");
        assert_eq!(
            sample_size_for_margin(0.5, 0.0, 0.95),
            Err(StatsError::Margin(0.0))
        );
        assert!(sample_size_for_margin(f64::NAN, 0.03, 0.95).is_err());
        assert_eq!(
            sample_size_for_margin(0.5, 0.03, 95.0),
            Err(StatsError::Confidence(95.0))
        );
    }

    #[test]
    fn detect_textbook() {
        // z_0.05 = 1.6449, z_0.8 = 0.8416; p0 .9, p1 .95:
        // ((1.6449·0.3 + 0.8416·0.21794)/0.05)² = 183.27 → 184 (scipy).
        assert_eq!(samples_to_detect(0.9, 0.95, 0.05, 0.8), 184);
        assert_eq!(samples_to_detect(0.9, 0.9, 0.05, 0.8), u64::MAX);
        assert_eq!(samples_to_detect(0.9, 0.95, f64::NAN, 0.8), u64::MAX);
    }
}
