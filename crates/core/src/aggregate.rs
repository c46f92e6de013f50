//! Aggregation over validators (paper §3.3 and §3.6.7), each aggregate with
//! an interval.
//!
//! The paper averages the K success percentages. Averaging per-validator
//! rates and averaging per-output scores give the same point estimate when
//! every cell is evaluated, but only the second gives an honest interval:
//! the K verdicts on one output are correlated, and scoring each output
//! first, then taking the clustered mean of the scores over inputs, absorbs
//! that correlation without estimating it (docs/architecture.md, Design decisions).

use crate::options::AnalysisOptions;
use crate::profile::{profile, Profile};
use crate::score::{output_score, ClusterAccumulator};
use crate::stats::{proportion_interval, ClusterSum, Interval, RateEstimate};
use crate::tensor::{Cell, ReliabilityTensor};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// How the K validator rates combine into one (§3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum Aggregate {
    /// §3.3.1: every validator counts the same.
    Mean,
    /// §3.3.2: validators weighted by their `weight` (and inputs by optional
    /// per-input weights, §3.6.7).
    Weighted,
    /// §3.3.3: the lowest validator rate.
    #[default]
    Min,
}

/// An aggregate rate and what it was built from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AggregateResult {
    pub method: Aggregate,
    /// The aggregate success percentage and its interval at
    /// `opts.confidence`. For `Min`, the estimate is the worst validator's
    /// rate and the interval `[min_k lower_k, min_k upper_k]` of per-validator
    /// intervals at confidence `1 − α/K` (Bonferroni), which covers
    /// `min_k p_k` with confidence at least `1 − α`.
    pub rate: RateEstimate,
    /// The validator with the lowest rate (ties: lowest upper bound).
    pub worst_validator: Option<usize>,
    /// The per-validator rates the aggregate was judged from (at `1 − α/K`
    /// for `Min`, at `opts.confidence` otherwise).
    pub per_validator: Vec<RateEstimate>,
}

/// Bad aggregation weights.
#[derive(Debug, Error, PartialEq)]
pub enum AggregateError {
    #[error("{what} weights: expected {expected}, got {got}")]
    WrongCount {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    #[error("{what} weight #{index} is {value}; weights must be finite and ≥ 0")]
    BadWeight {
        what: &'static str,
        index: usize,
        value: f64,
    },
    #[error("all {what} weights are zero")]
    AllZero { what: &'static str },
}

fn check_weights(what: &'static str, w: &[f64], expected: usize) -> Result<(), AggregateError> {
    if w.len() != expected {
        return Err(AggregateError::WrongCount {
            what,
            expected,
            got: w.len(),
        });
    }
    if let Some((index, &value)) = w
        .iter()
        .enumerate()
        .find(|(_, v)| !v.is_finite() || **v < 0.0)
    {
        return Err(AggregateError::BadWeight { what, index, value });
    }
    if expected > 0 && w.iter().all(|&v| v == 0.0) {
        return Err(AggregateError::AllZero { what });
    }
    Ok(())
}

/// Aggregate the validators of `t` by `method`.
///
/// `validator_weights` (one per validator) are used by `Weighted` only;
/// `input_weights` (one per input, optional) weight the inputs in `Mean` and
/// `Weighted`: the estimate is then the ratio `Σ_i W_i S_i / Σ_i W_i n_i`
/// of weighted per-input score sums.
pub fn aggregate(
    t: &ReliabilityTensor,
    method: Aggregate,
    validator_weights: &[f64],
    input_weights: Option<&[f64]>,
    opts: &AnalysisOptions,
) -> Result<AggregateResult, AggregateError> {
    let (n, m, k) = t.shape();
    check_weights("validator", validator_weights, k)?;
    if let Some(w) = input_weights {
        check_weights("input", w, n)?;
    }
    let alpha = 1.0 - opts.confidence;
    let per_validator_opts = match method {
        Aggregate::Min => AnalysisOptions {
            confidence: 1.0 - alpha / k.max(1) as f64,
            ..*opts
        },
        _ => *opts,
    };
    let per_validator: Vec<RateEstimate> = profile(t, Profile::Validator, &per_validator_opts)
        .into_iter()
        .map(|e| e.rate)
        .collect();
    let worst_validator = crate::profile::worst(
        &per_validator
            .iter()
            .enumerate()
            .map(|(index, &rate)| crate::profile::ProfileEntry { index, rate })
            .collect::<Vec<_>>(),
    )
    .map(|e| e.index);

    let rate = match method {
        Aggregate::Min => min_rate(&per_validator, worst_validator, opts.confidence),
        Aggregate::Mean | Aggregate::Weighted => {
            let equal = vec![1.0; k];
            let weights = if method == Aggregate::Mean {
                &equal[..]
            } else {
                validator_weights
            };
            let mut acc = ClusterAccumulator::new(n);
            let mut cells: Vec<Cell> = Vec::with_capacity(k);
            for i in 0..n {
                for j in 0..m {
                    t.output_cells(i, j, &mut cells);
                    cells.iter().for_each(|&c| acc.tally(c));
                    if let Some(s) = output_score(&cells, weights, opts.errors) {
                        acc.add_value(i, s);
                    }
                }
            }
            match input_weights {
                // Equal input weights change nothing: the unweighted rate.
                Some(w) if w.iter().any(|&v| v != w[0]) => {
                    weighted_clustered(acc.sums(), w, acc.counts(), opts)
                }
                _ => acc.estimate(opts),
            }
        }
    };
    Ok(AggregateResult {
        method,
        rate,
        worst_validator,
        per_validator,
    })
}

/// §3.3.3 with simultaneous intervals: see [`AggregateResult::rate`].
fn min_rate(per_validator: &[RateEstimate], worst: Option<usize>, confidence: f64) -> RateEstimate {
    let Some(w) = worst else {
        return RateEstimate::empty(Default::default(), confidence);
    };
    let evaluated = per_validator.iter().filter(|r| r.n > 0);
    let lower = evaluated
        .clone()
        .map(|r| r.interval.lower)
        .fold(1.0, f64::min);
    let upper = evaluated
        .clone()
        .map(|r| r.interval.upper)
        .fold(1.0, f64::min);
    // The minimum is about the population only if every rate it rests on is.
    let scope = if evaluated
        .clone()
        .all(|r| r.scope == crate::stats::Scope::Population)
    {
        crate::stats::Scope::Population
    } else {
        crate::stats::Scope::TheseInputs
    };
    RateEstimate {
        confidence,
        interval: Interval { lower, upper },
        scope,
        ..per_validator[w]
    }
}

/// Clustered mean with per-input weights `W_i` (a ratio estimator). It
/// uses the design-effect interval ([`crate::stats::ClusterMethod::DesignEffect`]'s
/// construction), whatever `opts.cluster` says: the beta-binomial score
/// interval has no weighted form here; this path is not part of the checked
/// coverage grid.
///
/// `ȳ = Σ W_i S_i / Σ W_i n_i` with the CR1 linearised variance
/// `G/(G−1) · Σ W_i² (S_i − n_i ȳ)² / (Σ W_i n_i)²` over the `G` clusters
/// with observations. With all `W_i = 1` this is the unweighted clustered
/// mean. The design effect is taken against the naive `s²/n` of the
/// unweighted observations, so it includes the cost of unequal weights.
///
/// Hand-written because [`crate::stats::clustered_mean`] takes integer
/// cluster sizes and no weights; kept next to its only caller.
fn weighted_clustered(
    sums: &[ClusterSum],
    w: &[f64],
    counts: crate::stats::Counts,
    opts: &AnalysisOptions,
) -> RateEstimate {
    let used: Vec<(&ClusterSum, f64)> = sums
        .iter()
        .zip(w.iter().copied())
        .filter(|(s, w)| s.count > 0 && *w > 0.0)
        .collect();
    let n: u64 = used.iter().map(|(s, _)| s.count).sum();
    let wn: f64 = used.iter().map(|(s, w)| w * s.count as f64).sum();
    if n == 0 || wn == 0.0 {
        return RateEstimate::empty(counts, opts.confidence);
    }
    let mean = (used.iter().map(|(s, w)| w * s.sum).sum::<f64>() / wn).clamp(0.0, 1.0);
    let g = used.len() as f64;
    let v_cluster = if g > 1.0 {
        g / (g - 1.0)
            * used
                .iter()
                .map(|(s, w)| (w * (s.sum - s.count as f64 * mean)).powi(2))
                .sum::<f64>()
            / (wn * wn)
    } else {
        f64::NAN
    };
    let nf = n as f64;
    let raw_mean = used.iter().map(|(s, _)| s.sum).sum::<f64>() / nf;
    let ss = used.iter().map(|(s, _)| s.sum_sq).sum::<f64>() - nf * raw_mean * raw_mean;
    let v_naive = if n > 1 {
        (ss / (nf - 1.0)).max(0.0) / nf
    } else {
        0.0
    };
    let design_effect = if v_naive > 0.0 && v_cluster.is_finite() && v_cluster > 0.0 {
        v_cluster / v_naive
    } else {
        1.0
    };
    let effective_n = nf / design_effect;
    let inputs = used.len() as u64;
    RateEstimate {
        estimate: mean,
        counts,
        n,
        inputs,
        scope: if inputs >= crate::stats::MIN_INPUTS {
            crate::stats::Scope::Population
        } else {
            crate::stats::Scope::TheseInputs
        },
        design_effect,
        effective_n,
        confidence: opts.confidence,
        interval: proportion_interval(
            mean * effective_n,
            effective_n,
            opts.confidence,
            opts.interval,
        ),
    }
}
