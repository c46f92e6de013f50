//! Revalidation: the stored outputs of a run re-checked with changed checks
//! and settings, as a new run whose parent is the old one, holding only its
//! verdicts (the outputs stay where they were sampled). No call to the
//! system under test; judges only for judgements not already cached.

use crate::checks::check::{Checks, NOT_JUDGED};
use crate::provider::call::{CallSettings, Caller};
use crate::run::experiment::{Experiment, Source};
use crate::run::recording::Recording;
use crate::store::settings::StoredSettings;
use crate::store::{NewRun, RunStatus, RunTotals, SampleRow, Store, StoreError};
use probity_core::causes::Causes;
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
#[derive(Debug, Clone, PartialEq, Eq, Default)]
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
    /// Verifiers with a labelled set that could not be calibrated (calls
    /// off, and the store does not keep the judge's verdict on every
    /// labelled pair): their verdicts are the judge's own rate.
    pub uncalibrated: Vec<String>,
}

/// Samples read, checked and written at a time: memory stays bounded by
/// this, whatever the run's size.
const CHUNK: usize = 4096;

/// Re-check the stored outputs of run `id` with the checks and settings of
/// `recheck`, as a new run whose parent is `id`. The new run stores only
/// its verdicts, over the outputs of the run that sampled them (never a
/// copy: `runs.outputs_from`). Failed calls stay Error cells; outputs are
/// re-checked, a few thousand at a time, validators in parallel. A
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
    let checks: Arc<Checks> = Arc::new(recheck.checks.clone());
    let (k, m) = (checks.len(), old.outputs_per_input);
    let infos = checks.infos();
    let hash = recheck
        .source
        .as_ref()
        .map_or_else(|| old.config_hash.clone(), |s| s.hash.clone());
    let caller = recheck.calls.caller();
    // A sequential run's copy is read back in the same order. A calibrated
    // verifier's labelled set is judged again, as a run does (the judge or
    // its instructions may have changed since; verdicts the store keeps
    // for the same questions are reused): its verdict is then the
    // corrected rate's, as the run's was.
    let mut settings = StoredSettings {
        sequential: old.settings.sequential,
        ..recheck.settings.clone()
    };
    // With calls off, only a set whose every verdict the store keeps is
    // measured.
    let mut uncalibrated = Vec::new();
    if calls {
        settings.calibration = crate::checks::calibration::measure_all_cached(
            &checks,
            &caller,
            Some(&mut *store),
            crate::checks::calibration::LabelAnswers::Reuse,
        )
        .await;
    } else {
        settings.calibration = crate::checks::calibration::recall_all(&checks, &mut *store);
        let v0 = checks.validators.len();
        uncalibrated.extend(
            checks
                .verifiers
                .iter()
                .enumerate()
                .filter(|(w, v)| {
                    v.calibration.is_some()
                        && settings.calibration.get(v0 + w).is_none_or(Option::is_none)
                })
                .map(|(_, v)| v.name.clone()),
        );
    }
    let recording = Recording::create(
        store,
        &NewRun {
            name: recheck.name,
            config_hash: &hash,
            config: recheck.source.as_ref().map_or("", |s| s.text.as_str()),
            system: &old.system,
            inputs: &inputs,
            outputs_per_input: m,
            checks: &infos,
            settings: &settings,
            parent_run: Some(id),
            reused_from: None,
            outputs_from: Some(old.outputs_from.unwrap_or(id)),
            variant: None,
        },
    )?;
    // The new run's tensor and causes, filled as its rows are written: its
    // verdicts and snapshot are stored with it.
    let mut tensor = ReliabilityTensor::new(old.inputs, m, k).ok();
    let mut causes = Causes::new(k);
    let mut written = 0u64;
    let writer = &recording.writer;
    let mut send = |row: SampleRow| -> Result<(), StoreError> {
        if let Some(t) = tensor.as_mut() {
            for (kk, &cell) in row.cells.iter().enumerate() {
                // A row outside the run's shape is kept, not counted.
                let _ = t.set(row.input_idx, row.repetition, kk, cell);
            }
        }
        row.note_causes(&mut causes);
        written += 1;
        writer.send(row)
    };
    let judging = recording.judging(calls, true);
    // Weights that cannot be read leave the run without a summary, as the
    // source's would be.
    let weights = settings.analysis_settings().input_weights(&inputs);
    // The inputs are held once; each is prepared for expressions (its
    // `input` map) only while its slice is checked — held for all inputs
    // at once, the maps were about 700 bytes an input (140 MB of the 268 MB
    // heap at 200,000 inputs).
    let inputs: Arc<[probity_core::Input]> = inputs.into();
    let concurrency = recheck.concurrency.max(1);
    let limit = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let mut tasks = tokio::task::JoinSet::new();
    let mut not_judged = 0;
    let per_chunk = (CHUNK / m.max(1)).max(1);
    // Validators only: a slice is checked (in parallel) while the next is
    // read.
    let mut checking: Option<tokio::task::JoinHandle<Vec<SampleRow>>> = None;
    for first in (0..inputs.len()).step_by(per_chunk) {
        let range = first..(first + per_chunk).min(inputs.len());
        let chunk = store.samples_of_inputs(id, range.clone())?;
        let prepared = Slice::new(&inputs, range);
        if checks.verifiers.is_empty() {
            let checks = checks.clone();
            let next =
                tokio::task::spawn_blocking(move || validate_rows(&checks, &prepared, chunk));
            if let Some(done) = checking.replace(next) {
                for row in done.await.map_err(|e| lost(store, e))? {
                    send(row)?;
                }
            }
            continue;
        }
        for s in chunk {
            let Some(input) = prepared.get(s.input_idx).cloned() else {
                continue;
            };
            let Some(output) = s.output.clone() else {
                send(SampleRow {
                    cells: vec![Cell::Error; k],
                    reasons: Vec::new(),
                    ..s
                })?;
                continue;
            };
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
    }
    if let Some(done) = checking.take() {
        for row in done.await.map_err(|e| lost(store, e))? {
            send(row)?;
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
    recording.writer.finish()?;
    let summary = match (tensor.as_ref(), &weights) {
        (Some(t), Ok(w)) => Some((
            crate::run::stored::summarize_weighted(&settings, &infos, t, w.as_deref()),
            t,
        )),
        _ => None,
    };
    // A sequential run's recheck: its sequences replayed with the new checks.
    let summary = match summary {
        Some((s, t)) if settings.sequential.is_some() => {
            let record = store.run(new_id)?;
            Some(crate::run::stored::sequential_summary(s, &record, t))
        }
        other => other.map(|(s, _)| s),
    };
    if let Some(o) = summary.as_ref().and_then(|s| s.sequential.as_ref()) {
        store.set_sequential(new_id, o)?;
    }
    let verdicts: Option<Vec<_>> = summary
        .as_ref()
        .map(|s| s.checks.iter().map(|c| c.verdict.decision).collect());
    // A recheck is as complete as its source; a source killed mid-run
    // ("running") is interrupted as far as the recheck is concerned.
    let status = match old.status {
        RunStatus::Complete => RunStatus::Complete,
        _ => RunStatus::Interrupted,
    };
    if let Some(t) = &tensor {
        store.put_snapshot(new_id, t, &causes.sorted())?;
    }
    let judge_calls = Caller::count(&caller.judge_calls);
    store.finish_run(
        new_id,
        status,
        Some(RunTotals {
            judge_calls_by_check: checks.judge_calls(),
            ..caller.totals()
        }),
        written,
        started.elapsed().as_secs_f64(),
        verdicts.as_deref(),
    )?;
    Ok(Revalidated {
        run_id: new_id,
        samples: written,
        judge_calls,
        judge_cached: Caller::count(&caller.judge_cached),
        not_judged,
        uncalibrated,
    })
}

/// The inputs of one slice of a run (`first..` of its input indices),
/// prepared for expressions, dropped with the slice.
struct Slice {
    first: usize,
    prepared: Vec<Arc<PreparedInput<'static>>>,
}

impl Slice {
    /// Inputs `range` of `inputs` (shared, not copied).
    fn new(inputs: &Arc<[probity_core::Input]>, range: std::ops::Range<usize>) -> Slice {
        Slice {
            first: range.start,
            prepared: range
                .map(|i| Arc::new(PreparedInput::shared(inputs, i)))
                .collect(),
        }
    }

    /// Input `idx` of the run, if it is in this slice.
    fn get(&self, idx: usize) -> Option<&Arc<PreparedInput<'static>>> {
        self.prepared.get(idx.checked_sub(self.first)?)
    }
}

/// `rows` re-checked with `checks`' validators (no verifier): a row without
/// an output (a failed call) is Error cells; a row of an input not in
/// `inputs` is dropped.
fn validate_rows(checks: &Checks, inputs: &Slice, rows: Vec<SampleRow>) -> Vec<SampleRow> {
    let rows: Vec<SampleRow> = rows
        .into_iter()
        .filter(|s| inputs.get(s.input_idx).is_some())
        .collect();
    let asked: Vec<(&PreparedInput<'_>, &str)> = rows
        .iter()
        .filter_map(|s| Some((&**inputs.get(s.input_idx)?, s.output.as_deref()?)))
        .collect();
    let mut checked = checks.validate_many(&asked).into_iter();
    let k = checks.len();
    rows.into_iter()
        .map(|s| {
            let (cells, reasons) = match s.output {
                Some(_) => checked.next().unwrap_or_default(),
                None => (vec![Cell::Error; k], Vec::new()),
            };
            SampleRow {
                cells,
                reasons,
                ..s
            }
        })
        .collect()
}

/// A slice whose checking failed (a panic in a check): the revalidation
/// stops rather than store a run with samples silently missing.
fn lost(store: &Store, e: tokio::task::JoinError) -> StoreError {
    StoreError::Writer {
        store: store.location().clone(),
        what: format!("checking the stored outputs failed: {e}"),
    }
}
