//! Opening a run: what is refused before any call, the guard the samples go
//! through, and the run itself — new, resumed or joined in the store, or in
//! memory — with what it already holds and the answers `--reuse` serves.

use crate::agent::episode::Episode;
use crate::checks::cache_key::sample_key;
use crate::checks::check::{Checks, Judging, StopFlag};
use crate::provider::call::{Answer, Caller};
use crate::retry::guard::Guard;
use crate::retry::policy::RetryPolicy;
use crate::run::experiment::Experiment;
use crate::run::recording::Recording;
use crate::run::runner::control::{config_error, Control, RunError, Sink};
use crate::run::runner::identity::run_hash;
use crate::run::runner::recorder::Recorder;
use crate::run::runner::tally::Tally;
use crate::store::cache::OutputCache;
use crate::store::settings::{StoredSequential, StoredSettings};
use crate::store::{NewRun, RunStatus, RunTotals, Store};
use probity_core::{CheckInfo, ReliabilityTensor};
use std::collections::HashMap;
use std::sync::Arc;

/// A run opened, before its first call.
pub(super) struct Opened<'s> {
    pub infos: Vec<CheckInfo>,
    pub settings: StoredSettings,
    pub caller: Arc<Caller>,
    /// Set when the run stops, so outputs not yet checked are not waited
    /// for.
    pub checks_stop: StopFlag,
    /// Made last, once the run's judgements' cache is known.
    pub guard: Option<Guard>,
    pub fingerprint: String,
    /// What the run holds already (a resumed run's cells and causes).
    pub tally: Tally,
    /// Cells already recorded, `i * M + j`.
    pub done: Vec<bool>,
    /// Samples a resumed run held.
    pub resumed: u64,
    /// A resumed run's totals so far.
    pub base: RunTotals,
    pub reused_from: Option<i64>,
    /// First answers served from run `reused_from`, by cell.
    pub known: HashMap<usize, Box<Answer>>,
    pub recorder: Recorder,
    /// The store and the run's id, when stored.
    pub store: Option<(&'s mut Store, i64)>,
    /// The sequential design: a new run's, or a resumed run's own.
    pub sequential: Option<StoredSequential>,
    /// The agent's episodes, built (its tools listed, its MCP servers
    /// started) before the first call.
    pub episode: Option<Arc<Episode>>,
}

/// Open `experiment`'s run in `sink`, as `control` asks.
pub(super) async fn open<'s>(
    experiment: &Experiment,
    mut sink: Sink<'s>,
    control: &Control<'_>,
) -> Result<Opened<'s>, RunError> {
    refuse(experiment, &sink, control)?;
    let (n, m, k) = (
        experiment.inputs.len(),
        crate::run::rounds::run_outputs(experiment),
        experiment.columns(),
    );
    let fingerprint = experiment.system.fingerprint();
    // Every request renders, or the run stops before it starts.
    let hash = run_hash(experiment, &fingerprint)
        .map_err(|e| config_error(experiment, format!("[prompt] {e}")))?;
    let tensor =
        ReliabilityTensor::new(n, m, k).map_err(|e| config_error(experiment, e.to_string()))?;
    let mut settings = experiment.stored_settings();
    let caller: Arc<Caller> = experiment.calls.caller();
    if experiment.auto_concurrency {
        caller.load.set_auto(experiment.concurrency);
    }
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
    let mut opened = Opened {
        infos: experiment.check_infos(),
        settings,
        caller,
        checks_stop: StopFlag::default(),
        guard: None,
        fingerprint,
        tally: Tally::new(tensor, n, m, k),
        done: vec![false; n * m],
        resumed: 0,
        base: RunTotals::default(),
        reused_from: None,
        known: HashMap::new(),
        recorder: Recorder::Memory(Vec::new()),
        store: None,
        // A new run's seed is drawn (or set); a resumed run's is read from
        // its settings.
        sequential: experiment.sequential.map(|s| StoredSequential {
            seed: s.seed.unwrap_or_else(rand::random),
        }),
        episode: None,
    };
    // The agent's and the simulated user's calls go through the run's
    // caller: counted, rate-limited, retried on transient errors.
    opened.episode = match &experiment.agent {
        Some(agent) => {
            let mut e = crate::agent::build::episode(agent)
                .await
                .map_err(|e| config_error(experiment, e))?;
            e.caller = Some(opened.caller.clone());
            Some(Arc::new(e))
        }
        None => None,
    };
    let (judging, outputs) = match sink {
        Sink::Memory => {
            opened.recorder = Recorder::Memory(Vec::with_capacity(n * m));
            (Judging::default(), None)
        }
        Sink::Store(store) => open_stored(experiment, store, &hash, control, &mut opened)?,
    };
    opened.guard = Some(guard(experiment, &opened, judging, outputs)?);
    Ok(opened)
}

/// The guard every sample goes through: the experiment's checks with this
/// run's own stop flag, its retry policy (one attempt without one), its
/// judgements' cache, and the stored outputs `--reuse` serves to later
/// attempts.
fn guard(
    experiment: &Experiment,
    opened: &Opened<'_>,
    judging: Judging,
    outputs: Option<Arc<dyn OutputCache>>,
) -> Result<Guard, RunError> {
    let checks = Checks {
        stop: opened.checks_stop.clone(),
        ..experiment.checks.clone()
    };
    let policy = experiment.retry.clone().unwrap_or_else(RetryPolicy::single);
    let mut guard = Guard::new(
        experiment.system.clone(),
        Arc::new(checks),
        policy,
        opened.caller.clone(),
    )
    .map_err(|e| config_error(experiment, format!("[retry] {e}")))?
    .with_judging(judging);
    if experiment.retry.is_some() {
        // Recorded attempts carry their request's key, for `--reuse`.
        guard = guard.keyed();
    }
    if let Some(outputs) = outputs {
        guard = guard.with_outputs(outputs);
    }
    Ok(guard)
}

/// What no run may be: an experiment with a problem, and the shared runs
/// that cannot be.
fn refuse(experiment: &Experiment, sink: &Sink<'_>, control: &Control<'_>) -> Result<(), RunError> {
    if let Some(problem) = experiment.problem() {
        return Err(config_error(experiment, problem));
    }
    if !control.is_shared() {
        return Ok(());
    }
    let refused = if experiment.sequential.is_some() {
        Some("a sequential run is worked by one process (its rounds are decided as they end)")
    } else if control.reuse.is_some() {
        Some("--reuse serves stored outputs to one process; run it without sharing")
    } else if matches!(sink, Sink::Memory) {
        Some("a run kept in memory cannot be shared")
    } else {
        None
    };
    match refused {
        Some(why) => Err(config_error(experiment, format!("shared run: {why}"))),
        None => Ok(()),
    }
}

/// Open the run in `store`: join a shared run, resume an unfinished one,
/// or create a new one; then the answers `--reuse` serves. Returns how the
/// guard judges, and the stored outputs later attempts are served from.
fn open_stored<'s>(
    experiment: &Experiment,
    store: &'s mut Store,
    hash: &str,
    control: &Control<'_>,
    opened: &mut Opened<'s>,
) -> Result<(Judging, Option<Arc<dyn OutputCache>>), RunError> {
    let existing = if let Some(id) = control.join {
        Some(joinable(experiment, store, id, hash)?)
    } else if control.resume {
        Some(
            store
                .resumable_run(hash)?
                .ok_or(RunError::NothingToResume)?,
        )
    } else {
        None
    };
    let recording = match existing {
        Some(id) => reopen(experiment, store, id, control.join.is_none(), opened)?,
        None => {
            opened.reused_from = control.reuse;
            opened.settings.sequential = opened.sequential;
            let config_text = experiment.source.as_ref().map_or("", |s| s.text.as_str());
            Recording::create(
                store,
                &NewRun {
                    name: &experiment.name,
                    config_hash: hash,
                    config: config_text,
                    system: &opened.fingerprint,
                    inputs: &experiment.inputs,
                    outputs_per_input: crate::run::rounds::run_outputs(experiment),
                    checks: &opened.infos,
                    settings: &opened.settings,
                    parent_run: None,
                    reused_from: opened.reused_from,
                    outputs_from: None,
                    variant: experiment.variant.as_ref(),
                },
            )?
        }
    };
    let judging = recording.judging(true, opened.reused_from.is_some());
    let outputs = match opened.reused_from {
        Some(from) => reuse(experiment, store, from, opened)?,
        None => None,
    };
    opened.recorder = Recorder::Store(recording.writer);
    opened.store = Some((store, recording.run_id));
    Ok((judging, outputs))
}

/// Run `id` as a shared run this worker may join: made with this very
/// configuration, at this shape, unfinished, and handing out inputs.
fn joinable(experiment: &Experiment, store: &Store, id: i64, hash: &str) -> Result<i64, RunError> {
    let (n, m) = (experiment.inputs.len(), experiment.outputs_per_input);
    let run = store.run(id)?;
    let refused = if run.config_hash != hash {
        format!(
            "run {id} ({}) was made with another configuration: a worker must use the very file it was made with",
            run.name
        )
    } else if run.status == RunStatus::Complete {
        format!("run {id} is complete: nothing to work on")
    } else if (run.inputs, run.outputs_per_input) != (n, m) {
        // The hash leaves out the command line's overrides: the shape must
        // match too.
        format!(
            "run {id} takes {} inputs × {} outputs; this worker would take {n} × {m} (give the same --outputs the run was made with)",
            run.inputs, run.outputs_per_input
        )
    } else if store.open_inputs(id)?.0 == 0 {
        // A run started without --shared hands out no inputs: a worker
        // would sample what its own process samples too.
        format!(
            "run {id} has no inputs to claim: it was not started with `probity run --shared` (or every input is done); continue it with `probity run --resume` instead"
        )
    } else {
        return Ok(id);
    };
    Err(config_error(experiment, refused))
}

/// Continue run `id`: at the shape it was started with, under this
/// process's lease when `lease` (a worker of a shared run takes none: its
/// claims are its own), with the cells and causes it holds counted.
fn reopen(
    experiment: &Experiment,
    store: &mut Store,
    id: i64,
    lease: bool,
    opened: &mut Opened<'_>,
) -> Result<Recording, RunError> {
    let (n, m, k) = (
        experiment.inputs.len(),
        crate::run::rounds::run_outputs(experiment),
        experiment.columns(),
    );
    let previous = store.run(id)?;
    let stored = previous.settings.sequential;
    if stored.is_some() != experiment.sequential.is_some() {
        let with = if stored.is_some() { "with" } else { "without" };
        return Err(config_error(experiment, format!(
            "--resume: the unfinished run was made {with} sequential testing; resume it {with} it (`--sequential`, `[experiment] sequential`), or start a new run"
        )));
    }
    // The config hash does not cover `--outputs`: a run is continued at the
    // shape it was started with, never silently at another.
    if (
        previous.inputs,
        previous.outputs_per_input,
        previous.checks.len(),
    ) != (n, m, k)
    {
        return Err(config_error(experiment, format!(
            "--resume: run {id} was started with {} inputs × {} outputs × {} checks; this command asks for {n} × {m} × {k}: resume it with `--outputs {}` (or without --outputs), or start a new run without --resume",
            previous.inputs,
            previous.outputs_per_input,
            previous.checks.len(),
            previous.outputs_per_input,
        )));
    }
    // One process at a time: refused, naming the holder, while another
    // live process runs it.
    if lease {
        store.take_lease(id)?;
    }
    opened.sequential = stored;
    opened.base = previous.totals();
    opened.reused_from = previous.reused_from;
    // What the resumed run already holds: its cells and the causes of its
    // errors (no output is read).
    let (tally, done, resumed) = (&mut opened.tally, &mut opened.done, &mut opened.resumed);
    store.each_sample_cells(id, |i, j, cells| {
        if i < n && j < m && cells.len() == k {
            done[i * m + j] = true;
            tally.cells(i, j, cells);
            *resumed += 1;
        }
    })?;
    opened.tally.causes = store.causes(id, k)?;
    opened.tally.progress.errors = crate::run::runner::tally::failed_calls(&opened.tally.causes);
    Ok(Recording::reopen(store, id)?)
}

/// `--reuse FROM`: outputs of run `from` for identical requests serve the
/// first answer of the cells not yet done, without a call (judges and
/// retries may still call); with retries, later attempts answered in run
/// `from` for an identical request (feedback included) are not asked
/// again either (the cache returned).
fn reuse(
    experiment: &Experiment,
    store: &Store,
    from: i64,
    opened: &mut Opened<'_>,
) -> Result<Option<Arc<dyn OutputCache>>, RunError> {
    let m = crate::run::rounds::run_outputs(experiment);
    let pending: Vec<usize> = (0..opened.done.len())
        .filter(|&c| !opened.done[c])
        .collect();
    // Each input's request rendered once for its pending cells.
    let mut last: Option<(usize, Vec<crate::provider::types::Message>)> = None;
    let mut keys: Vec<String> = Vec::with_capacity(pending.len());
    for &c in &pending {
        let i = c / m;
        if last.as_ref().map(|l| l.0) != Some(i) {
            let messages = experiment
                .prompt
                .render(&experiment.inputs[i])
                .map_err(|e| config_error(experiment, format!("[prompt] {e}")))?;
            last = Some((i, messages));
        }
        let messages = last.as_ref().map_or(&[][..], |l| &l.1[..]);
        keys.push(sample_key(&opened.fingerprint, messages, c % m));
    }
    let mut cache = store.cached_outputs(from, &keys)?;
    for (c, key) in pending.into_iter().zip(keys) {
        if let Some(hit) = cache.remove(&key) {
            opened.known.insert(c, Box::new(Answer::from(hit)));
        }
    }
    Ok(match experiment.retry {
        Some(_) => Some(Arc::new(store.outputs(from)?)),
        None => None,
    })
}
