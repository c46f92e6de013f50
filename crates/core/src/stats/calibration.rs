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
//! Fieller-type test inversion of the linear contrast
//! T(θ0) = p̂ − π̂(θ0), π̂(θ0) = Ŝe·θ0 + (1 − Ŝp)·(1 − θ0), whose spread is
//! combined by MOVER (Zou & Donner 2008; Newcombe's square-and-add) from
//! p̂'s score variance under the tested rate and the Wilson limits of Ŝe
//! and Ŝp on the side the test looks at:
//!
//! ```text
//! θ0 ∈ C  ⇔  T(θ0)² ≤ c²·V(π̂(θ0)) + θ0²·dSe² + (1 − θ0)²·dSp²,
//! T ≥ 0 (θ0 below θ̂): dSe = U_Se − Ŝe, dSp = Ŝp − L_Sp,
//! T < 0 (θ0 above θ̂): dSe = Ŝe − L_Se, dSp = U_Sp − Ŝp,
//! ```
//!
//! where V(π) is the variance of p̂ under the tested apparent rate π used
//! by the default clustered interval (μ(1 − μ)·deff(ρ̃(μ))/n, the ICC
//! re-estimated under μ; `super::betabin`) with its critical value c
//! (t on G − 1 degrees of freedom), and [L, U] the Wilson intervals of Ŝe
//! and Ŝp at the run's confidence. The Wilson limits are never at the
//! estimate on the side away from 0 or 1, so a judge that agreed on every
//! labelled example is not taken as perfect, and they are asymmetric near
//! 1 where Se sits: a symmetric (Agresti–Coull) variance there put the
//! truth above the interval in up to 5 % of runs (issue 35, item 4). A
//! ratio's interval by inverting its numerator's test (Fieller) rather than
//! by the delta method is what keeps it honest when the denominator
//! Se + Sp − 1 is uncertain; the variance under the tested value (Wilson's
//! idea, as in the default interval) is what keeps it honest near 1.
//!
//! Labels sampled with known fractions per judged class ([`Sampling`]:
//! e.g. every output the judge failed but 10 % of those it passed) are
//! weighted by the inverse of their fraction: Ŝe and Ŝp are the weighted
//! shares (Horvitz–Thompson ratio estimators), and their Wilson intervals
//! are taken on the effective number of labels Ŝ(1 − Ŝ)/V̂, V̂ the
//! linearised variance Σ wᵢ²(yᵢ − Ŝ)²/(Σ wᵢ)² of the ratio.
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
/// before — instead of asked; the others were asked. `sampling`: the
/// fractions the pairs were sampled with per judged class, when not all
/// alike (`None`: every output was as likely to be labelled).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LabelCounts {
    pub pass_labels: u64,
    pub judged_pass: u64,
    pub fail_labels: u64,
    pub judged_fail: u64,
    #[serde(default)]
    pub errors: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reused: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Sampling>,
}

/// How a labelled set was drawn from judged outputs: of the outputs the
/// judge passed, the share `judged_pass` was labelled by a human; of those
/// it failed, the share `judged_fail` (each in (0, 1]). Oversampling the
/// judge's failures (all of them, 10 % of its passes) is cheap and
/// informative, but the raw shares are then biased: a labelled pair counts
/// 1/fraction times ([`JudgeAccuracy::measure`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    pub judged_pass: f64,
    pub judged_fail: f64,
}

impl Sampling {
    /// Checked fractions: each must be in (0, 1]; the error names the field.
    pub fn new(judged_pass: f64, judged_fail: f64) -> Result<Sampling, String> {
        for (name, f) in [("judged_pass", judged_pass), ("judged_fail", judged_fail)] {
            if !(f > 0.0 && f <= 1.0) {
                return Err(format!(
                    "sampling fraction {name} = {f} must be in (0, 1]: the share of the outputs the judge {} that a human labelled",
                    if name == "judged_pass" { "passed" } else { "failed" }
                ));
            }
        }
        Ok(Sampling {
            judged_pass,
            judged_fail,
        })
    }
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
    /// The effective number of labels behind `estimate` and `interval`:
    /// `of` when every output was as likely to be labelled; with
    /// [`Sampling`] weights, Ŝ(1 − Ŝ)/V̂ (V̂ the weighted ratio's
    /// linearised variance).
    #[serde(default)]
    pub effective: f64,
}

impl Measured {
    /// The share `agreed`/`of` of a class whose agreeing pairs weigh
    /// `w_agree` and disagreeing ones `w_disagree` (1/sampling fraction of
    /// the judge's answer), with its Wilson interval on the effective count.
    fn weighted(agreed: u64, of: u64, w_agree: f64, w_disagree: f64, confidence: f64) -> Self {
        let (a, b) = (agreed as f64, (of - agreed) as f64);
        let total = a * w_agree + b * w_disagree;
        let estimate = a * w_agree / total;
        // Linearised variance of the ratio Σwy/Σw (Poisson sampling).
        let v = (a * (w_agree * (1.0 - estimate)).powi(2) + b * (w_disagree * estimate).powi(2))
            / (total * total);
        let effective = if w_agree != w_disagree && v > 0.0 {
            estimate * (1.0 - estimate) / v
        } else {
            // One weight for all (no sampling, or all pairs agree or none
            // does): the count itself.
            of as f64
        };
        Measured {
            estimate,
            interval: wilson(estimate, effective, confidence),
            agreed,
            of,
            effective,
        }
    }
}

/// The Wilson interval of a share `p` over `n` (possibly effective) labels.
fn wilson(p: f64, n: f64, confidence: f64) -> Interval {
    proportion_interval(p * n, n, confidence, IntervalMethod::Wilson)
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
        let (w_pass, w_fail) = match c.sampling {
            None => (1.0, 1.0),
            Some(s) => {
                let s = Sampling::new(s.judged_pass, s.judged_fail)
                    .map_err(|message| CalibrationError::Invalid { message })?;
                (1.0 / s.judged_pass, 1.0 / s.judged_fail)
            }
        };
        // Se: a human PASS the judge passed weighs 1/f_pass, one it failed
        // 1/f_fail; Sp the other way round.
        let se = Measured::weighted(c.judged_pass, c.pass_labels, w_pass, w_fail, confidence);
        let sp = Measured::weighted(c.judged_fail, c.fail_labels, w_fail, w_pass, confidence);
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

    /// The lower bound of the corrected rate of a system that always
    /// passes (θ = 1), measured with unlimited outputs (p̂ = Se exactly):
    /// the best lower bound this judge and these labels allow.
    /// [`best_lower_bound_of`] of its Se and Sp.
    pub fn best_lower_bound(&self) -> f64 {
        best_lower_bound_of(&self.sensitivity, &self.specificity)
    }

    /// How many labels of each kind this judge needs against `minimum`
    /// ([`LabelNeeds`]), for a run whose judged rate p̂ has variance
    /// `run_variance` at the apparent rate of a system at the minimum
    /// (π(1 − π)·deff/n; before a run, the binomial π(1 − π)/(N·M)).
    pub fn labels_needed(&self, minimum: f64, run_variance: f64) -> LabelNeeds {
        label_needs(self, minimum, run_variance)
    }
}

/// How many labels of each kind the judge that answered `counts` needs
/// against `minimum`, known before a run of `outputs` outputs
/// ([`LabelNeeds`]; the run's variance at the apparent rate π of a system
/// at the minimum taken binomial, π(1 − π)/outputs: its design effect is
/// not known yet, so `power` is a floor). `probity run` prints it before
/// its outputs when the set cannot make a pass at the minimum reachable
/// ([`LabelNeeds::unreachable_with_set`]).
///
/// Errors: those of [`JudgeAccuracy::measure`], and an invalid minimum.
pub fn labels_needed_before_run(
    counts: LabelCounts,
    minimum: f64,
    confidence: f64,
    outputs: u64,
) -> Result<LabelNeeds, CalibrationError> {
    check_threshold(minimum)?;
    let a = JudgeAccuracy::measure(counts, confidence)?;
    let pi = a.apparent(minimum).clamp(0.0, 1.0);
    let variance = if outputs > 0 {
        pi * (1.0 - pi) / outputs as f64
    } else {
        0.0
    };
    Ok(a.labels_needed(minimum, variance))
}

impl LabelNeeds {
    /// True when the set's labels cannot make a pass at the minimum
    /// reachable: no number of labels would, or more of a kind than the
    /// set has are needed.
    pub fn unreachable_with_set(&self) -> bool {
        match (self.reach, self.have) {
            (None, _) => true,
            (Some(r), Some(h)) => r.pass > h.pass || r.fail > h.fail,
            (Some(_), None) => false,
        }
    }
}

/// The best lower bound of Se and Sp measured as `se` and `sp`: with
/// θ = 1 and p̂ = Ŝe exactly, T(θ0) = u·J for u = 1 − θ0, tested on its
/// lower side, so the bound solves J²u² = (1 − u)²·dSe² + u²·dSp² with
/// dSe = U_Se − Ŝe, dSp = Ŝp − L_Sp (module docs):
/// (J² − dSe² − dSp²)u² + 2·dSe²·u − dSe² = 0. 0 when J is not clear of
/// its own uncertainty.
pub fn best_lower_bound_of(se: &Measured, sp: &Measured) -> f64 {
    let j = se.estimate + sp.estimate - 1.0;
    let dse2 = (se.interval.upper - se.estimate).powi(2);
    let dsp2 = (sp.estimate - sp.interval.lower).powi(2);
    let a = j * j - dse2 - dsp2;
    if j <= 0.0 || a <= 0.0 {
        return 0.0;
    }
    let (b, c) = (2.0 * dse2, -dse2);
    let u = (-b + (b * b - 4.0 * a * c).sqrt()) / (2.0 * a);
    (1.0 - u).clamp(0.0, 1.0)
}

/// Labels of each kind: `pass` labels a human passed, `fail` labels a
/// human failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelPair {
    pub pass: u64,
    pub fail: u64,
}

/// How many labels this judge needs against a check's minimum
/// (`crates/core/STATISTICS.md`, *How many labels*), at planning values
/// Se*, Sp* (the Agresti–Coull centres (x + z²/2)/(n + z²) of the measured
/// shares: never 0 or 1) and Wilson intervals at the run's confidence.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LabelNeeds {
    pub minimum: f64,
    /// The fewest labels with which a pass at the minimum can be
    /// established at all (J's MOVER lower bound above 0 and the best lower
    /// bound at least the minimum): `pass` the fewest PASS labels with the
    /// set's FAIL labels (raised to the fewest that unlimited PASS labels
    /// would need, if more), `fail` the fewest FAIL labels with the set's
    /// PASS labels or `pass`, whichever is more.
    /// `None`: no number of labels would (a judge no better than chance, a
    /// minimum of 100 %).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reach: Option<LabelPair>,
    /// Labels with which the judge's uncertainty adds at most half of the
    /// run's own variance at the minimum — each kind at most a quarter:
    /// θm²·Se*(1 − Se*)/n₁ ≤ V/4 and (1 − θm)²·Sp*(1 − Sp*)/n₀ ≤ V/4 —
    /// so the corrected interval is at most √1.5 ≈ 1.22× as wide as with a
    /// judge known exactly (at least `reach`). `None` with `reach`, or
    /// when the run's variance is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<LabelPair>,
    /// The set's labels of each kind.
    pub have: Option<LabelPair>,
}

/// The most labels of a kind [`LabelNeeds`] searches.
const MAX_LABELS: u64 = 10_000_000;

/// The smallest n in [1, MAX_LABELS] with `ok(n)` (ok monotone in n).
fn fewest(ok: impl Fn(u64) -> bool) -> Option<u64> {
    if !ok(MAX_LABELS) {
        return None;
    }
    let (mut lo, mut hi) = (0u64, 1u64);
    while !ok(hi) {
        lo = hi;
        hi = (hi * 2).min(MAX_LABELS);
    }
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

fn label_needs(a: &JudgeAccuracy, minimum: f64, run_variance: f64) -> LabelNeeds {
    let z2 = z_value(a.confidence).powi(2);
    let planning = |m: &Measured| (m.estimate * m.effective + z2 / 2.0) / (m.effective + z2);
    let (se, sp) = (planning(&a.sensitivity), planning(&a.specificity));
    let at = |p: f64, n: u64| Measured {
        estimate: p,
        interval: wilson(p, n as f64, a.confidence),
        agreed: 0,
        of: n,
        effective: n as f64,
    };
    // Effective labels → labels sampled as this set was.
    let actual = |n: u64, m: &Measured| -> u64 {
        let r = if m.effective > 0.0 {
            (m.of as f64 / m.effective).max(1.0)
        } else {
            1.0
        };
        ((n as f64) * r - 1e-9).ceil() as u64
    };
    // Reachable: J's MOVER lower bound above 0 (shown better than chance)
    // and the best lower bound at the minimum.
    let reaches = |n1: u64, n0: u64| {
        let (s1, s0) = (at(se, n1), at(sp, n0));
        let j_lower = se + sp
            - 1.0
            - (s1.estimate - s1.interval.lower).hypot(s0.estimate - s0.interval.lower);
        j_lower > 0.0 && best_lower_bound_of(&s1, &s0) >= minimum
    };
    let have = LabelPair {
        pass: a.sensitivity.of,
        fail: a.specificity.of,
    };
    let (have1, have0) = (
        a.sensitivity.effective.floor() as u64,
        a.specificity.effective.floor() as u64,
    );
    let reach = fewest(|n0| reaches(MAX_LABELS, n0)).and_then(|floor0| {
        let n1 = fewest(|n1| reaches(n1, floor0.max(have0)))?;
        let n0 = fewest(|n0| reaches(n1.max(have1), n0))?;
        Some(LabelPair {
            pass: actual(n1, &a.sensitivity),
            fail: actual(n0, &a.specificity),
        })
    });
    let power = reach.filter(|_| run_variance > 0.0).map(|r| {
        let budget = run_variance / 4.0;
        let n1 = (minimum * minimum * se * (1.0 - se) / budget).ceil() as u64;
        let n0 = ((1.0 - minimum).powi(2) * sp * (1.0 - sp) / budget).ceil() as u64;
        LabelPair {
            pass: actual(n1, &a.sensitivity).max(r.pass),
            fail: actual(n0, &a.specificity).max(r.fail),
        }
    });
    LabelNeeds {
        minimum,
        reach,
        power,
        have: Some(have),
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
    /// How many labels of each kind this judge needs against the minimum,
    /// this run's variance at the minimum given.
    #[serde(default)]
    pub labels_needed: LabelNeeds,
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
    let interval = unseen_allowance(
        interval,
        labels_only,
        estimate,
        clusters,
        test.nv.n,
        variance,
        a.confidence,
    );
    let at_minimum = a.apparent(minimum).clamp(0.0, 1.0);
    let labels_needed = a.labels_needed(minimum, test.nv.variance_at(at_minimum, &mut Vec::new()));
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
        labels_needed,
    })
}

/// `interval` reaching at least [`judged_allowance`], as the default
/// clustered interval's ends reach the unseen-minority allowance: a share h_G of inputs the
/// sample never saw may fail (pass) every output, on the true scale
/// (`crates/core/STATISTICS.md`, *Inputs the sample has not seen*). With
/// a few hard inputs among easy ones the run's variance under-states how
/// far the mean can lie below a sample that saw too few of them, and
/// without the allowance the truth fell below the corrected interval in up
/// to 6.5 % of runs (issue 35 item 4). Not applied when the run's variance
/// is binomial (a rate about these inputs, or one output per input, where
/// every output is a Bernoulli trial of the population's mean).
fn unseen_allowance(
    interval: Interval,
    labels_only: Interval,
    estimate: f64,
    clusters: &[ClusterSum],
    outputs: f64,
    variance: RunVariance,
    confidence: f64,
) -> Interval {
    let inputs = clusters.iter().filter(|c| c.count > 0).count() as u64;
    if variance != RunVariance::Clustered || outputs <= inputs as f64 {
        return interval;
    }
    let reach = judged_allowance(estimate, labels_only, inputs, confidence);
    Interval {
        lower: interval.lower.min(reach.lower),
        upper: interval.upper.max(reach.upper),
    }
}

/// The unseen-minority allowance around the corrected estimate θ̂
/// (`super::unseen::allowance`: [(1 − h_G)·θ̂, 1 − (1 − h_G)(1 − θ̂)], h_G
/// the share of inputs G inputs can miss) widened by the judge's own
/// uncertainty, the labels-only interval's distance from θ̂:
/// [(1 − h_G)·θ̂ − (θ̂ − L_labels), 1 − (1 − h_G)(1 − θ̂) + (U_labels − θ̂)],
/// clamped to [0, 1]. Without the widening the truth fell below the
/// corrected interval in up to 4.0 % of runs of `bench/judge.sh`, with it
/// 1.1 % (STATISTICS.md).
pub fn judged_allowance(
    estimate: f64,
    labels_only: Interval,
    inputs: u64,
    confidence: f64,
) -> Interval {
    let a = super::unseen::allowance(estimate, inputs, confidence);
    Interval {
        lower: (a.lower - (estimate - labels_only.lower).max(0.0)).max(0.0),
        upper: (a.upper + (labels_only.upper - estimate).max(0.0)).min(1.0),
    }
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
    /// The design effect at the judged rate p̂ — the larger of the
    /// model's (restricted ICC) and the cluster-robust one; 1 when p̂ is 0
    /// or 1, or the variance binomial: a floor for the design effect under
    /// a tested rate (module docs).
    deff_at_estimate: f64,
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
        let p = nv.estimate();
        let deff_at_estimate = if p > 0.0 && p < 1.0 && variance == RunVariance::Clustered {
            let binomial = p * (1.0 - p) / nv.n;
            let model = nv.variance_at(p, &mut Vec::new());
            // The cluster-robust (sandwich) variance, which assumes no
            // shape for the inputs' rates: Σ(xᵢ − p̂·mᵢ)²/n² · G/(G − 1).
            let g = clusters.len() as f64;
            let robust = if g > 1.0 {
                clusters
                    .iter()
                    .map(|c| (c.sum - p * c.count as f64).powi(2))
                    .sum::<f64>()
                    / (nv.n * nv.n)
                    * g
                    / (g - 1.0)
            } else {
                0.0
            };
            (model.max(robust) / binomial).max(1.0)
        } else {
            1.0
        };
        Ok(Inversion {
            nv,
            accuracy,
            deff_at_estimate,
        })
    }

    /// f(θ0) ≤ 0 ⇔ θ0 is accepted; `scale` multiplies p̂'s variance (1: the
    /// run as it is; 0: p̂ known exactly; n/N: a run of N outputs).
    fn f(&self, theta: f64, scale: f64, scratch: &mut Vec<f64>) -> f64 {
        let p = self.nv.estimate();
        let pi = self.accuracy.apparent(theta).clamp(0.0, 1.0);
        let c2 = self.nv.critical * self.nv.critical;
        let run = if scale > 0.0 {
            let floor = pi * (1.0 - pi) * self.deff_at_estimate / self.nv.n;
            scale * c2 * self.nv.variance_at(pi, scratch).max(floor)
        } else {
            0.0
        };
        let (se, sp) = (&self.accuracy.sensitivity, &self.accuracy.specificity);
        let t = p - pi;
        // The side the test looks at (module docs): below θ̂ a higher Se or
        // lower Sp would explain p̂; above it, a lower Se or higher Sp.
        let (dse, dsp) = if t >= 0.0 {
            (
                se.interval.upper - se.estimate,
                sp.estimate - sp.interval.lower,
            )
        } else {
            (
                se.estimate - se.interval.lower,
                sp.interval.upper - sp.estimate,
            )
        };
        let judge = (theta * dse).powi(2) + ((1.0 - theta) * dsp).powi(2);
        t * t - run - judge
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
