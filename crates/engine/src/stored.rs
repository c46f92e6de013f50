//! Stored runs read back: the tensor and summary rebuilt from the store, and
//! revalidation of stored outputs with changed validators (no model call).

use crate::config::{Config, ExperimentConfig};
use crate::runner::evaluate;
use crate::store::{NewRun, RunRecord, RunStatus, SampleRow, Store, StoreError};
use probity_core::{
    Aggregate, AnalysisOptions, Cell, ReliabilityTensor, Strategy, Summary, Verdict,
};
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

/// Re-check the stored outputs of run `id` with the validators and
/// settings of `config`, as a new run whose parent is `id`. Makes no model
/// call: failed calls stay Error cells, outputs are re-checked. Returns the
/// new run's id.
pub fn revalidate(store: &mut Store, id: i64, config: &Config) -> Result<i64, StoreError> {
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
    for s in samples {
        let Some(input) = inputs.get(s.input_idx) else {
            continue;
        };
        let (cells, reasons) = match &s.output {
            Some(output) => {
                let verdicts = evaluate(&config.validators, input, output);
                let reasons = verdicts
                    .iter()
                    .enumerate()
                    .filter_map(|(k, v)| match v {
                        Verdict::Error { reason } => Some((k, reason.clone())),
                        _ => None,
                    })
                    .collect();
                (verdicts.iter().map(Cell::from).collect(), reasons)
            }
            None => (vec![Cell::Error; checks.len()], Vec::new()),
        };
        writer.send(SampleRow {
            cells,
            reasons,
            ..s
        })?;
    }
    writer.finish()?;
    // A copy is as complete as its source; a source killed mid-run
    // ("running") is interrupted as far as the copy is concerned.
    let status = match old.status {
        RunStatus::Complete => RunStatus::Complete,
        _ => RunStatus::Interrupted,
    };
    store.finish_run(new_id, status, 0, n, started.elapsed().as_secs_f64())?;
    Ok(new_id)
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
