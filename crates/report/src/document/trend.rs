//! A trend ([`TrendReport`]): each check's success rate over the complete
//! runs of one name, oldest first.

use crate::document::info::RunInfo;
use probity_core::RateEstimate;

/// One run of a trend.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendRun {
    pub run: RunInfo,
    /// Per check of [`TrendReport::checks`]: the run's rate and the
    /// check's minimum success percentage, `None` when the run has no such
    /// check.
    pub rates: Vec<Option<(RateEstimate, f64)>>,
}

/// Rates of checks over runs, oldest run first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrendReport {
    /// The runs' name.
    pub name: String,
    /// Check names (the union over runs, in order of first appearance).
    pub checks: Vec<String>,
    pub runs: Vec<TrendRun>,
}
