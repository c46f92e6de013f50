//! A variants run in the store (`[[variant]]` tables, docs/config.md,
//! Variants): every variant is a run of its own, named `NAME/VARIANT`,
//! tagged with its variant and its group (the id of the group's first
//! run). This module finds a group's runs, the group `--resume`
//! continues, each variant's cost, and compares the variants with
//! [`probity_core::variants`].

use crate::store::{RunRecord, RunStatus, Store, StoreError, VariantTag};
use probity_core::compare::{CompareOptions, RunData};
use probity_core::variants::{
    compare_variants, latency, VariantCost, VariantData, VariantsComparison,
};
use probity_core::ReliabilityTensor;

/// Inputs read at a time when a variant's latencies are gathered.
const INPUTS_PER_READ: usize = 256;

/// The runs of variants group `group`, in the variants' order (by their
/// index in the file; of two runs of one variant, the later). `name` is
/// the configuration's name, the runs' names' prefix (`NAME/`).
pub fn group_runs(store: &Store, name: &str, group: i64) -> Result<Vec<RunRecord>, StoreError> {
    let mut runs: Vec<RunRecord> = store
        .runs(Some(&format!("{name}/")))?
        .into_iter()
        .filter(|r| r.variant.as_ref().and_then(|v| v.group) == Some(group))
        .collect();
    // Newest first from the store: keep the first of each variant.
    let mut seen = std::collections::HashSet::new();
    runs.retain(|r| seen.insert(r.variant.as_ref().map(|v| v.name.clone())));
    runs.sort_by_key(|r| r.variant.as_ref().map_or(usize::MAX, |v| v.index));
    Ok(runs)
}

/// The configuration's name of a variant run (`NAME` of `NAME/VARIANT`).
pub fn base_name(r: &RunRecord) -> &str {
    match &r.variant {
        Some(v) => r
            .name
            .strip_suffix(&v.name)
            .and_then(|s| s.strip_suffix('/'))
            .unwrap_or(&r.name),
        None => &r.name,
    }
}

/// The group of run `id` and its runs, in order; `Ok(None)` when the run
/// is not a variant.
pub fn group_of(store: &Store, id: i64) -> Result<Option<(i64, Vec<RunRecord>)>, StoreError> {
    let r = store.run(id)?;
    let Some(group) = r.variant.as_ref().and_then(|v| v.group) else {
        return Ok(None);
    };
    Ok(Some((group, group_runs(store, base_name(&r), group)?)))
}

/// The group `--resume` continues: the group of the newest unfinished run
/// among the variants' configuration hashes; `None` when no variant has
/// one.
pub fn resumable_group(store: &Store, hashes: &[String]) -> Result<Option<i64>, StoreError> {
    let mut newest: Option<i64> = None;
    for h in hashes {
        if let Some(id) = store.resumable_run(h)? {
            newest = newest.max(Some(id));
        }
    }
    match newest {
        Some(id) => Ok(store.run(id)?.variant.and_then(|v| v.group)),
        None => Ok(None),
    }
}

/// What a variant of a resumed group does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Its run is complete: read it back.
    Done(i64),
    /// Its run is unfinished: continue it.
    Resume(i64),
    /// It has no run in the group (the run stopped before it): start one.
    Start,
}

/// What variant `tag` (with configuration `hash`) of group `runs` does on
/// `--resume`. A run of the variant made with another configuration is an
/// error naming it; so is an unfinished run that `--resume` would not find
/// first (a newer unfinished run of the same configuration elsewhere).
pub fn step(
    store: &Store,
    runs: &[RunRecord],
    tag: &VariantTag,
    hash: &str,
) -> Result<Step, String> {
    let Some(r) = runs
        .iter()
        .find(|r| r.variant.as_ref().is_some_and(|v| v.name == tag.name))
    else {
        return Ok(Step::Start);
    };
    if r.config_hash != hash {
        return Err(format!(
            "variant {:?} was run (run {}) with another configuration than the file's now; start a new variants run without --resume",
            tag.name, r.id
        ));
    }
    if r.status == RunStatus::Complete {
        return Ok(Step::Done(r.id));
    }
    match store.resumable_run(hash).map_err(|e| e.to_string())? {
        Some(id) if id == r.id => Ok(Step::Resume(id)),
        other => Err(format!(
            "variant {:?}: its unfinished run {} is not the newest unfinished run of its configuration ({}); resume that one with `probity run --resume` of the variant alone",
            tag.name,
            r.id,
            other.map_or("none".to_string(), |i| format!("run {i}"))
        )),
    }
}

/// Run `r`'s cost: its header's counts, and its samples' latencies read a
/// few hundred inputs at a time (memory: one latency per sample).
pub fn cost(store: &Store, r: &RunRecord) -> Result<VariantCost, StoreError> {
    let mut ms = Vec::new();
    let mut samples = 0u64;
    let mut from = 0;
    while from < r.inputs {
        let to = (from + INPUTS_PER_READ).min(r.inputs);
        for s in store.samples_of_inputs(r.id, from..to)? {
            samples += 1;
            // A reused output's latency is the run it came from's.
            if let Some(l) = s.latency_ms {
                ms.push(l);
            }
        }
        from = to;
    }
    Ok(VariantCost {
        calls: r.model_calls,
        judge_calls: r.judge_calls,
        tokens: r.tokens,
        samples,
        cached: r.cached,
        duration_s: r.duration_s,
        latency_ms: latency(ms),
    })
}

/// A seed for the input order that every sequential variant of a new
/// group shares (so their inputs are visited in one order).
pub fn new_seed() -> u64 {
    rand::random()
}

/// One variant's run to compare: its header and its tensor.
#[derive(Clone, Copy)]
pub struct VariantRun<'a> {
    pub record: &'a RunRecord,
    pub tensor: &'a ReliabilityTensor,
}

/// Compare the variants' runs against `reference` (every pair when
/// `None`), inputs matched by id, with the correction across every pair
/// and check. `options` defaults to the reference's (else the first
/// run's) analysis settings.
pub fn compare(
    store: &Store,
    runs: &[VariantRun<'_>],
    reference: Option<usize>,
    options: Option<CompareOptions>,
) -> Result<VariantsComparison, StoreError> {
    let ids: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            store
                .inputs(r.record.id)
                .map(|inputs| inputs.into_iter().map(|i| i.id).collect())
        })
        .collect::<Result<_, _>>()?;
    let names: Vec<String> = runs
        .iter()
        .map(|r| {
            r.record
                .variant
                .as_ref()
                .map_or_else(|| r.record.name.clone(), |v| v.name.clone())
        })
        .collect();
    let data: Vec<VariantData<'_>> = runs
        .iter()
        .zip(&ids)
        .zip(&names)
        .map(|((r, ids), name)| VariantData {
            name,
            run: RunData {
                tensor: r.tensor,
                checks: &r.record.checks,
            },
            input_ids: ids,
        })
        .collect();
    let opts = options.unwrap_or_else(|| {
        let r = reference.and_then(|i| runs.get(i)).or(runs.first());
        r.map_or_else(CompareOptions::default, |r| {
            CompareOptions::from_analysis(&r.record.settings.analysis)
        })
    });
    Ok(compare_variants(&data, reference, &opts))
}
