//! The JSON of a variants run (`probity run --format json` of a file with
//! `[[variant]]` tables, `probity report RUN --variants --format json`):
//! schema `probity.variants.v1`, see `SCHEMA.md`. Each variant carries
//! its run's whole report (`probity.report.v1`) as `report`; each pair's
//! checks are written as `probity.compare.v1` writes a comparison's.

use crate::document::variants::VariantsReport;
use crate::facts::comparison::correction_name;
use crate::facts::variants::conclusion;
use crate::json::comparison::{check_json, run_json};
use crate::numbers::name;
use probity_core::compare::Direction;
use serde_json::{json, Value};

/// Schema name of the JSON variants report.
pub const SCHEMA: &str = "probity.variants.v1";

fn num(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

/// `better`, `worse`, `no_established_difference`, `no_data`: B against A.
fn verdict(d: Direction) -> &'static str {
    match d {
        Direction::Improved => "better",
        Direction::Regressed => "worse",
        Direction::NoDetectableChange => "no_established_difference",
        Direction::NoData => "no_data",
    }
}

/// The report as a JSON value (schema [`SCHEMA`]).
pub(crate) fn value(r: &VariantsReport) -> Value {
    let c = &r.comparison;
    let variants: Vec<Value> = r
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let checks: Vec<Value> = v
                .report
                .summary
                .checks
                .iter()
                .map(|k| {
                    json!({
                        "name": k.info.name,
                        "estimate": num(k.rate.estimate),
                        "lower": num(k.rate.interval.lower),
                        "upper": num(k.rate.interval.upper),
                        "n": k.rate.n,
                        "threshold": num(k.verdict.threshold),
                        "decision": name(k.verdict.decision),
                    })
                })
                .collect();
            let cost = &v.cost;
            json!({
                "name": v.name,
                "reference": c.reference == Some(i),
                "passed": v.report.passed(),
                "run": run_json(&v.report.run),
                "checks": checks,
                "cost": {
                    "calls": cost.calls,
                    "judge_calls": cost.judge_calls,
                    "tokens": cost.tokens,
                    "samples": cost.samples,
                    "cached": cost.cached,
                    "money": serde_json::to_value(crate::json::cost::wire_cost(&v.report.run.cost)).unwrap_or(Value::Null),
                    "duration_s": cost.duration_s.map(num),
                    "latency_ms": cost.latency_ms.map(|l| json!({
                        "mean": num(l.mean),
                        "p50": num(l.p50),
                        "p95": num(l.p95),
                        "n": l.n,
                    })),
                },
                "report": serde_json::to_value(crate::json::run::wire(&v.report)).unwrap_or(Value::Null),
            })
        })
        .collect();
    let differences: Vec<Value> = c
        .pairs
        .iter()
        .map(|p| {
            let checks: Vec<Value> = p
                .comparison
                .checks
                .iter()
                .map(|k| {
                    let mut v = check_json(k);
                    if let Some(o) = v.as_object_mut() {
                        o.insert("verdict".into(), verdict(k.direction).into());
                    }
                    v
                })
                .collect();
            json!({
                "baseline": c.names[p.baseline],
                "candidate": c.names[p.candidate],
                "inputs": {
                    "shared": p.comparison.shared_inputs,
                    "only_baseline": p.comparison.only_baseline_inputs,
                    "only_candidate": p.comparison.only_candidate_inputs,
                },
                "checks": checks,
            })
        })
        .collect();
    let established: Vec<Value> = c
        .better()
        .iter()
        .map(|e| {
            let d = e.check.decisive();
            json!({
                "better": c.names[e.better],
                "worse": c.names[e.worse],
                "check": e.check.name,
                "difference": num(d.mean_diff.abs()),
                "lower": num(if e.check.direction == Direction::Improved { d.interval.lower } else { -d.interval.upper }),
                "upper": num(if e.check.direction == Direction::Improved { d.interval.upper } else { -d.interval.lower }),
                "p_adjusted": num(e.check.p_adjusted),
            })
        })
        .collect();
    json!({
        "schema": SCHEMA,
        "name": r.name,
        "group": r.group,
        "reference": c.reference.map(|i| c.names[i].clone()),
        "options": {
            "confidence": num(c.options.confidence),
            "power": num(c.options.power),
            "errors": name(c.options.errors),
            "multiple": correction_name(c.options.multiple),
        },
        "tests": c.tests,
        "passed": r.passed(),
        "complete": r.complete(),
        "variants": variants,
        "differences": differences,
        "established": established,
        "conclusion": conclusion(r),
    })
}

/// Render the report as JSON, pretty-printed, with a trailing newline.
pub(crate) fn render(r: &VariantsReport) -> String {
    let mut s = serde_json::to_string_pretty(&value(r)).unwrap_or_default();
    s.push('\n');
    s
}
