//! The summary of a reliability test: everything a report shows, computed
//! from the tensor and the checks' settings alone (no outputs, no I/O).

pub mod sequential;

use crate::aggregate::{aggregate, Aggregate, AggregateResult};
use crate::options::AnalysisOptions;
use crate::profile::{
    profile, strategy_rates, worst, worst_input_for, Profile, ProfileEntry, Strategy,
};
use crate::retry::RetryPlan;
use crate::stats::projection::settle;
use crate::stats::{
    error::check_threshold, judge, Calibrated, ClusterMethod, ClusterSum, Consistency, Counts,
    Decision, NotEstablished, RateEstimate, Scope, StatsError, ThresholdVerdict,
};
use crate::summary::sequential::SequentialOutcome;
use crate::tensor::{Cell, ReliabilityTensor};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Whether a column of the tensor is a programmatic validator or an LLM
/// judge (paper §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum CheckKind {
    #[default]
    Validator,
    Verifier,
}

/// What a report needs to know of one check (a column `k` of the tensor).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckInfo {
    pub name: String,
    pub message: String,
    pub minimum_success_percentage: f64,
    pub weight: f64,
    #[serde(default)]
    pub kind: CheckKind,
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckSummary {
    pub info: CheckInfo,
    /// The rate over all N×M outputs, clustered by input: the number judged.
    pub rate: RateEstimate,
    /// The verdict against `minimum_success_percentage`.
    pub verdict: ThresholdVerdict,
    /// Per-input (Rows) or per-repetition (Columns) rates when the
    /// experiment's strategy asks for them; empty for All.
    pub breakdown: Vec<ProfileEntry>,
    /// Entries of `breakdown` whose point estimate is below the threshold.
    pub breakdown_below: usize,
    /// The input where this check did worst.
    pub worst_input: Option<ProfileEntry>,
    /// A failing cell `(i, j)` in the worst input, to show its output.
    pub example_failure: Option<(usize, usize)>,
    /// pass^k and pass@k per input and their means over inputs, k =
    /// `AnalysisOptions::pass_k` or the retry plan's m (see
    /// [`crate::stats::consistency`] for the formulas); `None` when no
    /// input has k evaluated outputs... or k cannot be chosen.
    #[serde(default)]
    pub consistency: Option<Consistency>,
    /// A verifier whose judge was calibrated on a labelled set: its
    /// sensitivity, specificity and the corrected rate (the verdict is then
    /// the corrected rate's; `Summary::with_calibration`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibrated>,
    /// The inputs the check applies to, when not all
    /// ([`ReliabilityTensor::applicable_inputs`]): its rate, interval and
    /// profile are over these alone; the others are not applicable,
    /// counted apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applies_to: Option<AppliesTo>,
}

/// A check applies to `inputs` of the run's `of` inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliesTo {
    pub inputs: usize,
    pub of: usize,
}

impl AppliesTo {
    /// Check `k`'s inputs in `t`: `None` when it applies to all of them.
    pub fn of_check(t: &ReliabilityTensor, k: usize) -> Option<AppliesTo> {
        let inputs = t.applicable_inputs(k);
        (inputs < t.inputs()).then_some(AppliesTo {
            inputs,
            of: t.inputs(),
        })
    }
}

/// The summary of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// `(N, M, K)`.
    pub shape: (usize, usize, usize),
    pub options: AnalysisOptions,
    pub strategy: Strategy,
    /// Cell counts over the whole tensor.
    pub counts: Counts,
    pub checks: Vec<CheckSummary>,
    pub aggregate: AggregateResult,
    /// Input Reliability Profile, in input order.
    pub input_profile: Vec<ProfileEntry>,
    /// Output Reliability Profile, in repetition order.
    pub output_profile: Vec<ProfileEntry>,
    pub retry: RetryPlan,
    /// A sequential run's outcome: the checks' verdicts and intervals are
    /// then its confidence sequences' (`Summary::with_sequential`);
    /// `None` for a fixed-size run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<SequentialOutcome>,
}

impl Summary {
    /// Summarise `t` whose columns are `checks`.
    ///
    /// Each check is judged on its rate over all outputs (clustered by
    /// input); the strategy adds the per-row or per-column breakdown of
    /// §2.2.3. When `checks` and the tensor disagree in width, the extra
    /// columns are ignored and missing ones reported with empty rates.
    pub fn build(
        t: &ReliabilityTensor,
        checks: &[CheckInfo],
        strategy: Strategy,
        aggregate_by: Aggregate,
        opts: &AnalysisOptions,
    ) -> Summary {
        Summary::build_weighted(t, checks, strategy, aggregate_by, opts, None)
    }

    /// [`Summary::build`] with per-input weights `W_i` in the aggregate
    /// (§3.6.7, weighted aggregation: `W[i][j][k] = W_i · weight_k`); the
    /// per-check rates stay unweighted. Invalid input weights (wrong
    /// length, negative, all zero) fall back to the unweighted aggregate;
    /// [`Summary::try_build_weighted`] refuses them instead.
    pub fn build_weighted(
        t: &ReliabilityTensor,
        checks: &[CheckInfo],
        strategy: Strategy,
        aggregate_by: Aggregate,
        opts: &AnalysisOptions,
        input_weights: Option<&[f64]>,
    ) -> Summary {
        let weights: Vec<f64> = (0..t.validators())
            .map(|k| checks.get(k).map_or(1.0, |c| c.weight))
            .collect();
        let aggregate = aggregate(t, aggregate_by, &weights, input_weights, opts)
            .or_else(|_| aggregate(t, aggregate_by, &weights, None, opts))
            .unwrap_or_else(|_| {
                // Weights come from validated validators; fall back to the mean
                // rather than fail a whole report on a degenerate weighting.
                aggregate(t, Aggregate::Mean, &vec![1.0; t.validators()], None, opts)
                    .expect("unit weights are valid")
            });
        let retry = RetryPlan::measure(t, opts);
        let pass_k = pass_k_for(opts, &retry, t.repetitions());
        // One copy of the tensor (two bits a cell) that the checks'
        // consistencies read their per-input rows from.
        let shared = Arc::new(t.clone());
        let checks = checks
            .iter()
            .enumerate()
            .take(t.validators())
            .map(|(k, info)| summarise_check(t, &shared, k, info, strategy, opts, pass_k))
            .collect();
        Summary {
            shape: t.shape(),
            options: *opts,
            strategy,
            counts: t.counts(),
            checks,
            aggregate,
            input_profile: profile(t, Profile::Input, opts),
            output_profile: profile(t, Profile::Output, opts),
            retry,
            sequential: None,
        }
    }

    /// [`Summary::build`] with invalid settings as an error instead of a
    /// verdict that can never be established: every check's minimum
    /// success percentage must be a fraction in [0, 1] (95 is an error,
    /// not 95 %), the confidence in (0, 1), and the tensor must not be
    /// empty (no inputs, repetitions or checks).
    pub fn try_build(
        t: &ReliabilityTensor,
        checks: &[CheckInfo],
        strategy: Strategy,
        aggregate_by: Aggregate,
        opts: &AnalysisOptions,
    ) -> Result<Summary, StatsError> {
        crate::stats::error::check_confidence(opts.confidence)?;
        let (n, m, k) = t.shape();
        if n == 0 || m == 0 || k == 0 || checks.is_empty() {
            return Err(StatsError::Empty);
        }
        for c in checks {
            check_threshold(c.minimum_success_percentage)?;
        }
        if opts.pass_k == Some(0) {
            return Err(StatsError::K(0));
        }
        Ok(Summary::build(t, checks, strategy, aggregate_by, opts))
    }

    /// [`Summary::try_build`] with per-input weights (see
    /// [`Summary::build_weighted`]); weights that are not one finite,
    /// non-negative number per input, not all zero, are an error.
    pub fn try_build_weighted(
        t: &ReliabilityTensor,
        checks: &[CheckInfo],
        strategy: Strategy,
        aggregate_by: Aggregate,
        opts: &AnalysisOptions,
        input_weights: Option<&[f64]>,
    ) -> Result<Summary, StatsError> {
        Summary::try_build(t, checks, strategy, aggregate_by, opts)?;
        if let Some(w) = input_weights {
            let valid = w.len() == t.inputs()
                && w.iter().all(|x| x.is_finite() && *x >= 0.0)
                && w.iter().any(|x| *x > 0.0);
            if !valid {
                return Err(StatsError::Weights {
                    expected: t.inputs(),
                });
            }
        }
        Ok(Summary::build_weighted(
            t,
            checks,
            strategy,
            aggregate_by,
            opts,
            input_weights,
        ))
    }

    /// True when there is at least one check and every check's verdict is
    /// `Pass`. Inconclusive verdicts (three-way mode) do not pass:
    /// compliance was not shown; a summary with no checks shows nothing.
    pub fn passed(&self) -> bool {
        !self.checks.is_empty()
            && self
                .checks
                .iter()
                .all(|c| c.verdict.decision == Decision::Pass)
    }
}

/// Target of the retry plan's m when `pass_k` is not set.
pub const PASS_K_TARGET: f64 = 0.99;

/// k for pass^k / pass@k: `opts.pass_k`, else the retry plan's m — the
/// attempts for [`PASS_K_TARGET`] at the measured joint rate — capped at M.
/// `None` when M = 0 or the plan has no m (joint rate 0 or unmeasured).
pub fn pass_k_for(opts: &AnalysisOptions, retry: &RetryPlan, m: usize) -> Option<u32> {
    if m == 0 {
        return None;
    }
    let cap = u32::try_from(m).unwrap_or(u32::MAX);
    match opts.pass_k {
        Some(k) => Some(k),
        None => retry
            .measured()
            .and_then(|g| g.attempts_for(PASS_K_TARGET))
            .map(|k| k.min(cap)),
    }
}

fn summarise_check(
    t: &ReliabilityTensor,
    shared: &Arc<ReliabilityTensor>,
    k: usize,
    info: &CheckInfo,
    strategy: Strategy,
    opts: &AnalysisOptions,
    pass_k: Option<u32>,
) -> CheckSummary {
    let rate = strategy_rates(t, k, Strategy::All, opts)
        .first()
        .map(|e| e.rate)
        .unwrap_or_else(|| RateEstimate::empty(Counts::default(), opts.confidence));
    let verdict = settle_by_inputs(
        t,
        k,
        opts,
        &rate,
        judge(
            &rate,
            info.minimum_success_percentage,
            opts.verdict,
            opts.interval,
        ),
    );
    let breakdown = match strategy {
        Strategy::All => Vec::new(),
        s => strategy_rates(t, k, s, opts),
    };
    let breakdown_below = breakdown
        .iter()
        .filter(|e| e.rate.n > 0 && e.rate.estimate < info.minimum_success_percentage)
        .count();
    let worst_input = match strategy {
        Strategy::Rows => worst(&breakdown),
        _ => worst_input_for(t, k, opts),
    }
    .map(|w| selected_from(t, k, opts, w));
    let example_failure = worst_input.and_then(|w| {
        (0..t.repetitions())
            .find(|&j| matches!(t.get(w.index, j, k), Some(Cell::Fail)))
            .map(|j| (w.index, j))
    });
    // Per-input rows are read off the tensor when a report asks for them.
    let consistency = pass_k.and_then(|kk| {
        let (shared, errors) = (shared.clone(), opts.errors);
        Consistency::from_fn(
            t.inputs(),
            Arc::new(move |i| shared.input_counts(i, k).successes_of(errors)),
            kk,
            opts.confidence,
            opts.interval,
        )
        .ok()
    });
    CheckSummary {
        applies_to: AppliesTo::of_check(t, k),
        consistency,
        calibration: None,
        info: info.clone(),
        rate,
        verdict,
        breakdown,
        breakdown_below,
        worst_input,
        example_failure,
    }
}

/// A verdict the default clustered interval leaves open, with what would
/// settle it computed from that same interval (issue 40 item 4;
/// [`crate::stats::projection::settle`]): `Straddles` becomes
/// [`NotEstablished::Unsettled`] with the inputs (and samples) in all and
/// whether more outputs of these inputs could settle it; an
/// [`NotEstablished::UnseenMinority`] gets the inputs at which the whole
/// interval, not only the allowance, clears the minimum. Other verdicts,
/// other cluster methods and one output per input are returned as they are
/// (`judge`'s projection is then the interval's own).
fn settle_by_inputs(
    t: &ReliabilityTensor,
    k: usize,
    opts: &AnalysisOptions,
    rate: &RateEstimate,
    verdict: ThresholdVerdict,
) -> ThresholdVerdict {
    if verdict.established
        || rate.scope != Scope::Population
        || opts.cluster != ClusterMethod::Profile
        || rate.n <= rate.inputs
    {
        return verdict;
    }
    let clusters: Vec<ClusterSum> = (0..t.inputs())
        .filter_map(|i| {
            let (x, n) = t.input_counts(i, k).successes_of(opts.errors);
            ClusterSum::from_passes(x, n).ok()
        })
        .collect();
    let Ok(s) = settle(&clusters, rate.confidence, verdict.threshold) else {
        return verdict;
    };
    let per_input = rate.n as f64 / rate.inputs.max(1) as f64;
    let samples = s.inputs.map(|g| (g as f64 * per_input).ceil() as u64);
    let why_not = match verdict.why_not {
        Some(NotEstablished::Straddles { lower, upper, .. }) => NotEstablished::Unsettled {
            lower,
            upper,
            inputs_needed: s.inputs,
            samples_needed: samples,
            outputs_settle: s.outputs_settle,
        },
        Some(NotEstablished::UnseenMinority {
            inputs,
            share,
            failing,
            these_inputs,
            ..
        }) => NotEstablished::UnseenMinority {
            inputs,
            share,
            failing,
            inputs_needed: s.inputs,
            these_inputs,
        },
        _ => return verdict,
    };
    ThresholdVerdict {
        samples_needed: samples,
        why_not: Some(why_not),
        ..verdict
    }
}

/// The worst input's rate with its interval adjusted for having been
/// picked as the worst of the G inputs observed (issue 35 item 5): at
/// confidence 1 − α/G (Bonferroni), so that it covers the worst input's
/// own rate however the worst was chosen — every input's interval covers
/// at once with probability ≥ 1 − α. Unadjusted, a 95 % interval of the
/// lowest of 20 inputs all truly at 90 % excluded 90 % in most runs. The
/// rate's `confidence` says the level used.
fn selected_from(
    t: &ReliabilityTensor,
    k: usize,
    opts: &AnalysisOptions,
    w: ProfileEntry,
) -> ProfileEntry {
    let observed = (0..t.inputs())
        .filter(|&i| t.input_counts(i, k).successes_of(opts.errors).1 > 0)
        .count();
    if observed <= 1 || !(opts.confidence > 0.0 && opts.confidence < 1.0) {
        return w;
    }
    let confidence = 1.0 - (1.0 - opts.confidence) / observed as f64;
    ProfileEntry {
        rate: RateEstimate::within_input(w.rate.counts, opts.errors, confidence, opts.interval),
        ..w
    }
}
