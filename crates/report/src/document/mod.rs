//! The documents probity reports on, as data; rendering them is the
//! formats' business ([`crate::render`]).
//!
//! | document | type | made by |
//! | --- | --- | --- |
//! | a run | [`RunReport`] | `probity run`, `probity report RUN` |
//! | a comparison of two runs | [`ComparisonReport`] | `probity compare`; inside a run's report with `--baseline` |
//! | a trend over runs of one name | [`TrendReport`] | `probity report --trend NAME` |
//! | a retry plan | [`PlanReport`] | `probity plan` |
//! | variants side by side | [`VariantsReport`] | `probity run` of a file with `[[variant]]` tables, `probity report RUN --variants` |
//!
//! [`Document`] is one of them, borrowed, as [`crate::render`] takes it.

pub mod comparison;
pub mod info;
pub mod plan;
pub mod run;
pub mod trend;
pub mod variants;

use comparison::ComparisonReport;
use plan::PlanReport;
use run::RunReport;
use trend::TrendReport;
use variants::VariantsReport;

/// One document to render. Each format renders every document; see
/// [`crate::render`]. Made from a reference to any of the report types
/// (`render(&report, …)` converts).
#[derive(Debug, Clone, Copy)]
pub enum Document<'a> {
    /// A run, with its comparison against a baseline when it has one.
    Run(&'a RunReport),
    /// Run B against run A.
    Comparison(&'a ComparisonReport),
    /// Rates of checks over runs of one name.
    Trend(&'a TrendReport),
    /// A retry plan.
    Plan(&'a PlanReport),
    /// Variants of one system side by side.
    Variants(&'a VariantsReport),
}

impl<'a> From<&'a RunReport> for Document<'a> {
    fn from(r: &'a RunReport) -> Self {
        Document::Run(r)
    }
}

impl<'a> From<&'a ComparisonReport> for Document<'a> {
    fn from(r: &'a ComparisonReport) -> Self {
        Document::Comparison(r)
    }
}

impl<'a> From<&'a TrendReport> for Document<'a> {
    fn from(r: &'a TrendReport) -> Self {
        Document::Trend(r)
    }
}

impl<'a> From<&'a PlanReport> for Document<'a> {
    fn from(r: &'a PlanReport) -> Self {
        Document::Plan(r)
    }
}

impl<'a> From<&'a VariantsReport> for Document<'a> {
    fn from(r: &'a VariantsReport) -> Self {
        Document::Variants(r)
    }
}
