//! What produces one cell's output: sample `(i, j)` through the guard and
//! turn the attempts into rows. Shared by every worker of a run.

use crate::agent::episode::Episode;
use crate::checks::cache_key::sample_key;
use crate::provider::call::Answer;
use crate::provider::template::{PromptTemplate, TemplateError};
use crate::provider::types::Message;
use crate::retry::guard::{Guard, GuardOutcome};
use crate::store::{AttemptRow, SampleRow, WriterHealth};
use probity_core::validator::PreparedInput;
use probity_core::{Cell, Input};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// A cell to sample: output `j` of input `i`, with its first answer when
/// it is served from a stored run (`--reuse`) instead of a call (boxed: a
/// million queued jobs stay small).
pub(super) struct Job {
    pub i: usize,
    pub j: usize,
    pub known: Option<Box<Answer>>,
}

/// One sampled cell: its row, and every attempt's row when a retry policy
/// is set.
pub(super) type Sampled = (SampleRow, Vec<AttemptRow>);

/// An input being sampled: its request and its expression form, made once
/// for all of its outputs in flight.
struct InFlight {
    messages: Vec<Message>,
    prepared: PreparedInput<'static>,
}

/// What every worker shares to sample a cell.
pub(super) struct Sampler {
    pub guard: Guard,
    /// The N inputs and how each is put to the system: an input's request
    /// is rendered when one of its outputs is sampled, not all up front (a
    /// million requests held through a run were ~100 MB).
    pub inputs: Arc<[Input]>,
    pub prompt: Arc<PromptTemplate>,
    /// The system's fingerprint: with a request and `j`, a sample's cache
    /// key (made when the sample is, so memory does not grow with N × M).
    pub fingerprint: String,
    /// A retry policy is set: every attempt is recorded.
    pub record_attempts: bool,
    /// The store's writer, when samples are stored: a worker starts no
    /// call while it is stuck in a commit (see [`Sampler::store_ready`]).
    pub store_health: Option<WriterHealth>,
    /// The agent's episodes, when the system under test is an agent: each
    /// cell is one whole episode ([`Sampler::episode`]).
    pub episode: Option<Arc<Episode>>,
    /// The inputs whose outputs are being sampled (a handful: workers take
    /// cells in input order), shared by those outputs and dropped with the
    /// last of them.
    in_flight: Mutex<HashMap<usize, Weak<InFlight>>>,
}

impl Sampler {
    pub fn new(
        guard: Guard,
        inputs: Arc<[Input]>,
        prompt: Arc<PromptTemplate>,
        fingerprint: String,
        record_attempts: bool,
        store_health: Option<WriterHealth>,
    ) -> Sampler {
        Sampler {
            guard,
            inputs,
            prompt,
            fingerprint,
            record_attempts,
            store_health,
            episode: None,
            in_flight: Mutex::default(),
        }
    }

    /// Sample with `episode`: every cell one whole episode of the agent.
    pub(crate) fn with_episode(mut self, episode: Option<Arc<Episode>>) -> Sampler {
        self.episode = episode;
        self
    }

    /// Resolves when a call may start: at once, unless the store's writer
    /// has been stuck in a commit for longer than
    /// [`crate::store::writer::STALL`] (the store slow, or reconnecting).
    /// Then it waits, so a store that is down costs a few seconds of calls
    /// rather than every call made until the writer gives up.
    pub async fn store_ready(&self) {
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
        if let Some(f) = map.get(&i).and_then(Weak::upgrade) {
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

    /// Sample `job`: one answer through the guard, or one episode.
    pub async fn sample(&self, job: Job) -> Sampled {
        match &self.episode {
            Some(e) => (self.episode(e, job.i, job.j).await, Vec::new()),
            None => self.answer(job).await,
        }
    }

    /// Cell `(i, j)` of an agent: one whole episode (docs/agents.md),
    /// its transcript the stored output (JSON), judged by the agent checks
    /// (the first columns, a failure naming its turn), then by the
    /// validators and verifiers over the agent's last reply. An episode
    /// that ended on an error (upstream, tool, user simulator) or that the
    /// simulated user spoiled says nothing about the agent: its cells are
    /// errors, with the cause, never the agent's failure.
    async fn episode(&self, e: &Episode, i: usize, j: usize) -> SampleRow {
        let input = &self.inputs[i];
        let k = e.checks.len() + self.guard.checks().len();
        let key = format!("{}|episode|{}|{j}", self.fingerprint, input.id);
        let started = std::time::Instant::now();
        let (t, judged) = match e.cell(input, j as u32).await {
            Ok(done) => done,
            Err(err) => return error_row(i, j, key, format!("input {:?}: {err}", input.id), k),
        };
        let mut row = error_row(i, j, key, String::new(), k);
        row.output = serde_json::to_string(&t).ok();
        row.latency_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
        row.input_tokens = t.turns.iter().map(|t| t.input_tokens).sum();
        row.output_tokens = t.turns.iter().map(|t| t.output_tokens).sum();
        row.call_attempts = t.turns.len() as u32;
        let (cells, reasons) = match judged.row(&t) {
            Ok(judged) => judged,
            Err(cause) => {
                row.error = Some(cause);
                return row;
            }
        };
        row.error = None;
        let first = cells.len();
        row.cells[..first].copy_from_slice(&cells);
        row.reasons = reasons;
        if !self.guard.checks().is_empty() {
            let prepared = PreparedInput::shared(&self.inputs, i);
            let checked = crate::agent::episode::check_columns(
                &Arc::new(self.guard.checks().clone()),
                self.guard.caller(),
                self.guard.judging(),
                &prepared,
                &t,
                j as u32,
            )
            .await;
            for (kk, c) in checked.cells.into_iter().enumerate() {
                row.cells[first + kk] = c;
            }
            row.reasons
                .extend(checked.reasons.into_iter().map(|(kk, r)| (first + kk, r)));
        }
        row
    }

    /// Sample `job` through the guard.
    async fn answer(&self, job: Job) -> Sampled {
        let Job { i, j, known } = job;
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
            .run_from(
                &input.messages,
                &input.prepared,
                j as u32,
                known.map(|a| Ok(*a)),
            )
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
