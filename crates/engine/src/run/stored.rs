//! Stored runs read back: the tensor and summary rebuilt from the store,
//! and the guarded system of a run with a retry policy measured beside its
//! prediction (§4.2).

use crate::store::settings::StoredSettings;
use crate::store::{RunRecord, Store, StoreError};
use probity_core::causes::Causes;
use probity_core::monitor::LiveSnapshot;
use probity_core::{CheckInfo, Input, ReliabilityTensor, Summary};

/// A run as stored, analysed.
pub struct StoredRun {
    /// The run's header, with the settings it was analysed with.
    pub record: RunRecord,
    pub tensor: ReliabilityTensor,
    pub summary: Summary,
    /// The causes of its errors, most common first, when known without
    /// reading its samples (its snapshot; [`Store::causes`] counts them).
    pub causes: Option<Causes>,
    /// A serve run's watches, its traffic replayed ([`super::live::replay`]):
    /// its verdicts are their sequences' ([`Summary::with_live`]). `None`
    /// for other runs.
    pub live: Option<LiveSnapshot>,
}

/// Read run `id` and its tensor — from its snapshot when it finished,
/// else rebuilt from the samples' cells (no output is read:
/// [`Store::samples_at`] reads those) — and analyse it.
pub fn load(store: &Store, id: i64) -> Result<StoredRun, StoreError> {
    let record = store.run(id)?;
    let k = record.checks.len();
    let shape = (record.inputs, record.outputs_per_input, k);
    let (tensor, causes) = match store.snapshot(id, shape)? {
        Some((tensor, causes)) => (tensor, Some(causes)),
        None => (rebuild(store, id, shape)?, None),
    };
    // The inputs are read only to weigh them: a million inputs' fields
    // are not needed for anything else here.
    let inputs = if record.settings.analysis_settings().weight_field.is_some() {
        store.inputs(id)?
    } else {
        Vec::new()
    };
    let summary =
        summarize(&record.settings, &record.checks, &tensor, &inputs).map_err(|what| {
            StoreError::Damaged {
                store: store.location().clone(),
                run: id,
                what,
            }
        })?;
    let summary = sequential_summary(summary, &record, &tensor);
    let live = super::live::replay(store, &record)?;
    let summary = match &live {
        Some(l) => summary.with_live(l),
        None => summary,
    };
    Ok(StoredRun {
        record,
        tensor,
        summary,
        causes,
        live,
    })
}

/// Run `id`'s tensor of `shape`, from its samples' cells.
fn rebuild(
    store: &Store,
    id: i64,
    (n, m, k): (usize, usize, usize),
) -> Result<ReliabilityTensor, StoreError> {
    let damaged = |what: String| StoreError::Damaged {
        store: store.location().clone(),
        run: id,
        what,
    };
    let mut tensor = ReliabilityTensor::new(n, m, k).map_err(|e| damaged(e.to_string()))?;
    let mut problem = None;
    store.each_sample_cells(id, |i, j, cells| {
        for (kk, &cell) in cells.iter().enumerate().take(k) {
            if let Err(e) = tensor.set(i, j, kk, cell) {
                problem.get_or_insert_with(|| e.to_string());
            }
        }
    })?;
    match problem {
        Some(what) => Err(damaged(what)),
        None => Ok(tensor),
    }
}

/// The summary of a stored run's `tensor`, analysed with the `settings`
/// and `checks` it was stored with; an error names input weights that
/// cannot be read from `inputs`.
pub fn summarize(
    settings: &StoredSettings,
    checks: &[CheckInfo],
    tensor: &ReliabilityTensor,
    inputs: &[Input],
) -> Result<Summary, String> {
    let weights = settings.analysis_settings().input_weights(inputs)?;
    Ok(summarize_weighted(
        settings,
        checks,
        tensor,
        weights.as_deref(),
    ))
}

/// [`summarize`] with the inputs' weights already read (`None`: equal).
pub(crate) fn summarize_weighted(
    settings: &StoredSettings,
    checks: &[CheckInfo],
    tensor: &ReliabilityTensor,
    weights: Option<&[f64]>,
) -> Summary {
    // Not `try_build`: a stored run may be empty (a server that answered no
    // request), and its settings were checked when it ran.
    Summary::build_weighted(
        tensor,
        checks,
        settings.strategy,
        settings.aggregate,
        &settings.analysis,
        weights,
    )
    .with_calibration(tensor, &settings.calibration)
}

/// A sequential run's summary: verdicts and intervals are its confidence
/// sequences' — as stored, or, for a sequential run stored without its
/// outcome (killed before it finished, or re-checked by `probity
/// revalidate`), replayed from its tensor in its seeded order
/// (`probity_core::sequential::replay`). Other runs' summary as it is.
pub(crate) fn sequential_summary(
    summary: Summary,
    run: &RunRecord,
    tensor: &ReliabilityTensor,
) -> Summary {
    match (&run.sequential, &run.settings.sequential) {
        (Some(outcome), _) => summary.with_sequential(outcome),
        (None, Some(s)) => {
            let o = &run.settings.analysis;
            match probity_core::sequential::replay(
                tensor,
                &run.checks,
                o.confidence,
                o.errors,
                s.seed,
            ) {
                Ok(outcome) => summary.with_sequential(&outcome),
                Err(_) => summary,
            }
        }
        (None, None) => summary,
    }
}

/// The usage of run `run`'s calls to the system for attempts after the
/// first (what its retries cost, §4.2); `None` for a run without a retry
/// policy.
pub fn retries_usage(
    store: &Store,
    run: &RunRecord,
) -> Result<Option<probity_core::cost::Usage>, StoreError> {
    if run.settings.retry.is_none() {
        return Ok(None);
    }
    let mut retries = probity_core::cost::Usage::default();
    store.each_attempt_counts(run.id, |a| {
        if a.attempt > 1 {
            retries = retries + a.usage;
        }
    })?;
    Ok(Some(retries))
}

/// The guarded system of run `run` (stored with a retry policy) measured
/// beside the prediction of its single-attempt `tensor`; `None` for a run
/// without a retry policy.
pub fn retry_check(
    store: &Store,
    run: &RunRecord,
    tensor: &ReliabilityTensor,
) -> Result<Option<probity_core::guarded::RetryCheck>, StoreError> {
    use probity_core::guarded::{check_plan, columns_of, GuardedMeasurement, GuardedSample};
    let Some(retry) = &run.settings.retry else {
        return Ok(None);
    };
    let mut samples: Vec<GuardedSample> = Vec::new();
    store.each_attempt_counts(run.id, |a| {
        // Rows come in (input, repetition, attempt) order: attempt 1 opens a sample.
        if a.attempt == 1 || samples.is_empty() {
            samples.push(GuardedSample {
                input: a.input_idx,
                attempts: 0,
                published: false,
                calls: 0,
                tokens: 0,
                retry_calls: 0,
                retry_tokens: 0,
            });
        }
        if let Some(s) = samples.last_mut() {
            s.attempts = s.attempts.max(a.attempt);
            s.published |= a.published;
            s.calls += a.calls;
            s.tokens += a.tokens;
            if a.attempt > 1 {
                s.retry_calls += a.calls;
                s.retry_tokens += a.tokens;
            }
        }
    })?;
    if samples.is_empty() {
        return Ok(None);
    }
    let measured =
        GuardedMeasurement::new(&samples, run.inputs, retry.attempts, &run.settings.analysis);
    let single = columns_of(tensor, &retry.columns);
    // Nothing judged by the deciding checks: no rate to predict from.
    let Ok(plan) = probity_core::RetryPlan::from_tensor(&single, &run.settings.analysis) else {
        return Ok(None);
    };
    Ok(Some(check_plan(
        &plan,
        measured,
        run.settings.analysis.confidence,
    )))
}
