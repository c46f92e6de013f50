//! The JSON of a comparison of two runs (`probity compare --format json`):
//! schema `probity.compare.v1`, see `SCHEMA.md`. A run's report with a
//! baseline carries the same document as its `comparison` field.
//!
//! Built with `serde_json::json!`, so its keys are written in alphabetical
//! order.

use crate::document::comparison::ComparisonReport;
use crate::document::info::RunInfo;
use crate::facts::comparison::correction_name;
use crate::facts::run::scope_name;
use crate::numbers::name;
use probity_core::stats::Difference;
use serde_json::{json, Value};

/// Schema name of the JSON comparison.
pub const SCHEMA: &str = "probity.compare.v1";

fn num(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

fn diff_json(d: &Difference) -> Value {
    json!({
        "difference": num(d.mean_diff),
        "se": num(d.se),
        "lower": num(d.interval.lower),
        "upper": num(d.interval.upper),
        "n": d.n,
        "significant": d.is_significant(),
    })
}

pub(crate) fn run_json(r: &RunInfo) -> Value {
    json!({
        "id": r.id,
        "name": r.name,
        "created_at": r.created_at,
        "config_hash": r.config_hash,
        "system": r.system,
        "system_label": r.system_label,
        "complete": r.complete,
    })
}

fn rate_json(r: &probity_core::RateEstimate) -> Value {
    json!({
        "estimate": num(r.estimate),
        "lower": num(r.interval.lower),
        "upper": num(r.interval.upper),
        "n": r.n,
        "effective_n": num(r.effective_n),
        "inputs": r.inputs,
        "scope": scope_name(r.scope),
    })
}

/// One check compared, as `checks[]` of the schema writes it.
pub(crate) fn check_json(k: &probity_core::compare::CheckComparison) -> Value {
    json!({
                "name": k.name,
                "direction": name(k.direction),
                "basis": name(k.basis),
                "difference": num(k.decisive().mean_diff),
                "lower": num(k.decisive().interval.lower),
                "upper": num(k.decisive().interval.upper),
                "baseline": rate_json(&k.baseline),
                "candidate": rate_json(&k.candidate),
                "paired": k.paired.as_ref().map(diff_json),
                "unpaired": diff_json(&k.unpaired),
                "paired_inputs": k.paired_inputs,
                "paired_excluded": k.paired_excluded,
                "mde": num(k.mde),
                "mde_paired": k.mde_paired.map(num),
                "mde_unpaired": num(k.mde_unpaired),
                "p_value": num(k.p_value),
                "p_adjusted": num(k.p_adjusted),
    })
}

/// The comparison as a JSON value (schema [`SCHEMA`]).
pub(crate) fn value(r: &ComparisonReport) -> Value {
    let c = &r.comparison;
    let checks: Vec<Value> = c.checks.iter().map(check_json).collect();
    let (imp, reg, same, none) = c.tally();
    json!({
        "schema": SCHEMA,
        "baseline": run_json(&r.baseline),
        "candidate": run_json(&r.candidate),
        "options": {
            "confidence": num(c.options.confidence),
            "power": num(c.options.power),
            "errors": name(c.options.errors),
            "multiple": correction_name(c.options.multiple),
        },
        "inputs": {
            "shared": c.shared_inputs,
            "only_baseline": c.only_baseline_inputs,
            "only_candidate": c.only_candidate_inputs,
            "changed": r.changed_inputs,
        },
        "regressed": r.regressed(),
        "summary": {
            "improved": imp,
            "regressed": reg,
            "no_detectable_change": same,
            "no_data": none,
            "conclusion": r.conclusion(),
        },
        "checks": checks,
        "only_baseline_checks": c.only_baseline_checks,
        "only_candidate_checks": c.only_candidate_checks,
    })
}

/// Render the comparison as JSON, pretty-printed, with a trailing newline.
pub(crate) fn render(r: &ComparisonReport) -> String {
    let mut s = serde_json::to_string_pretty(&value(r)).unwrap_or_default();
    s.push('\n');
    s
}
