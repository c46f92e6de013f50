//! Comparing two runs (docs/architecture.md, Design decisions: "Comparing two runs on the
//! same inputs"): per check, the change in success rate from a **baseline**
//! run A to a **candidate** run B, with an interval, a verdict (improved /
//! regressed / no detectable change) and the smallest change the runs could
//! have detected.
//!
//! Decisions, fixed here and documented in `docs/ci.md`:
//!
//! * **Direction.** Every difference is `B − A` (candidate minus
//!   baseline): positive is better. *Regressed* means the whole interval of
//!   `B − A` lies below 0, *improved* that it lies above 0; otherwise there
//!   is *no detectable change*. With a two-sided interval at confidence
//!   1 − α, each direction is a false alarm with probability about α/2 per
//!   check when nothing changed.
//! * **Checks** are matched by name; a check present in one run only is
//!   listed, not compared.
//! * **Paired part.** Inputs are matched between the runs (by input id, see
//!   [`align_by_id`]). For each check, each shared input's success rate in
//!   each run is the mean over that input's outputs under the error policy
//!   (`x/n` of [`Counts::successes_of`]); the paired difference is the
//!   Student-t interval over the per-input differences
//!   d_i = b_i − a_i ([`compare_paired`], SE = sd(d)/√N, N − 1 df), so the
//!   errors are clustered by input and the between-input variation in
//!   difficulty cancels. Inputs present in one run only, and shared inputs
//!   with no judged output in either run, are excluded from the paired part
//!   and counted.
//! * **Unpaired part.** Always computed, for contrast and for runs on
//!   different inputs: Newcombe's hybrid score interval
//!   ([`compare_unpaired`]) on each run's *effective* sample size — the
//!   clustered rate over all its outputs, as each run's own report shows it
//!   (`x_eff = p̂·n_eff`). It treats the runs as independent samples of
//!   inputs, so it is wider than the paired one when inputs share
//!   difficulty.
//! * **Verdict basis.** The paired interval when at least two shared inputs
//!   were usable, else the unpaired one.
//! * **Several checks.** With K checks compared at once, each at level α,
//!   some check would be flagged by chance far more often than α (7.5–12 %
//!   for K = 5). By default the verdicts are Holm-adjusted
//!   ([`MultipleTesting::Holm`]): each check's two-sided p-value (`p_value`,
//!   from the decisive interval: the paired t test, or the smallest α at
//!   which Newcombe's interval excludes 0) is adjusted across the checks
//!   with data (`p_adjusted`), and a check is improved/regressed only when
//!   `p_adjusted ≤ α` — so with nothing changed, the chance that any check
//!   is flagged is at most α. The intervals stay the per-check 1 − α
//!   intervals (an interval may exclude 0 while the adjusted verdict is
//!   "no detectable change"). [`MultipleTesting::None`] opts out.
//! * **Minimum detectable effect** (MDE): the true change that a comparison
//!   like this one would declare significant with probability `power`
//!   (80 % by default) at the same α: `(t_{1−α/2,N−1} + t_{power,N−1}) · SE`
//!   for the paired part (the inverse of [`inputs_needed`], with t for z),
//!   `(z_{1−α/2} + z_{power}) · SE` with the Wald SE on the effective sizes
//!   for the unpaired part. When the observed SE is 0 (every difference
//!   equal, typically every rate 0 % or 100 %), the SE is replaced by the
//!   binomial one at the Laplace-smoothed pooled rate
//!   p̃ = (x + 1)/(n + 2): sqrt(p̃(1−p̃)(1/n_a + 1/n_b)), so the MDE is never
//!   a misleading 0.

use crate::options::AnalysisOptions;
#[cfg(doc)]
use crate::stats::inputs_needed;
use crate::stats::{
    compare_paired, compare_unpaired, holm, normal_quantile, t_value, ClusterSum, Counts,
    Difference, ErrorPolicy, MultipleTesting, RateEstimate,
};
use crate::summary::CheckInfo;
use crate::tensor::ReliabilityTensor;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::collections::HashMap;

/// Default power of the minimum detectable effect.
pub const DEFAULT_POWER: f64 = 0.8;

/// What the comparison says about one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum Direction {
    /// The whole interval of `B − A` lies above 0.
    Improved,
    /// The whole interval of `B − A` lies below 0.
    Regressed,
    /// The interval contains 0: no change the runs could tell from noise.
    NoDetectableChange,
    /// One of the runs judged no output of this check.
    NoData,
}

impl Direction {
    /// Stable lower-case name: `improved`, `regressed`,
    /// `no_detectable_change`, `no_data`.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Improved => "improved",
            Direction::Regressed => "regressed",
            Direction::NoDetectableChange => "no_detectable_change",
            Direction::NoData => "no_data",
        }
    }

    /// For people: `improved`, `regressed`, `no detectable change`,
    /// `no data`.
    pub fn words(self) -> &'static str {
        match self {
            Direction::Improved => "improved",
            Direction::Regressed => "regressed",
            Direction::NoDetectableChange => "no detectable change",
            Direction::NoData => "no data",
        }
    }
}

/// Which interval the verdict was taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum Basis {
    Paired,
    Unpaired,
}

/// How inputs of the baseline (A) and candidate (B) correspond.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Alignment {
    /// `(i_a, i_b)`: input `i_a` of A is input `i_b` of B.
    pub pairs: Vec<(usize, usize)>,
    /// Inputs of A with no counterpart in B.
    pub only_baseline: usize,
    /// Inputs of B with no counterpart in A.
    pub only_candidate: usize,
}

/// Match inputs by id. Ids are unique within a run (the dataset loader
/// enforces it); should one repeat anyway, its k-th occurrence in A is
/// matched with its k-th occurrence in B. Pairs are in A's order.
pub fn align_by_id<S: AsRef<str>>(a: &[S], b: &[S]) -> Alignment {
    let mut in_b: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, id) in b.iter().enumerate().rev() {
        in_b.entry(id.as_ref()).or_default().push(i);
    }
    let mut pairs = Vec::new();
    let mut only_baseline = 0;
    for (i, id) in a.iter().enumerate() {
        match in_b.get_mut(id.as_ref()).and_then(Vec::pop) {
            Some(j) => pairs.push((i, j)),
            None => only_baseline += 1,
        }
    }
    Alignment {
        only_candidate: b.len() - pairs.len(),
        pairs,
        only_baseline,
    }
}

/// Settings of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CompareOptions {
    /// Confidence 1 − α of every interval; α is also the MDE's level.
    pub confidence: f64,
    /// Power of the minimum detectable effect, in (0.5, 1).
    pub power: f64,
    /// How error cells enter the rates (the same policy for both runs).
    pub errors: ErrorPolicy,
    /// Interval method of each run's own rate (shown next to the change).
    pub interval: crate::stats::IntervalMethod,
    /// Correction across the checks compared; Holm by default.
    #[serde(default)]
    pub multiple: MultipleTesting,
    /// How each run's own clustered rate gets its interval.
    #[serde(default)]
    pub cluster: crate::stats::ClusterMethod,
}

impl CompareOptions {
    /// The options of a run's analysis (the candidate's, by convention),
    /// with the default power.
    pub fn from_analysis(o: &AnalysisOptions) -> Self {
        CompareOptions {
            confidence: o.confidence,
            power: DEFAULT_POWER,
            errors: o.errors,
            interval: o.interval,
            multiple: MultipleTesting::Holm,
            cluster: o.cluster,
        }
    }
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions::from_analysis(&AnalysisOptions::default())
    }
}

/// One check compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckComparison {
    pub name: String,
    /// The check's minimum success percentage in the candidate run.
    pub minimum_success_percentage: f64,
    /// The baseline's rate over all its outputs (clustered by input).
    pub baseline: RateEstimate,
    /// The candidate's rate over all its outputs (clustered by input).
    pub candidate: RateEstimate,
    /// `B − A` over the runs as independent samples (all inputs of each).
    pub unpaired: Difference,
    /// `B − A` paired by input over the usable shared inputs; `None` when
    /// there are none.
    pub paired: Option<Difference>,
    /// Shared inputs used in the paired part.
    pub paired_inputs: usize,
    /// Shared inputs left out of the paired part because one run judged
    /// none of their outputs for this check.
    pub paired_excluded: usize,
    /// The interval the verdict is taken from.
    pub basis: Basis,
    pub direction: Direction,
    /// Minimum detectable effect of the basis comparison (a fraction).
    pub mde: f64,
    /// Minimum detectable effect of the paired part, when there is one.
    pub mde_paired: Option<f64>,
    /// Minimum detectable effect of the unpaired part.
    pub mde_unpaired: f64,
    /// Two-sided p-value of "no change" from the decisive interval (1 when
    /// there is no data).
    pub p_value: f64,
    /// `p_value` after the correction across the checks of the comparison
    /// (Holm by default; equal to `p_value` for one check or
    /// [`MultipleTesting::None`]). `direction` is Improved/Regressed iff
    /// `p_adjusted ≤ α`.
    pub p_adjusted: f64,
}

impl CheckComparison {
    /// The difference the verdict is taken from.
    pub fn decisive(&self) -> &Difference {
        match (self.basis, &self.paired) {
            (Basis::Paired, Some(p)) => p,
            _ => &self.unpaired,
        }
    }
}

/// Two runs compared, check by check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub options: CompareOptions,
    /// Inputs present in both runs.
    pub shared_inputs: usize,
    /// Inputs of the baseline only (excluded from the paired part).
    pub only_baseline_inputs: usize,
    /// Inputs of the candidate only (excluded from the paired part).
    pub only_candidate_inputs: usize,
    /// Checks present in both runs, in the candidate's order.
    pub checks: Vec<CheckComparison>,
    /// Names of checks in the baseline only.
    pub only_baseline_checks: Vec<String>,
    /// Names of checks in the candidate only.
    pub only_candidate_checks: Vec<String>,
}

impl Comparison {
    /// True when some check regressed significantly.
    pub fn regressed(&self) -> bool {
        self.checks
            .iter()
            .any(|c| c.direction == Direction::Regressed)
    }

    /// Counts of checks `(improved, regressed, no detectable change, no data)`.
    pub fn tally(&self) -> (usize, usize, usize, usize) {
        let mut t = (0, 0, 0, 0);
        for c in &self.checks {
            match c.direction {
                Direction::Improved => t.0 += 1,
                Direction::Regressed => t.1 += 1,
                Direction::NoDetectableChange => t.2 += 1,
                Direction::NoData => t.3 += 1,
            }
        }
        t
    }
}

/// One run as the comparison sees it: its tensor and the checks that are
/// its columns.
#[derive(Debug, Clone, Copy)]
pub struct RunData<'a> {
    pub tensor: &'a ReliabilityTensor,
    pub checks: &'a [CheckInfo],
}

/// Compare baseline `a` with candidate `b` whose inputs correspond as
/// `alignment` says. Pure and total: never panics on mismatched shapes
/// (checks beyond a tensor's width have no data).
pub fn compare_runs(
    a: RunData<'_>,
    b: RunData<'_>,
    alignment: &Alignment,
    opts: &CompareOptions,
) -> Comparison {
    let per_input = |t: &ReliabilityTensor, k: usize| -> Vec<Counts> {
        if k < t.validators() {
            t.input_counts_for(k)
        } else {
            vec![Counts::default(); t.inputs()]
        }
    };
    let a_names: HashMap<&str, usize> = a
        .checks
        .iter()
        .enumerate()
        .rev()
        .map(|(k, c)| (c.name.as_str(), k))
        .collect();
    let mut used_a = vec![false; a.checks.len()];
    let mut checks = Vec::new();
    let mut only_candidate_checks = Vec::new();
    for (kb, info) in b.checks.iter().enumerate() {
        match a_names.get(info.name.as_str()) {
            Some(&ka) if !used_a[ka] => {
                used_a[ka] = true;
                let mut c = compare_check(
                    &per_input(a.tensor, ka),
                    &per_input(b.tensor, kb),
                    &alignment.pairs,
                    opts,
                );
                c.name = info.name.clone();
                c.minimum_success_percentage = info.minimum_success_percentage;
                checks.push(c);
            }
            _ => only_candidate_checks.push(info.name.clone()),
        }
    }
    adjust(&mut checks, opts);
    let only_baseline_checks = a
        .checks
        .iter()
        .zip(&used_a)
        .filter(|(_, used)| !**used)
        .map(|(c, _)| c.name.clone())
        .collect();
    Comparison {
        options: *opts,
        shared_inputs: alignment.pairs.len(),
        only_baseline_inputs: alignment.only_baseline,
        only_candidate_inputs: alignment.only_candidate,
        checks,
        only_baseline_checks,
        only_candidate_checks,
    }
}

/// Compare one check from its per-input counts in the baseline (`a`) and
/// the candidate (`b`); `pairs` are `(i_a, i_b)` of shared inputs (pairs
/// out of range are skipped). The name and threshold are left empty for
/// the caller. This is the whole statistical core of a comparison, and
/// what the error-rate simulations exercise.
pub fn compare_check(
    a: &[Counts],
    b: &[Counts],
    pairs: &[(usize, usize)],
    opts: &CompareOptions,
) -> CheckComparison {
    let policy = opts.errors;
    let baseline = clustered(a, opts);
    let candidate = clustered(b, opts);

    // Paired part: per-input rates of shared inputs.
    let mut ra = Vec::with_capacity(pairs.len());
    let mut rb = Vec::with_capacity(pairs.len());
    let (mut xa, mut na, mut xb, mut nb) = (0u64, 0u64, 0u64, 0u64);
    let mut excluded = 0;
    for &(i, j) in pairs {
        let (Some(ca), Some(cb)) = (a.get(i), b.get(j)) else {
            excluded += 1;
            continue;
        };
        let (x1, n1) = ca.successes_of(policy);
        let (x2, n2) = cb.successes_of(policy);
        if n1 == 0 || n2 == 0 {
            excluded += 1;
            continue;
        }
        ra.push(x1 as f64 / n1 as f64);
        rb.push(x2 as f64 / n2 as f64);
        xa += x1;
        na += n1;
        xb += x2;
        nb += n2;
    }
    // Per-input rates are in [0, 1] and the slices of equal length: an
    // error here can only be an invalid confidence, which leaves nothing
    // to compare.
    let paired = (!ra.is_empty())
        .then(|| compare_paired(&rb, &ra, opts.confidence).ok())
        .flatten();
    let mde_paired = paired.filter(|p| p.n >= 2).map(|p| {
        let df = p.n as f64 - 1.0;
        let k = t_value(opts.confidence, df) + t_value(2.0 * opts.power - 1.0, df);
        let se = if p.se > 0.0 {
            p.se
        } else {
            laplace_se(xa + xb, na + nb, na as f64, nb as f64)
        };
        (k * se).min(1.0)
    });

    // Unpaired part: effective sizes of each run's clustered rate.
    let (ea, eb) = (baseline.effective_n, candidate.effective_n);
    let unpaired = compare_unpaired(
        candidate.estimate * eb,
        eb,
        baseline.estimate * ea,
        ea,
        opts.confidence,
    )
    .unwrap_or_else(|_| Difference::uninformative(candidate.estimate - baseline.estimate, 0));
    let mde_unpaired = {
        let z = normal_quantile(1.0 - (1.0 - opts.confidence) / 2.0) + normal_quantile(opts.power);
        let se = if unpaired.se > 0.0 {
            unpaired.se
        } else {
            let x = baseline.estimate * ea + candidate.estimate * eb;
            laplace_se_f(x, ea + eb, ea, eb)
        };
        (z * se).min(1.0)
    };

    let usable_pairs = paired.map_or(0, |p| p.n as usize);
    let basis = if usable_pairs >= 2 {
        Basis::Paired
    } else {
        Basis::Unpaired
    };
    let decisive = match (basis, &paired) {
        (Basis::Paired, Some(p)) => p,
        _ => &unpaired,
    };
    let direction = if baseline.n == 0 || candidate.n == 0 {
        Direction::NoData
    } else if decisive.interval.lower > 0.0 {
        Direction::Improved
    } else if decisive.interval.upper < 0.0 {
        Direction::Regressed
    } else {
        Direction::NoDetectableChange
    };
    let mde = match basis {
        Basis::Paired => mde_paired.unwrap_or(mde_unpaired),
        Basis::Unpaired => mde_unpaired,
    };
    let p_value = if direction == Direction::NoData {
        1.0
    } else {
        match basis {
            Basis::Paired => paired_p(decisive),
            Basis::Unpaired => unpaired_p(&candidate, &baseline),
        }
    };
    CheckComparison {
        name: String::new(),
        minimum_success_percentage: f64::NAN,
        baseline,
        candidate,
        unpaired,
        paired,
        paired_inputs: usable_pairs,
        paired_excluded: excluded,
        basis,
        direction,
        mde: sanitize(mde),
        mde_paired: mde_paired.map(sanitize),
        mde_unpaired: sanitize(mde_unpaired),
        p_value,
        p_adjusted: p_value,
    }
}

/// Two-sided paired t p-value 2·(1 − F_{N−1}(|d̄|/SE)).
fn paired_p(d: &Difference) -> f64 {
    if d.n < 2 {
        return 1.0;
    }
    if d.se == 0.0 || !d.se.is_finite() {
        return if d.mean_diff == 0.0 { 1.0 } else { 0.0 };
    }
    match StudentsT::new(0.0, 1.0, d.n as f64 - 1.0) {
        Ok(t) => (2.0 * t.sf((d.mean_diff / d.se).abs())).clamp(0.0, 1.0),
        Err(_) => 1.0,
    }
}

/// The smallest α at which Newcombe's interval excludes 0 (bisection on
/// the confidence; the interval widens with it).
fn unpaired_p(candidate: &RateEstimate, baseline: &RateEstimate) -> f64 {
    let (ea, eb) = (baseline.effective_n, candidate.effective_n);
    let excludes = |alpha: f64| {
        compare_unpaired(
            candidate.estimate * eb,
            eb,
            baseline.estimate * ea,
            ea,
            1.0 - alpha,
        )
        .is_ok_and(|d| d.is_significant())
    };
    if !excludes(1.0 - 1e-9) {
        return 1.0;
    }
    if excludes(1e-12) {
        return 0.0;
    }
    let (mut lo, mut hi) = (1e-12, 1.0 - 1e-9); // excludes(hi), !excludes(lo)
    for _ in 0..50 {
        let mid = 0.5 * (lo + hi);
        if excludes(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Apply the correction across checks (see the module docs): set
/// `p_adjusted` and downgrade verdicts whose adjusted p-value exceeds α.
pub fn adjust(checks: &mut [CheckComparison], opts: &CompareOptions) {
    let alpha = 1.0 - opts.confidence;
    let p: Vec<f64> = checks
        .iter()
        .map(|c| {
            if c.direction == Direction::NoData {
                f64::NAN
            } else {
                c.p_value
            }
        })
        .collect();
    let adj = match opts.multiple {
        MultipleTesting::Holm => holm(&p),
        MultipleTesting::None => p
            .iter()
            .map(|v| if v.is_nan() { 1.0 } else { *v })
            .collect(),
    };
    for (c, a) in checks.iter_mut().zip(adj) {
        if c.direction == Direction::NoData {
            continue;
        }
        c.p_adjusted = a;
        if matches!(c.direction, Direction::Improved | Direction::Regressed) && a > alpha {
            c.direction = Direction::NoDetectableChange;
        }
    }
}

fn sanitize(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        1.0
    }
}

/// A run's rate over all outputs from its per-input counts, clustered by
/// input (as `Summary` computes it).
fn clustered(counts: &[Counts], opts: &CompareOptions) -> RateEstimate {
    let mut total = Counts::default();
    let clusters: Vec<ClusterSum> = counts
        .iter()
        .map(|c| {
            total += *c;
            ClusterSum::from_counts(c, opts.errors)
        })
        .collect();
    RateEstimate::clustered_or_empty(
        &clusters,
        total,
        opts.confidence,
        opts.interval,
        opts.cluster,
    )
}

fn laplace_se(x: u64, n: u64, na: f64, nb: f64) -> f64 {
    laplace_se_f(x as f64, n as f64, na, nb)
}

/// The binomial SE of a difference at the Laplace-smoothed pooled rate.
fn laplace_se_f(x: f64, n: f64, na: f64, nb: f64) -> f64 {
    if !(na > 0.0 && nb > 0.0) {
        return f64::INFINITY;
    }
    let p = (x + 1.0) / (n + 2.0);
    (p * (1.0 - p) * (1.0 / na + 1.0 / nb)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(pass: u64, fail: u64) -> Counts {
        Counts {
            pass,
            fail,
            ..Counts::default()
        }
    }

    #[test]
    fn alignment_by_id() {
        let al = align_by_id(&["a", "b", "c"], &["c", "x", "a"]);
        assert_eq!(al.pairs, vec![(0, 2), (2, 0)]);
        assert_eq!((al.only_baseline, al.only_candidate), (1, 1));
        let al = align_by_id::<&str>(&[], &["a"]);
        assert!(al.pairs.is_empty());
        assert_eq!(al.only_candidate, 1);
    }

    #[test]
    fn direction_is_candidate_minus_baseline() {
        // Baseline 90 %, candidate 60 % on every input: a regression.
        let a = vec![c(9, 1); 20];
        let b = vec![c(6, 4); 20];
        let pairs: Vec<_> = (0..20).map(|i| (i, i)).collect();
        let r = compare_check(&a, &b, &pairs, &CompareOptions::default());
        assert_eq!(r.basis, Basis::Paired);
        assert_eq!(r.direction, Direction::Regressed);
        let p = r.paired.unwrap();
        assert!((p.mean_diff + 0.3).abs() < 1e-12);
        // Zero variance of d: the MDE falls back to the binomial floor.
        assert!(r.mde > 0.0 && r.mde < 0.3, "{}", r.mde);
        let r = compare_check(&b, &a, &pairs, &CompareOptions::default());
        assert_eq!(r.direction, Direction::Improved);
        assert!(r.unpaired.mean_diff > 0.29);
    }

    #[test]
    fn no_shared_inputs_uses_unpaired() {
        let a = vec![c(9, 1); 20];
        let b = vec![c(9, 1); 20];
        let r = compare_check(&a, &b, &[], &CompareOptions::default());
        assert_eq!(r.basis, Basis::Unpaired);
        assert!(r.paired.is_none());
        assert_eq!(r.direction, Direction::NoDetectableChange);
        assert!(r.mde > 0.0 && r.mde < 1.0);
    }

    #[test]
    fn empty_side_is_no_data_and_nothing_panics() {
        let r = compare_check(
            &[],
            &[c(1, 1)],
            &[(0, 0), (5, 9)],
            &CompareOptions::default(),
        );
        assert_eq!(r.direction, Direction::NoData);
        assert_eq!(r.paired_excluded, 2);
        assert!(r.mde.is_finite());
    }

    #[test]
    fn checks_match_by_name() {
        let mut ta = ReliabilityTensor::new(2, 1, 2).unwrap();
        let mut tb = ReliabilityTensor::new(2, 1, 2).unwrap();
        for i in 0..2 {
            for k in 0..2 {
                ta.set(i, 0, k, crate::tensor::Cell::Pass).unwrap();
                tb.set(i, 0, k, crate::tensor::Cell::Pass).unwrap();
            }
        }
        let info = |n: &str| CheckInfo {
            name: n.into(),
            message: String::new(),
            minimum_success_percentage: 0.9,
            weight: 1.0,
            kind: Default::default(),
        };
        let ca = [info("x"), info("y")];
        let cb = [info("y"), info("z")];
        let cmp = compare_runs(
            RunData {
                tensor: &ta,
                checks: &ca,
            },
            RunData {
                tensor: &tb,
                checks: &cb,
            },
            &align_by_id(&["1", "2"], &["1", "2"]),
            &CompareOptions::default(),
        );
        assert_eq!(cmp.checks.len(), 1);
        assert_eq!(cmp.checks[0].name, "y");
        assert_eq!(cmp.only_baseline_checks, vec!["x".to_string()]);
        assert_eq!(cmp.only_candidate_checks, vec!["z".to_string()]);
        assert!(!cmp.regressed());
    }
}
