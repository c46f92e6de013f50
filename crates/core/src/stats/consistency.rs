//! Consistency of one input's outputs: pass^k (all k outputs pass) and
//! pass@k (at least one of k passes — the paper's success within k
//! attempts, §4.2), estimated without bias from the M outputs observed.
//!
//! For an input with c passes among n evaluated outputs and true pass rate
//! p_i, drawing k of the n outputs without replacement gives the unbiased
//! estimators (for k ≤ n)
//!
//! ```text
//! pass^k = C(c, k) / C(n, k)           E = p_i^k
//! pass@k = 1 − C(n − c, k) / C(n, k)   E = 1 − (1 − p_i)^k
//! ```
//!
//! Per-input intervals transform the interval [l, u] of p_i (the
//! `IntervalMethod` on c of n) monotonically: [l^k, u^k] and
//! [1 − (1 − l)^k, 1 − (1 − u)^k], widened if need be to contain the
//! estimate. The mean over inputs is the mean of the per-input estimates
//! v_i ∈ [0, 1] (unbiased for the population mean of p_i^k, resp.
//! 1 − (1 − p_i)^k); its interval is the score interval on the G inputs
//! with x = Σ v_i ([`beta_binomial_score`] with one value per input, i.e.
//! Wilson on G trials), which is valid because a [0, 1] value with mean μ
//! has variance at most μ(1 − μ) — conservative when the v_i are not 0/1.

use super::betabin::beta_binomial_score;
use super::cluster::ClusterSum;
use super::counts::Counts;
use super::error::{check_confidence, StatsError};
use super::interval::{try_proportion_interval, Interval, IntervalMethod};
use super::rate::{RateEstimate, Scope, MIN_INPUTS};
use serde::{Deserialize, Serialize};

/// C(c, k) / C(n, k) as a product (no overflow): Π_{t<k} (c − t)/(n − t).
fn ratio(c: u64, n: u64, k: u64) -> f64 {
    if k > c {
        return 0.0;
    }
    (0..k).map(|t| (c - t) as f64 / (n - t) as f64).product()
}

/// Unbiased pass^k from `c` passes of `n` outputs; `None` when k > n
/// (fewer outputs than k: not estimable without bias) or k = 0.
pub fn pass_all_k(c: u64, n: u64, k: u32) -> Option<f64> {
    let k = u64::from(k);
    (k >= 1 && k <= n && c <= n).then(|| ratio(c, n, k))
}

/// Unbiased pass@k from `c` passes of `n` outputs; `None` when k > n or
/// k = 0.
pub fn pass_any_k(c: u64, n: u64, k: u32) -> Option<f64> {
    let k = u64::from(k);
    (k >= 1 && k <= n && c <= n).then(|| 1.0 - ratio(n - c, n, k))
}

/// pass^k and pass@k of one input.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct InputConsistency {
    /// The input's index.
    pub index: usize,
    /// Passes c and evaluated outputs n (under the error policy).
    pub passes: u64,
    pub outputs: u64,
    /// C(c,k)/C(n,k) with its interval; `None` when n < k.
    pub pass_all_k: Option<(f64, Interval)>,
    /// 1 − C(n−c,k)/C(n,k) with its interval; `None` when n < k.
    pub pass_any_k: Option<(f64, Interval)>,
}

/// Consistency of one check across inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Consistency {
    /// The k used.
    pub k: u32,
    pub per_input: Vec<InputConsistency>,
    /// Mean of pass^k over the inputs with at least k outputs (`inputs`
    /// says how many), with the interval described in the module docs.
    pub mean_pass_all_k: RateEstimate,
    /// Mean of pass@k over the same inputs.
    pub mean_pass_any_k: RateEstimate,
}

impl Consistency {
    /// From per-input `(passes, outputs)` — e.g. `Counts::successes_of`
    /// for each input — at `confidence` with `method` for the per-input
    /// intervals. Errors: k = 0, confidence outside (0, 1), passes above
    /// outputs.
    pub fn new(
        per_input: &[(u64, u64)],
        k: u32,
        confidence: f64,
        method: IntervalMethod,
    ) -> Result<Consistency, StatsError> {
        if k == 0 {
            return Err(StatsError::K(k));
        }
        check_confidence(confidence)?;
        let kf = i32::try_from(k).unwrap_or(i32::MAX);
        let mut rows = Vec::with_capacity(per_input.len());
        let (mut all, mut any) = (Vec::new(), Vec::new());
        for (index, &(c, n)) in per_input.iter().enumerate() {
            if c > n {
                return Err(StatsError::Counts {
                    successes: c as f64,
                    trials: n as f64,
                });
            }
            let (a, b) = match (pass_all_k(c, n, k), pass_any_k(c, n, k)) {
                (Some(a), Some(b)) => {
                    let iv = try_proportion_interval(c as f64, n as f64, confidence, method)?;
                    let ia = Interval {
                        lower: iv.lower.powi(kf).min(a),
                        upper: iv.upper.powi(kf).max(a),
                    };
                    let ib = Interval {
                        lower: (1.0 - (1.0 - iv.lower).powi(kf)).min(b),
                        upper: (1.0 - (1.0 - iv.upper).powi(kf)).max(b),
                    };
                    all.push(a);
                    any.push(b);
                    (Some((a, ia)), Some((b, ib)))
                }
                _ => (None, None),
            };
            rows.push(InputConsistency {
                index,
                passes: c,
                outputs: n,
                pass_all_k: a,
                pass_any_k: b,
            });
        }
        Ok(Consistency {
            k,
            per_input: rows,
            mean_pass_all_k: mean_of(&all, confidence)?,
            mean_pass_any_k: mean_of(&any, confidence)?,
        })
    }
}

/// The mean of per-input values in [0, 1] with the score interval on G.
fn mean_of(v: &[f64], confidence: f64) -> Result<RateEstimate, StatsError> {
    if v.is_empty() {
        return Ok(RateEstimate::empty(Counts::default(), confidence));
    }
    let clusters: Vec<ClusterSum> = v
        .iter()
        .map(|&x| ClusterSum::from_scores(&[x]))
        .collect::<Result<_, _>>()?;
    let s = beta_binomial_score(&clusters, confidence)?;
    let g = v.len() as u64;
    Ok(RateEstimate {
        estimate: s.estimate,
        counts: Counts::default(),
        n: g,
        inputs: g,
        scope: if g >= MIN_INPUTS {
            Scope::Population
        } else {
            Scope::TheseInputs
        },
        design_effect: 1.0,
        effective_n: g as f64,
        confidence,
        interval: s.interval,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unbiased_estimators() {
        // 7 of 10 pass, k = 3: C(7,3)/C(10,3) = 35/120; 1 − C(3,3)/C(10,3) = 119/120.
        assert!((pass_all_k(7, 10, 3).unwrap() - 35.0 / 120.0).abs() < 1e-15);
        assert!((pass_any_k(7, 10, 3).unwrap() - 119.0 / 120.0).abs() < 1e-15);
        assert_eq!(pass_all_k(2, 10, 3), Some(0.0));
        assert_eq!(pass_any_k(10, 10, 3), Some(1.0));
        assert_eq!(pass_all_k(1, 2, 3), None);
        // k = 1 is the plain rate.
        assert_eq!(pass_all_k(3, 4, 1), Some(0.75));
        assert_eq!(pass_any_k(3, 4, 1), Some(0.75));
    }

    #[test]
    fn consistency_means_and_errors() {
        let c = Consistency::new(&[(10, 10); 6], 3, 0.95, IntervalMethod::Wilson).unwrap();
        assert_eq!(c.mean_pass_all_k.estimate, 1.0);
        assert_eq!(c.mean_pass_all_k.inputs, 6);
        assert!(c.mean_pass_all_k.interval.lower < 1.0);
        assert!(Consistency::new(&[(11, 10)], 3, 0.95, IntervalMethod::Wilson).is_err());
        assert!(Consistency::new(&[(1, 10)], 0, 0.95, IntervalMethod::Wilson).is_err());
    }
}
