//! The summary of a reliability test: everything a report shows, computed
//! from the tensor and the checks' settings alone (no outputs, no I/O).

use crate::aggregate::{aggregate, Aggregate, AggregateResult};
use crate::options::AnalysisOptions;
use crate::profile::{profile, strategy_rates, worst, Profile, ProfileEntry, Strategy};
use crate::retry::RetryPlan;
use crate::stats::{judge, Counts, Decision, RateEstimate, ThresholdVerdict};
use crate::tensor::{Cell, ReliabilityTensor};
use serde::{Deserialize, Serialize};

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
        let weights: Vec<f64> = (0..t.validators())
            .map(|k| checks.get(k).map_or(1.0, |c| c.weight))
            .collect();
        let aggregate = aggregate(t, aggregate_by, &weights, None, opts).unwrap_or_else(|_| {
            // Weights come from validated validators; fall back to the mean
            // rather than fail a whole report on a degenerate weighting.
            aggregate(t, Aggregate::Mean, &vec![1.0; t.validators()], None, opts)
                .expect("unit weights are valid")
        });
        let checks = checks
            .iter()
            .enumerate()
            .take(t.validators())
            .map(|(k, info)| summarise_check(t, k, info, strategy, opts))
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
            retry: RetryPlan::from_tensor(t, opts),
        }
    }

    /// True when every check's verdict is `Pass`. Inconclusive verdicts
    /// (three-way mode) do not pass: compliance was not shown.
    pub fn passed(&self) -> bool {
        self.checks
            .iter()
            .all(|c| c.verdict.decision == Decision::Pass)
    }
}

fn summarise_check(
    t: &ReliabilityTensor,
    k: usize,
    info: &CheckInfo,
    strategy: Strategy,
    opts: &AnalysisOptions,
) -> CheckSummary {
    let rate = strategy_rates(t, k, Strategy::All, opts)
        .first()
        .map(|e| e.rate)
        .unwrap_or_else(|| {
            RateEstimate::binomial(
                Counts::default(),
                opts.errors,
                opts.confidence,
                opts.interval,
            )
        });
    let verdict = judge(
        &rate,
        info.minimum_success_percentage,
        opts.verdict,
        opts.interval,
    );
    let breakdown = match strategy {
        Strategy::All => Vec::new(),
        s => strategy_rates(t, k, s, opts),
    };
    let breakdown_below = breakdown
        .iter()
        .filter(|e| e.rate.n > 0 && e.rate.estimate < info.minimum_success_percentage)
        .count();
    let per_input = strategy_rates(t, k, Strategy::Rows, opts);
    let worst_input = worst(&per_input);
    let example_failure = worst_input.and_then(|w| {
        (0..t.repetitions())
            .find(|&j| matches!(t.get(w.index, j, k), Some(Cell::Fail)))
            .map(|j| (w.index, j))
    });
    CheckSummary {
        info: info.clone(),
        rate,
        verdict,
        breakdown,
        breakdown_below,
        worst_input,
        example_failure,
    }
}
