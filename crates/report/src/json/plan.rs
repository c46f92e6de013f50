//! The JSON of a retry plan: schema `probity.plan.v1`, see `SCHEMA.md`.
//!
//! ```text
//! {
//!   "schema": "probity.plan.v1",
//!   "run": null | {id, name, inputs, outputs_per_input, checks},
//!   "retry": {target, rates, p_independent, independent, measured, conservative,
//!             measured_rate, dependence_ratio, phi, per_input},
//!   "guarded": null | {…},
//!   "sample_size": null | {confidence, power, icc, outputs_per_input, fixed_inputs,
//!                   fixed_samples, budget_inputs, budget_found, seed, checks: [{name, rate, threshold,
//!                   fixed_inputs, judged?}], sequential: {runs, mean_samples, p10_samples,
//!                   p50_samples, p90_samples, mean_inputs, budget_samples, settled,
//!                   futile, budget_spent, established_pass, established_fail}}
//! }
//! ```
//!
//! `retry` and `guarded` are the fields of the same names in the report of
//! a run (`probity.report.v1`); `run` is `null` for a plan from assumed
//! rates.

use crate::document::plan::{JudgedSizing, PlanReport, SampleSizePlan};
use crate::json::run::{retry, WireGuarded, WireRetry};
use probity_core::simulate::plan::CostDistribution;
use serde::Serialize;

/// The value of the `schema` field.
pub const SCHEMA: &str = "probity.plan.v1";

/// The whole document.
#[derive(Debug, Serialize)]
pub struct WirePlanReport<'a> {
    pub schema: &'static str,
    pub run: Option<WirePlanRun>,
    pub retry: WireRetry<'a>,
    pub guarded: Option<WireGuarded>,
    /// The sample size for given minimums; `null` when not asked for
    /// (added within v1).
    pub sample_size: Option<WireSampleSize>,
}

/// A fixed-size run for a power and a sequential run's cost.
#[derive(Debug, Serialize)]
pub struct WireSampleSize {
    pub confidence: f64,
    pub power: f64,
    pub icc: f64,
    pub outputs_per_input: u64,
    pub fixed_inputs: Option<u64>,
    pub fixed_samples: Option<u64>,
    pub budget_inputs: u64,
    /// `true`: the smallest budget tried that settles with the power;
    /// `false`: none tried does; `null`: the budget was given.
    pub budget_found: Option<bool>,
    pub seed: u64,
    pub checks: Vec<WireSampleSizeCheck>,
    /// The core's cost distribution, field for field.
    pub sequential: CostDistribution,
}

#[derive(Debug, Serialize)]
pub struct WireSampleSizeCheck {
    pub name: String,
    pub rate: f64,
    pub threshold: f64,
    pub fixed_inputs: Option<u64>,
    /// A calibrated verifier's: `{"state": "corrected", "raw", "labels_only":
    /// [lower, upper]}` (sized at the corrected rate; the sizes are the
    /// least a run needs) or `{"state": "uncorrected", "why"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judged: Option<WireJudged>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum WireJudged {
    Corrected { raw: f64, labels_only: [f64; 2] },
    Uncorrected { why: String },
}

impl WireJudged {
    fn new(j: &JudgedSizing) -> Self {
        match j {
            JudgedSizing::Corrected { raw, labels_only } => WireJudged::Corrected {
                raw: *raw,
                labels_only: [labels_only.lower, labels_only.upper],
            },
            JudgedSizing::Uncorrected { why } => WireJudged::Uncorrected { why: why.clone() },
        }
    }
}

impl WireSampleSize {
    fn new(p: &SampleSizePlan) -> Self {
        WireSampleSize {
            confidence: p.confidence,
            power: p.power,
            icc: p.icc,
            outputs_per_input: p.outputs_per_input,
            fixed_inputs: p.fixed_inputs,
            // Past u64 (or N saturated there): u64::MAX, "that many or
            // more", as `fixed_inputs` (never an overflow).
            fixed_samples: p
                .fixed_inputs
                .map(|n| n.saturating_mul(p.outputs_per_input)),
            budget_inputs: p.budget_inputs,
            budget_found: p.budget_found,
            seed: p.seed,
            checks: p
                .checks
                .iter()
                .map(|c| WireSampleSizeCheck {
                    name: c.name.clone(),
                    rate: c.rate,
                    threshold: c.threshold,
                    fixed_inputs: c.fixed_inputs,
                    judged: c.judged.as_ref().map(WireJudged::new),
                })
                .collect(),
            sequential: p.cost.clone(),
        }
    }
}

/// The stored run a plan was measured on.
#[derive(Debug, Serialize)]
pub struct WirePlanRun {
    pub id: i64,
    pub name: String,
    pub inputs: usize,
    pub outputs_per_input: usize,
    /// The deciding checks, by name.
    pub checks: Vec<String>,
}

/// Build the wire document of `p`.
pub fn wire(p: &PlanReport) -> WirePlanReport<'_> {
    let method = p
        .run
        .as_ref()
        .map(|r| r.analysis.interval)
        .unwrap_or_default();
    let label = move |i: usize| {
        p.run
            .as_ref()
            .and_then(|r| r.input_labels.get(i))
            .filter(|l| !l.is_empty())
            .cloned()
    };
    WirePlanReport {
        schema: SCHEMA,
        run: p.run.as_ref().map(|r| WirePlanRun {
            id: r.run.id,
            name: r.run.name.clone(),
            inputs: r.shape.0,
            outputs_per_input: r.shape.1,
            checks: r.checks.clone(),
        }),
        retry: retry(&p.plan, p.target, method, label),
        guarded: p
            .run
            .as_ref()
            .and_then(|r| r.guarded.as_ref())
            .map(|g| WireGuarded::new(g, method)),
        sample_size: p.sample_size.as_ref().map(WireSampleSize::new),
    }
}

/// Render the plan as JSON, pretty-printed, with a trailing newline.
pub(crate) fn render(p: &PlanReport) -> String {
    let mut s = serde_json::to_string_pretty(&wire(p))
        .expect("the wire structs serialise: string keys, no non-finite floats");
    s.push('\n');
    s
}
