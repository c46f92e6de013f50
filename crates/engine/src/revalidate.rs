//! Revalidation: the stored outputs of a run re-checked with changed checks
//! and settings, as a new run whose parent is the old one. No call to the
//! system under test; judges only for judgements not already cached.

use crate::call::{CallSettings, Caller};
use crate::check::{Checks, NOT_JUDGED};
use crate::experiment::{Experiment, Source};
use crate::recording::Recording;
use crate::settings::StoredSettings;
use crate::store::{NewRun, RunStatus, RunTotals, SampleRow, Store, StoreError};
use probity_core::validator::PreparedInput;
use probity_core::{Cell, ReliabilityTensor};
use std::sync::Arc;
use std::time::Instant;

/// What a revalidation applies: an experiment's checks and settings,
/// without its system (which a revalidation never calls).
pub struct Recheck<'a> {
    /// The new run's name.
    pub name: &'a str,
    pub checks: &'a Checks,
    pub settings: StoredSettings,
    /// How judges are called.
    pub calls: CallSettings,
    /// Judge calls in flight at once.
    pub concurrency: usize,
    /// The configuration the checks come from, if any.
    pub source: Option<Source>,
}

impl Experiment {
    /// This experiment's checks and settings, to revalidate a stored run.
    pub fn recheck(&self) -> Recheck<'_> {
        Recheck {
            name: &self.name,
            checks: &self.checks,
            settings: StoredSettings::new(&self.analysis, None),
            calls: self.calls,
            concurrency: self.concurrency,
            source: self.source.clone(),
        }
    }
}

/// What a revalidation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Revalidated {
    /// The new run.
    pub run_id: i64,
    /// Samples re-checked.
    pub samples: u64,
    /// Calls made to judges (retries included); never to the system.
    pub judge_calls: u64,
    /// Judgements served from the judge cache.
    pub judge_cached: u64,
    /// Verifier cells left unjudged (calls off, judgement not cached).
    pub not_judged: u64,
}

/// Re-check the stored outputs of run `id` with the checks and settings of
/// `recheck`, as a new run whose parent is
/// `id`: failed calls stay Error cells, outputs are re-checked. A
/// verifier's judgement comes from the judge cache when the same judge and
/// instructions judged the same (input, output) before; otherwise the judge
/// is called (with `recheck`'s concurrency, rate limits, timeout and
/// retries) — or, with `calls` off, the cell is an Error cell with the
/// reason [`NOT_JUDGED`].
pub async fn revalidate(
    store: &mut Store,
    id: i64,
    recheck: &Recheck<'_>,
    calls: bool,
) -> Result<Revalidated, StoreError> {
    let started = Instant::now();
    let old = store.run(id)?;
    let inputs = store.inputs(id)?;
    let samples = store.samples(id)?;
    let checks: Arc<Checks> = Arc::new(recheck.checks.clone());
    let infos = checks.infos();
    let hash = recheck
        .source
        .as_ref()
        .map_or_else(|| old.config_hash.clone(), |s| s.hash.clone());
    // A sequential run's copy is read back in the same order.
    let settings = StoredSettings {
        sequential: old.settings.sequential,
        ..recheck.settings.clone()
    };
    let recording = Recording::create(
        store,
        &NewRun {
            name: recheck.name,
            config_hash: &hash,
            config: recheck.source.as_ref().map_or("", |s| s.text.as_str()),
            system: &old.system,
            inputs: &inputs,
            outputs_per_input: old.outputs_per_input,
            checks: &infos,
            settings: &settings,
            parent_run: Some(id),
            reused_from: None,
        },
    )?;
    let writer = &recording.writer;
    let n = samples.len() as u64;
    // The new run's tensor, filled as its rows are written: its verdicts
    // are stored with it.
    let mut tensor = ReliabilityTensor::new(old.inputs, old.outputs_per_input, checks.len()).ok();
    let mut send = |row: SampleRow| -> Result<(), StoreError> {
        if let Some(t) = tensor.as_mut() {
            for (k, &cell) in row.cells.iter().enumerate() {
                // A row outside the run's shape is kept, not counted.
                let _ = t.set(row.input_idx, row.repetition, k, cell);
            }
        }
        writer.send(row)
    };
    let caller = recheck.calls.caller();
    let judging = recording.judging(calls, true);
    let weights_of = inputs.clone();
    let prepared: Vec<Arc<PreparedInput<'static>>> = inputs
        .into_iter()
        .map(|i| Arc::new(PreparedInput::owned(i)))
        .collect();
    let concurrency = recheck.concurrency.max(1);
    let limit = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let mut tasks = tokio::task::JoinSet::new();
    let mut not_judged = 0;
    for s in samples {
        let Some(input) = prepared.get(s.input_idx).cloned() else {
            continue;
        };
        let Some(output) = s.output.clone() else {
            send(SampleRow {
                cells: vec![Cell::Error; checks.len()],
                reasons: Vec::new(),
                ..s
            })?;
            continue;
        };
        if checks.verifiers.is_empty() {
            let (cells, reasons) = checks.validate(&input, &output);
            send(SampleRow {
                cells,
                reasons,
                ..s
            })?;
            continue;
        }
        let (checks, caller, judging, limit) = (
            checks.clone(),
            caller.clone(),
            judging.clone(),
            limit.clone(),
        );
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await;
            let checked = checks
                .check(&caller, &judging, &input, &output, s.repetition as u32, 0)
                .await;
            let unjudged = checked
                .reasons
                .iter()
                .filter(|(_, r)| r == NOT_JUDGED)
                .count() as u64;
            (
                SampleRow {
                    cells: checked.cells,
                    reasons: checked.reasons,
                    ..s
                },
                unjudged,
            )
        });
        // Write as results come, so memory stays bounded by the pool.
        while tasks.len() > 4 * concurrency {
            if let Some(Ok((row, unjudged))) = tasks.join_next().await {
                not_judged += unjudged;
                send(row)?;
            }
        }
    }
    while let Some(done) = tasks.join_next().await {
        // A task that panicked loses its sample (it stays Missing).
        if let Ok((row, unjudged)) = done {
            not_judged += unjudged;
            send(row)?;
        }
    }
    let new_id = recording.run_id;
    let summary = tensor.as_ref().and_then(|t| {
        crate::stored::summarize(&settings, &infos, t, &weights_of)
            .ok()
            .map(|s| (s, t))
    });
    // A sequential run's copy: its sequences replayed with the new checks.
    let summary = match summary {
        Some((s, t)) if settings.sequential.is_some() => {
            let record = store.run(recording.run_id)?;
            Some(crate::stored::sequential_summary(s, &record, t))
        }
        other => other.map(|(s, _)| s),
    };
    if let Some(o) = summary.as_ref().and_then(|s| s.sequential.as_ref()) {
        store.set_sequential(recording.run_id, o)?;
    }
    let verdicts: Option<Vec<_>> = summary
        .as_ref()
        .map(|s| s.checks.iter().map(|c| c.verdict.decision).collect());
    recording.writer.finish()?;
    // A copy is as complete as its source; a source killed mid-run
    // ("running") is interrupted as far as the copy is concerned.
    let status = match old.status {
        RunStatus::Complete => RunStatus::Complete,
        _ => RunStatus::Interrupted,
    };
    let judge_calls = Caller::count(&caller.judge_calls);
    store.finish_run(
        new_id,
        status,
        RunTotals {
            judge_calls_by_check: checks.judge_calls(),
            ..caller.totals()
        },
        n,
        started.elapsed().as_secs_f64(),
        verdicts.as_deref(),
    )?;
    Ok(Revalidated {
        run_id: new_id,
        samples: n,
        judge_calls,
        judge_cached: Caller::count(&caller.judge_cached),
        not_judged,
    })
}
