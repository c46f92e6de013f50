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
    /// What sets this run apart from a plain run of the latest
    /// configuration: a trend's points are comparable only where it has
    /// none.
    pub marks: Vec<TrendMark>,
}

/// Why a trend's point may not be like the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrendMark {
    /// Its outputs came (in part) from an earlier run (`--reuse`).
    Reused(i64),
    /// A revalidation: another run's outputs judged again.
    Revalidated(i64),
    /// The same file as the latest run, other settings: overridden with
    /// `--set` (or its inputs file changed).
    Overridden,
    /// Another configuration file text than the latest run's.
    OtherConfig,
}

impl std::fmt::Display for TrendMark {
    /// `reused #3`, `revalidated #3`, `--set`, `other config`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrendMark::Reused(id) => write!(f, "reused #{id}"),
            TrendMark::Revalidated(id) => write!(f, "revalidated #{id}"),
            TrendMark::Overridden => write!(f, "--set"),
            TrendMark::OtherConfig => write!(f, "other config"),
        }
    }
}

impl TrendRun {
    /// Its marks as one cell: `reused #3 · --set`, `""` for none.
    pub fn marks_line(&self) -> String {
        self.marks
            .iter()
            .map(|m| m.to_string())
            .collect::<Vec<_>>()
            .join(" · ")
    }
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
