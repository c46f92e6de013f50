//! Stored runs read back: the tensor and summary rebuilt from the store, and
//! revalidation of stored outputs with changed checks (no call to the
//! system; judges only for judgements not already cached).

use crate::config::{Config, ExperimentConfig};
use crate::runner::check_output;
use crate::store::{NewRun, RunRecord, RunStatus, SampleRow, Store, StoreError};
use probity_core::{Aggregate, AnalysisOptions, Cell, ReliabilityTensor, Strategy, Summary};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// The analysis settings a run was made with (the `settings` column).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StoredSettings {
    pub analysis: AnalysisOptions,
    pub strategy: Strategy,
    pub aggregate: Aggregate,
    pub retry_target: f64,
}

impl StoredSettings {
    pub fn of(exp: &ExperimentConfig) -> Self {
        StoredSettings {
            analysis: exp.analysis(),
            strategy: exp.strategy,
            aggregate: exp.aggregate,
            retry_target: exp.retry_target,
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

impl Default for StoredSettings {
    fn default() -> Self {
        StoredSettings {
            analysis: AnalysisOptions::default(),
            strategy: Strategy::All,
            aggregate: Aggregate::Min,
            retry_target: 0.99,
        }
    }
}

/// A run as stored, analysed.
pub struct StoredRun {
    pub record: RunRecord,
    pub settings: StoredSettings,
    pub tensor: ReliabilityTensor,
    pub samples: Vec<SampleRow>,
    pub summary: Summary,
}

/// Read run `id` and rebuild its tensor and summary.
pub fn load(store: &Store, id: i64) -> Result<StoredRun, StoreError> {
    let record = store.run(id)?;
    let settings: StoredSettings =
        serde_json::from_value(record.settings.clone()).unwrap_or_default();
    let samples = store.samples(id)?;
    let k = record.checks.len();
    let mut tensor =
        ReliabilityTensor::new(record.inputs, record.outputs_per_input, k).map_err(|e| {
            StoreError::Damaged {
                path: store.path().to_path_buf(),
                run: id,
                what: e.to_string(),
            }
        })?;
    for s in &samples {
        for (kk, &cell) in s.cells.iter().enumerate().take(k) {
            tensor
                .set(s.input_idx, s.repetition, kk, cell)
                .map_err(|e| StoreError::Damaged {
                    path: store.path().to_path_buf(),
                    run: id,
                    what: e.to_string(),
                })?;
        }
    }
    let summary = Summary::build(
        &tensor,
        &record.checks,
        settings.strategy,
        settings.aggregate,
        &settings.analysis,
    );
    Ok(StoredRun {
        record,
        settings,
        tensor,
        samples,
        summary,
    })
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

/// Re-check the stored outputs of run `id` with the validators, verifiers
/// and settings of `config`, as a new run whose parent is `id`. Makes no
/// call to the system under test: failed calls stay Error cells, outputs
/// are re-checked. A verifier's judgement comes from the judge cache when
/// the same judge and instructions judged the same (input, output) before;
/// otherwise the judge is called (with the configuration's concurrency,
/// rate limits, timeout and retries) — or, with `calls` off, the cell is an
/// Error cell with the reason [`crate::guard::NOT_JUDGED`].
pub async fn revalidate(
    store: &mut Store,
    id: i64,
    config: &Config,
    calls: bool,
) -> Result<Revalidated, StoreError> {
    use crate::guard::{Caller, Judging};
    use crate::limits::RateLimiter;
    use std::sync::atomic::Ordering::Relaxed;
    use std::sync::Arc;

    let started = Instant::now();
    let old = store.run(id)?;
    let inputs = store.inputs(id)?;
    let samples = store.samples(id)?;
    let checks = config.checks();
    let exp = &config.file.experiment;
    let config_text = std::fs::read_to_string(&config.path).unwrap_or_default();
    let new_id = store.create_run(&NewRun {
        name: &config.name,
        config_hash: &config.hash,
        config: &config_text,
        system: &old.system,
        inputs: &inputs,
        outputs_per_input: old.outputs_per_input,
        checks: &checks,
        settings: StoredSettings::of(exp).to_json(),
        parent_run: Some(id),
    })?;
    let writer = store.writer(new_id)?;
    let n = samples.len() as u64;
    let caller = Arc::new(Caller::new(
        Arc::new(RateLimiter::new(
            exp.requests_per_minute,
            exp.tokens_per_minute,
        )),
        std::time::Duration::from_secs_f64(exp.timeout_s),
        exp.call_attempts,
    ));
    let judging = Judging {
        cache: Some(Arc::new(store.judgements(Some(writer.judgement_sink()))?)),
        calls,
    };
    let guard_checks = Arc::new(config.guard_checks());
    let limit = Arc::new(tokio::sync::Semaphore::new(exp.concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    let mut not_judged = 0;
    for s in samples {
        let Some(input) = inputs.get(s.input_idx).cloned() else {
            continue;
        };
        let Some(output) = s.output.clone() else {
            writer.send(SampleRow {
                cells: vec![Cell::Error; checks.len()],
                reasons: Vec::new(),
                ..s
            })?;
            continue;
        };
        if guard_checks.verifiers.is_empty() {
            let (cells, reasons) = check_output(&config.validators, &input, &output);
            writer.send(SampleRow {
                cells,
                reasons,
                ..s
            })?;
            continue;
        }
        let (checks, caller, judging, limit) = (
            guard_checks.clone(),
            caller.clone(),
            judging.clone(),
            limit.clone(),
        );
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await;
            let checked = checks
                .check_with(&caller, &judging, &input, &output, s.repetition as u32, 0)
                .await;
            let unjudged = checked
                .reasons
                .iter()
                .filter(|(_, r)| r == crate::guard::NOT_JUDGED)
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
        while tasks.len() > 4 * exp.concurrency.max(1) {
            if let Some(Ok((row, unjudged))) = tasks.join_next().await {
                not_judged += unjudged;
                writer.send(row)?;
            }
        }
    }
    while let Some(done) = tasks.join_next().await {
        // A task that panicked loses its sample (it stays Missing).
        if let Ok((row, unjudged)) = done {
            not_judged += unjudged;
            writer.send(row)?;
        }
    }
    writer.finish()?;
    // A copy is as complete as its source; a source killed mid-run
    // ("running") is interrupted as far as the copy is concerned.
    let status = match old.status {
        RunStatus::Complete => RunStatus::Complete,
        _ => RunStatus::Interrupted,
    };
    let judge_calls = caller.judge_calls.load(Relaxed);
    store.finish_run(
        new_id,
        status,
        judge_calls,
        n,
        started.elapsed().as_secs_f64(),
    )?;
    Ok(Revalidated {
        run_id: new_id,
        samples: n,
        judge_calls,
        judge_cached: caller.judge_cached.load(Relaxed),
        not_judged,
    })
}

/// The retry policy a run was made with, kept in its settings: `m` and the
/// deciding columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRetry {
    pub attempts: u32,
    pub columns: Vec<usize>,
}

/// `settings` with the retry policy (when there is one) under `"retry"`.
pub fn with_retry(
    mut settings: serde_json::Value,
    retry: Option<&crate::guard::RetryPolicy>,
    validators: usize,
    verifiers: usize,
) -> serde_json::Value {
    if let (Some(r), Some(map)) = (retry, settings.as_object_mut()) {
        let stored = StoredRetry {
            attempts: r.attempts,
            columns: r.on.columns(validators, verifiers),
        };
        map.insert(
            "retry".into(),
            serde_json::to_value(stored).unwrap_or_default(),
        );
    }
    settings
}

/// The guarded system of run `id` (stored with a retry policy) measured
/// beside the prediction of its single-attempt tensor; `None` for a run
/// without a retry policy.
pub fn retry_check(
    store: &Store,
    run: &StoredRun,
) -> Result<Option<probity_core::guarded::RetryCheck>, StoreError> {
    use probity_core::guarded::{check_plan, columns_of, GuardedMeasurement, GuardedSample};
    let Some(retry) = run
        .record
        .settings
        .get("retry")
        .and_then(|v| serde_json::from_value::<StoredRetry>(v.clone()).ok())
    else {
        return Ok(None);
    };
    let attempts = store.attempts(run.record.id)?;
    if attempts.is_empty() {
        return Ok(None);
    }
    let mut samples: Vec<GuardedSample> = Vec::new();
    for a in &attempts {
        // Rows come in (input, repetition, attempt) order: attempt 1 opens a sample.
        if a.attempt == 1 || samples.is_empty() {
            samples.push(GuardedSample {
                input: a.input_idx,
                attempts: 0,
                published: false,
                calls: 0,
                tokens: 0,
            });
        }
        if let Some(s) = samples.last_mut() {
            s.attempts = s.attempts.max(a.attempt);
            s.published |= a.published;
            s.calls += u64::from(a.call_attempts) + a.judge_calls;
            s.tokens += a.input_tokens.unwrap_or(0) + a.output_tokens.unwrap_or(0);
        }
    }
    let measured = GuardedMeasurement::new(
        &samples,
        run.record.inputs,
        retry.attempts,
        &run.settings.analysis,
    );
    let single = columns_of(&run.tensor, &retry.columns);
    let plan = probity_core::RetryPlan::from_tensor(&single, &run.settings.analysis);
    Ok(Some(check_plan(&plan, measured)))
}
