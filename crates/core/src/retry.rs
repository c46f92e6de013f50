//! Retry planning (paper §4.2): how many attempts an output needs to pass
//! every check, and how many to allow.
//!
//! The paper's "m retries" is the total number of attempts (its worked
//! example solves `1 − (1 − P)^m = 0.99` for m), so this module speaks of
//! attempts; retries are always `attempts − 1`.

use crate::options::AnalysisOptions;
use crate::profile::{profile, Profile};
use crate::score::{output_passes_all, ClusterAccumulator};
use crate::stats::RateEstimate;
use crate::tensor::{Cell, ReliabilityTensor};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use thiserror::Error;

/// Tolerance for rounding `m` up: `ln(1−c)/ln(1−P)` that is an integer up to
/// floating-point noise must not round up to the next integer.
const CEIL_EPSILON: f64 = 1e-9;

/// The geometric model of §4.2.2 for a per-attempt pass probability `p`:
/// attempts are independent, each passes with probability `p`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Geometric {
    pub p: f64,
}

impl Geometric {
    /// The model for a pass probability `p` in [0, 1]; NaN or a value
    /// outside [0, 1] is an error ([`PlanError::BadRate`] with index 1).
    pub fn new(p: f64) -> Result<Geometric, PlanError> {
        if (0.0..=1.0).contains(&p) {
            Ok(Geometric { p })
        } else {
            Err(PlanError::BadRate { index: 1, value: p })
        }
    }

    /// [`Geometric::attempts_for`] with invalid input as an error: `p`
    /// outside [0, 1] or NaN, `target` outside (0, 1). `Ok(None)` when
    /// `P = 0` (no number of attempts suffices).
    pub fn try_attempts_for(&self, target: f64) -> Result<Option<u32>, PlanError> {
        Geometric::new(self.p)?;
        check_target(target)?;
        Ok(self.attempts_for(target))
    }

    /// `E[attempts] = 1/P` (§4.2.2, the paper's `E[R]`); `None` when `P = 0`
    /// (no attempt ever passes).
    pub fn expected_attempts(&self) -> Option<f64> {
        (self.p > 0.0).then(|| 1.0 / self.p)
    }

    /// `E[retries] = 1/P − 1`; `None` when `P = 0`.
    pub fn expected_retries(&self) -> Option<f64> {
        self.expected_attempts().map(|a| a - 1.0)
    }

    /// The real-valued `m` solving `1 − (1 − P)^m = target`:
    /// `ln(1 − target) / ln(1 − P)` (the paper prints 2.74 for its example; the
    /// correct value is 3.55, see the tests), with `ln(1 − P)` computed as
    /// `ln_1p(−P)` so that a tiny P (1e-17, where `1 − P` rounds to 1) is
    /// not lost. `Some(1.0)` when `P = 1`; `Some(∞)` when P is so small
    /// (subnormal) that the quotient overflows; `None` when `P = 0` (no
    /// number of attempts suffices), and `None` for invalid input — `P`
    /// NaN or outside [0, 1], `target` NaN or outside (0, 1) (a target of 1
    /// is never reached) — see [`Geometric::try_attempts_for`] for the
    /// reason as an error.
    pub fn attempts_exact(&self, target: f64) -> Option<f64> {
        if !((0.0..=1.0).contains(&self.p) && target > 0.0 && target < 1.0) {
            None
        } else if self.p >= 1.0 {
            Some(1.0)
        } else if self.p <= 0.0 {
            None
        } else {
            Some(((-target).ln_1p() / (-self.p).ln_1p()).max(1.0))
        }
    }

    /// The least whole number of attempts `m` with
    /// `P(success within m) ≥ target` (§4.2.4's example: 3.55 → 4):
    /// [`Attempts::Finite`] up to [`MAX_ATTEMPTS`] (2⁵³, where every
    /// whole number is still exact in a float), [`Attempts::Unbounded`]
    /// beyond it and when `P = 0`. Invalid input is an error.
    pub fn attempts(&self, target: f64) -> Result<Attempts, PlanError> {
        Geometric::new(self.p)?;
        check_target(target)?;
        Ok(match self.attempts_exact(target) {
            Some(m) if m <= MAX_ATTEMPTS as f64 => {
                Attempts::Finite(((m - CEIL_EPSILON).ceil().max(1.0)) as u64)
            }
            _ => Attempts::Unbounded,
        })
    }

    /// [`Geometric::attempts`] as a `u32`: `None` when `P = 0`, when more
    /// than `u32::MAX` attempts are needed (never a saturated count), and
    /// for invalid input.
    pub fn attempts_for(&self, target: f64) -> Option<u32> {
        match self.attempts(target) {
            Ok(Attempts::Finite(m)) => u32::try_from(m).ok(),
            _ => None,
        }
    }

    /// `P(success within m attempts) = 1 − (1 − P)^m` (§4.2.2), as
    /// `−expm1(m · ln_1p(−P))`: exact for tiny P and any m.
    pub fn success_within(&self, m: impl Into<u64>) -> f64 {
        let m = m.into();
        if m == 0 {
            return 0.0;
        }
        if self.p >= 1.0 {
            return 1.0;
        }
        -(m as f64 * (-self.p).ln_1p()).exp_m1()
    }

    /// `P(no output published) = (1 − P)^m`: every one of `m` attempts failed.
    pub fn no_output(&self, m: impl Into<u64>) -> f64 {
        let m = m.into();
        if m == 0 {
            return 1.0;
        }
        if self.p >= 1.0 {
            return 0.0;
        }
        (m as f64 * (-self.p).ln_1p()).exp()
    }

    /// Expected model calls when capped at `m` attempts:
    /// `Σ_{t<m} (1−P)^t = (1 − (1 − P)^m) / P`, and `m` when `P = 0`.
    pub fn expected_calls(&self, m: impl Into<u64>) -> f64 {
        let m = m.into();
        if self.p <= 0.0 {
            m as f64
        } else {
            self.success_within(m) / self.p
        }
    }
}

/// The largest attempt count [`Geometric::attempts`] gives exactly: 2⁵³.
pub const MAX_ATTEMPTS: u64 = 1 << 53;

/// How many attempts reach a target ([`Geometric::attempts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attempts {
    /// This many attempts (at least 1).
    Finite(u64),
    /// No number suffices (P = 0), or more than [`MAX_ATTEMPTS`].
    Unbounded,
}

/// Bad arguments to a retry plan.
#[derive(Debug, Error, PartialEq)]
pub enum PlanError {
    #[error("no pass rates given: give at least one, e.g. 0.95,0.90,0.85")]
    NoRates,
    #[error("pass rate #{index} is {value}; a pass rate must be a number between 0 and 1")]
    BadRate { index: usize, value: f64 },
    #[error("target confidence {0} must be strictly between 0 and 1")]
    BadTarget(f64),
    #[error("nothing was observed: no output of the run was judged by every deciding check, so there is no pass rate to plan retries from")]
    NothingObserved,
    #[error("the run has no deciding check: with nothing to pass, every output would count as a success, so there is no pass rate to plan retries from")]
    NoChecks,
}

/// Most checks for which the pairwise phi matrix is computed.
pub const MAX_PHI_CHECKS: usize = 100;

/// Joint pass rates measured on a tensor (§4.2.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmpiricalJoint {
    /// Share of outputs passing every check, over all inputs (clustered).
    pub overall: RateEstimate,
    /// The same per input: `P_pass,i`.
    pub per_input: Vec<RateEstimate>,
    /// Pairwise phi coefficients between validators, over outputs where
    /// both were evaluated; `None` where a validator never varied. Empty
    /// for more than [`MAX_PHI_CHECKS`] checks (K² pairs would make the
    /// memory and time of a run grow with the square of K).
    pub phi: Vec<Vec<Option<f64>>>,
}

/// A retry plan: per-validator pass rates, the combined pass probability
/// and, when built from a tensor, the empirical joint rates (§4.2.2–4.2.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryPlan {
    /// `p_k`, the per-validator pass rates.
    pub rates: Vec<f64>,
    /// `P_pass = Π p_k`, assuming independent validators (§4.2.2).
    pub p_independent: f64,
    /// Measured joint rates, when the plan comes from a tensor.
    pub empirical: Option<EmpiricalJoint>,
}

impl RetryPlan {
    /// A plan from assumed per-validator rates, each in [0, 1].
    pub fn from_rates(rates: &[f64]) -> Result<Self, PlanError> {
        if rates.is_empty() {
            return Err(PlanError::NoRates);
        }
        if let Some((index, &value)) = rates
            .iter()
            .enumerate()
            .find(|(_, r)| !(0.0..=1.0).contains(*r))
        {
            return Err(PlanError::BadRate {
                index: index + 1,
                value,
            });
        }
        Ok(RetryPlan {
            rates: rates.to_vec(),
            p_independent: rates.iter().product(),
            empirical: None,
        })
    }

    /// A plan from a measured tensor: `p_k` are the validator marginal rates
    /// (VRP), and the joint rate is the share of outputs passing all `K`
    /// checks, overall (clustered by input) and per input. A tensor with
    /// no output judged by every check (all cells missing, say) is
    /// [`PlanError::NothingObserved`]: there is no rate to plan from; a
    /// tensor with no check at all is [`PlanError::NoChecks`].
    pub fn from_tensor(t: &ReliabilityTensor, opts: &AnalysisOptions) -> Result<Self, PlanError> {
        // No check: "every check passes" holds vacuously for every output,
        // and a plan would promise 1 attempt for any target (issue 35
        // item 5).
        if t.validators() == 0 {
            return Err(PlanError::NoChecks);
        }
        let plan = Self::measure(t, opts);
        match &plan.empirical {
            Some(e) if e.overall.n > 0 => Ok(plan),
            _ => Err(PlanError::NothingObserved),
        }
    }

    /// [`RetryPlan::from_tensor`] without the check (a summary carries a
    /// plan even for a run that observed nothing; its rates are then
    /// empty estimates that no report reads as measured).
    pub(crate) fn measure(t: &ReliabilityTensor, opts: &AnalysisOptions) -> Self {
        let (n, m, k) = t.shape();
        let rates: Vec<f64> = profile(t, Profile::Validator, opts)
            .iter()
            .map(|e| e.rate.estimate)
            .collect();
        let mut overall = ClusterAccumulator::new(n);
        // One input's accumulator at a time: its rate is taken when its
        // outputs are done (a million accumulators would be ~100 MB).
        let mut input_acc = ClusterAccumulator::new(m);
        let mut per_input = Vec::with_capacity(n);
        let with_phi = k <= MAX_PHI_CHECKS;
        let mut pairs = vec![[0u64; 4]; if with_phi { k * k } else { 0 }];
        // Outputs with the same K cells add the same pairs: with K ≤ 32 each
        // distinct row of cells is tallied (two bits a cell) and its pairs
        // counted once — most runs have few distinct rows.
        let packed = with_phi && k <= 32;
        let mut rows: HashMap<u64, u64> = HashMap::new();
        let mut cells: Vec<Cell> = Vec::with_capacity(k);
        for i in 0..n {
            input_acc.clear();
            for j in 0..m {
                t.output_cells(i, j, &mut cells);
                let joint = output_passes_all(&cells, opts.errors);
                let cell = match joint {
                    Some(true) => Cell::Pass,
                    Some(false) => Cell::Fail,
                    None => Cell::Missing,
                };
                overall.add_cell(i, cell, opts.errors);
                input_acc.add_cell(j, cell, opts.errors);
                if packed {
                    let row = cells
                        .iter()
                        .enumerate()
                        .fold(0u64, |acc, (x, &c)| acc | (u64::from(c as u8) << (2 * x)));
                    *rows.entry(row).or_default() += 1;
                } else if with_phi {
                    count_pairs(&cells, 1, opts, &mut pairs);
                }
            }
            per_input.push(input_acc.estimate(opts));
        }
        for (row, times) in rows {
            cells.clear();
            cells.extend((0..k).map(|x| Cell::from_bits((row >> (2 * x)) as u8)));
            count_pairs(&cells, times, opts, &mut pairs);
        }
        let kp = if with_phi { k } else { 0 };
        let mut phi = vec![vec![None; kp]; kp];
        for a in 0..kp {
            phi[a][a] = Some(1.0);
            for b in (a + 1)..kp {
                let v = phi_coefficient(pairs[a * k + b]);
                phi[a][b] = v;
                phi[b][a] = v;
            }
        }
        RetryPlan {
            p_independent: rates.iter().product(),
            rates,
            empirical: Some(EmpiricalJoint {
                overall: overall.estimate(opts),
                per_input,
                phi,
            }),
        }
    }

    /// The geometric model under independence (§4.2.2).
    pub fn independent(&self) -> Geometric {
        Geometric {
            p: self.p_independent,
        }
    }

    /// The geometric model at the measured joint rate, when measured.
    pub fn measured(&self) -> Option<Geometric> {
        self.empirical.as_ref().map(|e| Geometric {
            p: e.overall.estimate,
        })
    }

    /// The geometric model at the lower confidence bound of the measured
    /// joint rate: an `m` chosen from it meets the target with the
    /// interval's confidence, not just on average.
    pub fn conservative(&self) -> Option<Geometric> {
        self.empirical.as_ref().map(|e| Geometric {
            p: e.overall.interval.lower,
        })
    }

    /// Measured joint rate over `Π p_k`: 1 when validators behave as if
    /// independent, above 1 when their failures coincide (positively
    /// correlated), below 1 when they exclude each other. `None` without a
    /// measurement or when `Π p_k = 0`.
    pub fn dependence_ratio(&self) -> Option<f64> {
        let m = self.measured()?;
        (self.p_independent > 0.0).then(|| m.p / self.p_independent)
    }

    /// Per input, the attempts for `target` at that input's joint rate
    /// (§4.2.3); `None` for an input that never passed.
    pub fn attempts_per_input(&self, target: f64) -> Vec<Option<u32>> {
        self.empirical
            .as_ref()
            .map(|e| {
                e.per_input
                    .iter()
                    .map(|r| Geometric { p: r.estimate }.attempts_for(target))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The most attempts [`RetryPlan::attempts_over_inputs`] searches.
pub const MAX_PLANNED_ATTEMPTS: u32 = 10_000;

/// P(success within m) averaged over inputs (paper §4.2.3: each input at
/// its own rate), with an interval for the population of inputs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SuccessOverInputs {
    pub estimate: f64,
    pub lower: f64,
    pub upper: f64,
    /// Inputs it averages over.
    pub inputs: u64,
}

/// One input's single attempts: `fails` of `n` outputs failed the deciding
/// checks. What it says of m attempts at this input's rate p, without the
/// plug-in's bias: (1 − p̂)^m is convex in p̂, so E(1 − p̂)^m > (1 − p)^m
/// and the plug-in's 1 − (1 − p̂)^m errs low (a guarded run measured 0.970
/// above the plug-in prediction's [0.898, 0.969]; issue 35 item 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputAttempts {
    pub n: u64,
    pub fails: u64,
}

impl InputAttempts {
    /// The input's record from its per-input rate (passes = p̂·n).
    pub fn of(r: &RateEstimate) -> InputAttempts {
        let passes = (r.estimate * r.n as f64).round().clamp(0.0, r.n as f64) as u64;
        InputAttempts {
            n: r.n,
            fails: r.n - passes,
        }
    }

    /// The unbiased estimate of (1 − p)^j, j ≤ n: C(f, j)/C(n, j) =
    /// Π_{t<j} (f − t)/(n − t), the chance that j of the input's n outputs
    /// drawn without replacement all failed (hypergeometric: its mean over
    /// f ~ Binomial(n, 1 − p) is (1 − p)^j exactly). No unbiased estimate
    /// exists past j = n; there it is held at its value at n (1 when every
    /// output failed, else 0), so it never rises with j.
    pub fn all_fail(&self, j: u64) -> f64 {
        let mut q = 1.0;
        for t in 0..j.min(self.n) {
            if q == 0.0 {
                break;
            }
            q *= (self.fails.saturating_sub(t)) as f64 / (self.n - t) as f64;
        }
        q
    }

    /// P(success within m) = 1 − (1 − p)^m, estimated without bias
    /// (m ≤ n; see [`InputAttempts::all_fail`]).
    pub fn success_within(&self, m: u64) -> f64 {
        1.0 - self.all_fail(m)
    }

    /// Expected attempts with at most m: E min(T, m) = Σ_{j<m} (1 − p)^j,
    /// each term estimated without bias ([`InputAttempts::all_fail`]).
    pub fn expected_calls(&self, m: u64) -> f64 {
        let exact = m.min(self.n + 1);
        let mut sum = 0.0;
        let mut q = 1.0;
        for j in 0..exact {
            sum += q;
            if j < self.n {
                q *= (self.fails.saturating_sub(j)) as f64 / (self.n - j) as f64;
            }
        }
        // Past n + 1 terms each is the value at n.
        sum + (m - exact) as f64 * self.all_fail(self.n)
    }
}

/// The mean of `values` (shares in [0, 1], one per input) with a
/// Korn–Graubard interval (inputs as the unit, `confidence` two-sided):
/// the effective size n_e = s̄(1 − s̄)/v̂ from the between-input variance
/// v̂ = sd²/G, scaled by (z/t_{G−1})² for the few inputs, then the exact
/// Clopper–Pearson interval at x = s̄·n_e of n_e (Korn & Graubard 1998).
/// Near 0 or 1 it is lopsided as the truth is; the t interval s̄ ± t·sd/√G
/// was not (simulated, 17 inputs at 0.97 and 3 at 0.6: 92.7 % coverage,
/// its misses on the narrow side). `None` for the interval when the
/// values do not vary (or fewer than two).
pub(crate) fn share_over_inputs(values: &[f64], confidence: f64) -> (f64, Option<(f64, f64)>) {
    let g = values.len() as f64;
    let mean = values.iter().sum::<f64>() / g;
    if values.len() < 2 {
        return (mean, None);
    }
    let var = values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (g - 1.0) / g;
    if var <= 1e-18 {
        return (mean, None);
    }
    let df_ratio = crate::stats::z_value(confidence) / crate::stats::t_value(confidence, g - 1.0);
    let n_e = (mean * (1.0 - mean) / var).max(1.0) * df_ratio * df_ratio;
    let band = crate::stats::proportion_interval(
        mean * n_e,
        n_e,
        confidence,
        crate::stats::IntervalMethod::ClopperPearson,
    );
    (mean, Some((band.lower.min(mean), band.upper.max(mean))))
}

impl RetryPlan {
    /// P(success within `m`) averaged over the measured inputs, each at its
    /// own joint rate: s̄ = (1/G) Σ ŝ_i, ŝ_i = 1 − C(f_i, m)/C(n_i, m), the
    /// unbiased estimate of 1 − (1 − p_i)^m ([`InputAttempts`]; the
    /// plug-in 1 − (1 − p̂_i)^m errs low). The interval is Korn–Graubard's
    /// over the ŝ_i ([`share_over_inputs`]: inputs as the unit,
    /// `confidence` two-sided); when the ŝ_i do not vary (or G < 2) it is the
    /// mean of each input's 1 − (1 − p)^m at its own interval's ends, so an
    /// all-pass sample still has a width. This, not the joint rate's
    /// 1 − (1 − P̄)^m, is what a guarded system publishes when inputs
    /// differ (Jensen: the mean of a concave function of p_i is below it at
    /// the mean; issue 35's audit: 99.1 % at the joint rate, 93.1 %
    /// measured, 92.7 % averaged over inputs). `None` without a
    /// measurement.
    pub fn success_over_inputs(&self, m: u32, confidence: f64) -> Option<SuccessOverInputs> {
        let e = self.empirical.as_ref()?;
        let rows: Vec<&RateEstimate> = e.per_input.iter().filter(|r| r.n > 0).collect();
        if rows.is_empty() {
            return None;
        }
        let s: Vec<f64> = rows
            .iter()
            .map(|r| InputAttempts::of(r).success_within(u64::from(m)))
            .collect();
        let (mean, band) = share_over_inputs(&s, confidence);
        let (lower, upper) = band.unwrap_or_else(|| {
            let at = |p: f64| Geometric { p }.success_within(u64::from(m));
            let g = rows.len() as f64;
            let lo = rows.iter().map(|r| at(r.interval.lower)).sum::<f64>() / g;
            let hi = rows.iter().map(|r| at(r.interval.upper)).sum::<f64>() / g;
            (lo.min(mean), hi.max(mean))
        });
        Some(SuccessOverInputs {
            estimate: mean,
            lower: lower.clamp(0.0, 1.0),
            upper: upper.clamp(0.0, 1.0),
            inputs: rows.len() as u64,
        })
    }

    /// The fewest attempts m whose [`RetryPlan::success_over_inputs`]
    /// estimate reaches `target`: what a guarded system needs for `target`
    /// of its calls to publish when inputs differ. `None` without a
    /// measurement, or when no m up to [`MAX_PLANNED_ATTEMPTS`] reaches it
    /// (inputs that never passed hold the mean below their complement).
    pub fn attempts_over_inputs(&self, target: f64, confidence: f64) -> Option<u32> {
        let reaches = |m: u32| {
            self.success_over_inputs(m, confidence)
                .is_some_and(|s| s.estimate >= target)
        };
        if !reaches(MAX_PLANNED_ATTEMPTS) {
            return None;
        }
        let (mut lo, mut hi) = (0u32, MAX_PLANNED_ATTEMPTS);
        // s̄(m) never falls as m grows: bisection.
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if reaches(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(hi)
    }
}

/// Check a target confidence for [`Geometric::attempts_for`].
pub fn check_target(target: f64) -> Result<f64, PlanError> {
    if target > 0.0 && target < 1.0 {
        Ok(target)
    } else {
        Err(PlanError::BadTarget(target))
    }
}

/// Phi coefficient of a 2×2 table `[n00, n01, n10, n11]`:
/// `(n11·n00 − n10·n01) / sqrt(n1·· n0·· n·1 n·0)`; `None` when a margin is 0.
pub fn phi_coefficient(t: [u64; 4]) -> Option<f64> {
    let [n00, n01, n10, n11] = t.map(|x| x as f64);
    let den = ((n10 + n11) * (n00 + n01) * (n01 + n11) * (n00 + n10)).sqrt();
    (den > 0.0).then(|| (n11 * n00 - n10 * n01) / den)
}

/// Add `times` outputs with these `cells` to the 2×2 tables of every pair
/// of checks `(a, b)`, `a < b` (at `a·K + b`; index `2·x + y` for values x, y).
fn count_pairs(cells: &[Cell], times: u64, opts: &AnalysisOptions, pairs: &mut [[u64; 4]]) {
    let k = cells.len();
    let values: Vec<Option<f64>> = cells
        .iter()
        .map(|&c| crate::score::cell_value(c, opts.errors))
        .collect();
    for a in 0..k {
        for b in (a + 1)..k {
            if let (Some(x), Some(y)) = (values[a], values[b]) {
                pairs[a * k + b][(x as usize) * 2 + y as usize] += times;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// Issue 35 item 5: a tensor with no check has no pass rate to plan
    /// from; before, every output "passed every check" and the plan said
    /// one attempt reaches 99 %.
    #[test]
    fn no_check_is_an_error_not_a_plan() {
        let t = ReliabilityTensor::new(3, 2, 0).unwrap();
        let e = RetryPlan::from_tensor(&t, &AnalysisOptions::default()).unwrap_err();
        assert_eq!(e, PlanError::NoChecks);
        assert!(e.to_string().contains("no deciding check"), "{e}");
    }

    /// Issue 35 item 3: 18 inputs that always pass and 2 that pass 3 of
    /// 10. The joint rate (0.93) says 2 attempts publish 99 % of calls
    /// (1 − 0.07² = 0.9951); averaged over inputs 2 attempts publish
    /// 1 − 0.1·0.7² = 95.1 %, and 99 % needs 0.7^m ≤ 0.1, m = 7
    /// (1 − 0.1·0.7^7 = 0.99176457; m = 6: 0.98823510). The interval:
    /// scipy, `s = [1]*18 + [1 - 0.7**7]*2; s.mean() ∓
    /// t.ppf(0.975, 19)*s.std(ddof=1)/sqrt(20)` = [0.97990129, 1.00362785],
    /// clamped to 1.
    #[test]
    fn attempts_average_over_inputs_at_their_own_rates() {
        let mut t = ReliabilityTensor::new(20, 10, 1).unwrap();
        for i in 0..20 {
            for j in 0..10 {
                let pass = i < 18 || j < 3;
                t.set(i, j, 0, if pass { Cell::Pass } else { Cell::Fail })
                    .unwrap();
            }
        }
        let plan = RetryPlan::from_tensor(&t, &AnalysisOptions::default()).unwrap();
        assert_eq!(plan.measured().unwrap().attempts_for(0.99), Some(2));
        // Reference (scipy, independent): inputs 18 and 19 failed 7 of 10,
        // so each is 1 − C(7, m)/C(10, m) and the mean is
        // 1 − C(7, m)/C(10, m)/10: m = 5 is the first at 99 % (0.99167);
        // its Korn–Graubard interval over the 20 inputs:
        // n_e = s̄(1 − s̄)/(var/20)·(z/t₁₉)², Clopper–Pearson at s̄·n_e of n_e.
        assert_eq!(plan.attempts_over_inputs(0.99, 0.95), Some(5));
        let s = plan.success_over_inputs(5, 0.95).unwrap();
        assert!(close(s.estimate, 0.9916666666666668, 1e-12), "{s:?}");
        assert!(close(s.lower, 0.9687602831421449, 1e-6), "{s:?}");
        assert!(close(s.upper, 0.9991215905552193, 1e-6), "{s:?}");
        assert_eq!(s.inputs, 20);
        assert!(close(
            plan.success_over_inputs(4, 0.95).unwrap().estimate,
            0.9833333333333332,
            1e-12
        ));
        // An input that never passes caps the mean: 99 % is out of reach
        // when 1 of 20 inputs never passes.
        for j in 0..10 {
            t.set(19, j, 0, Cell::Fail).unwrap();
        }
        let plan = RetryPlan::from_tensor(&t, &AnalysisOptions::default()).unwrap();
        assert_eq!(plan.attempts_over_inputs(0.99, 0.95), None);
        // 18 inputs at 1, one at 0.3, one at 0: the mean is
        // 1 − (C(7, m)/C(10, m) + 1)/20, 0.915 at m = 1.
        assert_eq!(plan.attempts_over_inputs(0.90, 0.95), Some(1));
    }

    /// The paper's worked example, §4.2.4. The paper's P_pass, E[R] and
    /// E[retries] are right; its m is not: it prints
    /// `log(0.01)/log(0.27325) ≈ 2.74`, but that quotient is 3.5496 (in any
    /// base), and three attempts succeed with probability
    /// `1 − 0.27325³ = 0.97960 < 0.99`. Four attempts are needed. Reference
    /// values: Python `math.log(0.01)/math.log(1-0.95*0.9*0.85)`.
    #[test]
    fn papers_worked_example() {
        let plan = RetryPlan::from_rates(&[0.95, 0.90, 0.85]).unwrap();
        assert!(close(plan.p_independent, 0.72675, 1e-12));
        let g = plan.independent();
        assert!(close(
            g.expected_attempts().unwrap(),
            1.3759889920880632,
            1e-12
        ));
        assert!(close(
            g.expected_retries().unwrap(),
            0.37598899208806325,
            1e-12
        ));
        assert!(close(
            g.attempts_exact(0.99).unwrap(),
            3.549624814786248,
            1e-9
        ));
        assert_eq!(g.attempts_for(0.99), Some(4));
        assert!(close(g.success_within(3u32), 0.979597635046875, 1e-12));
        assert!(close(g.success_within(4u32), 0.9944250537765585, 1e-12));
        assert!(close(g.no_output(3u32), 0.27325f64.powi(3), 1e-15));
        assert!(close(
            g.expected_calls(3u32),
            1.0 + 0.27325 + 0.27325 * 0.27325,
            1e-12
        ));
    }

    #[test]
    fn degenerate_rates_do_not_divide_by_zero() {
        let never = Geometric { p: 0.0 };
        assert_eq!(never.expected_attempts(), None);
        assert_eq!(never.attempts_for(0.99), None);
        assert_eq!(never.no_output(5u32), 1.0);
        assert_eq!(never.expected_calls(5u32), 5.0);
        let always = Geometric { p: 1.0 };
        assert_eq!(always.expected_attempts(), Some(1.0));
        assert_eq!(always.attempts_for(0.999), Some(1));
        assert_eq!(always.no_output(1u32), 0.0);
        assert_eq!(always.expected_calls(4u32), 1.0);
    }

    #[test]
    fn invalid_input_gives_no_attempt_count() {
        assert_eq!(Geometric { p: f64::NAN }.attempts_for(0.99), None);
        assert_eq!(Geometric { p: 0.5 }.attempts_for(1.0), None);
        assert_eq!(Geometric { p: 1.5 }.attempts_for(0.9), None);
        assert!(Geometric { p: f64::NAN }.try_attempts_for(0.99).is_err());
        assert!(Geometric { p: 0.5 }.try_attempts_for(1.0).is_err());
        assert_eq!(Geometric { p: 0.0 }.try_attempts_for(0.9), Ok(None));
        assert!(Geometric::new(-0.1).is_err());
    }

    /// The extreme rates: exact or unbounded, never a saturated
    /// u32 nor "1 attempt". Reference m from Python's `decimal` at 50
    /// digits: `D('0.01').ln() / (1 - D(p)).ln()` gives
    /// 46051701857.578… for p = 1e-10, 46051701859880911.38… for 1e-16 and
    /// 460517018598809134.5… for 1e-17.
    #[test]
    fn tiny_rates_are_exact_or_unbounded() {
        let g = Geometric { p: 1e-10 };
        assert_eq!(g.attempts(0.99), Ok(Attempts::Finite(46_051_701_858)));
        let exact = g.attempts_exact(0.99).unwrap();
        assert!((exact - 46_051_701_857.578_33).abs() < 1e-3, "{exact}");
        // The count reaches the target and one fewer does not.
        assert!(g.success_within(46_051_701_858u64) >= 0.99);
        assert!(g.success_within(46_051_701_857u64) < 0.99);
        assert_eq!(g.attempts_for(0.99), None, "beyond u32: no saturated count");
        for p in [1e-16, 1e-17, 1e-300, 5e-324] {
            let g = Geometric { p };
            assert_eq!(g.attempts(0.99), Ok(Attempts::Unbounded), "p = {p}");
            assert!(g.attempts_exact(0.99).unwrap() > 4e16, "p = {p}");
            // One attempt reaches (almost exactly) p, not 99 %.
            assert!((g.success_within(1u32) - p).abs() <= p * 1e-12, "p = {p}");
        }
        let e = Geometric { p: 1e-17 }.attempts_exact(0.99).unwrap();
        assert!((e / 4.605_170_185_988_091e17 - 1.0).abs() < 1e-12, "{e}");
        assert_eq!(Geometric { p: 0.0 }.attempts(0.99), Ok(Attempts::Unbounded));
        assert!(Geometric { p: 2.0 }.attempts(0.99).is_err());
        assert!(Geometric { p: 0.5 }.attempts(1.0).is_err());
    }

    /// The case: a tensor whose cells are all missing has no rate
    /// to plan from, so the plan is an error, not "1 attempt reaches 99 %".
    #[test]
    fn all_missing_tensor_is_an_error() {
        let t = ReliabilityTensor::new(3, 4, 2).unwrap();
        let e = RetryPlan::from_tensor(&t, &AnalysisOptions::default()).unwrap_err();
        assert_eq!(e, PlanError::NothingObserved);
        assert!(e.to_string().contains("nothing was observed"), "{e}");
        let mut t = ReliabilityTensor::new(1, 2, 1).unwrap();
        t.set(0, 0, 0, Cell::Pass).unwrap();
        assert!(RetryPlan::from_tensor(&t, &AnalysisOptions::default()).is_ok());
    }

    #[test]
    fn exact_integer_m_is_not_rounded_up() {
        // ln(0.01)/ln(0.1) = 2 exactly in theory, 2.0000000000000004 in floats.
        assert_eq!(Geometric { p: 0.9 }.attempts_for(0.99), Some(2));
    }

    #[test]
    fn bad_rates_are_named() {
        assert_eq!(RetryPlan::from_rates(&[]), Err(PlanError::NoRates));
        assert_eq!(
            RetryPlan::from_rates(&[0.9, 1.2]),
            Err(PlanError::BadRate {
                index: 2,
                value: 1.2
            })
        );
        assert!(matches!(
            RetryPlan::from_rates(&[f64::NAN]),
            Err(PlanError::BadRate { .. })
        ));
        assert!(check_target(1.0).is_err());
        assert!(check_target(0.0).is_err());
    }

    #[test]
    fn phi_of_perfectly_correlated_and_independent_tables() {
        assert_eq!(phi_coefficient([5, 0, 0, 5]), Some(1.0));
        assert_eq!(phi_coefficient([0, 5, 5, 0]), Some(-1.0));
        assert_eq!(phi_coefficient([25, 25, 25, 25]), Some(0.0));
        assert_eq!(phi_coefficient([0, 0, 5, 5]), None);
    }
}
