//! A trace run's failing spans as test inputs (`probity export`): the
//! rows `run::export` writes, de-duplicated by their normalised input —
//! the conversation with its texts' whitespace collapsed, and the
//! operation — each kept once with `count` (how many spans failed with
//! it) and `trace_ids` (the first [`TRACE_IDS`] of their traces, to find
//! them in the tracing tool), their failed checks and reasons united.
//! Secrets are masked again on the way out ([`super::mask`]).

use super::mask::mask_json;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// Trace ids kept per exported input.
pub const TRACE_IDS: usize = 20;

/// Reasons kept per exported input.
const REASONS: usize = 20;

/// Whether `rows` are a trace run's (their inputs carry `trace_id`).
pub fn are_traces(rows: &[Map<String, Value>]) -> bool {
    rows.first().is_some_and(|r| r.contains_key("trace_id"))
}

/// The normalised form of a row's input: its conversation (or text) with
/// whitespace collapsed in every string, and its operation.
fn key(row: &Map<String, Value>) -> String {
    fn norm(v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(s.split_whitespace().collect::<Vec<_>>().join(" ")),
            Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
            Value::Object(o) => {
                Value::Object(o.iter().map(|(k, v)| (k.clone(), norm(v))).collect())
            }
            other => other.clone(),
        }
    }
    let input = row
        .get("messages")
        .or_else(|| row.get("text"))
        .unwrap_or(&Value::Null);
    json!([norm(input), row.get("operation")]).to_string()
}

/// `rows` de-duplicated (see the module's doc), in the order of each
/// input's first failure.
pub fn dedup(rows: Vec<Map<String, Value>>) -> Vec<Map<String, Value>> {
    let mut out: Vec<Map<String, Value>> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for row in rows {
        let k = key(&row);
        let trace = row.get("trace_id").cloned().unwrap_or(Value::Null);
        match seen.get(&k) {
            Some(&i) => {
                let kept = &mut out[i];
                let n = kept.get("count").and_then(Value::as_u64).unwrap_or(1);
                kept.insert("count".into(), json!(n + 1));
                if let Some(Value::Array(ids)) = kept.get_mut("trace_ids") {
                    if ids.len() < TRACE_IDS && !ids.contains(&trace) {
                        ids.push(trace);
                    }
                }
                for field in ["failed_checks", "reasons"] {
                    let more: Vec<Value> = row
                        .get(field)
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    if let Some(Value::Array(have)) = kept.get_mut(field) {
                        for m in more {
                            if !have.contains(&m) && have.len() < REASONS {
                                have.push(m);
                            }
                        }
                    }
                }
            }
            None => {
                let mut row: Map<String, Value> =
                    row.iter().map(|(k, v)| (k.clone(), mask_json(v))).collect();
                row.remove("trace_id");
                row.remove("span_id");
                row.insert("count".into(), json!(1));
                row.insert("trace_ids".into(), json!([trace]));
                seen.insert(k, out.len());
                out.push(row);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(trace: &str, user: &str, check: &str) -> Map<String, Value> {
        json!({"id": format!("trace-{trace}-s"), "text": user, "trace_id": trace, "span_id": "s",
               "operation": "chat",
               "messages": [{"role": "user", "content": user}],
               "failed_checks": [check], "reasons": [format!("{check} failed")]})
        .as_object()
        .cloned()
        .unwrap()
    }

    #[test]
    fn the_same_input_is_kept_once_with_its_count_traces_and_checks() {
        let rows = vec![
            row("t1", "Refund  my order", "polite"),
            row("t2", "other question", "polite"),
            row("t3", " Refund my\norder ", "no_refund"),
            row("t3", "Refund my order", "polite"),
        ];
        assert!(are_traces(&rows));
        let out = dedup(rows);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0]["count"], json!(3));
        assert_eq!(out[0]["trace_ids"], json!(["t1", "t3"]));
        assert_eq!(out[0]["failed_checks"], json!(["polite", "no_refund"]));
        assert_eq!(out[0]["messages"][0]["content"], json!("Refund  my order"));
        assert!(!out[0].contains_key("trace_id"));
        assert_eq!(out[1]["count"], json!(1));
        assert_eq!(out[1]["trace_ids"], json!(["t2"]));
    }

    #[test]
    fn secrets_left_in_a_row_are_masked_on_the_way_out() {
        let out = dedup(vec![row("t1", "use sk-abcdefghijklmnopqrstuv please", "c")]);
        assert_eq!(out[0]["text"], json!("use *** please"));
        assert_eq!(out[0]["messages"][0]["content"], json!("use *** please"));
    }
}
