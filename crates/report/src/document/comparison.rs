//! The comparison of two runs ([`ComparisonReport`]): the baseline A, the
//! candidate B, and the core's [`Comparison`] of their checks. Changes
//! are `B − A`; positive is better.

use crate::document::info::RunInfo;
use crate::numbers::plural;
use probity_core::compare::Comparison;

/// Everything a comparison report shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparisonReport {
    /// Run A.
    pub baseline: RunInfo,
    /// Run B.
    pub candidate: RunInfo,
    pub comparison: Comparison,
    /// Shared input ids whose content differs between the runs.
    pub changed_inputs: Vec<String>,
}

impl ComparisonReport {
    /// True when some check regressed significantly (the CLI exits 1).
    pub fn regressed(&self) -> bool {
        self.comparison.regressed()
    }

    /// One line: `REGRESSED: 1 of 2 checks regressed (B − A, 95% intervals)`.
    pub fn conclusion(&self) -> String {
        let (imp, reg, same, none) = self.comparison.tally();
        let k = self.comparison.checks.len();
        let mut parts = Vec::new();
        if reg > 0 {
            parts.push(format!("{reg} regressed"));
        }
        if imp > 0 {
            parts.push(format!("{imp} improved"));
        }
        if same > 0 {
            parts.push(format!("{same} no detectable change"));
        }
        if none > 0 {
            parts.push(format!("{none} without data"));
        }
        let head = if reg > 0 {
            "REGRESSED"
        } else if imp > 0 {
            "IMPROVED"
        } else {
            "NO DETECTABLE CHANGE"
        };
        if k == 0 {
            return "NO CHECKS IN COMMON".to_string();
        }
        format!(
            "{head}: of {k} {}, {}",
            plural(k, "check"),
            parts.join(", ")
        )
    }
}
