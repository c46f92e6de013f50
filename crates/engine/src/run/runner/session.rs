//! A run as a state machine: one type holds its state, one method handles
//! each event of its loop — a sample arriving, the lease tick, the claim
//! tick, a cancel or the deadline — and [`RunSession::finish`] ends it.
//!
//! ```text
//!            start ──▶ dispatch(first batch of the source)
//!              │
//!   ┌──────────▼──────────┐  sample ──▶ on_sample: tally, record, the
//!   │   drive: next event │              source's next batch, budget
//!   └──────────┬──────────┘  lease tick ──▶ on_lease_tick
//!              │             claim tick ──▶ on_claim_tick (shared, waiting)
//!              │             cancel / deadline ──▶ interrupt
//!              ▼ (every worker ended)
//!            finish ──▶ summary, the run closed in the store, RunOutcome
//! ```

use crate::provider::call::{Answer, Caller};
use crate::run::claims::ClaimFeed;
use crate::run::experiment::Experiment;
use crate::run::finish::{close_run, Closing};
use crate::run::outcome::{Halt, RunOutcome};
use crate::run::rounds::Rounds;
use crate::run::runner::budget::{ErrorBudget, FIRST_CALLS};
use crate::run::runner::control::{config_error, Control, OnProgress, RunError};
use crate::run::runner::open::Opened;
use crate::run::runner::recorder::Recorder;
use crate::run::runner::sampler::{Job, Sampled, Sampler};
use crate::run::runner::source::{Batch, SourceError, StoreSide, WorkSource};
use crate::run::runner::tally::Tally;
use crate::run::runner::workers::Workers;
use crate::store::settings::StoredSettings;
use crate::store::{AutoConcurrency, RunStatus, RunTotals, SessionCalls, Store, UpstreamNotes};
use probity_core::{CheckInfo, ReliabilityTensor, Summary};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// One event of a run's loop.
enum Event {
    Sampled(Box<Sampled>),
    LeaseTick,
    ClaimTick,
    /// A cancel, or the deadline.
    Interrupt,
}

/// A run between its opening and its end.
pub(super) struct RunSession<'a> {
    experiment: &'a Experiment,
    started: Instant,
    /// Outputs per input: cell `c` is output `c % m` of input `c / m`.
    m: usize,
    infos: Vec<CheckInfo>,
    settings: StoredSettings,
    caller: Arc<Caller>,
    sampler: Arc<Sampler>,
    tally: Tally,
    recorder: Recorder,
    store: Option<(&'a mut Store, i64)>,
    source: WorkSource,
    /// First answers served from a stored run, by cell.
    known: HashMap<usize, Box<Answer>>,
    workers: Workers,
    budget: ErrorBudget,
    /// Samples and failed calls of this process.
    session: (u64, u64),
    halt: Option<Halt>,
    interrupted: bool,
    shared: bool,
    resumed: u64,
    base: RunTotals,
    reused_from: Option<i64>,
    on_progress: Option<OnProgress<'a>>,
}

impl<'a> RunSession<'a> {
    /// Start the run `opened`: its source, its workers, its first cells.
    pub async fn start(
        experiment: &'a Experiment,
        opened: Opened<'a>,
        control: Control<'a>,
        started: Instant,
    ) -> Result<RunSession<'a>, RunError> {
        let (n, m) = (
            experiment.inputs.len(),
            crate::run::rounds::run_outputs(experiment),
        );
        let shared = control.is_shared();
        let mut control = control;
        if let Some(tell) = control.on_labels.as_mut() {
            let needs = label_needs(
                &opened.infos,
                &opened.settings.calibration,
                experiment.analysis.options.confidence,
                (n * m) as u64,
            );
            if !needs.is_empty() {
                tell(&needs);
            }
        }
        let Opened {
            infos,
            settings,
            caller,
            checks_stop,
            guard,
            fingerprint,
            tally,
            done,
            resumed,
            base,
            reused_from,
            known,
            recorder,
            store,
            sequential,
            episode,
        } = opened;
        let pending = done.iter().filter(|d| !**d).count();
        let workers = experiment
            .concurrency
            .min(if shared { n * m } else { pending });
        let source = match (&store, sequential) {
            (Some((_, run_id)), _) if shared => WorkSource::Claims {
                feed: ClaimFeed::new(*run_id, m, workers),
                waiting: false,
                workers,
                m,
            },
            (_, Some(s)) => WorkSource::Rounds {
                rounds: Rounds::new(
                    &infos,
                    experiment.analysis.options.confidence,
                    experiment.analysis.options.errors,
                    (n, m, experiment.outputs_per_input),
                    experiment.concurrency,
                    s.seed,
                )
                .map_err(|e| config_error(experiment, format!("sequential: {e}")))?,
                done,
            },
            _ => WorkSource::Every { done },
        };
        if let (true, Some(writer)) = (shared, recorder.writer()) {
            // A shared run's calls are counted in the store before they
            // are sent (issue 38, item 5): a worker killed outright has
            // counted its calls in flight.
            caller.mark_calls_on(writer.call_marks());
        }
        let guard = guard.ok_or_else(|| RunError::Aborted("the run has no guard".into()))?;
        let sampler = Arc::new(
            Sampler::new(
                guard,
                experiment.inputs.clone(),
                experiment.prompt.clone(),
                fingerprint,
                experiment.retry.is_some(),
                recorder.health(),
            )
            .with_episode(episode),
        );
        let mut session = RunSession {
            experiment,
            started,
            m,
            budget: ErrorBudget {
                share: experiment.error_budget,
                samples: (n * m) as u64,
                first_calls: FIRST_CALLS.min(pending as u64),
                checks: infos.iter().map(|c| c.name.clone()).collect(),
            },
            infos,
            settings,
            caller,
            workers: Workers::spawn(sampler.clone(), workers, checks_stop),
            sampler,
            tally,
            recorder,
            store,
            source,
            known,
            session: (0, 0),
            halt: None,
            interrupted: false,
            shared,
            resumed,
            base,
            reused_from,
            on_progress: control.on_progress,
        };
        let side = store_side(&session.store, &session.recorder);
        let first = session.source.first(&session.tally.tensor, side).await;
        let first = session.source_error(first)?;
        session.dispatch(first);
        session.report();
        Ok(session)
    }

    /// Handle events until every worker has ended.
    pub async fn drive(&mut self, cancel: Option<watch::Receiver<bool>>) -> Result<(), RunError> {
        // Without a cancel channel, one whose sender lives as long as the
        // run (a closed channel would read as "cancelled").
        let (_never, uncancelled) = watch::channel(false);
        let mut cancel = cancel.unwrap_or(uncancelled);
        // A deadline too far to represent is no deadline.
        let deadline = self
            .experiment
            .deadline
            .and_then(|d| tokio::time::Instant::now().checked_add(d));
        // Claims are refreshed three times per life.
        let mut refresh = Duration::from_secs_f64(crate::store::LEASE_REFRESH_S);
        if self.shared {
            refresh = refresh.min(crate::store::claim_ttl() / 3);
        }
        let mut lease_tick = tokio::time::interval(refresh);
        let mut claim_tick = tokio::time::interval(CLAIM_POLL);
        loop {
            let waiting = self.source.waiting() && !self.interrupted;
            let event = tokio::select! {
                sampled = self.workers.results.recv() => match sampled {
                    Some(s) => Event::Sampled(Box::new(s)),
                    None => return Ok(()),
                },
                _ = lease_tick.tick() => Event::LeaseTick,
                _ = claim_tick.tick(), if waiting => Event::ClaimTick,
                _ = cancel.wait_for(|c| *c), if !self.interrupted => Event::Interrupt,
                _ = sleep_until(deadline), if !self.interrupted => Event::Interrupt,
            };
            match event {
                Event::Sampled(s) => self.on_sample(*s).await?,
                Event::LeaseTick => self.on_lease_tick(),
                Event::ClaimTick => self.on_claim_tick().await?,
                Event::Interrupt => self.interrupt(),
            }
        }
    }

    /// A sample arrived: count and record it, hand out what its source
    /// says comes next, and stop the run if the error budget says so.
    async fn on_sample(&mut self, (row, attempts): Sampled) -> Result<(), RunError> {
        let cell = row.input_idx * self.m + row.repetition;
        let input = row.input_idx;
        self.session.0 += 1;
        self.session.1 += crate::run::runner::tally::failed_call(&row) as u64;
        self.tally.record(&row);
        self.tally.progress.model_calls = Caller::count(&self.caller.calls);
        self.tally.progress.attempts_cached = Caller::count(&self.caller.outputs_cached);
        for a in attempts {
            self.recorder.attempt(a)?;
        }
        self.recorder.sample(row)?;
        self.recorder.totals(self.session_totals())?;
        let side = store_side(&self.store, &self.recorder);
        let next = self
            .source
            .recorded(cell, input, self.interrupted, &self.tally.tensor, side)
            .await;
        if let Some(batch) = self.source_error(next)? {
            self.dispatch(batch);
        }
        self.report();
        if self.halt.is_none() {
            let p = &self.tally.progress;
            self.halt =
                self.budget
                    .exceeded(self.session.0, self.session.1, p.errors, &self.tally.causes);
            if self.halt.is_some() {
                self.interrupt();
            }
        }
        Ok(())
    }

    /// Keep this process's lease alive (a shared run's claims are
    /// refreshed by its writer, with every batch it commits).
    fn on_lease_tick(&self) {
        if let Some((store, run_id)) = &self.store {
            let _ = store.refresh_lease(*run_id);
        }
    }

    /// A shared run waiting on other workers' inputs looks again.
    async fn on_claim_tick(&mut self) -> Result<(), RunError> {
        let side = store_side(&self.store, &self.recorder);
        let next = self.source.tick(side).await;
        if let Some(batch) = self.source_error(next)? {
            self.dispatch(batch);
        }
        Ok(())
    }

    /// No new sample starts; calls in flight are abandoned.
    fn interrupt(&mut self) {
        self.interrupted = true;
        self.workers.stop();
    }

    /// Hand out `batch`'s cells, each with its first answer when one is
    /// served from a stored run (counted when served, not when found).
    fn dispatch(&mut self, batch: Batch) {
        for c in batch.cells {
            let known = self.known.remove(&c);
            self.tally.progress.cached += known.is_some() as u64;
            self.workers.send(Job {
                i: c / self.m,
                j: c % self.m,
                known,
            });
        }
        if batch.last {
            self.workers.close();
        }
    }

    fn report(&mut self) {
        if let Some(f) = self.on_progress.as_mut() {
            f(&self.tally.progress);
        }
    }

    /// This session's counts: the caller's, and each check's judge calls.
    fn session_totals(&self) -> RunTotals {
        self.sampler.guard.checks().totals(self.caller.totals())
    }

    /// This process's calls, for the run's record: its duration, its
    /// calls' time and time queued, each judge's structured output, where
    /// `concurrency = "auto"` settled.
    fn session_calls(&self, elapsed: Duration) -> SessionCalls {
        let seconds = |us: &std::sync::atomic::AtomicU64| Caller::count(us) as f64 / 1e6;
        SessionCalls {
            elapsed_s: elapsed.as_secs_f64(),
            call_s: seconds(&self.caller.service_us),
            queued_s: seconds(&self.caller.queued_us),
            upstream: UpstreamNotes {
                structured: self.sampler.guard.checks().structured_outputs(),
                auto_concurrency: self.caller.load.auto_search().map(|s| AutoConcurrency {
                    chosen: s.chosen,
                    most: s.most,
                    tried: s.tried,
                    settled: s.settled,
                }),
            },
        }
    }

    fn source_error<T>(&self, r: Result<T, SourceError>) -> Result<T, RunError> {
        r.map_err(|e| match e {
            SourceError::Sequential(e) => config_error(self.experiment, format!("sequential: {e}")),
            SourceError::Store(e) => RunError::Store(e),
        })
    }

    /// End the run: wait for the workers, flush, build the summary, close
    /// the run in the store.
    pub async fn finish(mut self) -> Result<RunOutcome, RunError> {
        self.workers.join().await;
        let side = store_side(&self.store, &self.recorder);
        self.source.settle(side).await?;
        // Every call of this session, those of abandoned samples included.
        let session_totals = self.session_totals();
        self.recorder.totals(session_totals.clone())?;
        let recorder = std::mem::replace(&mut self.recorder, Recorder::Memory(Vec::new()));
        let samples = recorder.finish()?;
        let p = &self.tally.progress;
        let settled = p.done == p.total || self.source.stopped().is_some();
        let mut status = match settled && self.halt.is_none() {
            true => RunStatus::Complete,
            false => RunStatus::Interrupted,
        };
        let mut totals = self.base.clone() + session_totals;
        let mut others_working = false;
        if self.shared {
            if let Some(back) = self.read_back_shared()? {
                (status, totals, others_working) = back;
            }
        }
        let duration = self.started.elapsed();
        if let Some((store, id)) = &self.store {
            store.record_calls(*id, &self.session_calls(duration))?;
        }
        let sequential = self.source.sequential(self.tally.progress.done);
        let summary = self.summary(sequential.as_ref());
        let causes = std::mem::take(&mut self.tally.causes).sorted();
        let run_id = self.store.as_ref().map(|(_, id)| *id);
        // A worker stopping while others work on leaves the run to them.
        if let (Some((store, id)), false) = (&self.store, others_working) {
            close_run(
                store,
                *id,
                Closing {
                    status,
                    totals: None,
                    samples: self.tally.progress.cached,
                    duration,
                    summary: summary.as_ref().ok(),
                    sequential: sequential.as_ref(),
                    tensor: Some(&self.tally.tensor),
                    causes: &causes,
                },
            )?;
        }
        let caller = &self.caller;
        Ok(RunOutcome {
            name: self.experiment.name.clone(),
            run_id,
            summary: summary?,
            status,
            halt: self.halt,
            causes,
            totals,
            reused_from: self.reused_from,
            model_calls: Caller::count(&caller.calls),
            cached: self.tally.progress.cached,
            attempts_cached: Caller::count(&caller.outputs_cached),
            resumed: self.resumed,
            errors: self.tally.progress.errors,
            judge_calls: Caller::count(&caller.judge_calls),
            judge_cached: Caller::count(&caller.judge_cached),
            duration,
            input_ids: self
                .experiment
                .inputs
                .iter()
                .map(|i| i.id.clone())
                .collect(),
            samples,
            tensor: self.tally.tensor,
        })
    }

    /// A shared run is judged on every worker's samples: read back from
    /// the store, with its status and counts (every process's), and
    /// whether other workers still hold inputs.
    fn read_back_shared(&mut self) -> Result<Option<(RunStatus, RunTotals, bool)>, RunError> {
        let Some((store, run_id)) = &self.store else {
            return Ok(None);
        };
        let (n, m, k) = (
            self.experiment.inputs.len(),
            self.m,
            self.experiment.columns(),
        );
        if self.interrupted {
            store.release_claims(*run_id)?;
        }
        let (open, held) = store.open_inputs(*run_id)?;
        let given_up = store.given_up_inputs(*run_id)?;
        if !given_up.is_empty() && self.halt.is_none() {
            let ids = &self.experiment.inputs;
            self.halt = Some(Halt::GivenUp {
                inputs: given_up
                    .iter()
                    .map(|&i| ids.get(i).map_or_else(|| format!("#{i}"), |x| x.id.clone()))
                    .collect(),
            });
        }
        let status = match open == 0 && self.halt.is_none() {
            true => RunStatus::Complete,
            false => RunStatus::Interrupted,
        };
        let tensor = ReliabilityTensor::new(n, m, k)
            .map_err(|e| config_error(self.experiment, e.to_string()))?;
        let mut back = Tally::new(tensor, n, m, k);
        back.progress = crate::run::outcome::Progress {
            done: 0,
            passes: vec![(0, 0); k],
            ..self.tally.progress.clone()
        };
        store.each_sample_cells(*run_id, |i, j, cells| {
            if i < n && j < m && cells.len() == k {
                back.cells(i, j, cells);
            }
        })?;
        back.causes = store.causes(*run_id, k)?;
        let totals = store.run(*run_id)?.totals();
        self.tally = back;
        Ok(Some((status, totals, open > 0 && held > 0)))
    }

    /// The run's summary from its tensor; a sequential run's verdicts and
    /// intervals are its confidence sequences'; a calibrated verifier's
    /// rate is corrected for its judge.
    fn summary(
        &self,
        sequential: Option<&probity_core::SequentialOutcome>,
    ) -> Result<Summary, RunError> {
        let analysis = &self.experiment.analysis;
        let weights = analysis
            .input_weights(&self.experiment.inputs)
            .map_err(|e| config_error(self.experiment, e))?;
        let summary = Summary::try_build_weighted(
            &self.tally.tensor,
            &self.infos,
            analysis.strategy,
            analysis.aggregate,
            &analysis.options,
            weights.as_deref(),
        )
        .map_err(|e| config_error(self.experiment, e))?;
        let summary = match sequential {
            Some(o) => summary.with_sequential(o),
            None => summary,
        };
        Ok(summary.with_calibration(&self.tally.tensor, &self.settings.calibration))
    }
}

/// The store a shared run claims from, with the writer whose commits its
/// finished inputs wait for.
fn store_side<'s>(store: &'s Option<(&mut Store, i64)>, recorder: &'s Recorder) -> StoreSide<'s> {
    match (store, recorder.writer()) {
        (Some((store, _)), Some(writer)) => Some((&**store, writer)),
        _ => None,
    }
}

/// How often a shared run's process with nothing left to claim looks
/// again (for inputs whose claims expired, and for the run's end: every
/// input done). It used to be a second, which each idle process added to a
/// short run's tail (bench/store.sh part 3); one claim transaction and one
/// read per look.
const CLAIM_POLL: Duration = Duration::from_millis(250);

/// Sleep until `deadline`, or for ever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The label needs of each calibrated check whose judge's answers could be
/// measured (`stats::labels_needed_before_run`), named: what
/// [`Control::on_labels`] is told before the run's first output.
fn label_needs(
    infos: &[probity_core::CheckInfo],
    labels: &[Option<probity_core::stats::LabelCounts>],
    confidence: f64,
    outputs: u64,
) -> Vec<(String, probity_core::stats::LabelNeeds)> {
    infos
        .iter()
        .zip(labels)
        .filter_map(|(info, counts)| {
            let needs = probity_core::stats::labels_needed_before_run(
                (*counts)?,
                info.minimum_success_percentage,
                confidence,
                outputs,
            )
            .ok()?;
            Some((info.name.clone(), needs))
        })
        .collect()
}
