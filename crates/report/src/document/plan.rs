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
