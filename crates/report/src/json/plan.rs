//! The JSON of a retry plan: schema `probity.plan.v1`, see `SCHEMA.md`.
//!
//! ```text
//! {
//!   "schema": "probity.plan.v1",
//!   "run": null | {id, name, inputs, outputs_per_input, checks},
//!   "retry": {target, rates, p_independent, independent, measured, conservative,
//!             measured_rate, dependence_ratio, phi, per_input},
//!   "guarded": null | {…}
//! }
//! ```
//!
//! `retry` and `guarded` are the fields of the same names in the report of
//! a run (`probity.report.v1`); `run` is `null` for a plan from assumed
//! rates.

use crate::document::plan::PlanReport;
use crate::json::run::{retry, WireGuarded, WireRetry};
use serde::Serialize;

/// The value of the `schema` field.
pub const SCHEMA: &str = "probity.plan.v1";

/// The whole document.
#[derive(Debug, Serialize)]
pub struct WirePlanReport {
    pub schema: &'static str,
    pub run: Option<WirePlanRun>,
    pub retry: WireRetry,
    pub guarded: Option<WireGuarded>,
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
pub fn wire(p: &PlanReport) -> WirePlanReport {
    let method = p
        .run
        .as_ref()
        .map(|r| r.analysis.interval)
        .unwrap_or_default();
    let label = |i: usize| {
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
        retry: retry(&p.plan, p.target, method, &label),
        guarded: p
            .run
            .as_ref()
            .and_then(|r| r.guarded.as_ref())
            .map(|g| WireGuarded::new(g, method)),
    }
}

/// Render the plan as JSON, pretty-printed, with a trailing newline.
pub(crate) fn render(p: &PlanReport) -> String {
    let mut s = serde_json::to_string_pretty(&wire(p))
        .expect("the wire structs serialise: string keys, no non-finite floats");
    s.push('\n');
    s
}
