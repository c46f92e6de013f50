//! The report of a variants run ([`VariantsReport`], `[[variant]]`
//! tables): each variant's run report and cost, the core's
//! [`VariantsComparison`] of the variants (paired differences, Holm
//! across every pair and check), and some inputs with each variant's
//! outputs, for the HTML page's side-by-side view.

use crate::document::run::{FailingSample, RunReport};
use probity_core::variants::{VariantCost, VariantsComparison};

/// One variant: a column of the matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantColumn {
    /// The variant's name (`[[variant]] name`).
    pub name: String,
    /// Its run's report (its run is named `NAME/VARIANT`).
    pub report: RunReport,
    /// What it cost.
    pub cost: VariantCost,
}

/// One input with each variant's outputs of it.
#[derive(Debug, Clone, PartialEq)]
pub struct InputOutputs {
    /// The input's id.
    pub label: String,
    /// Per variant (in the matrix's order): its outputs of this input
    /// (passing ones too: no failed or errored check), its `input` field
    /// the input's index in that variant's run.
    pub outputs: Vec<Vec<FailingSample>>,
}

/// Everything a variants report shows.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantsReport {
    /// The configuration's name (the runs are `NAME/VARIANT`).
    pub name: String,
    /// The group: the id of its first run.
    pub group: i64,
    /// The variants, in the file's order.
    pub variants: Vec<VariantColumn>,
    pub comparison: VariantsComparison,
    /// Inputs with each variant's outputs, the first of the reference's
    /// inputs (at most the HTML page's share).
    pub side_by_side: Vec<InputOutputs>,
    /// Inputs of the reference (or first) variant in all.
    pub inputs: usize,
}

impl VariantsReport {
    /// True when every variant passes every check (the CLI's exit 0).
    pub fn passed(&self) -> bool {
        self.variants.iter().all(|v| v.report.passed())
    }

    /// True when every variant's run took every sample.
    pub fn complete(&self) -> bool {
        self.variants.iter().all(|v| v.report.run.complete)
    }

    /// The checks of the matrix: every check of any variant, in the
    /// order first met.
    pub fn checks(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for v in &self.variants {
            for c in &v.report.summary.checks {
                if !names.contains(&c.info.name) {
                    names.push(c.info.name.clone());
                }
            }
        }
        names
    }

    /// Variant `v`'s summary of check `name`, when it has that check.
    pub fn cell(&self, v: usize, name: &str) -> Option<&probity_core::CheckSummary> {
        self.variants
            .get(v)?
            .report
            .summary
            .checks
            .iter()
            .find(|c| c.info.name == name)
    }
}
