//! Two stored runs compared: load both, match their inputs by input id,
//! and hand the tensors to the pure comparison in
//! [`probity_core::compare`].
//!
//! The baseline is A, the candidate B; every difference is `B − A`. The
//! candidate's analysis settings (confidence, error policy, interval
//! method) apply to both runs.

use crate::run::stored;
use crate::store::{RunRecord, RunStatus, Store, StoreError};
use probity_core::compare::{align_by_id, compare_runs, CompareOptions, Comparison, RunData};
use probity_core::ReliabilityTensor;

/// A run to compare: its header and its tensor.
#[derive(Clone, Copy)]
pub struct RunTensor<'a> {
    pub record: &'a RunRecord,
    pub tensor: &'a ReliabilityTensor,
}

/// A comparison of two stored runs, with what a report says about them.
pub struct RunComparison {
    pub baseline: RunRecord,
    pub candidate: RunRecord,
    pub comparison: Comparison,
    /// Shared input ids whose fields differ between the runs (the same id
    /// with changed content): still paired, reported as a warning.
    pub changed_inputs: Vec<String>,
}

/// Compare stored run `baseline` (A) with `candidate` (B). `options`
/// overrides the candidate's settings when given.
pub fn compare_stored(
    store: &Store,
    baseline: i64,
    candidate: i64,
    options: Option<CompareOptions>,
) -> Result<RunComparison, StoreError> {
    let a = stored::load(store, baseline)?;
    let b = stored::load(store, candidate)?;
    compare_loaded(
        store,
        RunTensor {
            record: &a.record,
            tensor: &a.tensor,
        },
        RunTensor {
            record: &b.record,
            tensor: &b.tensor,
        },
        options,
    )
}

/// [`compare_stored`] on runs already loaded (e.g. the run just made).
pub fn compare_loaded(
    store: &Store,
    a: RunTensor<'_>,
    b: RunTensor<'_>,
    options: Option<CompareOptions>,
) -> Result<RunComparison, StoreError> {
    let inputs_a = store.inputs(a.record.id)?;
    let inputs_b = store.inputs(b.record.id)?;
    let ids_a: Vec<&str> = inputs_a.iter().map(|i| i.id.as_str()).collect();
    let ids_b: Vec<&str> = inputs_b.iter().map(|i| i.id.as_str()).collect();
    let alignment = align_by_id(&ids_a, &ids_b);
    let changed_inputs = alignment
        .pairs
        .iter()
        .filter(|&&(i, j)| inputs_a[i].fields != inputs_b[j].fields)
        .map(|&(i, _)| inputs_a[i].id.clone())
        .collect();
    let opts =
        options.unwrap_or_else(|| CompareOptions::from_analysis(&b.record.settings.analysis));
    let comparison = compare_runs(
        RunData {
            tensor: a.tensor,
            checks: &a.record.checks,
        },
        RunData {
            tensor: b.tensor,
            checks: &b.record.checks,
        },
        &alignment,
        &opts,
    );
    Ok(RunComparison {
        baseline: a.record.clone(),
        candidate: b.record.clone(),
        comparison,
        changed_inputs,
    })
}

/// The run a `--baseline` names: a run id, or a name, meaning the latest
/// complete run of that name other than `current`. `None` when there is no
/// such run.
pub fn resolve_baseline(
    store: &Store,
    spec: &str,
    current: i64,
) -> Result<Option<i64>, StoreError> {
    if let Ok(id) = spec.parse::<i64>() {
        return store.run(id).map(|r| Some(r.id));
    }
    Ok(store
        .runs(Some(spec))?
        .into_iter()
        .find(|r| r.name == spec && r.id != current && r.status == RunStatus::Complete)
        .map(|r| r.id))
}
