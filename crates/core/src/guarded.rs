//! The guarded system measured against its retry plan (§4.2).
//!
//! A run with a retry policy samples every `(i, j)` as a guarded request:
//! up to `m` attempts until one passes the deciding checks. Its first
//! attempts form the single-attempt tensor, from which the retry plan
//! predicts `P(success within m) = 1 − (1 − P)^m` and the expected attempts
//! used when capped at `m`, `(1 − (1 − P)^m) / P` — under independence
//! (`P = Π p_k`), at the empirical joint rate (with its interval), and per
//! input (§4.2.3, averaged over inputs). This module measures the same two
//! quantities on the guarded samples, with intervals clustered by input,
//! and says whether the prediction held: whether the measured figures lie
//! inside the per-input prediction's intervals (issue 35 item 3).

use crate::options::AnalysisOptions;
use crate::retry::{share_over_inputs, Geometric, InputAttempts, RetryPlan};
use crate::score::ClusterAccumulator;
use crate::stats::{clustered_mean, z_value, ClusterSum, RateEstimate};
use crate::tensor::{Cell, ReliabilityTensor};
use serde::{Deserialize, Serialize};

/// One guarded sample: how many attempts it used and whether an output was
/// published.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GuardedSample {
    pub input: usize,
    /// Attempts used, 1..=m (`m` when nothing passed).
    pub attempts: u32,
    pub published: bool,
    /// Calls made for it: system calls (retries on errors included) and judge calls.
    pub calls: u64,
    /// Tokens spent, where providers report them.
    pub tokens: u64,
    /// Of `calls` and `tokens`, those of attempts after the first: what
    /// reliability cost.
    #[serde(default)]
    pub retry_calls: u64,
    #[serde(default)]
    pub retry_tokens: u64,
}

/// A value with an interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Band {
    pub estimate: f64,
    pub lower: f64,
    pub upper: f64,
}

impl Band {
    fn point(x: f64) -> Band {
        Band {
            estimate: x,
            lower: x,
            upper: x,
        }
    }

    /// Whether the two bands share a point.
    pub fn overlaps(&self, other: &Band) -> bool {
        self.lower <= other.upper + 1e-12 && other.lower <= self.upper + 1e-12
    }
}

/// What the guarded samples show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuardedMeasurement {
    /// The policy's `m`.
    pub m: u32,
    pub samples: u64,
    /// `histogram[a − 1]`: samples published at attempt `a`.
    pub histogram: Vec<u64>,
    /// Samples where nothing passed.
    pub nothing_published: u64,
    /// P(success within m), clustered by input.
    pub success: RateEstimate,
    /// Attempts used per sample (capped at m), clustered by input.
    pub attempts: Band,
    pub calls: u64,
    pub tokens: u64,
    /// Of `calls` and `tokens`, those spent on attempts after the first
    /// (the cost of reliability, paper §4.2).
    #[serde(default)]
    pub retry_calls: u64,
    #[serde(default)]
    pub retry_tokens: u64,
}

impl GuardedMeasurement {
    pub fn new(samples: &[GuardedSample], inputs: usize, m: u32, opts: &AnalysisOptions) -> Self {
        let mut success = ClusterAccumulator::new(inputs);
        let mut sums = vec![ClusterSum::default(); inputs];
        let mut histogram = vec![0u64; m as usize];
        let mut nothing = 0;
        let (mut calls, mut tokens, mut retry_calls, mut retry_tokens) = (0, 0, 0, 0);
        for s in samples.iter().filter(|s| s.input < inputs) {
            let cell = if s.published { Cell::Pass } else { Cell::Fail };
            success.add_cell(s.input, cell, opts.errors);
            let a = f64::from(s.attempts.min(m).max(1));
            let c = &mut sums[s.input];
            c.sum += a;
            c.sum_sq += a * a;
            c.count += 1;
            if s.published {
                if let Some(h) = histogram.get_mut(s.attempts.max(1) as usize - 1) {
                    *h += 1;
                }
            } else {
                nothing += 1;
            }
            calls += s.calls;
            tokens += s.tokens;
            retry_calls += s.retry_calls;
            retry_tokens += s.retry_tokens;
        }
        let c = clustered_mean(&sums);
        let half = z_value(opts.confidence) * c.se_cluster.max(c.se_naive);
        GuardedMeasurement {
            m,
            samples: samples.len() as u64,
            histogram,
            nothing_published: nothing,
            success: success.estimate(opts),
            attempts: Band {
                estimate: c.mean,
                lower: (c.mean - half).max(1.0),
                upper: (c.mean + half).min(f64::from(m)),
            },
            calls,
            tokens,
            retry_calls,
            retry_tokens,
        }
    }
}

/// One model's prediction for the guarded system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// `independence`, `joint` or `per-input`.
    pub model: String,
    /// The per-attempt pass probability (mean over inputs for per-input).
    pub p: Band,
    pub success_within: Band,
    /// Expected attempts used when capped at m.
    pub attempts: Band,
}

/// Prediction beside measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryCheck {
    pub measured: GuardedMeasurement,
    pub predictions: Vec<Prediction>,
    /// The joint-rate prediction's bands overlap the measured intervals of
    /// both P(success within m) and the attempts used.
    pub held: bool,
}

fn band_of(p: Band, m: u32) -> (Band, Band) {
    let g = |p: f64| Geometric { p };
    // success_within increases with p; expected attempts decrease with p.
    let success = Band {
        estimate: g(p.estimate).success_within(m),
        lower: g(p.lower).success_within(m),
        upper: g(p.upper).success_within(m),
    };
    let attempts = Band {
        estimate: g(p.estimate).expected_calls(m),
        lower: g(p.upper).expected_calls(m),
        upper: g(p.lower).expected_calls(m),
    };
    (success, attempts)
}

/// The predictions of `plan` (built from the single-attempt tensor over the
/// deciding checks) for `m` attempts, beside `measured`.
///
/// The per-input prediction averages over inputs, each at its own joint
/// rate (§4.2.3): P(success within m) is
/// [`RetryPlan::success_over_inputs`] (the mean of each input's unbiased
/// 1 − C(f_i, m)/C(n_i, m), Korn–Graubard interval over inputs at `confidence`),
/// the attempts used the mean of Σ_{j<m} C(f_i, j)/C(n_i, j)
/// ([`InputAttempts::expected_calls`]) with the same kind of interval on
/// the share of retries used, (a − 1)/(m − 1). The prediction
/// **held** when the measured share published and the measured attempts
/// used both lie inside the per-input prediction's intervals (issue 35
/// item 3) — not when two intervals merely overlap, and not at the joint
/// rate, whose 1 − (1 − P̄)^m overstates what inputs that differ publish.
pub fn check_plan(plan: &RetryPlan, measured: GuardedMeasurement, confidence: f64) -> RetryCheck {
    let m = measured.m;
    let mut predictions = Vec::new();
    let ind = Band::point(plan.p_independent);
    let (s, a) = band_of(ind, m);
    predictions.push(Prediction {
        model: "independence".into(),
        p: ind,
        success_within: s,
        attempts: a,
    });
    let mut held = false;
    if let Some(e) = &plan.empirical {
        let p = Band {
            estimate: e.overall.estimate,
            lower: e.overall.interval.lower,
            upper: e.overall.interval.upper,
        };
        let (s, a) = band_of(p, m);
        predictions.push(Prediction {
            model: "joint".into(),
            p,
            success_within: s,
            attempts: a,
        });
        if let Some(per_input) = per_input_prediction(plan, &e.per_input, m, confidence) {
            let inside = |b: &Band, x: f64| b.lower - 1e-12 <= x && x <= b.upper + 1e-12;
            held = inside(&per_input.success_within, measured.success.estimate)
                && inside(&per_input.attempts, measured.attempts.estimate);
            predictions.push(per_input);
        }
    }
    RetryCheck {
        measured,
        predictions,
        held,
    }
}

/// The per-input prediction of [`check_plan`]; `None` when no input has a
/// rate.
fn per_input_prediction(
    plan: &RetryPlan,
    per_input: &[RateEstimate],
    m: u32,
    confidence: f64,
) -> Option<Prediction> {
    let success = plan.success_over_inputs(m, confidence)?;
    let rows: Vec<&RateEstimate> = per_input.iter().filter(|r| r.n > 0).collect();
    let g = rows.len() as f64;
    let mean_of = |f: &dyn Fn(f64) -> f64, pick: &dyn Fn(&RateEstimate) -> f64| {
        rows.iter().map(|r| f(pick(r))).sum::<f64>() / g
    };
    let calls = |p: f64| Geometric { p }.expected_calls(m);
    let a: Vec<f64> = rows
        .iter()
        .map(|r| InputAttempts::of(r).expected_calls(u64::from(m)))
        .collect();
    // Attempts in [1, m] as the share (a − 1)/(m − 1) of the retries
    // allowed, so the interval is lopsided near either end as the truth is.
    let span = f64::from(m.max(2) - 1);
    let retried: Vec<f64> = a.iter().map(|x| (x - 1.0) / span).collect();
    let (share, band) = share_over_inputs(&retried, confidence);
    let a_mean = 1.0 + share * span;
    let attempts = match band {
        Some((lower, upper)) => Band {
            estimate: a_mean,
            lower: 1.0 + lower * span,
            upper: (1.0 + upper * span).min(f64::from(m)),
        },
        // Inputs alike: each input's own interval, averaged (expected
        // attempts fall as p rises).
        None => Band {
            estimate: a_mean,
            lower: mean_of(&calls, &|r| r.interval.upper).min(a_mean),
            upper: mean_of(&calls, &|r| r.interval.lower).max(a_mean),
        },
    };
    Some(Prediction {
        model: "per-input".into(),
        p: Band {
            estimate: mean_of(&|p| p, &|r| r.estimate),
            lower: mean_of(&|p| p, &|r| r.interval.lower),
            upper: mean_of(&|p| p, &|r| r.interval.upper),
        },
        success_within: Band {
            estimate: success.estimate,
            lower: success.lower,
            upper: success.upper,
        },
        attempts,
    })
}

/// The tensor restricted to `columns` (the checks that decide a retry).
pub fn columns_of(t: &ReliabilityTensor, columns: &[usize]) -> ReliabilityTensor {
    let (n, m, _) = t.shape();
    let mut out = match ReliabilityTensor::new(n, m, columns.len().max(1)) {
        Ok(t) => t,
        Err(_) => return t.clone(),
    };
    for i in 0..n {
        for j in 0..m {
            for (kk, &k) in columns.iter().enumerate() {
                let _ = out.set(i, j, kk, t.get(i, j, k).unwrap_or(Cell::Missing));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measurement_counts_and_bounds() {
        let opts = AnalysisOptions::default();
        let samples: Vec<GuardedSample> = (0..40)
            .map(|s| GuardedSample {
                input: s % 4,
                attempts: [1, 1, 2, 3][s % 4],
                published: s % 8 != 3,
                calls: [1, 1, 2, 3][s % 4],
                tokens: 10 * [1, 1, 2, 3][s % 4],
                retry_calls: [0, 0, 1, 2][s % 4],
                retry_tokens: 10 * [0, 0, 1, 2][s % 4],
            })
            .collect();
        let g = GuardedMeasurement::new(&samples, 4, 3, &opts);
        // Per 4 samples: 7 calls of which 3 retries.
        assert_eq!((g.calls, g.retry_calls), (70, 30));
        assert_eq!((g.tokens, g.retry_tokens), (700, 300));
        assert_eq!(g.samples, 40);
        assert_eq!(g.histogram, vec![20, 10, 5]);
        assert_eq!(g.nothing_published, 5);
        assert!((g.success.estimate - 35.0 / 40.0).abs() < 1e-12);
        assert!((g.attempts.estimate - 1.75).abs() < 1e-12);
        assert!(g.attempts.lower <= 1.75 && g.attempts.upper >= 1.75);
    }

    #[test]
    fn prediction_bands_are_monotone() {
        let (s, a) = band_of(
            Band {
                estimate: 0.7,
                lower: 0.6,
                upper: 0.8,
            },
            3,
        );
        assert!(s.lower < s.estimate && s.estimate < s.upper);
        assert!(a.lower < a.estimate && a.estimate < a.upper);
        assert!((s.estimate - (1.0 - 0.3f64.powi(3))).abs() < 1e-12);
    }
}
