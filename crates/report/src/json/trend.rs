//! The JSON of a trend (`probity report --trend NAME --format json`):
//! schema `probity.trend.v1`, see `SCHEMA.md`. Built with
//! `serde_json::json!`, so its keys are written in alphabetical order.

use crate::document::trend::TrendReport;
use serde_json::{json, Value};

/// Schema name of the JSON trend.
pub const SCHEMA: &str = "probity.trend.v1";

/// The trend as JSON (`probity.trend.v1`).
fn value(t: &TrendReport) -> Value {
    let num = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
    json!({
        "schema": SCHEMA,
        "name": t.name,
        "checks": t.checks,
        "runs": t.runs.iter().map(|r| json!({
            "id": r.run.id,
            "created_at": r.run.created_at,
            "system": r.run.system,
            "config_hash": r.run.config_hash,
            "marks": r.marks.iter().map(|m| m.to_string()).collect::<Vec<_>>(),
            "rates": r.rates.iter().map(|x| match x {
                Some((rate, th)) => json!({
                    "estimate": num(rate.estimate),
                    "lower": num(rate.interval.lower),
                    "upper": num(rate.interval.upper),
                    "n": rate.n,
                    "threshold": num(*th),
                }),
                None => Value::Null,
            }).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// Render the trend as JSON, pretty-printed, with a trailing newline.
pub(crate) fn render(t: &TrendReport) -> String {
    let mut s = serde_json::to_string_pretty(&value(t)).unwrap_or_default();
    s.push('\n');
    s
}
