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
        for (k, cell) in sample.cells.iter().enumerate() {
            if matches!(cell, Cell::Fail | Cell::Error) {
                f.checks.insert(k);
            }
        }
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
