//! Settings shared by every analysis of a tensor.

use crate::stats::{ClusterMethod, ErrorPolicy, IntervalMethod, VerdictMode};
use serde::{Deserialize, Serialize};

/// How rates are estimated and judged (docs/architecture.md, Design decisions).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnalysisOptions {
    /// Confidence level 1 − α of every interval, in (0, 1).
    pub confidence: f64,
    /// Interval method; Wilson by default.
    pub interval: IntervalMethod,
    /// Whether error cells are excluded (not measured; the default) or
    /// count as failures.
    pub errors: ErrorPolicy,
    /// How a rate is judged against its minimum success percentage.
    pub verdict: VerdictMode,
    /// How rates over the repeated outputs of several inputs get their
    /// interval; [`ClusterMethod::Profile`] by default.
    pub cluster: ClusterMethod,
    /// k of pass^k / pass@k; `None`: the retry plan's m (attempts for
    /// 0.99 at the measured joint rate), at most M.
    pub pass_k: Option<u32>,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            confidence: 0.95,
            interval: IntervalMethod::Wilson,
            errors: ErrorPolicy::Exclude,
            verdict: VerdictMode::Point,
            cluster: ClusterMethod::Profile,
            pass_k: None,
        }
    }
}
