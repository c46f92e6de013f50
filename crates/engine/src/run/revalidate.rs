//! Revalidation: the stored outputs of a run re-checked with changed checks
//! and settings, as a new run whose parent is the old one, holding only its
//! verdicts (the outputs stay where they were sampled). No call to the
//! system under test; judges only for judgements not already cached.

use crate::agent::config::AgentConfig;
use crate::agent::episode::Episode;
use crate::checks::check::{Checks, NOT_JUDGED};
use crate::provider::call::{CallSettings, Caller};
use crate::run::experiment::{Experiment, Source};
use crate::run::finish::{close_run, Closing};
use crate::run::recording::Recording;
use crate::store::settings::StoredSettings;
use crate::store::{NewRun, RunStatus, SampleRow, Store, StoreError};
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
    /// An agent's checks (docs/agents.md): the first columns, judged again
    /// over each stored transcript and final state.
    pub agent: Option<Arc<AgentConfig>>,
    /// The agent's episodes, built by [`Recheck::build_agent`] (its tools
    /// and environment, for the gold state; no episode is run).
    pub episode: Option<Arc<Episode>>,
}

impl Recheck<'_> {
    /// Build the agent's episodes (tools listed, MCP servers started) so
    /// its checks can judge the stored transcripts again: needed before
    /// [`revalidate`] of an agent's run; nothing without an agent.
    pub async fn build_agent(&mut self) -> Result<(), String> {
        if let (Some(agent), None) = (&self.agent, &self.episode) {
            self.episode = Some(Arc::new(crate::agent::build::episode(agent).await?));
        }
        Ok(())
    }

    /// The agent checks' columns (none without an agent).
    fn agent_infos(&self) -> Vec<probity_core::CheckInfo> {
        self.agent
            .as_ref()
            .map_or_else(Vec::new, |a| a.infos.clone())
    }
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
            agent: self.agent.clone(),
            episode: None,
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
    if recheck.agent.is_some() && recheck.episode.is_none() {
        return Err(StoreError::Writer {
            store: store.location().clone(),
            what: "an agent's run is re-checked with its episodes built (Recheck::build_agent)"
                .into(),
        });
    }
    let mut infos = recheck.agent_infos();
    let agent_k = infos.len();
    infos.extend(checks.infos());
    let (k, m) = (infos.len(), old.outputs_per_input);
    let hash = recheck
        .source
        .as_ref()
        .map_or_else(|| old.config_hash.clone(), |s| s.hash.clone());
    let caller = recheck.calls.caller();
    let (settings, uncalibrated) = calibrate(store, &old, recheck, &checks, &caller, calls).await;
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
    // Weights that cannot be read leave the run without a summary, as the
    // source's would be.
    let weights = settings.analysis_settings().input_weights(&inputs);
    let mut out = Rechecked {
        tensor: ReliabilityTensor::new(old.inputs, m, k).ok(),
        causes: Causes::new(k),
        written: 0,
        not_judged: 0,
        writer: &recording.writer,
    };
    let rechecker = Rechecker {
        checks: checks.clone(),
        caller: caller.clone(),
        judging: recording.judging(calls, true),
        // The inputs are held once; each is prepared for expressions (its
        // `input` map) only while its slice is checked — held for all
        // inputs at once, the maps were about 700 bytes an input (140 MB of
        // the 268 MB heap at 200,000 inputs).
        inputs: inputs.into(),
        concurrency: recheck.concurrency.max(1),
        episode: recheck.episode.clone(),
        agent_k,
    };
    rechecker.recheck(store, id, m, &mut out).await?;
    let Rechecked {
        tensor,
        causes,
        written,
        not_judged,
        ..
    } = out;
    let new_id = recording.run_id;
    recording.writer.finish()?;
    let summary = match (tensor.as_ref(), &weights) {
        (Some(t), Ok(w)) => {
            let s = crate::run::stored::summarize_weighted(&settings, &infos, t, w.as_deref());
            // A sequential run's recheck: its sequences replayed with the
            // new checks.
            Some(match settings.sequential {
                Some(_) => crate::run::stored::sequential_summary(s, &store.run(new_id)?, t),
                None => s,
            })
        }
        _ => None,
    };
    // A recheck is as complete as its source; a source killed mid-run
    // ("running") is interrupted as far as the recheck is concerned.
    let status = match old.status {
        RunStatus::Complete => RunStatus::Complete,
        _ => RunStatus::Interrupted,
    };
    let causes = causes.sorted();
    close_run(
        store,
        new_id,
        Closing {
            status,
            totals: Some(checks.totals(caller.totals())),
            samples: written,
            duration: started.elapsed(),
            summary: summary.as_ref(),
            sequential: summary.as_ref().and_then(|s| s.sequential.as_ref()),
            tensor: tensor.as_ref(),
            causes: &causes,
        },
    )?;
    Ok(Revalidated {
        run_id: new_id,
        samples: written,
        judge_calls: Caller::count(&caller.judge_calls),
        judge_cached: Caller::count(&caller.judge_cached),
        not_judged,
        uncalibrated,
    })
}

/// The recheck's settings, with calibrated verifiers' judges measured on
/// their labelled sets again, as a run does (the judge or its instructions
/// may have changed since; verdicts the store keeps for the same questions
/// are reused), so the verdict is the corrected rate's, as the run's was.
/// A sequential run's copy is read back in the same order. With calls off,
/// only a set whose every verdict the store keeps is measured: the others
/// are named (returned beside the settings).
async fn calibrate(
    store: &mut Store,
    old: &crate::store::RunRecord,
    recheck: &Recheck<'_>,
    checks: &Checks,
    caller: &Arc<Caller>,
    calls: bool,
) -> (StoredSettings, Vec<String>) {
    let mut settings = StoredSettings {
        sequential: old.settings.sequential,
        ..recheck.settings.clone()
    };
    if calls {
        settings.calibration = crate::checks::calibration::measure_all_cached(
            checks,
            caller,
            Some(&mut *store),
            crate::checks::calibration::LabelAnswers::Reuse,
        )
        .await;
        return (settings, Vec::new());
    }
    settings.calibration = crate::checks::calibration::recall_all(checks, &mut *store);
    let v0 = checks.validators.len();
    let uncalibrated = checks
        .verifiers
        .iter()
        .enumerate()
        .filter(|(w, v)| {
            v.calibration.is_some() && settings.calibration.get(v0 + w).is_none_or(Option::is_none)
        })
        .map(|(_, v)| v.name.clone())
        .collect();
    (settings, uncalibrated)
}

/// The new run's rows as they are written, with its tensor and causes
/// filled from them: its verdicts and snapshot are stored with it.
struct Rechecked<'w> {
    tensor: Option<ReliabilityTensor>,
    causes: Causes,
    written: u64,
    /// Cells a judge would have judged, with calls off.
    not_judged: u64,
    writer: &'w crate::store::Writer,
}

impl Rechecked<'_> {
    fn send(&mut self, row: SampleRow) -> Result<(), StoreError> {
        if let Some(t) = self.tensor.as_mut() {
            for (kk, &cell) in row.cells.iter().enumerate() {
                // A row outside the run's shape is kept, not counted.
                let _ = t.set(row.input_idx, row.repetition, kk, cell);
            }
        }
        row.note_causes(&mut self.causes);
        self.written += 1;
        self.writer.send(row)
    }
}

/// What re-checks the stored samples.
struct Rechecker {
    checks: Arc<Checks>,
    caller: Arc<Caller>,
    judging: crate::checks::check::Judging,
    inputs: Arc<[probity_core::Input]>,
    concurrency: usize,
    /// An agent's episodes: its checks are the first `agent_k` columns,
    /// judged over the stored transcripts.
    episode: Option<Arc<Episode>>,
    agent_k: usize,
}

impl Rechecker {
    /// Re-check every stored sample of run `id`, a slice of inputs at a
    /// time: validators only, each slice checked in parallel while the
    /// next is read; with verifiers, each sample judged on a pool bounded
    /// by the concurrency, written as results come so memory stays bounded.
    async fn recheck(
        &self,
        store: &Store,
        id: i64,
        m: usize,
        out: &mut Rechecked<'_>,
    ) -> Result<(), StoreError> {
        let per_chunk = (CHUNK / m.max(1)).max(1);
        let mut checking: Option<tokio::task::JoinHandle<Vec<SampleRow>>> = None;
        let mut tasks = tokio::task::JoinSet::new();
        let limit = Arc::new(tokio::sync::Semaphore::new(self.concurrency));
        for first in (0..self.inputs.len()).step_by(per_chunk) {
            let range = first..(first + per_chunk).min(self.inputs.len());
            let chunk = store.samples_of_inputs(id, range.clone())?;
            let prepared = Slice::new(&self.inputs, range);
            if self.checks.verifiers.is_empty() && self.episode.is_none() {
                let checks = self.checks.clone();
                let next =
                    tokio::task::spawn_blocking(move || validate_rows(&checks, &prepared, chunk));
                if let Some(done) = checking.replace(next) {
                    for row in done.await.map_err(|e| lost(store, e))? {
                        out.send(row)?;
                    }
                }
                continue;
            }
            for s in chunk {
                self.judge(s, &prepared, &limit, &mut tasks, out)?;
                while tasks.len() > 4 * self.concurrency {
                    if let Some(Ok((row, unjudged))) = tasks.join_next().await {
                        out.not_judged += unjudged;
                        out.send(row)?;
                    }
                }
            }
        }
        if let Some(done) = checking.take() {
            for row in done.await.map_err(|e| lost(store, e))? {
                out.send(row)?;
            }
        }
        while let Some(done) = tasks.join_next().await {
            // A task that panicked loses its sample (it stays Missing).
            if let Ok((row, unjudged)) = done {
                out.not_judged += unjudged;
                out.send(row)?;
            }
        }
        Ok(())
    }

    /// Judge stored sample `s` on the pool (every check, verifiers
    /// included); a sample with no output is written at once, all Error.
    fn judge(
        &self,
        s: SampleRow,
        prepared: &Slice,
        limit: &Arc<tokio::sync::Semaphore>,
        tasks: &mut tokio::task::JoinSet<(SampleRow, u64)>,
        out: &mut Rechecked<'_>,
    ) -> Result<(), StoreError> {
        let Some(input) = prepared.get(s.input_idx).cloned() else {
            return Ok(());
        };
        let Some(output) = s.output.clone() else {
            return out.send(SampleRow {
                cells: vec![Cell::Error; self.agent_k + self.checks.len()],
                reasons: Vec::new(),
                ..s
            });
        };
        let (checks, caller, judging, limit) = (
            self.checks.clone(),
            self.caller.clone(),
            self.judging.clone(),
            limit.clone(),
        );
        let (episode, agent_k) = (self.episode.clone(), self.agent_k);
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await;
            if let Some(e) = episode {
                return recheck_episode(
                    &e, agent_k, &checks, &caller, &judging, &input, &output, s,
                )
                .await;
            }
            let checked = checks
                .check(&caller, &judging, &input, &output, s.repetition as u32, 0)
                .await;
            let unjudged = checked
                .reasons
                .iter()
                .filter(|(_, r)| r == NOT_JUDGED)
                .count() as u64;
            let row = SampleRow {
                cells: checked.cells,
                reasons: checked.reasons,
                ..s
            };
            (row, unjudged)
        });
        Ok(())
    }
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

/// Stored episode `s` of an agent judged again: its transcript (the stored
/// output) and final state by the agent checks, then the validators and
/// verifiers (a verifier reads the whole transcript, a validator the
/// agent's last reply), exactly as the run judged it
/// ([`crate::agent::episode::Judged::row`]). An episode that ended on an
/// error stays an error with its cause; one the user spoiled under the
/// new user checks is an error too. No episode is run.
#[allow(clippy::too_many_arguments)]
async fn recheck_episode(
    e: &Episode,
    agent_k: usize,
    checks: &Arc<Checks>,
    caller: &Caller,
    judging: &crate::checks::check::Judging,
    input: &PreparedInput<'static>,
    output: &str,
    s: SampleRow,
) -> (SampleRow, u64) {
    let k = agent_k + checks.len();
    let t: probity_core::agent::Transcript = match serde_json::from_str(output) {
        Ok(t) => t,
        Err(err) => {
            let row = SampleRow {
                cells: vec![Cell::Error; k],
                reasons: Vec::new(),
                error: Some(format!(
                    "the stored output is not an episode's transcript ({err}): was the run made by an agent?"
                )),
                ..s
            };
            return (row, 0);
        }
    };
    let judged = e.judge(input.input(), &t).await;
    let (cells, reasons, error) = match judged.row(&t) {
        Err(cause) => (vec![Cell::Error; k], Vec::new(), Some(cause)),
        Ok((mut cells, mut reasons)) => {
            let checked = crate::agent::episode::check_columns(
                checks,
                caller,
                judging,
                input,
                &t,
                s.repetition as u32,
            )
            .await;
            cells.extend(checked.cells);
            reasons.extend(checked.reasons.into_iter().map(|(kk, r)| (agent_k + kk, r)));
            (cells, reasons, None)
        }
    };
    let unjudged = reasons.iter().filter(|(_, r)| r == NOT_JUDGED).count() as u64;
    (
        SampleRow {
            cells,
            reasons,
            error,
            ..s
        },
        unjudged,
    )
}
