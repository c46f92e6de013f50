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

    /// True when no check could be compared — the runs share no check,
    /// or a run judged nothing of those they share: no comparison was
    /// made, which is not "no change" (the CLI exits 3).
    pub fn without_data(&self) -> bool {
        let (_, _, _, none) = self.comparison.tally();
        none == self.comparison.checks.len()
    }

    /// One line: `REGRESSED: 1 of 2 checks regressed (B − A, 95% intervals)`.
    pub fn conclusion(&self) -> String {
        let (imp, reg, same, none) = self.comparison.tally();
        let k = self.comparison.checks.len();
        if k == 0 {
            return format!(
                "NO CHECKS IN COMMON: runs {} and {} share no check by name; nothing was compared",
                self.baseline.id, self.candidate.id
            );
        }
        if self.without_data() {
            let which = |r: &RunInfo| {
                if r.complete {
                    format!("run {}", r.id)
                } else {
                    format!("run {} (incomplete)", r.id)
                }
            };
            return format!(
                "NO COMPARISON: no check has judged outputs in both runs ({} and {}); nothing is known of a change",
                which(&self.baseline),
                which(&self.candidate)
            );
        }
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
        format!(
            "{head}: of {k} {}, {}",
            plural(k, "check"),
            parts.join(", ")
        )
    }
}
