//! A retry plan (paper §4.2, [`PlanReport`]): how many attempts a guarded
//! call needs to publish an output passing every check, from assumed
//! per-check pass rates (`probity plan --rates`) or from the tensor of a
//! stored run (`probity plan RUN`: globally and per input, §4.2.3, with
//! the guarded system as measured when the run had a retry policy).
//!
//! The CLI computes the plan (the core's [`RetryPlan`]); this is what is
//! shown of it.

use crate::document::info::RunInfo;
use probity_core::guarded::RetryCheck;
use probity_core::simulate::plan::CostDistribution;
use probity_core::{AnalysisOptions, RetryPlan};

/// Everything the report of a retry plan shows.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanReport {
    /// The plan: per-check pass rates, their product, and the measured
    /// joint rates when it comes from a run.
    pub plan: RetryPlan,
    /// Target probability that some attempt passes every check (e.g. 0.99).
    pub target: f64,
    /// The stored run the plan was measured on; `None` for assumed rates.
    pub run: Option<PlanRun>,
    /// The sample size for given minimums (`--thresholds`, or a run's
    /// with `--sequential`): the fixed N × M for a target power and the
    /// cost of a sequential run; `None` when not asked for.
    pub sample_size: Option<SampleSizePlan>,
}

/// How many samples a test of given pass rates against their minimums
/// needs: a fixed-size run for a target power, and the expected cost of a
/// sequential run (by simulation with the rates as the truth).
#[derive(Debug, Clone, PartialEq)]
pub struct SampleSizePlan {
    pub checks: Vec<SampleSizeCheck>,
    /// M.
    pub outputs_per_input: u64,
    /// Confidence of the test (two-sided).
    pub confidence: f64,
    /// Target power of the fixed-size run.
    pub power: f64,
    /// The intra-class correlation assumed (the same for every check).
    pub icc: f64,
    /// Inputs of the fixed-size run: the most any check needs; `None`
    /// when some check's rate equals its minimum.
    pub fixed_inputs: Option<u64>,
    /// The sequential run's budget in inputs (× M samples).
    pub budget_inputs: u64,
    /// `Some(true)`: the budget was searched for (the smallest tried at
    /// which every verdict settles with the target power); `Some(false)`:
    /// searched, none tried does (the largest is shown); `None`: given.
    pub budget_found: Option<bool>,
    /// The sequential run's cost over simulated runs.
    pub cost: CostDistribution,
    /// The simulation's seed.
    pub seed: u64,
}

/// One check of a [`SampleSizePlan`].
#[derive(Debug, Clone, PartialEq)]
pub struct SampleSizeCheck {
    pub name: String,
    /// The assumed (or measured) pass rate.
    pub rate: f64,
    pub threshold: f64,
    /// Inputs a fixed-size run needs for the power; `None`: none suffices
    /// (the rate equals the minimum, or a judge's labels alone leave the
    /// minimum possible).
    pub fixed_inputs: Option<u64>,
    /// A verifier judged by an LLM with a labelled set (a stored run's):
    /// how its rate was taken. `None` for a check without a judge's
    /// correction (or assumed rates).
    pub judged: Option<JudgedSizing>,
}

/// How a calibrated verifier's check is sized (issue 35 items 3 and 4).
/// The plan's simulation has no judge in it.
#[derive(Debug, Clone, PartialEq)]
pub enum JudgedSizing {
    /// Sized at the corrected rate θ̂, not the judge's own pass rate
    /// `raw`, which carries the judge's errors. The labelled set alone
    /// leaves `labels_only` (the interval were the run's outputs
    /// unlimited): a width no number of inputs removes, so the sizes are
    /// the least a run needs; when it holds the minimum no size settles
    /// the verdict and only more labels can.
    Corrected {
        raw: f64,
        labels_only: probity_core::stats::Interval,
    },
    /// The judge's labels gave no corrected rate (`why`): sized at the
    /// judge's own pass rate, errors and all.
    Uncorrected { why: String },
}

impl JudgedSizing {
    /// Whether the labelled set alone leaves `threshold` possible: no
    /// number of inputs settles the verdict then.
    pub fn labels_hold(&self, threshold: f64) -> bool {
        matches!(self, JudgedSizing::Corrected { labels_only, .. } if labels_only.contains(threshold))
    }
}

/// The stored run a plan was measured on.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanRun {
    pub run: RunInfo,
    /// Inputs `N` and outputs per input `M` of the run's tensor.
    pub shape: (usize, usize),
    /// Names of the checks that decide whether an attempt passes (those of
    /// the run's retry policy, or every check).
    pub checks: Vec<String>,
    /// Input ids, index `i`; inputs beyond the list are shown as `#(i+1)`.
    pub input_labels: Vec<String>,
    /// The statistics the run was analysed with (the confidence of the
    /// conservative bound, the interval method).
    pub analysis: AnalysisOptions,
    /// The guarded system beside the plan's prediction, for a run made
    /// with a `[retry]` policy.
    pub guarded: Option<RetryCheck>,
}
