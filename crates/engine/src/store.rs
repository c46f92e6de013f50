//! The run store, the source of truth (docs/architecture.md, Architecture):
//! a SQLite file in WAL mode (the embedded default, `store/sqlite/`) or a
//! PostgreSQL database shared by many machines (`store/postgres/`), behind
//! one interface ([`backend::Backend`]) and one facade, [`Store`].
//!
//! Every sample is written with its verdicts as it completes, in batched
//! transactions from a dedicated writer thread, so a run killed at any
//! moment keeps everything committed before the kill, and a later run with
//! the same requests is served from here instead of the model (the cache is
//! keyed by provider fingerprint, messages and repetition index; a guarded
//! attempt's also by its attempt index, in `attempts.cache_key`).
//!
//! Nothing secret is stored: the configuration names the environment
//! variable that holds an API key, never the key; a store's password is
//! never printed ([`StoreLocation`]).

pub(crate) mod backend;
pub(crate) mod cache;
pub(crate) mod error;
pub(crate) mod identity;
pub(crate) mod lease;
pub(crate) mod location;
#[cfg(feature = "postgres")]
pub mod postgres;
pub(crate) mod records;
pub(crate) mod rows;
pub(crate) mod schema;
pub(crate) mod settings;
pub(crate) mod sqlite;
pub(crate) mod writer;

pub use cache::{
    JudgementCache, LabelVerdictCache, MemoryJudgements, MemoryLabelVerdicts, MemoryOutputs,
    OutputCache, StoreJudgements, StoreOutputs,
};
pub use error::StoreError;
pub use lease::{claim_ttl, CLAIM_TRIES, LEASE_REFRESH_S, LEASE_STALE_S};
pub use location::{masked_url, PostgresUrl, StoreLocation};
pub use records::{
    AttemptCounts, AttemptRow, AutoConcurrency, CachedOutput, Existing, JudgementRow, LabelVerdict,
    NewRun, RunCalls, RunRecord, RunStatus, RunTotals, SampleRow, SessionCalls, UpstreamNotes,
    VariantTag,
};
pub use schema::SCHEMA_VERSION;
pub use settings::StoredSettings;
pub use writer::{CallMarks, JudgementSink, LiveRecord, Writer, WriterHealth};

use backend::{Backend, RunEnd};
use probity_core::causes::Causes;
use probity_core::sequential::SequentialOutcome;
use probity_core::stats::Decision;
use probity_core::{Cell, Input, ReliabilityTensor};
use std::collections::HashMap;
use std::path::Path;

/// The run store: one connection to a SQLite file or a PostgreSQL
/// database (opened, created and migrated to [`SCHEMA_VERSION`] if
/// needed).
pub struct Store {
    location: StoreLocation,
    backend: Box<dyn Backend>,
}

impl Store {
    /// Open (creating if needed) the SQLite store at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::connect(&StoreLocation::from(path))
    }

    /// Open the store at `location`: a SQLite file (created if needed) or
    /// a PostgreSQL database (which must exist; its tables are created).
    pub fn connect(location: &StoreLocation) -> Result<Store, StoreError> {
        let backend: Box<dyn Backend> = match location {
            StoreLocation::Sqlite(path) => Box::new(sqlite::Sqlite::open(path)?),
            #[cfg(feature = "postgres")]
            StoreLocation::Postgres(url) => Box::new(postgres::Postgres::connect(url)?),
            #[cfg(not(feature = "postgres"))]
            StoreLocation::Postgres(_) => {
                return Err(StoreError::Unreachable {
                    store: location.clone(),
                    what: "this build of probity has no PostgreSQL support (build with the `postgres` feature)".into(),
                })
            }
        };
        Ok(Store {
            location: location.clone(),
            backend,
        })
    }

    /// Where this store is (its `Display` masks any password).
    pub fn location(&self) -> &StoreLocation {
        &self.location
    }

    /// Create a run and store its inputs; returns its id (unique however
    /// many processes create runs at once). The new run is this process's
    /// (its lease is taken).
    pub fn create_run(&mut self, run: &NewRun<'_>) -> Result<i64, StoreError> {
        self.backend.create_run(run)
    }

    /// The most recent unfinished run with this configuration hash.
    pub fn resumable_run(&self, config_hash: &str) -> Result<Option<i64>, StoreError> {
        self.backend.resumable_run(config_hash)
    }

    /// Mark a run finished (or interrupted): its counts over all sessions
    /// (`totals`; `None` keeps those its writers added), this session's
    /// reused samples and duration, which add to the earlier sessions', and
    /// each check's decision over every stored sample (`verdicts`, in
    /// column order; `None` leaves none, and `probity runs` rebuilds them
    /// from the samples). The run's lease is released.
    pub fn finish_run(
        &self,
        run: i64,
        status: RunStatus,
        totals: Option<RunTotals>,
        cached: u64,
        duration_s: f64,
        verdicts: Option<&[Decision]>,
    ) -> Result<(), StoreError> {
        self.backend.finish_run(
            run,
            &RunEnd {
                status,
                totals: totals.as_ref(),
                cached,
                duration_s,
                verdicts,
            },
        )
    }

    /// Add one process's calls to run `run`'s ([`RunCalls`]): its
    /// duration, its calls' time and time queued, summed; the span from
    /// the first process's start to the last's end; what it found the
    /// upstreams take. Every process of a run calls it once as it ends —
    /// a shared run's workers too, whether or not they close the run.
    pub(crate) fn record_calls(&self, run: i64, calls: &SessionCalls) -> Result<(), StoreError> {
        self.backend.record_calls(run, calls)
    }

    /// Store a sequential run's outcome with it (when it finishes).
    pub(crate) fn set_sequential(
        &self,
        run: i64,
        outcome: &SequentialOutcome,
    ) -> Result<(), StoreError> {
        self.backend.set_sequential(run, outcome)
    }

    /// Every run, newest first, optionally only those whose name contains
    /// `name`.
    pub fn runs(&self, name: Option<&str>) -> Result<Vec<RunRecord>, StoreError> {
        self.backend.runs(name)
    }

    /// One run's header.
    pub fn run(&self, run: i64) -> Result<RunRecord, StoreError> {
        self.backend.run(run)?.ok_or_else(|| StoreError::NoSuchRun {
            store: self.location.clone(),
            run,
        })
    }

    /// The latest run whose name is exactly `name`.
    pub fn latest_named(&self, name: &str) -> Result<Option<i64>, StoreError> {
        self.backend.latest_named(name)
    }

    /// A run's inputs, in index order.
    pub fn inputs(&self, run: i64) -> Result<Vec<Input>, StoreError> {
        self.backend.inputs(run)
    }

    /// A run's input ids, in index order: what a report labels inputs
    /// with, without their fields (a million inputs' fields are hundreds
    /// of megabytes).
    pub fn input_ids(&self, run: i64) -> Result<Vec<String>, StoreError> {
        self.backend.input_ids(run)
    }

    /// The inputs at indexes `at` (a report's quoted inputs), each with its
    /// index.
    pub fn inputs_at(&self, run: i64, at: &[usize]) -> Result<Vec<(usize, Input)>, StoreError> {
        self.backend.inputs_at(run, at)
    }

    /// A run's stored samples, in `(input, repetition)` order.
    pub fn samples(&self, run: i64) -> Result<Vec<SampleRow>, StoreError> {
        self.backend.samples(run, None)
    }

    /// Run `run`'s samples of the inputs in `inputs`, in `(input,
    /// repetition)` order: a run read a slice at a time.
    pub fn samples_of_inputs(
        &self,
        run: i64,
        inputs: std::ops::Range<usize>,
    ) -> Result<Vec<SampleRow>, StoreError> {
        self.backend.samples(run, Some(inputs))
    }

    /// How many samples run `run` holds (its own, or a revalidation's
    /// verdicts).
    pub fn sample_count(&self, run: i64) -> Result<usize, StoreError> {
        self.backend.sample_count(run)
    }

    /// The samples of run `run` at the `(input, repetition)` cells `at`,
    /// in the order asked (once each; a cell with no sample is left out):
    /// the few outputs a report quotes, without reading the others.
    pub fn samples_at(
        &self,
        run: i64,
        at: &[(usize, usize)],
    ) -> Result<Vec<SampleRow>, StoreError> {
        let mut seen = std::collections::HashSet::new();
        let at: Vec<(usize, usize)> = at.iter().copied().filter(|c| seen.insert(*c)).collect();
        self.backend.samples_at(run, &at)
    }

    /// Visit run `run`'s samples in `(input, repetition)` order as
    /// `(input, repetition, cells)`, one row in memory at a time and no
    /// output read: what the tensor is built from.
    pub fn each_sample_cells(
        &self,
        run: i64,
        mut f: impl FnMut(usize, usize, &[Cell]),
    ) -> Result<(), StoreError> {
        self.backend.each_sample_cells(run, &mut f)
    }

    /// The causes of run `run`'s errors over `k` checks, counted from every
    /// stored sample ([`SampleRow::note_causes`]) one row at a time, no
    /// output read (unsorted: see [`Causes::sorted`]).
    pub fn causes(&self, run: i64, k: usize) -> Result<Causes, StoreError> {
        let mut causes = Causes::new(k);
        self.backend
            .each_sample_error(run, &mut |row| row.note_causes(&mut causes))?;
        Ok(causes)
    }

    /// A run's stored attempts, in `(input, repetition, attempt)` order
    /// (empty for a run without a retry policy).
    pub fn attempts(&self, run: i64) -> Result<Vec<AttemptRow>, StoreError> {
        self.backend.attempts(run)
    }

    /// Up to `limit` requests of the live run `run` from input `from` on,
    /// in input order: each one's first-attempt cells and its final
    /// attempt's (published, or the last tried when none passed)
    /// (`probity monitor` reads a serve run's traffic as it is written).
    pub fn live_cells(
        &self,
        run: i64,
        from: usize,
        limit: usize,
    ) -> Result<Vec<backend::LiveCells>, StoreError> {
        self.backend.live_cells(run, from, limit)
    }

    /// Visit run `run`'s attempts in `(input, repetition, attempt)` order as
    /// [`AttemptCounts`], one row in memory at a time and no output read:
    /// what the guarded system's measurement is built from.
    pub(crate) fn each_attempt_counts(
        &self,
        run: i64,
        mut f: impl FnMut(AttemptCounts),
    ) -> Result<(), StoreError> {
        self.backend.each_attempt_counts(run, &mut f)
    }

    /// The successful outputs of run `from` stored under any of `keys`
    /// (the first for a key), read in one pass over that run's samples.
    pub(crate) fn cached_outputs(
        &self,
        from: i64,
        keys: &[String],
    ) -> Result<HashMap<String, CachedOutput>, StoreError> {
        self.backend.cached_outputs(from, keys)
    }

    /// Keep a finished run's tensor and error causes, so its report reads
    /// no sample but those it quotes (dropped when the run is taken to be
    /// written again, [`Store::take_lease`]).
    pub(crate) fn put_snapshot(
        &self,
        run: i64,
        tensor: &ReliabilityTensor,
        causes: &Causes,
    ) -> Result<(), StoreError> {
        self.backend.put_snapshot(run, tensor, causes)
    }

    /// Run `run`'s snapshot: its tensor of shape `(n, m, k)` and its
    /// causes; `None` when it has none (being written, or stored before
    /// schema 8) or one that does not fit the shape.
    pub fn snapshot(
        &self,
        run: i64,
        (n, m, k): (usize, usize, usize),
    ) -> Result<Option<(ReliabilityTensor, Causes)>, StoreError> {
        Ok(self.backend.snapshot(run)?.and_then(|(cells, causes)| {
            let tensor = ReliabilityTensor::from_packed(n, m, k, cells).ok()?;
            let causes: Causes = serde_json::from_str(&causes).ok()?;
            (causes.checks.len() == k).then_some((tensor, causes))
        }))
    }

    /// Take run `run` for this process, in one transaction: refused with
    /// [`StoreError::Leased`] naming the holder when another live process
    /// holds it; a lease not refreshed for [`LEASE_STALE_S`] by the
    /// store's clock (or whose process is gone, same host) is taken over.
    /// The run's stored verdicts and snapshot are dropped (it is written
    /// again).
    pub fn take_lease(&mut self, run: i64) -> Result<(), StoreError> {
        self.backend.take_lease(run)
    }

    /// The process id holding run `run`'s lease, if any (live or not).
    pub fn lease_holder(&self, run: i64) -> Result<Option<i64>, StoreError> {
        self.backend.lease_holder(run)
    }

    /// Refresh this process's lease on `run` (still alive).
    pub(crate) fn refresh_lease(&self, run: i64) -> Result<(), StoreError> {
        self.backend.refresh_lease(run)
    }

    /// Give up this process's lease on `run`.
    pub fn release_lease(&self, run: i64) -> Result<(), StoreError> {
        self.backend.release_lease(run)
    }

    /// Mark runs named `name` still marked running whose writer is gone as
    /// interrupted, except `keep`; returns how many. A writer is gone when
    /// its run has no lease, when the lease was not refreshed for
    /// [`LEASE_STALE_S`], or when its process no longer exists on this
    /// host. Runs whose lease is alive — another `probity serve` replica
    /// recording the same configuration — are left running.
    pub fn interrupt_abandoned(&self, name: &str, keep: Option<i64>) -> Result<usize, StoreError> {
        self.backend.interrupt_abandoned(Some(name), keep)
    }

    /// [`Store::interrupt_abandoned`] for every run, whatever its name: a
    /// `probity run` or `probity revalidate` killed outright (`kill -9`, a
    /// crash) reads as interrupted once its process is gone, instead of
    /// running for ever. A run marked so can still be resumed
    /// (`--resume` takes any unfinished run).
    pub fn interrupt_all_abandoned(&self) -> Result<usize, StoreError> {
        self.backend.interrupt_abandoned(None, None)
    }

    /// Claim up to `count` inputs of `run` for this process for
    /// [`claim_ttl`]: inputs not done that no live worker holds (a claim
    /// not refreshed in time is taken over by another process, never by
    /// its own holder). Inputs claimed [`CLAIM_TRIES`] times without being
    /// finished are given up instead ([`Store::given_up_inputs`]). Their
    /// indexes, ascending.
    pub fn claim_inputs(&self, run: i64, count: usize) -> Result<Vec<usize>, StoreError> {
        self.backend.claim_inputs(run, count, claim_ttl())
    }

    /// Keep this process's claims on `run` alive for another [`claim_ttl`].
    pub fn refresh_claims(&self, run: i64) -> Result<(), StoreError> {
        self.backend.refresh_claims(run, claim_ttl())
    }

    /// Mark `inputs` of `run` done: every sample of theirs is committed.
    pub fn finish_inputs(&self, run: i64, inputs: &[usize]) -> Result<(), StoreError> {
        self.backend.finish_inputs(run, inputs)
    }

    /// `(not done, of those held by a live worker)` inputs of `run`.
    pub fn open_inputs(&self, run: i64) -> Result<(usize, usize), StoreError> {
        self.backend.open_inputs(run)
    }

    /// Give up this process's claims on `run` (a worker stopping early):
    /// other workers may take them at once, and the tries they spent on
    /// them are given back.
    pub fn release_claims(&self, run: i64) -> Result<(), StoreError> {
        self.backend.release_claims(run)
    }

    /// The inputs of `run` given up as dead letters: claimed
    /// [`CLAIM_TRIES`] times and never finished (every worker that took
    /// them died), so the run went on without them. Ascending; a report
    /// names them (their cells stay missing).
    pub fn given_up_inputs(&self, run: i64) -> Result<Vec<usize>, StoreError> {
        self.backend.given_up(run)
    }

    /// The `(input, repetition)` cells of `inputs` that `run` has stored.
    pub(crate) fn stored_cells_of(
        &self,
        run: i64,
        inputs: &[usize],
    ) -> Result<Vec<(usize, usize)>, StoreError> {
        self.backend.stored_cells_of(run, inputs)
    }

    /// The judge cache of this store; `sink` (a writer's) to keep new
    /// judgements, `None` to only read.
    pub fn judgements(&self, sink: Option<JudgementSink>) -> Result<StoreJudgements, StoreError> {
        Ok(StoreJudgements::new(self.backend.reader()?, sink))
    }

    /// A cached judgement, if any.
    pub fn judgement(&self, key: &str) -> Result<Option<JudgementRow>, StoreError> {
        self.backend.judgement(key)
    }

    /// How many judgements the cache holds.
    pub fn judgement_count(&self) -> Result<u64, StoreError> {
        self.backend.judgement_count()
    }

    /// The judges' verdicts on labelled pairs kept under any of `keys`
    /// (those found), by key: the cache of `crate::checks::calibration`.
    pub fn label_verdicts(
        &self,
        keys: &[String],
    ) -> Result<HashMap<String, LabelVerdict>, StoreError> {
        if keys.is_empty() {
            return Ok(HashMap::new());
        }
        self.backend.label_verdicts(keys)
    }

    /// Keep judges' verdicts on labelled pairs, in one transaction. A key
    /// already kept stays as it was or is replaced, as `existing` says:
    /// any number of processes may keep the same verdicts at once, none
    /// fails (rows are written in key order, so two writers never wait for
    /// each other in a cycle).
    pub fn put_label_verdicts(
        &self,
        rows: &[LabelVerdict],
        existing: Existing,
    ) -> Result<(), StoreError> {
        let mut rows: Vec<&LabelVerdict> = rows.iter().collect();
        rows.sort_by(|a, b| a.cache_key.cmp(&b.cache_key));
        rows.dedup_by(|a, b| a.cache_key == b.cache_key);
        if rows.is_empty() {
            return Ok(());
        }
        let rows: Vec<LabelVerdict> = rows.into_iter().cloned().collect();
        self.backend.put_label_verdicts(&rows, existing)
    }

    /// How many verdicts on labelled pairs the store keeps.
    pub fn label_verdict_count(&self) -> Result<u64, StoreError> {
        self.backend.label_verdict_count()
    }

    /// The outputs of run `from` (its attempts' and samples'), as a read
    /// only output cache: `probity run --reuse`.
    pub fn outputs(&self, from: i64) -> Result<StoreOutputs, StoreError> {
        Ok(StoreOutputs::new(self.backend.reader()?, from))
    }

    /// Start the batched writer for `run` on its own thread and connection.
    /// A revalidated run's samples are written as verdicts only (`rechecks`).
    pub fn writer(&self, run: i64) -> Result<Writer, StoreError> {
        self.writer_committing_every(run, writer::COMMIT_EVERY)
    }

    /// [`Store::writer`] whose transactions stay open at most `window`:
    /// what a process killed outright can lose (`probity serve` keeps it
    /// short; a batch run favours fewer, larger transactions).
    pub fn writer_committing_every(
        &self,
        run: i64,
        window: std::time::Duration,
    ) -> Result<Writer, StoreError> {
        let recheck = self.run(run)?.outputs_from.is_some();
        let factory = self.backend.batch_writer(run, recheck)?;
        Writer::start(self.location.clone(), factory, window)
    }
}

/// The store's `calibration_verdicts` (schema 12), shared by every run
/// and process of the store.
impl LabelVerdictCache for Store {
    fn lookup(&mut self, keys: &[String]) -> HashMap<String, LabelVerdict> {
        self.label_verdicts(keys).unwrap_or_default()
    }

    fn keep(&mut self, rows: &[LabelVerdict]) {
        let _ = self.put_label_verdicts(rows, Existing::Stays);
    }

    fn replace(&mut self, rows: &[LabelVerdict]) {
        let _ = self.put_label_verdicts(rows, Existing::Replaced);
    }
}
