//! Judges whose errors are accounted for (paper §4; issue 23, item 4;
//! `crates/core/STATISTICS.md`, *Judges with known error rates*).
//!
//! A verifier is an LLM judge that errs: it passes some outputs a human
//! would fail and fails some a human would pass. Its apparent pass rate π
//! is then not the true rate θ but
//!
//! ```text
//! π = Se·θ + (1 − Sp)·(1 − θ),
//! Se = P(judge PASS | human PASS)   (sensitivity)
//! Sp = P(judge FAIL | human FAIL)   (specificity)
//! ```
//!
//! With a labelled set (pairs a human judged), Se and Sp are measured
//! ([`JudgeAccuracy::measure`], Wilson intervals), and the run's rate is
//! corrected by the Rogan–Gladen estimator
//!
//! ```text
//! θ̂ = (p̂ + Ŝp − 1) / (Ŝe + Ŝp − 1),   clipped to [0, 1]
//! ```
//!
//! with an interval ([`corrected_rate`]) that carries the uncertainty of p̂
//! (clustered by input, as every rate of a run) and of Ŝe and Ŝp: the
//! Fieller-type test inversion of the linear contrast p̂ − π(θ0),
//!
//! ```text
//! θ0 ∈ C  ⇔  (p̂ − π̂(θ0))² ≤ c²·V(π̂(θ0)) + z²·(θ0²·ṽ_Se + (1 − θ0)²·ṽ_Sp),
//! π̂(θ0) = Ŝe·θ0 + (1 − Ŝp)·(1 − θ0),
//! ```
//!
//! where V(π) is the variance of p̂ under the tested apparent rate π used
//! by the default clustered interval (μ(1 − μ)·deff(ρ̃(μ))/n, the ICC
//! re-estimated under μ; `super::betabin`) with its critical value c
//! (t on G − 1 degrees of freedom), and ṽ the Agresti–Coull variances of
//! Ŝe and Ŝp (p̃(1 − p̃)/ñ, ñ = n + z², p̃ = (x + z²/2)/ñ): never 0, so a
//! judge that agreed on every labelled example is not taken as perfect. A
//! ratio's interval by inverting its numerator's test (Fieller) rather than
//! by the delta method is what keeps it honest when the denominator
//! Se + Sp − 1 is uncertain; the variance under the tested value (Wilson's
//! idea, as in the default interval) is what keeps it honest near 1.
//!
//! Assumptions: the labelled set is representative of the run's outputs
//! (the judge errs on them as on the run's); the judge's errors depend on
//! the true label only, not on the input (Se and Sp are the same for every
//! input); labelled pairs are independent; the human labels are right.

use super::betabin::{root, NullVariance};
use super::cluster::ClusterSum;
use super::error::{check_confidence, check_threshold, StatsError};
use super::interval::{proportion_interval, z_value, Interval, IntervalMethod};
use serde::{Deserialize, Serialize};

/// What the judge answered on a labelled set: of the `pass_labels` pairs a
/// human passed, `judged_pass` were passed by the judge; of the
/// `fail_labels` a human failed, `judged_fail` were failed by the judge.
/// Pairs the judge could not judge (a failed call, an unreadable answer)
/// are counted in `errors` and left out of both. `reused` is provenance
/// only (no statistic reads it): of all the pairs, those whose verdict was
/// read from the run store — the same judge asked the very same question
/// before — instead of asked; the others were asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LabelCounts {
    pub pass_labels: u64,
    pub judged_pass: u64,
    pub fail_labels: u64,
    pub judged_fail: u64,
    #[serde(default)]
    pub errors: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reused: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A proportion measured on the labelled set, with its Wilson interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub estimate: f64,
    pub interval: Interval,
    /// Agreements with the human label.
    pub agreed: u64,
    /// Labelled pairs of that class.
    pub of: u64,
}

/// The judge's accuracy on a labelled set.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct JudgeAccuracy {
    pub counts: LabelCounts,
    /// Se = P(judge PASS | human PASS).
    pub sensitivity: Measured,
    /// Sp = P(judge FAIL | human FAIL).
    pub specificity: Measured,
    /// Youden's J = Se + Sp − 1: 1 for a perfect judge, 0 for one no
    /// better than chance.
    pub youden: f64,
    /// J's interval in [−1, 1]: MOVER (Newcombe's square-and-add) from the
    /// Wilson intervals of Se and Sp, measured on separate pairs.
    pub youden_interval: Interval,
    pub confidence: f64,
}

/// Why a judge's accuracy cannot be measured or its rate not corrected:
/// never a number that means nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum CalibrationError {
    /// No labelled pair a human passed (that the judge answered): the
    /// sensitivity cannot be measured.
    #[error("the labelled set has no PASS example the judge answered: the judge's sensitivity P(PASS | truly passes) cannot be measured")]
    NoPassLabels,
    /// No labelled pair a human failed (that the judge answered): the
    /// specificity cannot be measured.
    #[error("the labelled set has no FAIL example the judge answered: the judge's specificity P(FAIL | truly fails) cannot be measured")]
    NoFailLabels,
    /// Se + Sp ≤ 1: the judge agrees with the labels no more than chance
    /// would; its verdicts carry no information about the true rate.
    #[error("the judge is no better than chance on the labelled set (sensitivity {sensitivity:.3} + specificity {specificity:.3} ≤ 1): its rate cannot be corrected")]
    NoBetterThanChance { sensitivity: f64, specificity: f64 },
    /// No true rate in [0, 1] is consistent with the run's rate and the
    /// judge's measured errors: the judge erred otherwise on the run than
    /// on the labelled set (the set is not representative).
    #[error("the run's judged rate {raw:.4} is outside what the judge's measured errors allow ([{lowest:.4}, {highest:.4}]): the labelled set does not represent the run's outputs")]
    Inconsistent { raw: f64, lowest: f64, highest: f64 },
    /// Invalid input (a confidence outside (0, 1), counts above their
    /// totals, nothing observed).
    #[error("{message}")]
    Invalid { message: String },
}

impl From<StatsError> for CalibrationError {
    fn from(e: StatsError) -> Self {
        CalibrationError::Invalid {
            message: e.to_string(),
        }
    }
}

impl JudgeAccuracy {
    /// Se and Sp with Wilson intervals at `confidence`, and Youden's J.
    ///
    /// Errors: no PASS label ([`CalibrationError::NoPassLabels`]), no FAIL
    /// label ([`CalibrationError::NoFailLabels`]), agreements above their
    /// totals or a confidence outside (0, 1) ([`CalibrationError::Invalid`]).
    /// A judge no better than chance is measured (it is a fact about the
    /// judge); [`corrected_rate`] refuses to correct with it.
    pub fn measure(counts: LabelCounts, confidence: f64) -> Result<Self, CalibrationError> {
        check_confidence(confidence)?;
        let c = counts;
        if c.pass_labels == 0 {
            return Err(CalibrationError::NoPassLabels);
        }
        if c.fail_labels == 0 {
            return Err(CalibrationError::NoFailLabels);
        }
        for (agreed, of) in [
            (c.judged_pass, c.pass_labels),
            (c.judged_fail, c.fail_labels),
        ] {
            if agreed > of {
                return Err(StatsError::Counts {
                    successes: agreed as f64,
                    trials: of as f64,
                }
                .into());
            }
        }
        let measured = |agreed: u64, of: u64| Measured {
            estimate: agreed as f64 / of as f64,
            interval: proportion_interval(
                agreed as f64,
                of as f64,
                confidence,
                IntervalMethod::Wilson,
            ),
            agreed,
            of,
        };
        let se = measured(c.judged_pass, c.pass_labels);
        let sp = measured(c.judged_fail, c.fail_labels);
        let youden = se.estimate + sp.estimate - 1.0;
        // MOVER for a sum of independent proportions (Zou & Donner 2008).
        let down = ((se.estimate - se.interval.lower).powi(2)
            + (sp.estimate - sp.interval.lower).powi(2))
        .sqrt();
        let up = ((se.interval.upper - se.estimate).powi(2)
            + (sp.interval.upper - sp.estimate).powi(2))
        .sqrt();
        Ok(JudgeAccuracy {
            counts,
            sensitivity: se,
            specificity: sp,
            youden,
            youden_interval: Interval {
                lower: (youden - down).max(-1.0),
                upper: (youden + up).min(1.0),
            },
            confidence,
        })
    }

    /// The apparent pass rate of a system whose true rate is `theta`:
    /// π(θ) = Se·θ + (1 − Sp)·(1 − θ).
    pub fn apparent(&self, theta: f64) -> f64 {
        self.sensitivity.estimate * theta + (1.0 - self.specificity.estimate) * (1.0 - theta)
    }

    /// The Agresti–Coull variances (ṽ_Se, ṽ_Sp) at `confidence`.
    fn variances(&self) -> (f64, f64) {
        let z2 = z_value(self.confidence).powi(2);
        let ac = |m: &Measured| {
            let n = m.of as f64 + z2;
            let p = (m.agreed as f64 + z2 / 2.0) / n;
            p * (1.0 - p) / n
        };
        (ac(&self.sensitivity), ac(&self.specificity))
    }

    /// The lower bound of the corrected rate of a system that always
    /// passes (θ = 1), measured with unlimited outputs (p̂ = Se exactly):
    /// the best lower bound this judge and these labels allow. Solves
    /// J²u² = z²((1 − u)²ṽ_Se + u²ṽ_Sp) for u = 1 − θ (a quadratic); 0 when
    /// J is not clear of its own uncertainty.
    pub fn best_lower_bound(&self) -> f64 {
        let z2 = z_value(self.confidence).powi(2);
        let (vse, vsp) = self.variances();
        let j = self.youden;
        let a = j * j - z2 * (vse + vsp);
        if j <= 0.0 || a <= 0.0 {
            return 0.0;
        }
        let (b, c) = (2.0 * z2 * vse, -z2 * vse);
        let u = (-b + (b * b - 4.0 * a * c).sqrt()) / (2.0 * a);
        (1.0 - u).clamp(0.0, 1.0)
    }
}

/// Why a judge is too weak for its check's minimum (a warning beside the
/// corrected rate, `crates/core/STATISTICS.md`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Weakness {
    /// J's interval reaches 0: the labelled set does not show the judge
    /// better than chance.
    Chance { youden_lower: f64 },
    /// Even a system that always passes, measured with unlimited outputs,
    /// would get a corrected lower bound (`best_lower`) below the
    /// `minimum`: no pass can be established with this judge and these
    /// labels; more labels (or a better judge) are needed, not outputs.
    Threshold { best_lower: f64, minimum: f64 },
}

/// A run's rate corrected for its judge's errors.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CorrectedRate {
    /// p̂, the judge's pass rate over the run's outputs.
    pub raw: f64,
    /// θ̂ (Rogan–Gladen), clipped to [0, 1].
    pub estimate: f64,
    /// The interval for θ carrying the uncertainty of p̂, Se and Sp.
    pub interval: Interval,
    /// The interval were p̂ known exactly (unlimited outputs): what the
    /// judge's measured errors alone leave. When it contains the minimum,
    /// more outputs cannot settle the verdict.
    pub labels_only: Interval,
    pub judge: JudgeAccuracy,
    /// Set when the judge is too weak for the minimum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weak: Option<Weakness>,
}

/// How the run's p̂ varies: clustered by input (the default interval's
/// variance under the tested rate), or binomial over independent outputs
/// (fewer than five inputs, or an unclustered analysis).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunVariance {
    Clustered,
    Binomial,
}

/// The corrected rate of a verifier check whose per-input judged counts
/// are `clusters`, with its judge's `accuracy`, at `confidence`; `minimum`
/// is the check's threshold (for the weakness warning). See the module
/// docs for the estimator and the interval.
///
/// Errors: a judge no better than chance (Se + Sp ≤ 1), a run's rate no
/// true rate explains ([`CalibrationError::Inconsistent`]), nothing
/// observed, invalid confidence or minimum.
pub fn corrected_rate(
    clusters: &[ClusterSum],
    accuracy: &JudgeAccuracy,
    minimum: f64,
    variance: RunVariance,
) -> Result<CorrectedRate, CalibrationError> {
    check_threshold(minimum)?;
    let a = accuracy;
    let (se, sp) = (a.sensitivity.estimate, a.specificity.estimate);
    if a.youden <= 0.0 {
        return Err(CalibrationError::NoBetterThanChance {
            sensitivity: se,
            specificity: sp,
        });
    }
    let test = Inversion::new(clusters, a, variance)?;
    let raw = test.nv.estimate();
    let estimate = ((raw + sp - 1.0) / a.youden).clamp(0.0, 1.0);
    let interval = test
        .interval(estimate, 1.0)
        .ok_or(CalibrationError::Inconsistent {
            raw,
            lowest: 1.0 - sp,
            highest: se,
        })?;
    let labels_only = test.interval(estimate, 0.0).unwrap_or(interval);
    let weak = if a.youden_interval.lower <= 0.0 {
        Some(Weakness::Chance {
            youden_lower: a.youden_interval.lower,
        })
    } else {
        let best_lower = a.best_lower_bound();
        (best_lower < minimum).then_some(Weakness::Threshold {
            best_lower,
            minimum,
        })
    };
    Ok(CorrectedRate {
        raw,
        estimate,
        interval,
        labels_only,
        judge: *a,
        weak,
    })
}

/// The total outputs (of the run's kind: its design effect and inputs'
/// spread kept) at which the corrected interval around the current
/// estimate excludes `minimum`, the run's p̂, Se and Sp staying where they
/// are: `Some(n)` when it already does; `None` when no number of outputs
/// would (the labels-only interval contains the minimum) or more than
/// `max` would be needed. Doubling, then bisection on the scale of p̂'s
/// variance n/N.
pub fn outputs_to_settle(
    clusters: &[ClusterSum],
    accuracy: &JudgeAccuracy,
    minimum: f64,
    variance: RunVariance,
    max: u64,
) -> Option<u64> {
    let test = Inversion::new(clusters, accuracy, variance).ok()?;
    let raw = test.nv.estimate();
    let estimate = ((raw + accuracy.specificity.estimate - 1.0) / accuracy.youden).clamp(0.0, 1.0);
    let n = test.nv.n;
    if estimate == minimum {
        return None;
    }
    let excludes = |iv: Option<Interval>| {
        iv.is_some_and(|iv| {
            (estimate > minimum && iv.lower >= minimum)
                || (estimate < minimum && iv.upper < minimum)
        })
    };
    let settles = |total: f64| excludes(test.interval(estimate, n / total));
    if settles(n) {
        return Some(n as u64);
    }
    if !excludes(test.interval(estimate, 0.0)) {
        return None;
    }
    let (mut lo, mut hi) = (n, 2.0 * n);
    while !settles(hi) {
        lo = hi;
        hi *= 2.0;
        if hi > max as f64 {
            return None;
        }
    }
    while hi - lo > 1.0_f64.max(lo * 1e-3) {
        let mid = 0.5 * (lo + hi);
        if settles(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi.ceil() as u64)
}

/// The test inverted for the corrected interval (module docs).
struct Inversion<'a> {
    nv: NullVariance,
    accuracy: &'a JudgeAccuracy,
    vse: f64,
    vsp: f64,
    z2: f64,
}

impl<'a> Inversion<'a> {
    fn new(
        clusters: &[ClusterSum],
        accuracy: &'a JudgeAccuracy,
        variance: RunVariance,
    ) -> Result<Self, CalibrationError> {
        let confidence = accuracy.confidence;
        let nv = match variance {
            RunVariance::Clustered => NullVariance::new(clusters, confidence)?,
            RunVariance::Binomial => {
                super::betabin::check_clusters(clusters)?;
                let x: f64 = clusters.iter().map(|c| c.sum).sum();
                let n: u64 = clusters.iter().map(|c| c.count).sum();
                NullVariance::binomial(x.round() as u64, n, confidence)?
            }
        };
        let (vse, vsp) = accuracy.variances();
        Ok(Inversion {
            nv,
            accuracy,
            vse,
            vsp,
            z2: z_value(confidence).powi(2),
        })
    }

    /// f(θ0) ≤ 0 ⇔ θ0 is accepted; `scale` multiplies p̂'s variance (1: the
    /// run as it is; 0: p̂ known exactly; n/N: a run of N outputs).
    fn f(&self, theta: f64, scale: f64, scratch: &mut Vec<f64>) -> f64 {
        let p = self.nv.estimate();
        let pi = self.accuracy.apparent(theta).clamp(0.0, 1.0);
        let c2 = self.nv.critical * self.nv.critical;
        let run = if scale > 0.0 {
            scale * c2 * self.nv.variance_at(pi, scratch)
        } else {
            0.0
        };
        let judge = self.z2 * (theta * theta * self.vse + (1.0 - theta).powi(2) * self.vsp);
        (p - pi).powi(2) - run - judge
    }

    /// The hull of the accepted θ0 around `start` (θ̂), or, when θ̂ itself
    /// is rejected (p̂ outside what the judge allows), around the accepted
    /// point of a grid nearest to it; `None` when no θ0 is accepted.
    fn interval(&self, start: f64, scale: f64) -> Option<Interval> {
        let mut s = Vec::new();
        let inn = if self.f(start, scale, &mut s) <= 0.0 {
            start
        } else {
            const STEPS: usize = 400;
            (0..=STEPS)
                .map(|i| i as f64 / STEPS as f64)
                .filter(|&t| self.f(t, scale, &mut s) <= 0.0)
                .min_by(|a, b| (a - start).abs().total_cmp(&(b - start).abs()))?
        };
        let lower = if inn <= 0.0 {
            0.0
        } else {
            root(|t| self.f(t, scale, &mut s), 0.0, inn)
        };
        let upper = if inn >= 1.0 {
            1.0
        } else {
            root(|t| self.f(t, scale, &mut s), 1.0, inn)
        };
        Some(Interval {
            lower: lower.clamp(0.0, 1.0),
            upper: upper.clamp(0.0, 1.0),
        })
    }
}

/// A calibrated verifier check's correction, as every report shows it:
/// the corrected rate, or why there is none (never a number that means
/// nothing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Calibrated {
    /// The judge's accuracy and the corrected rate.
    Corrected(CorrectedRate),
    /// No corrected rate: `problem` says why; `judge` is the judge's
    /// accuracy when it could be measured.
    Unusable {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        judge: Option<JudgeAccuracy>,
        problem: CalibrationError,
    },
}

impl Calibrated {
    /// The judge's measured accuracy, when there is one.
    pub fn judge(&self) -> Option<&JudgeAccuracy> {
        match self {
            Calibrated::Corrected(c) => Some(&c.judge),
            Calibrated::Unusable { judge, .. } => judge.as_ref(),
        }
    }
}
