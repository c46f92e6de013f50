//! Failures back into tests (paper §4.2.6, "analyse failed inputs"): the
//! inputs of a stored run — the requests of a `probity serve` run, or the
//! inputs of a test run — as rows of an inputs file `probity run` reads
//! (`[experiment] inputs = "failing.jsonl"`), each with the checks it
//! failed and their reasons as fields.
//!
//! An input fails when any of its samples (the first attempt of a guarded
//! request) has a check that failed or erred, or, for a guarded run, when
//! no attempt of it was published. Its row is the stored input's fields
//! (`text`, and for a served request `messages`, the conversation whole as
//! the client sent it, which `probity run` sends whole again), its `id`,
//! and:
//! `failed_checks` (names, in column order), `reasons` (the stored reasons
//! and each failed check's message), `published` (guarded runs) and
//! `source_run`. The store holds no secret, so neither does the file.
//!
//! An agent's run (docs/agents.md) exports its tasks: each row keeps its
//! `scenario`, so `probity run` plays the task again, and adds `episodes`,
//! the selected episodes (failed or erred; every one with `--all`) with
//! their repetition, failed checks, reasons and whole transcript
//! (OpenAI-shaped messages with tool calls and results, turns, final
//! state, ending). A transcript's `messages` are a conversation an input
//! can carry (`messages`), to replay the episode's prefix to any system.

use crate::store::{RunRecord, Store, StoreError};
use probity_core::Cell;
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, HashMap};

/// Which inputs to export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// Those that failed: a check failed or erred on a sample, or (guarded)
    /// nothing was published.
    Failing,
    /// Every input, with the same fields.
    All,
}

/// One input's failures so far.
#[derive(Debug, Default)]
struct Failures {
    checks: BTreeSet<usize>,
    reasons: Vec<String>,
    /// An agent's episodes (docs/agents.md) that `which` selects.
    episodes: Vec<Value>,
}

/// Sample `output` of an agent's run as an exported episode: its
/// repetition, the checks it failed, why, and its transcript as the data
/// expressions read (`Transcript::to_value`: OpenAI-shaped messages, tool
/// calls with their turn and result, the final state, the ending); `None`
/// when the output is not an episode's transcript.
fn episode(
    record: &RunRecord,
    repetition: usize,
    output: &str,
    failed: &[usize],
    reasons: &[(usize, String)],
    error: Option<&str>,
) -> Option<Value> {
    if !output.starts_with("{\"messages\"") {
        return None;
    }
    let t: probity_core::agent::Transcript = serde_json::from_str(output).ok()?;
    let names: Vec<&str> = failed
        .iter()
        .filter_map(|&k| record.checks.get(k).map(|c| c.name.as_str()))
        .collect();
    let reasons: Vec<&str> = reasons.iter().map(|(_, r)| r.as_str()).collect();
    Some(json!({
        "repetition": repetition,
        "failed_checks": names,
        "reasons": reasons,
        "error": error,
        "transcript": t.to_value(),
    }))
}

/// The rows of run `run` that `which` selects, in input order.
pub fn export(
    store: &Store,
    run: i64,
    which: Which,
) -> Result<Vec<Map<String, Value>>, StoreError> {
    let record = store.run(run)?;
    let inputs = store.inputs(run)?;
    let mut failures: HashMap<usize, Failures> = HashMap::new();
    for sample in store.samples(run)? {
        let f = failures.entry(sample.input_idx).or_default();
        let failed: Vec<usize> = (0..sample.cells.len())
            .filter(|&k| matches!(sample.cells[k], Cell::Fail | Cell::Error))
            .collect();
        if which == Which::All || !failed.is_empty() {
            if let Some(e) = sample.output.as_deref().and_then(|o| {
                episode(
                    &record,
                    sample.repetition,
                    o,
                    &failed,
                    &sample.reasons,
                    sample.error.as_deref(),
                )
            }) {
                f.episodes.push(e);
            }
        }
        f.checks.extend(failed);
        f.reasons
            .extend(sample.reasons.into_iter().map(|(_, reason)| reason));
        if let Some(error) = sample.error {
            f.reasons.push(error);
        }
    }
    let published = published_by_input(store, run, &record)?;
    let mut rows = Vec::new();
    for (idx, input) in inputs.into_iter().enumerate() {
        let f = failures.remove(&idx).unwrap_or_default();
        let was_published = published.as_ref().map(|p| p.contains(&idx));
        let failed = !f.checks.is_empty() || was_published == Some(false);
        if which == Which::Failing && !failed {
            continue;
        }
        let mut row = input.fields.to_map();
        row.insert("id".into(), json!(input.id));
        let names: Vec<&str> = f
            .checks
            .iter()
            .filter_map(|&k| record.checks.get(k).map(|c| c.name.as_str()))
            .collect();
        let mut reasons = f.reasons;
        reasons.extend(
            f.checks
                .iter()
                .filter_map(|&k| record.checks.get(k))
                .map(|c| c.message.clone())
                .filter(|m| !m.is_empty()),
        );
        reasons.dedup();
        row.insert("failed_checks".into(), json!(names));
        row.insert("reasons".into(), json!(reasons));
        if let Some(p) = was_published {
            row.insert("published".into(), json!(p));
        }
        if !f.episodes.is_empty() {
            row.insert("episodes".into(), Value::Array(f.episodes));
        }
        row.insert("source_run".into(), json!(run));
        rows.push(row);
    }
    Ok(rows)
}

/// For a guarded run (one with attempts), the inputs one of whose attempts
/// was published; `None` for a run without attempts.
fn published_by_input(
    store: &Store,
    run: i64,
    record: &RunRecord,
) -> Result<Option<BTreeSet<usize>>, StoreError> {
    if record.settings.retry.is_none() {
        return Ok(None);
    }
    let mut published = BTreeSet::new();
    store.each_attempt_counts(run, |a| {
        if a.published {
            published.insert(a.input_idx);
        }
    })?;
    Ok(Some(published))
}
