//! The runner: sample the system N×M times, check every output with the K
//! validators, fill the tensor, and store everything as it completes.
//!
//! Calls run concurrently (a fixed pool of workers, bounded by
//! `concurrency`), behind client-side rate limits, with per-call timeouts and
//! retries with backoff on rate limits, 5xx and timeouts. A call that still
//! fails becomes Error cells — never a failure in disguise, never an abort.
//! Outputs already in the store (this run's, when resuming, or any run's
//! identical request) are not requested again; with a retry policy that
//! holds for every attempt, each keyed by its own request (feedback
//! included) and attempt index (see [`attempt_cache_key`]).

use crate::config::Config;
use crate::guard::{Answer, Caller, Guard, GuardOutcome, Judging, RetryPolicy};
use crate::limits::RateLimiter;
use crate::provider::{Message, Provider, ProviderError, Request};
use crate::store::{AttemptRow, NewRun, RunStatus, SampleRow, Store, StoreError};
use crate::template::PromptTemplate;
use probity_core::{Cell, Input, ReliabilityTensor, Summary, Validator, Verdict};
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use thiserror::Error;
use tokio::sync::{mpsc, watch};

#[derive(Debug, Error)]
pub enum RunError {
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the run could not complete: {0}")]
    Aborted(String),
}

/// What the caller can ask of a run.
pub struct RunSettings {
    /// Continue the latest unfinished run with the same configuration
    /// instead of starting a new one.
    pub resume: bool,
    /// Set to `true` to stop: no new calls start, calls in flight are
    /// abandoned (not stored), and the run is marked interrupted.
    pub cancel: watch::Receiver<bool>,
}

/// Progress reported while a run goes on.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Samples decided (from the store, the cache or a call).
    pub done: u64,
    pub total: u64,
    pub model_calls: u64,
    /// Samples served from an identical stored request.
    pub cached: u64,
    /// Later attempts of guarded samples served from an identical stored
    /// attempt (no call).
    pub attempts_cached: u64,
    pub errors: u64,
    /// Per check: (passes, evaluated cells).
    pub passes: Vec<(u64, u64)>,
}

/// The result of a run.
pub struct RunOutcome {
    pub run_id: i64,
    pub tensor: ReliabilityTensor,
    pub summary: Summary,
    pub status: RunStatus,
    /// Calls made to the model by this invocation (retries included).
    pub model_calls: u64,
    /// Samples served from an identical stored request.
    pub cached: u64,
    /// With a retry policy: attempts (after the first, or a first attempt
    /// not found up front) served from an identical stored attempt — the
    /// same provider, messages (feedback included), repetition and attempt
    /// index — without a call.
    pub attempts_cached: u64,
    /// Samples already stored in the resumed run.
    pub resumed: u64,
    /// Samples whose call failed.
    pub errors: u64,
    /// Of `model_calls`, the calls made to judges (retries included).
    pub judge_calls: u64,
    /// Judgements served from the judge cache (no call).
    pub judge_cached: u64,
    pub duration: Duration,
}

/// The cache key of one request: SHA-256 over the provider's fingerprint
/// (kind, model, sampling parameters — never secrets), the rendered
/// messages and the repetition index.
pub fn cache_key(fingerprint: &str, messages: &[Message], repetition: usize) -> String {
    request_key(fingerprint, messages, repetition, None)
}

/// The cache key of one attempt of a guarded request: [`cache_key`] over
/// the attempt's own messages (with the feedback when there is any), with
/// the 0-based attempt index appended after the repetition. The first
/// attempt (index 0) is the plain request, so its key is the sample's.
pub fn attempt_cache_key(
    fingerprint: &str,
    messages: &[Message],
    repetition: usize,
    attempt: u32,
) -> String {
    request_key(
        fingerprint,
        messages,
        repetition,
        Some(attempt).filter(|&a| a > 0),
    )
}

fn request_key(
    fingerprint: &str,
    messages: &[Message],
    repetition: usize,
    attempt: Option<u32>,
) -> String {
    let mut h = Sha256::new();
    h.update(fingerprint.as_bytes());
    h.update([0]);
    h.update(serde_json::to_vec(messages).unwrap_or_default());
    h.update([0]);
    h.update((repetition as u64).to_le_bytes());
    if let Some(a) = attempt {
        h.update([0]);
        h.update(u64::from(a).to_le_bytes());
    }
    hex::encode(h.finalize())
}

/// Check one output with every validator.
pub fn evaluate(validators: &[Validator], input: &Input, output: &str) -> Vec<Verdict> {
    validators
        .iter()
        .map(|v| v.evaluate(input, output))
        .collect()
}

/// Check one output with every validator, as stored: one cell per
/// validator, and the reasons of the cells that are errors.
pub fn check_output(
    validators: &[Validator],
    input: &Input,
    output: &str,
) -> (Vec<Cell>, Vec<(usize, String)>) {
    let verdicts = evaluate(validators, input, output);
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

/// A sample row from verdicts (or from a failed call).
fn row_from(
    input_idx: usize,
    repetition: usize,
    cache_key: String,
    result: Result<Answer, (ProviderError, u32)>,
    validators: &[Validator],
    input: &Input,
) -> SampleRow {
    match result {
        Ok(a) => {
            let (cells, reasons) = check_output(validators, input, &a.text);
            SampleRow {
                input_idx,
                repetition,
                cache_key,
                output: Some(a.text),
                error: None,
                latency_ms: a.latency_ms,
                input_tokens: a.input_tokens,
                output_tokens: a.output_tokens,
                call_attempts: a.attempts,
                cells,
                reasons,
            }
        }
        Err((e, attempts)) => SampleRow {
            input_idx,
            repetition,
            cache_key,
            output: None,
            error: Some(e.to_string()),
            latency_ms: None,
            input_tokens: None,
            output_tokens: None,
            call_attempts: attempts,
            cells: vec![Cell::Error; validators.len()],
            reasons: Vec::new(),
        },
    }
}

struct Shared {
    provider: Arc<dyn Provider>,
    validators: Arc<Vec<Validator>>,
    inputs: Arc<Vec<Input>>,
    messages: Vec<Vec<Message>>,
    /// Makes every call of the run: the runner's and the guard's.
    caller: Arc<Caller>,
    /// Verifiers and/or a retry policy: samples go through the guard.
    guard: Option<Arc<Guard>>,
    /// A retry policy is set: every attempt is stored.
    store_attempts: bool,
}

/// A guarded sample: the first attempt is the sample (the single-attempt
/// tensor); with a retry policy every attempt is also an [`AttemptRow`].
async fn guarded(
    shared: &Shared,
    guard: &Guard,
    i: usize,
    j: usize,
    key: String,
    known: Option<Answer>,
) -> (SampleRow, Vec<AttemptRow>) {
    let outcome = guard
        .run_from(
            &shared.messages[i],
            &shared.inputs[i],
            j as u32,
            known.map(Ok),
        )
        .await;
    let published = matches!(outcome, GuardOutcome::Published { .. });
    let attempts = outcome.attempts();
    let Some(first) = attempts.first() else {
        // Unreachable by Guard::run_from's contract (the first attempt is
        // always made); kept total so no panic can reach a user.
        let mut row = row_from(
            i,
            j,
            key,
            Err((
                ProviderError::Command("the guard made no attempt".into()),
                0,
            )),
            &shared.validators,
            &shared.inputs[i],
        );
        row.cells = vec![Cell::Error; guard.checks().len()];
        return (row, Vec::new());
    };
    let row = SampleRow {
        input_idx: i,
        repetition: j,
        cache_key: key,
        output: first.output.clone(),
        error: first.error.clone(),
        latency_ms: first.latency_ms,
        input_tokens: first.input_tokens,
        output_tokens: first.output_tokens,
        call_attempts: first.call_attempts,
        cells: first.cells.clone(),
        reasons: first.reasons.clone(),
    };
    let rows = if shared.store_attempts {
        let last = attempts.len() as u32;
        attempts
            .iter()
            .map(|a| a.row(i, j, published && a.number == last, true))
            .collect()
    } else {
        Vec::new()
    };
    (row, rows)
}

/// The first attempt of sample `(i, j)`: one call with the engine's rate
/// limits, timeout and retries (see [`Caller::call`]).
async fn call(shared: &Shared, i: usize, j: usize) -> Result<Answer, (ProviderError, u32)> {
    let request = Request {
        messages: shared.messages[i].clone(),
        repetition: j as u32,
        attempt: 0,
        input: shared.inputs[i].clone(),
    };
    shared.caller.call(shared.provider.as_ref(), &request).await
}

/// Attempts served from the guard's output cache.
fn attempts_cached_of(shared: &Shared) -> u64 {
    shared
        .caller
        .outputs_cached
        .load(std::sync::atomic::Ordering::Relaxed)
}

/// Calls made, to the system and to judges (one [`Caller`] makes them all).
fn calls_of(shared: &Shared) -> u64 {
    shared
        .caller
        .calls
        .load(std::sync::atomic::Ordering::Relaxed)
}

/// Run the reliability test described by `config` against `provider`,
/// storing into `store`. `on_progress` is called after every sample.
pub async fn run(
    config: &Config,
    provider: Arc<dyn Provider>,
    store: &mut Store,
    settings: RunSettings,
    mut on_progress: impl FnMut(&Progress),
) -> Result<RunOutcome, RunError> {
    let started = Instant::now();
    let exp = &config.file.experiment;
    let (n, m, k) = (
        config.inputs.len(),
        exp.outputs_per_input,
        config.validators.len() + config.verifiers.len(),
    );
    let template = PromptTemplate::new(
        config.file.prompt.system.as_deref(),
        &config.file.prompt.user,
    )
    .map_err(|e| RunError::Config(format!("{}: [prompt] {e}", config.path.display())))?;
    let messages = config
        .inputs
        .iter()
        .map(|input| template.render(input))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| RunError::Config(format!("{}: [prompt] {e}", config.path.display())))?;
    let fingerprint = provider.fingerprint();
    let keys: Vec<Vec<String>> = messages
        .iter()
        .map(|msgs| (0..m).map(|j| cache_key(&fingerprint, msgs, j)).collect())
        .collect();
    let mut tensor = ReliabilityTensor::new(n, m, k)
        .map_err(|e| RunError::Config(format!("{}: {e}", config.path.display())))?;
    let checks = config.checks();

    // The run: resumed or new.
    let resumed_id = if settings.resume {
        store.resumable_run(&config.hash)?
    } else {
        None
    };
    let config_text = std::fs::read_to_string(&config.path).unwrap_or_default();
    let run_id = match resumed_id {
        Some(id) => id,
        None => store.create_run(&NewRun {
            name: &config.name,
            config_hash: &config.hash,
            config: &config_text,
            system: &fingerprint,
            inputs: &config.inputs,
            outputs_per_input: m,
            checks: &checks,
            settings: crate::stored::with_retry(
                crate::stored::StoredSettings::of(exp).to_json(),
                config.file.retry.as_ref(),
                config.validators.len(),
                config.verifiers.len(),
            ),
            parent_run: None,
        })?,
    };

    let mut progress = Progress {
        done: 0,
        total: (n * m) as u64,
        model_calls: 0,
        cached: 0,
        attempts_cached: 0,
        errors: 0,
        passes: vec![(0, 0); k],
    };
    let record = |tensor: &mut ReliabilityTensor, progress: &mut Progress, row: &SampleRow| {
        for (kk, &cell) in row.cells.iter().enumerate().take(k) {
            let _ = tensor.set(row.input_idx, row.repetition, kk, cell);
            if cell != Cell::Missing {
                progress.passes[kk].1 += 1;
                progress.passes[kk].0 += (cell == Cell::Pass) as u64;
            }
        }
        progress.errors += row.error.is_some() as u64;
        progress.done += 1;
    };

    // What the resumed run already holds.
    let mut done = vec![false; n * m];
    let mut resumed = 0;
    if resumed_id.is_some() {
        for row in store.samples(run_id)? {
            if row.input_idx < n && row.repetition < m && row.cells.len() == k {
                done[row.input_idx * m + row.repetition] = true;
                record(&mut tensor, &mut progress, &row);
                resumed += 1;
            }
        }
    }

    let writer = store.writer(run_id)?;
    let validators = Arc::new(config.validators.clone());
    let inputs = Arc::new(config.inputs.clone());

    // Identical requests already stored: served without a call.
    let pending_keys: Vec<String> = (0..n * m)
        .filter(|&c| !done[c])
        .map(|c| keys[c / m][c % m].clone())
        .collect();
    let cache = store.cached_outputs(&pending_keys)?;
    let limiter = Arc::new(RateLimiter::new(
        exp.requests_per_minute,
        exp.tokens_per_minute,
    ));
    let caller = Arc::new(Caller::new(
        limiter,
        Duration::from_secs_f64(exp.timeout_s),
        exp.call_attempts,
    ));
    let guard = if !config.verifiers.is_empty() || config.file.retry.is_some() {
        let policy = config
            .file
            .retry
            .clone()
            .unwrap_or_else(RetryPolicy::single);
        // Judgements already in the store (this request's output judged by
        // the same judge and instructions) are not asked again.
        let judging = Judging {
            cache: Some(Arc::new(store.judgements(Some(writer.judgement_sink()))?)),
            calls: true,
        };
        let guard = Guard::new(
            provider.clone(),
            Arc::new(config.guard_checks()),
            policy,
            caller.clone(),
        )
        .map_err(|e| RunError::Config(format!("{}: [retry] {e}", config.path.display())))?
        .with_judging(judging);
        // With retries, later attempts already answered for an identical
        // request (feedback included) are not asked again either.
        let guard = if config.file.retry.is_some() {
            guard.with_outputs(Arc::new(store.outputs()?))
        } else {
            guard
        };
        Some(Arc::new(guard))
    } else {
        None
    };
    let mut queue = VecDeque::new();
    for c in (0..n * m).filter(|&c| !done[c]) {
        let (i, j) = (c / m, c % m);
        match cache.get(&keys[i][j]) {
            Some(hit) if guard.is_some() => {
                // Judges (unless their judgements are cached too) and
                // retries still need calls: the workers do them.
                progress.cached += 1;
                queue.push_back((
                    i,
                    j,
                    Some(Answer {
                        text: hit.output.clone(),
                        latency_ms: hit.latency_ms,
                        input_tokens: hit.input_tokens,
                        output_tokens: hit.output_tokens,
                        attempts: 0,
                    }),
                ));
            }
            Some(hit) => {
                let answer = Answer {
                    text: hit.output.clone(),
                    latency_ms: hit.latency_ms,
                    input_tokens: hit.input_tokens,
                    output_tokens: hit.output_tokens,
                    attempts: 0,
                };
                let row = row_from(
                    i,
                    j,
                    keys[i][j].clone(),
                    Ok(answer),
                    &validators,
                    &inputs[i],
                );
                record(&mut tensor, &mut progress, &row);
                progress.cached += 1;
                writer.send(row)?;
            }
            None => queue.push_back((i, j, None)),
        }
    }
    on_progress(&progress);

    let shared = Arc::new(Shared {
        provider,
        validators: validators.clone(),
        inputs: inputs.clone(),
        messages,
        caller,
        guard: guard.clone(),
        store_attempts: config.file.retry.is_some(),
    });
    let queue = Arc::new(Mutex::new(queue));
    let (tx, mut rx) = mpsc::channel::<(SampleRow, Vec<AttemptRow>)>(1024);
    let workers = exp
        .concurrency
        .min(queue.lock().map(|q| q.len()).unwrap_or(0));
    let mut cancel = settings.cancel;
    let mut handles = Vec::with_capacity(workers);
    for _ in 0..workers {
        let (shared, queue, tx, keys) = (shared.clone(), queue.clone(), tx.clone(), keys.clone());
        let mut cancel = cancel.clone();
        handles.push(tokio::spawn(async move {
            loop {
                if *cancel.borrow() {
                    return;
                }
                let Some((i, j, known)) = queue.lock().ok().and_then(|mut q| q.pop_front()) else {
                    return;
                };
                let done = if let Some(guard) = shared.guard.clone() {
                    tokio::select! {
                        r = guarded(&shared, &guard, i, j, keys[i][j].clone(), known) => r,
                        _ = cancel.wait_for(|c| *c) => return,
                    }
                } else {
                    let result = tokio::select! {
                        r = call(&shared, i, j) => r,
                        _ = cancel.wait_for(|c| *c) => return,
                    };
                    let row = row_from(
                        i,
                        j,
                        keys[i][j].clone(),
                        result,
                        &shared.validators,
                        &shared.inputs[i],
                    );
                    (row, Vec::new())
                };
                if tx.send(done).await.is_err() {
                    return;
                }
            }
        }));
    }
    drop(tx);

    let deadline = exp
        .deadline_s
        .map(|s| tokio::time::Instant::now() + Duration::from_secs_f64(s));
    let mut interrupted = false;
    loop {
        let next = tokio::select! {
            row = rx.recv() => row,
            _ = cancel.wait_for(|c| *c), if !interrupted => { interrupted = true; continue; }
            _ = async { match deadline { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } }, if !interrupted => {
                interrupted = true;
                // Stop the workers the same way Ctrl-C does.
                for h in &handles { h.abort(); }
                continue;
            }
        };
        let Some((row, attempts)) = next else { break };
        record(&mut tensor, &mut progress, &row);
        progress.model_calls = calls_of(&shared);
        progress.attempts_cached = attempts_cached_of(&shared);
        for a in attempts {
            writer.send_attempt(a)?;
        }
        writer.send(row)?;
        on_progress(&progress);
    }
    for h in handles {
        let _ = h.await;
    }
    writer.finish()?;
    let complete = progress.done == progress.total;
    let status = if complete {
        RunStatus::Complete
    } else {
        RunStatus::Interrupted
    };
    let model_calls = calls_of(&shared);
    let (judge_calls, judge_cached) = shared.guard.as_ref().map_or((0, 0), |g| {
        use std::sync::atomic::Ordering::Relaxed;
        (
            g.caller().judge_calls.load(Relaxed),
            g.caller().judge_cached.load(Relaxed),
        )
    });
    let duration = started.elapsed();
    store.finish_run(
        run_id,
        status,
        model_calls,
        progress.cached,
        duration.as_secs_f64(),
    )?;
    let summary = Summary::build(
        &tensor,
        &checks,
        exp.strategy,
        exp.aggregate,
        &exp.analysis(),
    );
    Ok(RunOutcome {
        run_id,
        tensor,
        summary,
        status,
        model_calls,
        cached: progress.cached,
        attempts_cached: attempts_cached_of(&shared),
        resumed,
        errors: progress.errors,
        judge_calls,
        judge_cached,
        duration,
    })
}
