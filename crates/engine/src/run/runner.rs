//! The runner: sample the system N×M times (§2.2.3), check every output
//! with the K checks (§3.2), fill the tensor (§3.6), and record everything
//! as it completes.
//!
//! Every sample goes through the [`Guard`]: without a retry policy it is a
//! single attempt ([`RetryPolicy::single`]); with one, the guarded system
//! is measured (§4.2) and every attempt is recorded. Calls run
//! concurrently (a fixed pool of workers, bounded by `concurrency`), behind
//! client-side rate limits, with per-call timeouts and retries with backoff
//! on rate limits, 5xx and timeouts (one [`crate::provider::call::Caller`] makes
//! them all). A call that still fails becomes Error cells — never a failure
//! in disguise, never an abort.
//!
//! Into the store ([`Sink::Store`]), outputs already stored (this run's,
//! when resuming, or any run's identical request, see
//! [`crate::checks::cache_key`]) are not requested again. In memory
//! ([`Sink::Memory`]) every sample is a call.

use crate::checks::cache_key::sample_key;
use crate::checks::calibration::LabelAnswers;
use crate::checks::check::{Checks, Judging, StopFlag};
use crate::config::template::{PromptTemplate, TemplateError};
use crate::provider::call::{Answer, Caller};
use crate::provider::types::Message;
use crate::retry::guard::{Guard, GuardOutcome};
use crate::retry::policy::RetryPolicy;
use crate::run::claims::ClaimFeed;
use crate::run::experiment::Experiment;
use crate::run::outcome::{Halt, Progress, RunOutcome};
use crate::run::recording::Recording;
use crate::run::rounds::{Next, Rounds};
use crate::store::settings::StoredSequential;
use crate::store::{
    AttemptRow, NewRun, RunStatus, RunTotals, SampleRow, Store, StoreError, Writer,
};
use probity_core::causes::Causes;
use probity_core::validator::PreparedInput;
use probity_core::{Cell, ReliabilityTensor, Summary};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;
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
    /// `--resume` with no unfinished run of this experiment in the store.
    #[error("nothing to resume: the store holds no unfinished run of this configuration (run without --resume to start one)")]
    NothingToResume,
}

/// Where a run's samples go.
pub enum Sink<'a> {
    /// The run store: the run gets an id, survives the process, can be
    /// resumed, reported, compared; identical stored requests are reused.
    Store(&'a mut Store),
    /// Memory only: the outcome carries every sample; nothing is reused.
    Memory,
}

/// A callback told about progress after every sample.
pub type OnProgress<'a> = Box<dyn FnMut(&Progress) + 'a>;

/// How a run is steered while it goes on.
#[derive(Default)]
pub struct Control<'a> {
    /// Continue the latest unfinished run with the same configuration
    /// instead of starting a new one (store only).
    pub resume: bool,
    /// Set to `true` to stop: no new calls start, calls in flight are
    /// abandoned (not stored), and the run is marked interrupted.
    pub cancel: Option<watch::Receiver<bool>>,
    /// Called after every sample.
    pub on_progress: Option<OnProgress<'a>>,
    /// Serve the first answer of a sample from this stored run's output
    /// for an identical request, instead of calling (store only). A new
    /// run otherwise calls the system for every sample.
    pub reuse: Option<i64>,
    /// Share the run with other processes through the store's claims
    /// (`probity run --shared`): this one takes inputs a batch at a time,
    /// and `probity work` processes on any machine may join (store only;
    /// not sequential, not with `reuse`).
    pub shared: bool,
    /// Join this stored run as one more of its workers (`probity work`):
    /// no new run, no lease taken; implies `shared`.
    pub join: Option<i64>,
    /// Whether calibrated verifiers' judges' verdicts the store keeps for
    /// the same questions are read, or every labelled pair asked again
    /// (`--fresh-labels`).
    pub label_answers: LabelAnswers,
}

/// Calls whose failure with one cause, before any success, stops a run:
/// the system cannot be measured (a wrong key, a dead server).
pub const FIRST_CALLS: u64 = 10;

/// Outputs on every one of which a check must err, from the run's first,
/// for the run to stop as soon as it has seen them: the check is broken
/// (the same number as [`FIRST_CALLS`], the same idea for checks).
pub const FIRST_OUTPUTS: u64 = FIRST_CALLS;

/// When errors stop a run with no verdict: failed calls — more than
/// `share` of its samples, or the first calls of this session all failing
/// with one cause — or checks that erred on every one of the run's first
/// [`FIRST_OUTPUTS`] outputs ([`Causes::broken`], the definition the
/// finished run's report uses too).
struct ErrorBudget {
    share: f64,
    samples: u64,
    first_calls: u64,
    /// The checks' names, in column order.
    checks: Vec<String>,
}

impl ErrorBudget {
    fn exceeded(
        &self,
        session: u64,
        session_errors: u64,
        errors: u64,
        causes: &Causes,
    ) -> Option<Halt> {
        if self.first_calls > 0
            && session == self.first_calls
            && session_errors == session
            && causes.system.causes.len() == 1
        {
            return Some(Halt::FirstCallsFailed {
                calls: session,
                cause: causes.system.causes[0].message.clone(),
            });
        }
        if errors as f64 > self.share * self.samples as f64 {
            return Some(Halt::ErrorBudget {
                errors,
                samples: self.samples,
                share: self.share,
                cause: causes
                    .system
                    .top()
                    .map(|c| c.message.clone())
                    .unwrap_or_default(),
            });
        }
        self.broken_checks(causes)
    }

    /// The checks that erred on every output of the run so far, once it
    /// has checked at least [`FIRST_OUTPUTS`].
    fn broken_checks(&self, causes: &Causes) -> Option<Halt> {
        if causes.outputs < FIRST_OUTPUTS {
            return None;
        }
        let checks: Vec<(String, String)> = causes
            .broken()
            .into_iter()
            .map(|(k, cause)| {
                let name = self
                    .checks
                    .get(k)
                    .cloned()
                    .unwrap_or_else(|| format!("#{k}"));
                (name, cause.message.clone())
            })
            .collect();
        (!checks.is_empty()).then_some(Halt::BrokenChecks {
            outputs: causes.outputs,
            checks,
        })
    }
}

/// Run `experiment` into `sink`.
pub async fn run(experiment: &Experiment, sink: Sink<'_>) -> Result<RunOutcome, RunError> {
    run_with(experiment, sink, Control::default()).await
}

/// Where rows go: the store's writer, or memory.
enum Recorder {
    Store(Writer),
    Memory(Vec<SampleRow>),
}

impl Recorder {
    fn sample(&mut self, row: SampleRow) -> Result<(), StoreError> {
        match self {
            Recorder::Store(w) => w.send(row),
            Recorder::Memory(rows) => {
                rows.push(row);
                Ok(())
            }
        }
    }

    fn attempt(&mut self, row: AttemptRow) -> Result<(), StoreError> {
        match self {
            Recorder::Store(w) => w.send_attempt(row),
            // The guarded measurement is read from the store's attempts.
            Recorder::Memory(_) => Ok(()),
        }
    }

    fn totals(&mut self, totals: RunTotals) -> Result<(), StoreError> {
        match self {
            Recorder::Store(w) => w.send_totals(totals),
            Recorder::Memory(_) => Ok(()),
        }
    }

    /// Flush; the samples of a run kept in memory, in (input, repetition)
    /// order.
    fn finish(self) -> Result<Vec<SampleRow>, StoreError> {
        match self {
            Recorder::Store(w) => w.finish().map(|_| Vec::new()),
            Recorder::Memory(mut rows) => {
                rows.sort_by_key(|r| (r.input_idx, r.repetition));
                Ok(rows)
            }
        }
    }
}

/// An input being sampled: its request and its expression form, made once
/// for all of its outputs in flight.
struct InFlight {
    messages: Vec<Message>,
    prepared: PreparedInput<'static>,
}

/// What every worker shares.
struct Shared {
    guard: Guard,
    /// The N inputs and how each is put to the system: an input's request
    /// is rendered when one of its outputs is sampled, not all up front (a
    /// million requests held through a run were ~100 MB).
    inputs: Arc<[probity_core::Input]>,
    prompt: Arc<PromptTemplate>,
    /// The inputs whose outputs are being sampled (a handful: workers take
    /// cells in input order), shared by those outputs and dropped with the
    /// last of them.
    in_flight: std::sync::Mutex<HashMap<usize, std::sync::Weak<InFlight>>>,
    /// The system's fingerprint: with a request and `j`, a sample's cache
    /// key (made when the sample is, so memory does not grow with N × M).
    fingerprint: String,
    /// A retry policy is set: every attempt is recorded.
    record_attempts: bool,
    /// The store's writer, when samples are stored: a worker starts no
    /// call while it is stuck in a commit (see [`Shared::store_ready`]).
    store_health: Option<crate::store::WriterHealth>,
}

impl Shared {
    /// Resolves when a call may start: at once, unless the store's writer
    /// has been stuck in a commit for longer than
    /// [`crate::store::writer::STALL`] (the store slow, or reconnecting).
    /// Then it waits, so a store that is down costs a few seconds of calls
    /// rather than every call made until the writer gives up.
    async fn store_ready(&self) {
        let Some(health) = &self.store_health else {
            return;
        };
        while health.stalled() {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// Input `i` in flight: the one its other outputs use, or made now.
    fn in_flight(&self, i: usize) -> Result<Arc<InFlight>, TemplateError> {
        let mut map = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = map.get(&i).and_then(std::sync::Weak::upgrade) {
            return Ok(f);
        }
        let f = Arc::new(InFlight {
            messages: self.prompt.render(&self.inputs[i])?,
            prepared: PreparedInput::shared(&self.inputs, i),
        });
        if map.len() >= 64 {
            map.retain(|_, w| w.strong_count() > 0);
        }
        map.insert(i, Arc::downgrade(&f));
        Ok(f)
    }

    /// Sample `(i, j)` through the guard; `known`: its first answer, served
    /// from the store.
    async fn sample(
        &self,
        i: usize,
        j: usize,
        known: Option<Answer>,
    ) -> (SampleRow, Vec<AttemptRow>) {
        let k = self.guard.checks().len();
        let input = match self.in_flight(i) {
            Ok(f) => f,
            // Every request was rendered before the run started: only a
            // template that renders differently the second time gets here.
            Err(e) => {
                let row = error_row(i, j, String::new(), format!("[prompt] {e}"), k);
                return (row, Vec::new());
            }
        };
        let outcome = self
            .guard
            .run_from(&input.messages, &input.prepared, j as u32, known.map(Ok))
            .await;
        let key = sample_key(&self.fingerprint, &input.messages, j);
        let published = matches!(outcome, GuardOutcome::Published { .. });
        let attempts = outcome.attempts();
        let Some(first) = attempts.first() else {
            // Unreachable by Guard::run_from's contract (the first attempt
            // is always made); kept total so no panic can reach a user.
            let row = error_row(i, j, key, "the guard made no attempt".into(), k);
            return (row, Vec::new());
        };
        let rows = if self.record_attempts {
            let last = attempts.len() as u32;
            attempts
                .iter()
                .map(|a| a.row(i, j, published && a.number == last, true))
                .collect()
        } else {
            Vec::new()
        };
        (first.sample_row(i, j, key), rows)
    }
}

/// This session's counts: the caller's, and each check's judge calls.
fn session_totals(caller: &Caller, shared: &Shared) -> RunTotals {
    RunTotals {
        judge_calls_by_check: shared.guard.checks().judge_calls(),
        ..caller.totals()
    }
}

/// Count one sample: its cells into the tensor and the progress, its
/// errors into their causes.
fn record(
    tensor: &mut ReliabilityTensor,
    progress: &mut Progress,
    causes: &mut Causes,
    row: &SampleRow,
) {
    count_cells(tensor, progress, row.input_idx, row.repetition, &row.cells);
    row.note_causes(causes);
    progress.errors += row.error.is_some() as u64;
}

/// Count the cells of sample `(i, j)` into the tensor and the progress.
fn count_cells(
    tensor: &mut ReliabilityTensor,
    progress: &mut Progress,
    i: usize,
    j: usize,
    cells: &[Cell],
) {
    for (kk, &cell) in cells.iter().enumerate().take(progress.passes.len()) {
        let _ = tensor.set(i, j, kk, cell);
        if cell != Cell::Missing {
            progress.passes[kk].1 += 1;
            progress.passes[kk].0 += (cell == Cell::Pass) as u64;
        }
    }
    progress.done += 1;
}

/// The identity of an experiment built in code (one loaded from a file has
/// its configuration's hash): SHA-256 over what it asks — the system's
/// fingerprint, every rendered request, M, the checks' settings, the retry
/// policy and the analysis settings.
///
/// Every request is rendered here, one at a time (a template error stops
/// the run before it starts, as for one loaded from a file: see
/// [`render_all`]); the hash is of the JSON array of all of them.
fn content_hash(experiment: &Experiment, fingerprint: &str) -> Result<String, TemplateError> {
    let mut h = Sha256::new();
    h.update(fingerprint.as_bytes());
    h.update(b"[");
    for (i, input) in experiment.inputs.iter().enumerate() {
        if i > 0 {
            h.update(b",");
        }
        let messages = experiment.prompt.render(input)?;
        h.update(serde_json::to_vec(&messages).unwrap_or_default());
    }
    h.update(b"]");
    h.update((experiment.outputs_per_input as u64).to_le_bytes());
    h.update(serde_json::to_vec(&experiment.checks.infos()).unwrap_or_default());
    h.update(serde_json::to_vec(&experiment.stored_settings()).unwrap_or_default());
    Ok(hex::encode(h.finalize()))
}

/// Render every request once, keeping none: a template error stops the
/// run before it starts.
fn render_all(experiment: &Experiment) -> Result<(), TemplateError> {
    for input in experiment.inputs.iter() {
        experiment.prompt.render(input)?;
    }
    Ok(())
}

/// Run `experiment` into `sink`, steered by `control`.
pub async fn run_with(
    experiment: &Experiment,
    mut sink: Sink<'_>,
    control: Control<'_>,
) -> Result<RunOutcome, RunError> {
    let started = Instant::now();
    let at = |what: String| match &experiment.source {
        Some(s) => format!("{}: {what}", s.path.display()),
        None => what,
    };
    if let Some(problem) = experiment.problem() {
        return Err(RunError::Config(at(problem)));
    }
    let (n, m, k) = (
        experiment.inputs.len(),
        experiment.outputs_per_input,
        experiment.checks.len(),
    );
    let is_shared = control.shared || control.join.is_some();
    if is_shared {
        let refused = if experiment.sequential.is_some() {
            Some("a sequential run is worked by one process (its rounds are decided as they end)")
        } else if control.reuse.is_some() {
            Some("--reuse serves stored outputs to one process; run it without sharing")
        } else if matches!(sink, Sink::Memory) {
            Some("a run kept in memory cannot be shared")
        } else {
            None
        };
        if let Some(why) = refused {
            return Err(RunError::Config(at(format!("shared run: {why}"))));
        }
    }
    let fingerprint = experiment.system.fingerprint();
    let prompt_error = |e: TemplateError| RunError::Config(at(format!("[prompt] {e}")));
    let hash = match &experiment.source {
        Some(s) => {
            render_all(experiment).map_err(prompt_error)?;
            s.hash.clone()
        }
        None => content_hash(experiment, &fingerprint).map_err(prompt_error)?,
    };
    let mut tensor =
        ReliabilityTensor::new(n, m, k).map_err(|e| RunError::Config(at(e.to_string())))?;
    let infos = experiment.checks.infos();
    let mut settings = experiment.stored_settings();
    let policy = experiment.retry.clone().unwrap_or_else(RetryPolicy::single);
    let caller: Arc<Caller> = experiment.calls.caller();
    // Calibrated verifiers: their judges answer the labelled sets first
    // (stored with the run, so its reports correct the rate as this one);
    // verdicts the store keeps for the same questions are not asked again.
    let verdicts: Option<&mut dyn crate::store::LabelVerdictCache> = match &mut sink {
        Sink::Store(store) => Some(&mut **store),
        Sink::Memory => None,
    };
    settings.calibration = crate::checks::calibration::measure_all_cached(
        &experiment.checks,
        &caller,
        verdicts,
        control.label_answers,
    )
    .await;
    // This run's own stop flag: set when it stops, so outputs not yet
    // checked are not waited for.
    let checks = Checks {
        stop: StopFlag::default(),
        ..experiment.checks.clone()
    };
    let stop_checks = checks.stop.clone();
    let mut guard = Guard::new(
        experiment.system.clone(),
        Arc::new(checks),
        policy,
        caller.clone(),
    )
    .map_err(|e| RunError::Config(at(format!("[retry] {e}"))))?;
    if experiment.retry.is_some() {
        // Recorded attempts carry their request's key, for `--reuse`.
        guard = guard.keyed();
    }

    let mut progress = Progress {
        done: 0,
        total: (n * m) as u64,
        model_calls: 0,
        cached: 0,
        attempts_cached: 0,
        errors: 0,
        passes: vec![(0, 0); k],
    };
    let mut causes = Causes::new(k);
    // A sequential run's order: a new run's seed is drawn (or set), a
    // resumed run's is read from its settings.
    let new_sequential = experiment.sequential.map(|s| StoredSequential {
        seed: s.seed.unwrap_or_else(rand::random),
    });
    let mut resumed_sequential = None;
    // The run: resumed or new, in the store; or in memory.
    let mut done = vec![false; n * m];
    let mut resumed = 0;
    let mut base = RunTotals::default();
    let mut reused_from = None;
    // The samples to take, in order: `(i, j, its first answer when served
    // from the store)` (boxed: a million entries stay small).
    let mut queue: VecDeque<(usize, usize, Option<Box<Answer>>)> = VecDeque::new();
    let (mut recorder, guard, store) = match sink {
        Sink::Memory => (
            Recorder::Memory(Vec::with_capacity(n * m)),
            guard.with_judging(Judging::default()),
            None,
        ),
        Sink::Store(store) => {
            let resumed_id = if let Some(id) = control.join {
                let run = store.run(id)?;
                if run.config_hash != hash {
                    return Err(RunError::Config(at(format!(
                        "run {id} ({}) was made with another configuration: a worker must use the very file it was made with",
                        run.name
                    ))));
                }
                if run.status == RunStatus::Complete {
                    return Err(RunError::Config(at(format!(
                        "run {id} is complete: nothing to work on"
                    ))));
                }
                // The hash leaves out the command line's overrides: the
                // shape must match too.
                if (run.inputs, run.outputs_per_input) != (n, m) {
                    return Err(RunError::Config(at(format!(
                        "run {id} takes {} inputs × {} outputs; this worker would take {n} × {m} (give the same --outputs the run was made with)",
                        run.inputs, run.outputs_per_input
                    ))));
                }
                // A run started without --shared hands out no inputs: a
                // worker would sample what its own process samples too.
                if store.open_inputs(id)?.0 == 0 {
                    return Err(RunError::Config(at(format!(
                        "run {id} has no inputs to claim: it was not started with `probity run --shared` (or every input is done); continue it with `probity run --resume` instead"
                    ))));
                }
                Some(id)
            } else if control.resume {
                let id = store.resumable_run(&hash)?;
                if id.is_none() {
                    return Err(RunError::NothingToResume);
                }
                id
            } else {
                None
            };
            let recording = match resumed_id {
                Some(id) => {
                    let previous = store.run(id)?;
                    // The config hash does not cover `--outputs`: a run is
                    // continued at the shape it was started with, never
                    // silently at another.
                    if (
                        previous.inputs,
                        previous.outputs_per_input,
                        previous.checks.len(),
                    ) != (n, m, k)
                    {
                        return Err(RunError::Config(at(format!(
                            "--resume: run {id} was started with {} inputs × {} outputs × {} checks; this command asks for {n} × {m} × {k}: resume it with `--outputs {}` (or without --outputs), or start a new run without --resume",
                            previous.inputs,
                            previous.outputs_per_input,
                            previous.checks.len(),
                            previous.outputs_per_input,
                        ))));
                    }
                    // One process at a time: refused, naming the holder,
                    // while another live process runs it (a worker of a
                    // shared run takes no lease: its claims are its own).
                    if control.join.is_none() {
                        store.take_lease(id)?;
                    }
                    resumed_sequential = Some(previous.settings.sequential);
                    base = previous.totals();
                    reused_from = previous.reused_from;
                    // What the resumed run already holds: its cells and the
                    // causes of its errors (no output is read).
                    store.each_sample_cells(id, |i, j, cells| {
                        if i < n && j < m && cells.len() == k {
                            done[i * m + j] = true;
                            count_cells(&mut tensor, &mut progress, i, j, cells);
                            resumed += 1;
                        }
                    })?;
                    causes = store.causes(id, k)?;
                    progress.errors = causes.system.total;
                    Recording::reopen(store, id)?
                }
                None => {
                    reused_from = control.reuse;
                    settings.sequential = new_sequential;
                    let config_text = experiment.source.as_ref().map_or("", |s| s.text.as_str());
                    Recording::create(
                        store,
                        &NewRun {
                            name: &experiment.name,
                            config_hash: &hash,
                            config: config_text,
                            system: &fingerprint,
                            inputs: &experiment.inputs,
                            outputs_per_input: m,
                            checks: &infos,
                            settings: &settings,
                            parent_run: None,
                            reused_from,
                            outputs_from: None,
                            variant: experiment.variant.as_ref(),
                        },
                    )?
                }
            };
            let mut guard = guard.with_judging(recording.judging(true, reused_from.is_some()));
            if let Some(from) = reused_from {
                // Outputs of run `from` for identical requests: their first
                // answer is served without a call (judges and retries may
                // still call).
                let pending: Vec<usize> = (0..n * m).filter(|&c| !done[c]).collect();
                // Each input's request rendered once for its pending cells.
                let mut last: Option<(usize, Vec<Message>)> = None;
                let mut pending_keys: Vec<String> = Vec::with_capacity(pending.len());
                for &c in &pending {
                    let i = c / m;
                    if last.as_ref().map(|l| l.0) != Some(i) {
                        let messages = experiment
                            .prompt
                            .render(&experiment.inputs[i])
                            .map_err(prompt_error)?;
                        last = Some((i, messages));
                    }
                    let messages = last.as_ref().map_or(&[][..], |l| &l.1[..]);
                    pending_keys.push(sample_key(&fingerprint, messages, c % m));
                }
                let mut cache = store.cached_outputs(from, &pending_keys)?;
                for (c, k) in pending.into_iter().zip(pending_keys) {
                    let (i, j) = (c / m, c % m);
                    if let Some(hit) = cache.remove(&k) {
                        progress.cached += 1;
                        queue.push_back((i, j, Some(Box::new(Answer::from(hit)))));
                        done[c] = true;
                    }
                }
                // With retries, later attempts answered in run `from` for an
                // identical request (feedback included) are not asked again.
                if experiment.retry.is_some() {
                    guard = guard.with_outputs(Arc::new(store.outputs(from)?));
                }
            }
            let run_id = recording.run_id;
            (
                Recorder::Store(recording.writer),
                guard,
                Some((store, run_id)),
            )
        }
    };
    let sequential = match resumed_sequential {
        None => new_sequential,
        Some(stored) if stored.is_some() == experiment.sequential.is_some() => stored,
        Some(stored) => {
            return Err(RunError::Config(at(format!(
                "--resume: the unfinished run was made {} sequential testing; resume it {} it (`--sequential`, `[experiment] sequential`), or start a new run",
                if stored.is_some() { "with" } else { "without" },
                if stored.is_some() { "with" } else { "without" },
            ))))
        }
    };
    let mut rounds = match sequential {
        Some(s) => Some(
            Rounds::new(
                &infos,
                experiment.analysis.options.confidence,
                experiment.analysis.options.errors,
                (n, m),
                experiment.concurrency,
                s.seed,
            )
            .map_err(|e| RunError::Config(at(format!("sequential: {e}"))))?,
        ),
        None => None,
    };
    let pending = queue.len() + done.iter().filter(|d| !**d).count();
    // A sequential run asks for the cells of one round at a time, outputs
    // served from a reused run included.
    let mut known: HashMap<usize, Box<Answer>> = HashMap::new();
    if let Some(r) = rounds.as_mut() {
        for (i, j, answer) in queue.drain(..) {
            done[i * m + j] = false;
            if let Some(a) = answer {
                known.insert(i * m + j, a);
            }
        }
        // Counted when served, not when found.
        progress.cached -= known.len() as u64;
        match r
            .advance(&tensor, &done)
            .map_err(|e| RunError::Config(at(format!("sequential: {e}"))))?
        {
            Next::Cells(cells) => queue.extend(cells.into_iter().map(|c| {
                let answer = known.remove(&c);
                progress.cached += answer.is_some() as u64;
                (c / m, c % m, answer)
            })),
            Next::Stop(_) => {}
        }
    } else if !is_shared {
        queue.extend(
            (0..n * m)
                .filter(|&c| !done[c])
                .map(|c| (c / m, c % m, None)),
        );
    }
    let mut on_progress = control.on_progress;
    let mut report = |p: &Progress| {
        if let Some(f) = on_progress.as_mut() {
            f(p)
        }
    };
    report(&progress);

    let shared = Arc::new(Shared {
        guard,
        inputs: experiment.inputs.clone(),
        prompt: experiment.prompt.clone(),
        in_flight: Default::default(),
        fingerprint,
        record_attempts: experiment.retry.is_some(),
        store_health: match &recorder {
            Recorder::Store(writer) => Some(writer.health()),
            Recorder::Memory(_) => None,
        },
    });
    let workers = experiment.concurrency.min(match rounds {
        _ if is_shared => n * m,
        Some(_) => pending,
        None => queue.len(),
    });
    // The work: every cell at once, or (sequential) one round at a time,
    // the sender kept until the run stops.
    let (work, work_rx) = mpsc::unbounded_channel::<Job>();
    for cell in queue {
        let _ = work.send(cell);
    }
    let keep = is_shared || rounds.as_ref().is_some_and(|r| r.stop().is_none());
    let mut work = keep.then_some(work);
    // A shared run: the first claimed cells.
    let mut feed = match (&store, is_shared) {
        (Some((_, run_id)), true) => Some(ClaimFeed::new(*run_id, m, workers)),
        _ => None,
    };
    let mut waiting = false;
    if let (Some(f), Some((store, _)), Recorder::Store(writer)) = (feed.as_mut(), &store, &recorder)
    {
        waiting = refill(f, store, writer, &mut work).await? == Refill::Wait;
    }
    let queue = Arc::new(tokio::sync::Mutex::new(work_rx));
    // Samples done but not yet counted stay few (two per worker): when the
    // first calls all fail, or a check is broken, the run stops within a
    // few calls of the rule however slowly this loop is scheduled.
    let (tx, mut rx) = mpsc::channel::<(SampleRow, Vec<AttemptRow>)>(workers.max(1) * 2);
    // Without a cancel channel, one whose sender lives as long as the run
    // (a closed channel would read as "cancelled").
    let (_never, uncancelled) = watch::channel(false);
    let cancel = control.cancel.unwrap_or(uncancelled);
    // What the workers watch: set on a cancel, the deadline or a halt. A
    // worker whose sample was being checked when it was set drops the
    // sample (its call is counted, not stored: `--resume` asks again).
    // Aborting alone is not enough: a worker whose next cell is ready never
    // yields, so an abort would not reach it.
    let (stop_tx, stop) = watch::channel(false);
    let mut handles = Vec::with_capacity(workers);
    for _ in 0..workers {
        let (shared, queue, tx) = (shared.clone(), queue.clone(), tx.clone());
        let mut stop = stop.clone();
        handles.push(tokio::spawn(async move {
            loop {
                if *stop.borrow() {
                    return;
                }
                let next = {
                    let mut q = queue.lock().await;
                    tokio::select! {
                        w = q.recv() => w,
                        _ = stop.wait_for(|c| *c) => None,
                    }
                };
                let Some((i, j, known)) = next else {
                    return;
                };
                let sampled = tokio::select! {
                    r = async {
                        shared.store_ready().await;
                        shared.sample(i, j, known.map(|a| *a)).await
                    } => r,
                    _ = stop.wait_for(|c| *c) => return,
                };
                if *stop.borrow() || tx.send(sampled).await.is_err() {
                    return;
                }
            }
        }));
    }
    drop(tx);

    // A deadline too far to represent is no deadline.
    let deadline = experiment
        .deadline
        .and_then(|d| tokio::time::Instant::now().checked_add(d));
    let budget = ErrorBudget {
        share: experiment.error_budget,
        samples: (n * m) as u64,
        first_calls: FIRST_CALLS.min(pending as u64),
        checks: infos.iter().map(|c| c.name.clone()).collect(),
    };
    let (mut session_done, mut session_errors) = (0u64, 0u64);
    let mut halt = None;
    let mut cancel = cancel;
    let mut interrupted = false;
    // No new sample starts; calls in flight are abandoned.
    let stop_workers = |handles: &[tokio::task::JoinHandle<()>]| {
        let _ = stop_tx.send(true);
        // After the workers' signal: a worker that finds its checks skipped
        // finds the signal set too, and drops the sample.
        stop_checks.stop();
        for h in handles {
            h.abort();
        }
    };
    // A shared run's claims are refreshed three times per life.
    let mut refresh_every = std::time::Duration::from_secs_f64(crate::store::LEASE_REFRESH_S);
    if is_shared {
        refresh_every = refresh_every.min(crate::store::claim_ttl() / 3);
    }
    let mut lease_tick = tokio::time::interval(refresh_every);
    // A shared run with nothing claimable left but inputs other workers
    // hold: looked at again this often (theirs expire if they die).
    let mut claim_tick = tokio::time::interval(std::time::Duration::from_secs(1));
    loop {
        let next = tokio::select! {
            row = rx.recv() => row,
            _ = lease_tick.tick() => {
                if let Some((store, run_id)) = &store {
                    let _ = store.refresh_lease(*run_id);
                    if is_shared {
                        let _ = store.refresh_claims(*run_id);
                    }
                }
                continue;
            }
            _ = claim_tick.tick(), if waiting && !interrupted => {
                if let (Some(f), Some((store, _)), Recorder::Store(writer)) = (feed.as_mut(), &store, &recorder) {
                    waiting = refill(f, store, writer, &mut work).await? == Refill::Wait;
                }
                continue;
            }
            _ = cancel.wait_for(|c| *c), if !interrupted => {
                interrupted = true;
                stop_workers(&handles);
                continue;
            }
            _ = async { match deadline { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } }, if !interrupted => {
                interrupted = true;
                stop_workers(&handles);
                continue;
            }
        };
        let Some((row, attempts)) = next else { break };
        let cell = row.input_idx * m + row.repetition;
        session_done += 1;
        session_errors += row.error.is_some() as u64;
        record(&mut tensor, &mut progress, &mut causes, &row);
        progress.model_calls = Caller::count(&caller.calls);
        progress.attempts_cached = Caller::count(&caller.outputs_cached);
        for a in attempts {
            recorder.attempt(a)?;
        }
        let input = row.input_idx;
        recorder.sample(row)?;
        recorder.totals(session_totals(&caller, &shared))?;
        if let (Some(f), Some((store, _)), Recorder::Store(writer)) =
            (feed.as_mut(), &store, &recorder)
        {
            f.returned(input);
            if f.outstanding() < workers && !interrupted {
                waiting = refill(f, store, writer, &mut work).await? == Refill::Wait;
            }
        }
        report(&progress);
        if let Some(r) = rounds.as_mut() {
            if let Some(d) = done.get_mut(cell) {
                *d = true;
            }
            if r.recorded() && !interrupted {
                // The round is complete: feed it, then stop or ask for the next.
                match r
                    .advance(&tensor, &done)
                    .map_err(|e| RunError::Config(at(format!("sequential: {e}"))))?
                {
                    Next::Cells(cells) => {
                        if let Some(w) = &work {
                            for c in cells {
                                let answer = known.remove(&c);
                                progress.cached += answer.is_some() as u64;
                                let _ = w.send((c / m, c % m, answer));
                            }
                        }
                    }
                    Next::Stop(_) => work = None,
                }
            }
        }
        if halt.is_none() {
            halt = budget.exceeded(session_done, session_errors, progress.errors, &causes);
            if halt.is_some() {
                interrupted = true;
                stop_workers(&handles);
            }
        }
    }
    for h in handles {
        let _ = h.await;
    }
    drop(work);
    if let (Some(f), Some((store, _)), Recorder::Store(writer)) = (feed.as_mut(), &store, &recorder)
    {
        f.settle(store, writer).await?;
    }
    // Every call of this session, those of abandoned samples included.
    recorder.totals(session_totals(&caller, &shared))?;
    let samples = recorder.finish()?;
    let stopped = rounds.as_ref().and_then(Rounds::stop);
    let mut status = if (progress.done == progress.total || stopped.is_some()) && halt.is_none() {
        RunStatus::Complete
    } else {
        RunStatus::Interrupted
    };
    let mut totals = base + session_totals(&caller, &shared);
    // A shared run is judged on every worker's samples: read back.
    let mut others_working = false;
    if let (true, Some((store, run_id))) = (is_shared, &store) {
        if interrupted {
            store.release_claims(*run_id)?;
        }
        let (open, held) = store.open_inputs(*run_id)?;
        others_working = open > 0 && held > 0;
        status = if open == 0 && halt.is_none() {
            RunStatus::Complete
        } else {
            RunStatus::Interrupted
        };
        tensor =
            ReliabilityTensor::new(n, m, k).map_err(|e| RunError::Config(at(e.to_string())))?;
        let mut stored = Progress {
            done: 0,
            passes: vec![(0, 0); k],
            ..progress.clone()
        };
        store.each_sample_cells(*run_id, |i, j, cells| {
            if i < n && j < m && cells.len() == k {
                count_cells(&mut tensor, &mut stored, i, j, cells);
            }
        })?;
        progress = stored;
        causes = store.causes(*run_id, k)?;
        totals = store.run(*run_id)?.totals();
    }
    let duration = started.elapsed();
    let summary = experiment
        .analysis
        .input_weights(&experiment.inputs)
        .map_err(|e| RunError::Config(at(e)))
        .and_then(|weights| {
            Summary::try_build_weighted(
                &tensor,
                &infos,
                experiment.analysis.strategy,
                experiment.analysis.aggregate,
                &experiment.analysis.options,
                weights.as_deref(),
            )
            .map_err(|e| RunError::Config(at(e.to_string())))
        });
    // A sequential run's verdicts and intervals are its confidence
    // sequences'.
    let sequential = rounds.as_ref().map(|r| r.outcome(progress.done));
    let summary = summary.map(|s| match &sequential {
        Some(o) => s.with_sequential(o),
        None => s,
    });
    let summary = summary.map(|s| s.with_calibration(&tensor, &settings.calibration));
    let causes = causes.sorted();
    let run_id = match store {
        Some((store, run_id)) => {
            // Each check's decision, kept so `probity runs` need not
            // rebuild the run from its samples; the tensor and causes, so
            // its report need not either.
            let verdicts: Option<Vec<_>> = summary
                .as_ref()
                .ok()
                .map(|s| s.checks.iter().map(|c| c.verdict.decision).collect());
            if let Some(o) = &sequential {
                store.set_sequential(run_id, o)?;
            }
            // A worker stopping while others work on leaves the run to them.
            if !others_working {
                store.put_snapshot(run_id, &tensor, &causes)?;
                // The counts are the writer's: every process adds its own.
                store.finish_run(
                    run_id,
                    status,
                    None,
                    progress.cached,
                    duration.as_secs_f64(),
                    verdicts.as_deref(),
                )?;
            }
            Some(run_id)
        }
        None => None,
    };
    let summary = summary?;
    Ok(RunOutcome {
        name: experiment.name.clone(),
        run_id,
        tensor,
        summary,
        status,
        halt,
        causes,
        totals,
        reused_from,
        model_calls: Caller::count(&caller.calls),
        cached: progress.cached,
        attempts_cached: Caller::count(&caller.outputs_cached),
        resumed,
        errors: progress.errors,
        judge_calls: Caller::count(&caller.judge_calls),
        judge_cached: Caller::count(&caller.judge_cached),
        duration,
        input_ids: experiment.inputs.iter().map(|i| i.id.clone()).collect(),
        samples,
    })
}

/// A cell to sample, `(input, repetition, its first answer when served
/// from the store)`.
type Job = (usize, usize, Option<Box<Answer>>);

/// What [`refill`] found.
#[derive(Debug, PartialEq, Eq)]
enum Refill {
    /// Cells are out (or were just handed out).
    More,
    /// Nothing to claim now, but inputs other live workers hold: look
    /// again later (a dead worker's claims expire).
    Wait,
    /// Every input of the run is done: no more work; the sender is dropped.
    Done,
}

/// Keep a shared run's workers busy: mark the inputs finished so far done,
/// claim the next ones and hand out their cells.
async fn refill(
    feed: &mut ClaimFeed,
    store: &Store,
    writer: &Writer,
    work: &mut Option<mpsc::UnboundedSender<Job>>,
) -> Result<Refill, StoreError> {
    feed.settle(store, writer).await?;
    let cells = feed.claim(store)?;
    if let Some(w) = work.as_ref() {
        for (i, j) in cells {
            let _ = w.send((i, j, None));
        }
    }
    if feed.outstanding() > 0 {
        return Ok(Refill::More);
    }
    // Inputs claimed all stored are finished: marked at once.
    feed.settle(store, writer).await?;
    Ok(match store.open_inputs(feed.run())? {
        (0, _) => {
            work.take();
            Refill::Done
        }
        _ => Refill::Wait,
    })
}

/// A sample that could not be asked: output `j` of input `i`, every one
/// of its `k` checks an error, with `error` as its cause.
fn error_row(i: usize, j: usize, cache_key: String, error: String, k: usize) -> SampleRow {
    SampleRow {
        input_idx: i,
        repetition: j,
        cache_key,
        output: None,
        error: Some(error),
        latency_ms: None,
        input_tokens: None,
        output_tokens: None,
        call_attempts: 0,
        cells: vec![Cell::Error; k],
        reasons: Vec::new(),
    }
}
