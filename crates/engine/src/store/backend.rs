//! The one interface both run stores implement (SQLite, `sqlite/`;
//! PostgreSQL, `postgres/`): [`Backend`] for what a process asks of its
//! store (one trait per job: [`Runs`], [`Samples`], [`Leases`],
//! [`Claims`], [`Caches`], [`Writes`]), [`CacheReader`] for the caches' lookups on a connection of their
//! own, and [`BatchWriter`] for the writer thread's transactions.
//!
//! The contracts are the [`Store`](super::Store) methods' (the facade
//! documents each); a backend only says how. Everything they exchange is
//! a plain record (`records`), so the engine never sees SQL.

use super::error::StoreError;
use super::records::{
    AttemptCounts, AttemptRow, CachedOutput, Existing, JudgementRow, LabelVerdict, NewRun,
    RunRecord, RunStatus, RunTotals, SampleRow, SessionCalls,
};
use probity_core::causes::Causes;
use probity_core::sequential::SequentialOutcome;
use probity_core::stats::Decision;
use probity_core::{Cell, Input, ReliabilityTensor};
use std::collections::HashMap;
use std::ops::Range;

/// A run store: every job below (see [`super::Store`] for each
/// contract). Each job is a trait of its own, implemented in the file of
/// that job (`sqlite/runs.rs`, `postgres/runs.rs`, …).
pub(crate) trait Backend: Runs + Samples + Leases + Claims + Caches + Writes + Send {}

impl<T: Runs + Samples + Leases + Claims + Caches + Writes + Send> Backend for T {}

/// Runs: created, finished, listed, read back.
pub(crate) trait Runs {
    fn create_run(&mut self, run: &NewRun<'_>) -> Result<i64, StoreError>;
    fn resumable_run(&self, config_hash: &str) -> Result<Option<i64>, StoreError>;
    fn finish_run(&self, run: i64, end: &RunEnd<'_>) -> Result<(), StoreError>;
    fn set_sequential(&self, run: i64, outcome: &SequentialOutcome) -> Result<(), StoreError>;
    fn record_calls(&self, run: i64, calls: &SessionCalls) -> Result<(), StoreError>;
    fn runs(&self, name: Option<&str>) -> Result<Vec<RunRecord>, StoreError>;
    fn run(&self, run: i64) -> Result<Option<RunRecord>, StoreError>;
    fn latest_named(&self, name: &str) -> Result<Option<i64>, StoreError>;
}

/// A run's inputs, samples, attempts and snapshot, read back.
pub(crate) trait Samples {
    fn inputs(&self, run: i64) -> Result<Vec<Input>, StoreError>;
    /// The inputs' ids only, in index order (a report's labels).
    fn input_ids(&self, run: i64) -> Result<Vec<String>, StoreError>;
    /// The inputs at indexes `at`, each with its index, in the order
    /// asked (those not stored left out).
    fn inputs_at(&self, run: i64, at: &[usize]) -> Result<Vec<(usize, Input)>, StoreError>;
    fn samples(&self, run: i64, inputs: Option<Range<usize>>)
        -> Result<Vec<SampleRow>, StoreError>;
    fn sample_count(&self, run: i64) -> Result<usize, StoreError>;
    fn samples_at(&self, run: i64, at: &[(usize, usize)]) -> Result<Vec<SampleRow>, StoreError>;
    fn each_sample_cells(
        &self,
        run: i64,
        f: &mut dyn FnMut(usize, usize, &[Cell]),
    ) -> Result<(), StoreError>;
    /// Visit every sample of `run` as [`super::rows::causes_row`] reads it
    /// (no output), in `(input, repetition)` order.
    fn each_sample_error(&self, run: i64, f: &mut dyn FnMut(&SampleRow)) -> Result<(), StoreError>;
    fn attempts(&self, run: i64) -> Result<Vec<AttemptRow>, StoreError>;
    /// Up to `limit` samples of `run` from input `from` on, in input order:
    /// `(input, the sample's cells, the final attempt's cells)` — the final
    /// attempt is the one published, or the last tried when none passed
    /// (`None`: no attempt stored).
    fn live_cells(&self, run: i64, from: usize, limit: usize)
        -> Result<Vec<LiveCells>, StoreError>;
    fn each_attempt_counts(
        &self,
        run: i64,
        f: &mut dyn FnMut(AttemptCounts),
    ) -> Result<(), StoreError>;
    fn cached_outputs(
        &self,
        from: i64,
        keys: &[String],
    ) -> Result<HashMap<String, CachedOutput>, StoreError>;
    fn put_snapshot(
        &self,
        run: i64,
        tensor: &ReliabilityTensor,
        causes: &Causes,
    ) -> Result<(), StoreError>;
    fn snapshot(&self, run: i64) -> Result<Option<(Vec<u8>, String)>, StoreError>;
}

/// Leases: one process writes a run at a time.
pub(crate) trait Leases {
    fn take_lease(&mut self, run: i64) -> Result<(), StoreError>;
    fn lease_holder(&self, run: i64) -> Result<Option<i64>, StoreError>;
    fn refresh_lease(&self, run: i64) -> Result<(), StoreError>;
    fn release_lease(&self, run: i64) -> Result<(), StoreError>;
    fn interrupt_abandoned(
        &self,
        name: Option<&str>,
        keep: Option<i64>,
    ) -> Result<usize, StoreError>;
}

/// Claims: the inputs of a shared run, worked on by many processes
/// (`probity work`).
pub(crate) trait Claims {
    /// Claim up to `count` inputs of `run` that no live worker holds and
    /// that are not marked done, for `ttl`; their indexes.
    fn claim_inputs(
        &self,
        run: i64,
        count: usize,
        ttl: std::time::Duration,
    ) -> Result<Vec<usize>, StoreError>;
    /// Extend this process's claims on `run` by `ttl`.
    fn refresh_claims(&self, run: i64, ttl: std::time::Duration) -> Result<(), StoreError>;
    /// Give this process's claims on `run` back at once, their tries
    /// unspent (a worker stopping early on purpose).
    fn release_claims(&self, run: i64) -> Result<(), StoreError>;
    /// The inputs of `run` given up: claimed [`super::CLAIM_TRIES`] times
    /// without being finished (dead letters), ascending.
    fn given_up(&self, run: i64) -> Result<Vec<usize>, StoreError>;
    /// Mark `inputs` of `run` done (every sample stored) and drop their
    /// claims.
    fn finish_inputs(&self, run: i64, inputs: &[usize]) -> Result<(), StoreError>;
    /// How many inputs of `run` are not done, and how many of those a live
    /// worker holds.
    fn open_inputs(&self, run: i64) -> Result<(usize, usize), StoreError>;
    /// The `(input, repetition)` cells of `inputs` that `run` has stored.
    fn stored_cells_of(
        &self,
        run: i64,
        inputs: &[usize],
    ) -> Result<Vec<(usize, usize)>, StoreError>;
}

/// The judge cache, the judges' verdicts on labelled pairs, and readers
/// for the caches.
pub(crate) trait Caches {
    fn judgement(&self, key: &str) -> Result<Option<JudgementRow>, StoreError>;
    fn judgement_count(&self) -> Result<u64, StoreError>;
    /// The verdicts on labelled pairs kept under any of `keys` (those
    /// found), by key.
    fn label_verdicts(&self, keys: &[String]) -> Result<HashMap<String, LabelVerdict>, StoreError>;
    /// Keep `rows` in one transaction; a key already kept stays or is
    /// replaced as `existing` says (in key order: processes keeping the
    /// same verdicts at once neither fail nor deadlock).
    fn put_label_verdicts(
        &self,
        rows: &[LabelVerdict],
        existing: Existing,
    ) -> Result<(), StoreError>;
    fn label_verdict_count(&self) -> Result<u64, StoreError>;
    /// A reader on a connection of its own (the caches look up from the
    /// workers, while the store's own connection serves the runner).
    fn reader(&self) -> Result<Box<dyn CacheReader>, StoreError>;
}

/// The writer thread's side.
pub(crate) trait Writes {
    /// What makes the writer thread's connection: called on that thread
    /// (a connection is opened where it is used).
    fn batch_writer(&self, run: i64, recheck: bool) -> Result<WriterFactory, StoreError>;
}

/// Opens a writer's connection on the writer thread.
pub(crate) type WriterFactory =
    Box<dyn FnOnce() -> Result<Box<dyn BatchWriter>, StoreError> + Send>;

/// One request of a live run: its input, its first attempt's cells, and
/// the published attempt's (none: nothing published, or no attempts).
pub(crate) type LiveCells = (usize, Vec<Cell>, Option<Vec<Cell>>);

/// How a run ends ([`super::Store::finish_run`]).
pub(crate) struct RunEnd<'a> {
    pub status: RunStatus,
    /// The run's counts over all sessions; `None`: keep those its writers
    /// added ([`Batch::totals`]).
    pub totals: Option<&'a RunTotals>,
    pub cached: u64,
    pub duration_s: f64,
    pub verdicts: Option<&'a [Decision]>,
}

/// Lookups of the judge cache and of a run's outputs.
pub(crate) trait CacheReader: Send {
    fn judgement(&mut self, key: &str) -> Result<Option<JudgementRow>, StoreError>;
    /// A successful output of run `from` stored under `key`: an attempt's,
    /// else a sample's.
    fn output(&mut self, key: &str, from: i64) -> Result<Option<CachedOutput>, StoreError>;
}

/// What the writer thread commits at once: one transaction.
#[derive(Default)]
pub(crate) struct Batch {
    pub samples: Vec<SampleRow>,
    pub attempts: Vec<AttemptRow>,
    pub inputs: Vec<(usize, Input)>,
    pub judgements: Vec<JudgementRow>,
    /// Counts to add to the run's: what this writer's session counted
    /// since its last batch (deltas add up when several processes write
    /// one run).
    pub totals: Option<RunTotals>,
    /// Inputs of a shared run whose every sample is in this batch or an
    /// earlier one: marked done in the same transaction (done means
    /// stored, and the worker never waits for the commit to say so).
    pub finished: Vec<usize>,
    /// A shared run: extend this process's claims to this long from now in
    /// the same transaction (a claim lives past its last progress).
    pub claims_ttl: Option<std::time::Duration>,
}

impl Batch {
    pub fn rows(&self) -> usize {
        self.samples.len() + self.attempts.len() + self.inputs.len() + self.judgements.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows() == 0 && self.totals.is_none() && self.finished.is_empty()
    }

    /// One past the highest input index added (live traffic raises the
    /// run's input count to it).
    pub(crate) fn inputs_seen(&self) -> Option<usize> {
        self.inputs.iter().map(|(i, _)| i + 1).max()
    }
}

/// The writer thread's side of a backend.
pub(crate) trait BatchWriter: Send {
    /// Write `batch` in one transaction (a row already stored is replaced:
    /// committing a batch twice stores it once).
    fn commit(&mut self, batch: &Batch) -> Result<(), StoreError>;
    /// Refresh this process's lease on the run.
    fn refresh_lease(&mut self) -> Result<(), StoreError>;
    /// Extend this process's claims on the run (a shared run) to `ttl`
    /// from now.
    fn refresh_claims(&mut self, ttl: std::time::Duration) -> Result<(), StoreError>;
}
