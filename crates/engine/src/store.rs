//! The run store: SQLite in WAL mode, the source of truth (docs/architecture.md,
//! Architecture).
//!
//! Every sample is written with its verdicts as it completes, in batched
//! transactions from a dedicated writer thread, so a run killed at any
//! moment keeps everything committed before the kill, and a later run with
//! the same requests is served from here instead of the model (the cache is
//! keyed by provider fingerprint, messages and repetition index; a guarded
//! attempt's also by its attempt index, in `attempts.cache_key`).
//!
//! Nothing secret is stored: the configuration names the environment
//! variable that holds an API key, never the key.

use crate::settings::StoredSettings;
use probity_core::causes::Causes;
use probity_core::sequential::SequentialOutcome;
use probity_core::stats::Decision;
use probity_core::{Cell, CheckInfo, Input, ReliabilityTensor};
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use thiserror::Error;

/// Schema version, kept in `PRAGMA user_version`.
///
/// 2 added the `attempts` table (every attempt of a retry policy); 3 added
/// the `judgements` table (the judge cache); 4 added `attempts.cache_key`
/// (the output cache of attempts after the first); 6 added the `leases`
/// table (one process owns a run at a time); 7 added `runs.verdicts` (each
/// check's decision, stored when the run finishes); 8 added the `rechecks`
/// table and `runs.outputs_from` (a revalidated run's verdicts over another
/// run's outputs, not a copy of them), the `snapshots` table (a finished
/// run's tensor and error causes, so a report reads no sample but those it
/// quotes) and dropped the index of samples by cache key (outputs reused
/// from a run are found by reading that run; the random index multiplied
/// the bytes written); 9 added `runs.sequential` (a sequential run's
/// outcome, JSON). Every change is additive but that index
/// (`CREATE TABLE IF NOT EXISTS`, `ALTER TABLE … ADD COLUMN`): an older
/// store is upgraded in place when opened, and keeps every run readable.
pub const SCHEMA_VERSION: i64 = 9;

/// Rows per write transaction at most.
const BATCH: usize = 8192;

/// How long a write transaction stays open for more rows: every sample is
/// committed within this of arriving, and a fast run writes few, large
/// transactions (each commit rewrites the pages it touched).
const COMMIT_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// Operations queued for the writer at most: a run that samples faster
/// than the disk takes its rows waits, instead of growing memory.
const QUEUE: usize = 16_384;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS leases (
    run_id INTEGER PRIMARY KEY REFERENCES runs(id),
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    started_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    refreshed_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    finished_at TEXT,
    status TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    config TEXT NOT NULL,
    system TEXT NOT NULL,
    inputs INTEGER NOT NULL,
    outputs_per_input INTEGER NOT NULL,
    checks TEXT NOT NULL,
    settings TEXT NOT NULL,
    parent_run INTEGER REFERENCES runs(id),
    model_calls INTEGER NOT NULL DEFAULT 0,
    cached INTEGER NOT NULL DEFAULT 0,
    duration_s REAL
);
CREATE INDEX IF NOT EXISTS runs_by_hash ON runs(config_hash);
CREATE TABLE IF NOT EXISTS inputs (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    idx INTEGER NOT NULL,
    input_id TEXT NOT NULL,
    fields TEXT NOT NULL,
    PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS samples (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    input_idx INTEGER NOT NULL,
    repetition INTEGER NOT NULL,
    cache_key TEXT NOT NULL,
    output TEXT,
    error TEXT,
    latency_ms REAL,
    input_tokens INTEGER,
    output_tokens INTEGER,
    call_attempts INTEGER NOT NULL DEFAULT 1,
    cells BLOB NOT NULL,
    reasons TEXT,
    PRIMARY KEY (run_id, input_idx, repetition)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rechecks (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    input_idx INTEGER NOT NULL,
    repetition INTEGER NOT NULL,
    cells BLOB NOT NULL,
    reasons TEXT,
    PRIMARY KEY (run_id, input_idx, repetition)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (
    run_id INTEGER PRIMARY KEY REFERENCES runs(id),
    cells BLOB NOT NULL,
    causes TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    input_idx INTEGER NOT NULL,
    repetition INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    output TEXT,
    error TEXT,
    latency_ms REAL,
    input_tokens INTEGER,
    output_tokens INTEGER,
    call_attempts INTEGER NOT NULL DEFAULT 1,
    judge_calls INTEGER NOT NULL DEFAULT 0,
    cells BLOB NOT NULL,
    reasons TEXT,
    passed INTEGER NOT NULL,
    published INTEGER NOT NULL,
    cache_key TEXT,
    PRIMARY KEY (run_id, input_idx, repetition, attempt)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS judgements (
    cache_key TEXT PRIMARY KEY,
    verdict INTEGER NOT NULL,
    reasons TEXT NOT NULL,
    raw TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
) WITHOUT ROWID;
"#;

/// Indexes on columns added after their table: created once the column is
/// known to exist (see [`Store::open`]).
const LATE_INDEXES: &str = r#"
CREATE INDEX IF NOT EXISTS attempts_by_cache_key ON attempts(cache_key) WHERE cache_key IS NOT NULL;
DROP INDEX IF EXISTS samples_by_cache_key;
CREATE VIEW IF NOT EXISTS run_samples AS
    SELECT run_id, input_idx, repetition, cache_key, output, error, latency_ms, input_tokens,
        output_tokens, call_attempts, cells, reasons
    FROM samples
    UNION ALL
    SELECT c.run_id, c.input_idx, c.repetition, s.cache_key, s.output, s.error, s.latency_ms,
        s.input_tokens, s.output_tokens, s.call_attempts, c.cells, c.reasons
    FROM rechecks c JOIN runs r ON r.id = c.run_id
    JOIN samples s ON s.run_id = r.outputs_from AND s.input_idx = c.input_idx
        AND s.repetition = c.repetition;
"#;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("run store {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("run store {path}: written by a newer probity (schema {found}, this one knows {SCHEMA_VERSION})")]
    TooNew { path: PathBuf, found: i64 },
    #[error("run store {path}: no run {run}")]
    NoSuchRun { path: PathBuf, run: i64 },
    #[error("run store {path}: run {run} is damaged: {what}")]
    Damaged {
        path: PathBuf,
        run: i64,
        what: String,
    },
    #[error("run store {path}: the writer stopped: {what}")]
    Writer { path: PathBuf, what: String },
    /// Another live process owns the run (`--resume` twice at once).
    #[error("run store {path}: run {run} is being run by process {pid} on {host} (since {since}, last seen {seen_s:.0} s ago); wait for it to finish or stop it, then resume")]
    Leased {
        path: PathBuf,
        run: i64,
        pid: i64,
        host: String,
        since: String,
        seen_s: f64,
    },
}

/// A lease not refreshed for this long is stale: its holder is taken to be
/// gone and the run may be taken over.
pub const LEASE_STALE_S: f64 = 60.0;
/// How often a process holding a lease refreshes it.
pub const LEASE_REFRESH_S: f64 = 10.0;

fn now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// This machine's name, as leases record it.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Whether process `pid` on this machine is gone (known only where
/// `/proc` exists; elsewhere a lease goes stale by time alone).
fn process_gone(pid: i64) -> bool {
    Path::new("/proc/self").exists() && !Path::new(&format!("/proc/{pid}")).exists()
}

/// A run's header row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: i64,
    pub name: String,
    pub created_at: String,
    pub finished_at: Option<String>,
    pub status: RunStatus,
    pub config_hash: String,
    pub config: String,
    pub system: String,
    pub inputs: usize,
    pub outputs_per_input: usize,
    pub checks: Vec<CheckInfo>,
    /// The analysis settings the run was made with.
    pub settings: StoredSettings,
    pub parent_run: Option<i64>,
    /// Calls made for this run over all its sessions (to the system and
    /// to judges, retries included).
    pub model_calls: u64,
    /// Of `model_calls`, those made to judges.
    pub judge_calls: u64,
    /// Tokens reported by providers (prompt + completion), all sessions.
    pub tokens: u64,
    /// Judge calls per check, in column order (0 for validators), all
    /// sessions.
    pub judge_calls_by_check: Vec<u64>,
    /// Samples whose output was reused from run `reused_from` (no call).
    pub cached: u64,
    /// The run whose stored outputs this run reused (`probity run --reuse`).
    pub reused_from: Option<i64>,
    pub duration_s: Option<f64>,
    /// Each check's decision, in column order, as the run that wrote the
    /// last samples summarised them when it finished; `None` for a run
    /// being written, a run of `probity serve`, or one stored before
    /// schema 7 (rebuild it from its samples, `stored::load`).
    #[serde(default)]
    pub verdicts: Option<Vec<Decision>>,
    /// The run whose samples hold this run's outputs: a revalidated run's
    /// verdicts are stored over its source's outputs, never a copy. `None`:
    /// its own.
    #[serde(default)]
    pub outputs_from: Option<i64>,
    /// A sequential run's outcome (why it stopped, after how many inputs
    /// and samples, each check's confidence sequence), stored when it
    /// finishes; `None` for a fixed-size run, or one being written.
    #[serde(default)]
    pub sequential: Option<SequentialOutcome>,
}

/// A run's call counts over all its sessions.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RunTotals {
    /// Calls to the system and to judges (retries included).
    pub model_calls: u64,
    /// Of `model_calls`, those to judges.
    pub judge_calls: u64,
    /// Tokens reported (prompt + completion).
    pub tokens: u64,
    /// Judge calls per check, in column order (0 for validators).
    pub judge_calls_by_check: Vec<u64>,
}

impl std::ops::Add for RunTotals {
    type Output = RunTotals;
    fn add(self, o: RunTotals) -> RunTotals {
        let k = self
            .judge_calls_by_check
            .len()
            .max(o.judge_calls_by_check.len());
        let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
        RunTotals {
            model_calls: self.model_calls + o.model_calls,
            judge_calls: self.judge_calls + o.judge_calls,
            tokens: self.tokens + o.tokens,
            judge_calls_by_check: (0..k)
                .map(|i| at(&self.judge_calls_by_check, i) + at(&o.judge_calls_by_check, i))
                .collect(),
        }
    }
}

impl RunRecord {
    /// The counts so far.
    pub fn totals(&self) -> RunTotals {
        RunTotals {
            model_calls: self.model_calls,
            judge_calls: self.judge_calls,
            tokens: self.tokens,
            judge_calls_by_check: self.judge_calls_by_check.clone(),
        }
    }
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum RunStatus {
    /// Being written (or killed while being written: resumable).
    Running,
    /// Stopped before every sample was taken (Ctrl-C, deadline): resumable.
    Interrupted,
    Complete,
}

impl RunStatus {
    /// The stored name; a status this version does not know reads as
    /// `Running` (resumable, never complete).
    fn parse(s: &str) -> RunStatus {
        s.parse().unwrap_or(RunStatus::Running)
    }
}

/// A new run's header, before it has an id.
#[derive(Debug, Clone)]
pub struct NewRun<'a> {
    pub name: &'a str,
    pub config_hash: &'a str,
    pub config: &'a str,
    pub system: &'a str,
    pub inputs: &'a [Input],
    pub outputs_per_input: usize,
    pub checks: &'a [CheckInfo],
    pub settings: &'a StoredSettings,
    pub parent_run: Option<i64>,
    /// The run whose stored outputs this one reuses, if any.
    pub reused_from: Option<i64>,
    /// A revalidation: the run whose samples hold the outputs this run
    /// re-checks (its rows hold only verdicts).
    pub outputs_from: Option<i64>,
}

/// One stored sample and its verdicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleRow {
    pub input_idx: usize,
    pub repetition: usize,
    pub cache_key: String,
    /// The output, or `None` when the call failed.
    pub output: Option<String>,
    /// Why the call failed.
    pub error: Option<String>,
    pub latency_ms: Option<f64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub call_attempts: u32,
    /// One cell per check, in column order.
    pub cells: Vec<Cell>,
    /// Reasons for Error (and verifier) cells: `(k, reason)`.
    pub reasons: Vec<(usize, String)>,
}

impl SampleRow {
    /// Count this sample's errors into `causes`: a failed call's error, or
    /// the reasons of the checks that could not judge its output.
    pub fn note_causes(&self, causes: &mut Causes) {
        let at = (self.input_idx, self.repetition);
        match &self.error {
            Some(e) => causes.add_call_error(at, e),
            None => causes.add_output(
                at,
                self.reasons
                    .iter()
                    .filter(|(k, _)| self.cells.get(*k) == Some(&Cell::Error))
                    .map(|(k, r)| (*k, r.as_str())),
            ),
        }
    }
}

/// What the guarded measurement counts of one stored attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptCounts {
    pub input_idx: usize,
    /// 1-based.
    pub attempt: u32,
    pub published: bool,
    /// Calls made for it: to the system (retries included) and to judges.
    pub calls: u64,
    /// Tokens reported (prompt + completion).
    pub tokens: u64,
}

/// One attempt of a guarded sample (a run with a retry policy, or live
/// traffic through `probity serve`). The sample itself (`samples`) holds the
/// first attempt: the single-attempt tensor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRow {
    pub input_idx: usize,
    pub repetition: usize,
    /// 1-based.
    pub attempt: u32,
    pub output: Option<String>,
    pub error: Option<String>,
    pub latency_ms: Option<f64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub call_attempts: u32,
    pub judge_calls: u64,
    pub cells: Vec<Cell>,
    pub reasons: Vec<(usize, String)>,
    /// Passed every deciding check.
    pub passed: bool,
    /// This attempt's output was published.
    pub published: bool,
    /// The request's cache key (see `crate::cache_key::attempt_key`)
    /// when the attempt produced an output and outputs are cached; `None`
    /// for errors, live traffic and stores older than schema 4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
}

/// A successful judgement (PASS or FAIL) of a judge request, cached under
/// its key (see `crate::cache_key::judgement_key`). Failed or unreadable
/// judgements are never cached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgementRow {
    pub cache_key: String,
    pub pass: bool,
    pub reasons: Vec<String>,
    /// The judge's answer as received.
    pub raw: String,
}

/// What the writer thread writes.
enum WriteOp {
    Sample(SampleRow),
    Attempt(AttemptRow),
    Input(usize, Input),
    Judgement(JudgementRow),
    /// The run's counts so far, written with the batch (so a killed run
    /// keeps the calls it made).
    Totals(RunTotals),
    /// Answered once everything queued before it is committed.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// A cached, successful output for a cache key.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedOutput {
    pub output: String,
    pub latency_ms: Option<f64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

/// The run store.
pub struct Store {
    path: PathBuf,
    conn: Connection,
}

fn cell_byte(c: Cell) -> u8 {
    c as u8
}

fn byte_cell(b: u8) -> Cell {
    match b {
        1 => Cell::Pass,
        2 => Cell::Fail,
        3 => Cell::Error,
        _ => Cell::Missing,
    }
}

impl Store {
    /// Open (creating if needed) the store at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let conn = open_connection(path)?;
        let store = Store {
            path: path.to_path_buf(),
            conn,
        };
        let version: i64 = store
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| store.err(e))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found: version,
            });
        }
        store.conn.execute_batch(SCHEMA).map_err(|e| store.err(e))?;
        store.migrate().map_err(|e| store.err(e))?;
        store
            .conn
            .execute_batch(LATE_INDEXES)
            .map_err(|e| store.err(e))?;
        store
            .conn
            .execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
            .map_err(|e| store.err(e))?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Add the columns an older store lacks (schema 4: `attempts.cache_key`;
    /// schema 5: the runs' judge calls, tokens and the run outputs were
    /// reused from; schema 7: the runs' verdicts; schema 8: the run whose
    /// outputs a revalidated run re-checks; schema 9: a
    /// sequential run's outcome).
    fn migrate(&self) -> rusqlite::Result<()> {
        for (table, column, ty) in [
            ("attempts", "cache_key", "TEXT"),
            ("runs", "judge_calls", "INTEGER NOT NULL DEFAULT 0"),
            ("runs", "tokens", "INTEGER NOT NULL DEFAULT 0"),
            ("runs", "reused_from", "INTEGER"),
            ("runs", "judge_calls_by_check", "TEXT"),
            ("runs", "verdicts", "TEXT"),
            ("runs", "outputs_from", "INTEGER"),
            ("runs", "sequential", "TEXT"),
        ] {
            if has_column(&self.conn, table, column)? {
                continue;
            }
            match self
                .conn
                .execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {ty}"))
            {
                Ok(()) => {}
                // Another process opening the same store added it first.
                Err(_) if has_column(&self.conn, table, column)? => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Every row of `sql` with `params`, read by `row`.
    fn query_all<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, StoreError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.err(e))?;
        let rows = stmt.query_map(params, row).map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    fn err(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// Create a run and store its inputs; returns its id.
    pub fn create_run(&mut self, run: &NewRun<'_>) -> Result<i64, StoreError> {
        let path = self.path.clone();
        let err = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(err)?;
        tx.execute(
            "INSERT INTO runs (name, status, config_hash, config, system, inputs, outputs_per_input, checks, settings, parent_run, reused_from, outputs_from)
             VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                run.name,
                run.config_hash,
                run.config,
                run.system,
                run.inputs.len() as i64,
                run.outputs_per_input as i64,
                serde_json::to_string(run.checks).unwrap_or_default(),
                serde_json::to_string(run.settings).unwrap_or_default(),
                run.parent_run,
                run.reused_from,
                run.outputs_from,
            ],
        )
        .map_err(err)?;
        let id = tx.last_insert_rowid();
        // The new run is this process's from the start.
        tx.execute(
            "INSERT OR REPLACE INTO leases (run_id, pid, host, refreshed_at) VALUES (?1, ?2, ?3, ?4)",
            params![id, i64::from(std::process::id()), host_name(), now_s()],
        )
        .map_err(err)?;
        {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO inputs (run_id, idx, input_id, fields) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(err)?;
            for (idx, input) in run.inputs.iter().enumerate() {
                stmt.execute(params![
                    id,
                    idx as i64,
                    input.id,
                    serde_json::Value::Object(input.fields.clone()).to_string()
                ])
                .map_err(err)?;
            }
        }
        tx.commit().map_err(err)?;
        Ok(id)
    }

    /// Take run `run` for this process, in one transaction: refused with
    /// [`StoreError::Leased`] naming the holder when another live process
    /// holds it; a lease whose process is gone (same host) or that was not
    /// refreshed for [`LEASE_STALE_S`] is taken over.
    pub fn take_lease(&mut self, run: i64) -> Result<(), StoreError> {
        let path = self.path.clone();
        let err = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        let (me, host, now) = (i64::from(std::process::id()), host_name(), now_s());
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(err)?;
        let held: Option<(i64, String, String, f64)> = tx
            .query_row(
                "SELECT pid, host, started_at, refreshed_at FROM leases WHERE run_id = ?1",
                params![run],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()
            .map_err(err)?;
        if let Some((pid, holder, since, seen)) = held {
            let mine = pid == me && holder == host;
            let stale = now - seen > LEASE_STALE_S || (holder == host && process_gone(pid));
            if !mine && !stale {
                return Err(StoreError::Leased {
                    path: self.path.clone(),
                    run,
                    pid,
                    host: holder,
                    since,
                    seen_s: (now - seen).max(0.0),
                });
            }
        }
        tx.execute(
            "INSERT OR REPLACE INTO leases (run_id, pid, host, refreshed_at) VALUES (?1, ?2, ?3, ?4)",
            params![run, me, host, now],
        )
        .map_err(err)?;
        // Taken to be written again: its stored verdicts and snapshot would
        // go stale.
        tx.execute(
            "UPDATE runs SET verdicts = NULL, sequential = NULL WHERE id = ?1",
            params![run],
        )
        .map_err(err)?;
        tx.execute("DELETE FROM snapshots WHERE run_id = ?1", params![run])
            .map_err(err)?;
        tx.commit().map_err(err)
    }

    /// The process id holding run `run`'s lease, if any (live or not).
    pub fn lease_holder(&self, run: i64) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row(
                "SELECT pid FROM leases WHERE run_id = ?1",
                params![run],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Refresh this process's lease on `run` (still alive).
    pub fn refresh_lease(&self, run: i64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE leases SET refreshed_at = ?2 WHERE run_id = ?1 AND pid = ?3",
                params![run, now_s(), i64::from(std::process::id())],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Give up this process's lease on `run`.
    pub fn release_lease(&self, run: i64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "DELETE FROM leases WHERE run_id = ?1 AND pid = ?2",
                params![run, i64::from(std::process::id())],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// The most recent unfinished run with this configuration hash.
    pub fn resumable_run(&self, config_hash: &str) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row(
                "SELECT id FROM runs WHERE config_hash = ?1 AND status != 'complete' ORDER BY id DESC LIMIT 1",
                params![config_hash],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Mark a run finished (or interrupted): its counts over all sessions
    /// (`totals`), this session's reused samples and duration, which
    /// add to the earlier sessions', and each check's decision over every
    /// stored sample (`verdicts`, in column order; `None` leaves none, and
    /// `probity runs` rebuilds them from the samples).
    pub fn finish_run(
        &self,
        run: i64,
        status: RunStatus,
        totals: RunTotals,
        cached: u64,
        duration_s: f64,
        verdicts: Option<&[Decision]>,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET status = ?2, finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now'),
                 model_calls = ?3, judge_calls = ?4, tokens = ?5, cached = cached + ?6,
                 duration_s = COALESCE(duration_s, 0) + ?7, judge_calls_by_check = ?8,
                 verdicts = ?9
                 WHERE id = ?1",
                params![
                    run,
                    <&str>::from(status),
                    totals.model_calls as i64,
                    totals.judge_calls as i64,
                    totals.tokens as i64,
                    cached as i64,
                    duration_s,
                    serde_json::to_string(&totals.judge_calls_by_check).unwrap_or_default(),
                    verdicts.and_then(|v| serde_json::to_string(v).ok())
                ],
            )
            .map_err(|e| self.err(e))?;
        // Finished or interrupted, the run is no longer this process's.
        self.release_lease(run)
    }

    /// Store a sequential run's outcome with it (when it finishes).
    pub fn set_sequential(&self, run: i64, outcome: &SequentialOutcome) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET sequential = ?2 WHERE id = ?1",
                params![run, serde_json::to_string(outcome).ok()],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Every run, newest first, optionally only those whose name contains
    /// `name`.
    pub fn runs(&self, name: Option<&str>) -> Result<Vec<RunRecord>, StoreError> {
        self.query_all(
            &format!("{RUN_COLUMNS} WHERE (?1 IS NULL OR instr(name, ?1) > 0) ORDER BY id DESC"),
            params![name],
            run_from_row,
        )
    }

    /// One run's header.
    pub fn run(&self, run: i64) -> Result<RunRecord, StoreError> {
        self.conn
            .query_row(
                &format!("{RUN_COLUMNS} WHERE id = ?1"),
                params![run],
                run_from_row,
            )
            .optional()
            .map_err(|e| self.err(e))?
            .ok_or(StoreError::NoSuchRun {
                path: self.path.clone(),
                run,
            })
    }

    /// The latest run whose name is exactly `name`.
    pub fn latest_named(&self, name: &str) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row(
                "SELECT id FROM runs WHERE name = ?1 ORDER BY id DESC LIMIT 1",
                params![name],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// A run's inputs, in index order.
    pub fn inputs(&self, run: i64) -> Result<Vec<Input>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT input_id, fields FROM inputs WHERE run_id = ?1 ORDER BY idx")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![run], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (id, fields) = row.map_err(|e| self.err(e))?;
            let fields = match serde_json::from_str(&fields) {
                Ok(serde_json::Value::Object(m)) => m,
                _ => {
                    return Err(StoreError::Damaged {
                        path: self.path.clone(),
                        run,
                        what: format!("fields of input {id:?} are not a JSON object"),
                    })
                }
            };
            out.push(Input { id, fields });
        }
        Ok(out)
    }

    /// A run's stored samples, in `(input, repetition)` order.
    pub fn samples(&self, run: i64) -> Result<Vec<SampleRow>, StoreError> {
        self.query_all(
            &format!("{SAMPLE_COLUMNS} WHERE run_id = ?1 ORDER BY input_idx, repetition"),
            params![run],
            sample_from_row,
        )
    }

    /// Run `run`'s samples of the inputs in `inputs`, in `(input,
    /// repetition)` order: a run read a slice at a time.
    pub fn samples_of_inputs(
        &self,
        run: i64,
        inputs: std::ops::Range<usize>,
    ) -> Result<Vec<SampleRow>, StoreError> {
        self.query_all(
            &format!(
                "{SAMPLE_COLUMNS} WHERE run_id = ?1 AND input_idx >= ?2 AND input_idx < ?3
                 ORDER BY input_idx, repetition"
            ),
            params![run, inputs.start as i64, inputs.end as i64],
            sample_from_row,
        )
    }

    /// How many samples run `run` holds.
    pub fn sample_count(&self, run: i64) -> Result<usize, StoreError> {
        self.conn
            .query_row(
                "SELECT (SELECT COUNT(*) FROM samples WHERE run_id = ?1)
                    + (SELECT COUNT(*) FROM rechecks WHERE run_id = ?1)",
                params![run],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as usize)
            .map_err(|e| self.err(e))
    }

    /// The samples of run `run` at the `(input, repetition)` cells `at`,
    /// in the order asked (once each; a cell with no sample is left out):
    /// the few outputs a report quotes, without reading the others.
    pub fn samples_at(
        &self,
        run: i64,
        at: &[(usize, usize)],
    ) -> Result<Vec<SampleRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "{SAMPLE_COLUMNS} WHERE run_id = ?1 AND input_idx = ?2 AND repetition = ?3"
            ))
            .map_err(|e| self.err(e))?;
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for &(i, j) in at {
            if !seen.insert((i, j)) {
                continue;
            }
            if let Some(row) = stmt
                .query_row(params![run, i as i64, j as i64], sample_from_row)
                .optional()
                .map_err(|e| self.err(e))?
            {
                out.push(row);
            }
        }
        Ok(out)
    }

    /// Visit run `run`'s samples in `(input, repetition)` order as
    /// `(input, repetition, cells)`, one row in memory at a time and no
    /// output read: what the tensor is built from.
    pub fn each_sample_cells(
        &self,
        run: i64,
        mut f: impl FnMut(usize, usize, &[Cell]),
    ) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT input_idx, repetition, cells FROM samples WHERE run_id = ?1
                 UNION ALL SELECT input_idx, repetition, cells FROM rechecks WHERE run_id = ?1
                 ORDER BY 1, 2",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query(params![run]).map_err(|e| self.err(e))?;
        let mut cells = Vec::new();
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let (i, j) = (
                r.get::<_, i64>(0).map_err(|e| self.err(e))? as usize,
                r.get::<_, i64>(1).map_err(|e| self.err(e))? as usize,
            );
            let bytes = r
                .get_ref(2)
                .and_then(|v| v.as_blob().map_err(Into::into))
                .map_err(|e| self.err(e))?;
            cells.clear();
            cells.extend(bytes.iter().copied().map(byte_cell));
            f(i, j, &cells);
        }
        Ok(())
    }

    /// The causes of run `run`'s errors over `k` checks, counted from every
    /// stored sample ([`SampleRow::note_causes`]) one row at a time, no
    /// output read (unsorted: see [`Causes::sorted`]).
    pub fn causes(&self, run: i64, k: usize) -> Result<Causes, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT input_idx, repetition, error, cells, reasons FROM run_samples WHERE run_id = ?1
                 ORDER BY input_idx, repetition",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![run], |r| {
                let cells: Vec<u8> = r.get(3)?;
                let reasons: Option<String> = r.get(4)?;
                Ok(SampleRow {
                    input_idx: r.get::<_, i64>(0)? as usize,
                    repetition: r.get::<_, i64>(1)? as usize,
                    cache_key: String::new(),
                    output: None,
                    error: r.get(2)?,
                    latency_ms: None,
                    input_tokens: None,
                    output_tokens: None,
                    call_attempts: 0,
                    cells: cells.into_iter().map(byte_cell).collect(),
                    reasons: reasons
                        .and_then(|s| serde_json::from_str(&s).ok())
                        .unwrap_or_default(),
                })
            })
            .map_err(|e| self.err(e))?;
        let mut causes = Causes::new(k);
        for row in rows {
            row.map_err(|e| self.err(e))?.note_causes(&mut causes);
        }
        Ok(causes)
    }

    /// A run's stored attempts, in `(input, repetition, attempt)` order
    /// (empty for a run without a retry policy).
    pub fn attempts(&self, run: i64) -> Result<Vec<AttemptRow>, StoreError> {
        self.query_all(
            "SELECT input_idx, repetition, attempt, output, error, latency_ms, input_tokens, output_tokens,
                        call_attempts, judge_calls, cells, reasons, passed, published, cache_key
                 FROM attempts WHERE run_id = ?1 ORDER BY input_idx, repetition, attempt",
            params![run],
            |r| {
                let cells: Vec<u8> = r.get(10)?;
                let reasons: Option<String> = r.get(11)?;
                Ok(AttemptRow {
                    input_idx: r.get::<_, i64>(0)? as usize,
                    repetition: r.get::<_, i64>(1)? as usize,
                    attempt: r.get::<_, i64>(2)? as u32,
                    output: r.get(3)?,
                    error: r.get(4)?,
                    latency_ms: r.get(5)?,
                    input_tokens: r.get::<_, Option<i64>>(6)?.map(|v| v as u64),
                    output_tokens: r.get::<_, Option<i64>>(7)?.map(|v| v as u64),
                    call_attempts: r.get::<_, i64>(8)? as u32,
                    judge_calls: r.get::<_, i64>(9)? as u64,
                    cells: cells.into_iter().map(byte_cell).collect(),
                    reasons: reasons
                        .and_then(|s| serde_json::from_str(&s).ok())
                        .unwrap_or_default(),
                    passed: r.get(12)?,
                    published: r.get(13)?,
                    cache_key: r.get(14)?,
                })
            },
        )
    }

    /// Visit run `run`'s attempts in `(input, repetition, attempt)` order as
    /// [`AttemptCounts`], one row in memory at a time and no output read:
    /// what the guarded system's measurement is built from.
    pub fn each_attempt_counts(
        &self,
        run: i64,
        mut f: impl FnMut(AttemptCounts),
    ) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT input_idx, attempt, published, call_attempts, judge_calls,
                    COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0)
                 FROM attempts WHERE run_id = ?1 ORDER BY input_idx, repetition, attempt",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query(params![run]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let read = || -> rusqlite::Result<AttemptCounts> {
                Ok(AttemptCounts {
                    input_idx: r.get::<_, i64>(0)? as usize,
                    attempt: r.get::<_, i64>(1)? as u32,
                    published: r.get(2)?,
                    calls: r.get::<_, i64>(3)? as u64 + r.get::<_, i64>(4)? as u64,
                    tokens: r.get::<_, i64>(5)? as u64,
                })
            };
            f(read().map_err(|e| self.err(e))?);
        }
        Ok(())
    }

    /// The successful outputs of run `from` stored under any of `keys`
    /// (the first for a key), read in one pass over that run's samples.
    pub fn cached_outputs(
        &self,
        from: i64,
        keys: &[String],
    ) -> Result<HashMap<String, CachedOutput>, StoreError> {
        let wanted: std::collections::HashSet<&str> = keys.iter().map(String::as_str).collect();
        let mut stmt = self
            .conn
            .prepare(
                "SELECT cache_key, output, latency_ms, input_tokens, output_tokens FROM run_samples
                 WHERE run_id = ?1 AND error IS NULL AND output IS NOT NULL",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = stmt.query(params![from]).map_err(|e| self.err(e))?;
        let mut out = HashMap::new();
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let key = r
                .get_ref(0)
                .and_then(|v| v.as_str().map_err(Into::into))
                .map_err(|e| self.err(e))?;
            if !wanted.contains(key) || out.contains_key(key) {
                continue;
            }
            let read = || -> rusqlite::Result<CachedOutput> {
                Ok(CachedOutput {
                    output: r.get(1)?,
                    latency_ms: r.get(2)?,
                    input_tokens: r.get::<_, Option<i64>>(3)?.map(|v| v as u64),
                    output_tokens: r.get::<_, Option<i64>>(4)?.map(|v| v as u64),
                })
            };
            let hit = read().map_err(|e| self.err(e))?;
            out.insert(key.to_string(), hit);
        }
        Ok(out)
    }

    /// Keep a finished run's tensor and error causes, so its report reads
    /// no sample but those it quotes (dropped when the run is taken to be
    /// written again, [`Store::take_lease`]).
    pub fn put_snapshot(
        &self,
        run: i64,
        tensor: &ReliabilityTensor,
        causes: &Causes,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO snapshots (run_id, cells, causes) VALUES (?1, ?2, ?3)",
                params![
                    run,
                    tensor.packed(),
                    serde_json::to_string(causes).unwrap_or_default()
                ],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Run `run`'s snapshot: its tensor of shape `(n, m, k)` and its
    /// causes; `None` when it has none (being written, or stored before
    /// schema 8) or one that does not fit the shape.
    pub fn snapshot(
        &self,
        run: i64,
        (n, m, k): (usize, usize, usize),
    ) -> Result<Option<(ReliabilityTensor, Causes)>, StoreError> {
        let row: Option<(Vec<u8>, String)> = self
            .conn
            .query_row(
                "SELECT cells, causes FROM snapshots WHERE run_id = ?1",
                params![run],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(row.and_then(|(cells, causes)| {
            let tensor = ReliabilityTensor::from_packed(n, m, k, cells).ok()?;
            let causes: Causes = serde_json::from_str(&causes).ok()?;
            (causes.checks.len() == k).then_some((tensor, causes))
        }))
    }

    /// Start the batched writer for `run` on its own thread and connection.
    /// A revalidated run's samples are written as verdicts only (`rechecks`).
    pub fn writer(&self, run: i64) -> Result<Writer, StoreError> {
        self.writer_committing_every(run, COMMIT_EVERY)
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
        let conn = open_connection(&self.path)?;
        let (tx, rx) = mpsc::sync_channel::<WriteOp>(QUEUE);
        let path = self.path.clone();
        let handle = std::thread::Builder::new()
            .name("probity-store-writer".into())
            .spawn(move || {
                write_loop(conn, run, recheck, window, rx)
                    .map_err(|source| StoreError::Sqlite { path, source })
            })
            .map_err(|e| StoreError::Writer {
                path: self.path.clone(),
                what: e.to_string(),
            })?;
        Ok(Writer {
            tx: Arc::new(Mutex::new(Some(tx))),
            handle: Mutex::new(Some(handle)),
            path: self.path.clone(),
        })
    }
}

const RUN_COLUMNS: &str =
    "SELECT id, name, created_at, finished_at, status, config_hash, config, system, inputs,
    outputs_per_input, checks, settings, parent_run, model_calls, cached, duration_s,
    judge_calls, tokens, reused_from, judge_calls_by_check, verdicts, outputs_from,
    sequential FROM runs";

/// Every run's samples: a run's own, or a revalidated run's verdicts over
/// the outputs of the run they came from (the `run_samples` view).
const SAMPLE_COLUMNS: &str =
    "SELECT input_idx, repetition, cache_key, output, error, latency_ms, input_tokens, output_tokens,
    call_attempts, cells, reasons FROM run_samples";

fn sample_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SampleRow> {
    let cells: Vec<u8> = r.get(9)?;
    let reasons: Option<String> = r.get(10)?;
    Ok(SampleRow {
        input_idx: r.get::<_, i64>(0)? as usize,
        repetition: r.get::<_, i64>(1)? as usize,
        cache_key: r.get(2)?,
        output: r.get(3)?,
        error: r.get(4)?,
        latency_ms: r.get(5)?,
        input_tokens: r.get::<_, Option<i64>>(6)?.map(|v| v as u64),
        output_tokens: r.get::<_, Option<i64>>(7)?.map(|v| v as u64),
        call_attempts: r.get::<_, i64>(8)? as u32,
        cells: cells.into_iter().map(byte_cell).collect(),
        reasons: reasons
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default(),
    })
}

fn run_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRecord> {
    let checks: String = r.get(10)?;
    let settings: String = r.get(11)?;
    Ok(RunRecord {
        id: r.get(0)?,
        name: r.get(1)?,
        created_at: r.get(2)?,
        finished_at: r.get(3)?,
        status: RunStatus::parse(&r.get::<_, String>(4)?),
        config_hash: r.get(5)?,
        config: r.get(6)?,
        system: r.get(7)?,
        inputs: r.get::<_, i64>(8)? as usize,
        outputs_per_input: r.get::<_, i64>(9)? as usize,
        checks: serde_json::from_str(&checks).unwrap_or_default(),
        // A settings column this version cannot read (none has been
        // written so far) is analysed with the defaults.
        settings: serde_json::from_str(&settings).unwrap_or_default(),
        parent_run: r.get(12)?,
        model_calls: r.get::<_, i64>(13)? as u64,
        cached: r.get::<_, i64>(14)? as u64,
        duration_s: r.get(15)?,
        judge_calls: r.get::<_, i64>(16)? as u64,
        tokens: r.get::<_, i64>(17)? as u64,
        reused_from: r.get(18)?,
        judge_calls_by_check: r
            .get::<_, Option<String>>(19)?
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default(),
        // Unreadable (a decision this version does not know) reads as none.
        verdicts: r
            .get::<_, Option<String>>(20)?
            .and_then(|s| serde_json::from_str(&s).ok()),
        outputs_from: r.get(21)?,
        sequential: r
            .get::<_, Option<String>>(22)?
            .and_then(|s| serde_json::from_str(&s).ok()),
    })
}

fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({table})"))?;
    let names = stmt.query_map([], |r| r.get::<_, String>(1))?;
    for name in names {
        if name? == column {
            return Ok(true);
        }
    }
    Ok(false)
}

fn open_connection(path: &Path) -> Result<Connection, StoreError> {
    let err = |source| StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Writer {
            path: path.to_path_buf(),
            what: format!("cannot create {}: {e}", dir.display()),
        })?;
    }
    let conn = Connection::open(path).map_err(err)?;
    // WAL: readers never block the writer; NORMAL sync: a committed
    // transaction survives the process being killed (not a power cut).
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;",
    )
    .map_err(err)?;
    Ok(conn)
}

/// The writer thread: every queued operation, in transactions of up to
/// [`BATCH`] rows that stay open for at most `window` (a flush commits at
/// once). A revalidated run's (`recheck`) samples go to `rechecks`,
/// verdicts only. Inputs added as they come (live traffic) raise the
/// run's input count in the same transaction. The run's lease is
/// refreshed from here every [`LEASE_REFRESH_S`], busy or idle, so a
/// process whose only writes are this thread's (`probity serve`) keeps
/// its lease without touching the store from anywhere else.
fn write_loop(
    mut conn: Connection,
    run: i64,
    recheck: bool,
    window: std::time::Duration,
    rx: mpsc::Receiver<WriteOp>,
) -> rusqlite::Result<u64> {
    let refresh_every = std::time::Duration::from_secs_f64(LEASE_REFRESH_S);
    let mut refreshed = std::time::Instant::now();
    let mut written = 0;
    loop {
        if refreshed.elapsed() >= refresh_every {
            refresh_lease_on(&conn, run)?;
            refreshed = std::time::Instant::now();
        }
        let first = match rx.recv_timeout(refresh_every.saturating_sub(refreshed.elapsed())) {
            Ok(op) => op,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let deadline = std::time::Instant::now() + window;
        let mut acks = Vec::new();
        let tx = conn.transaction()?;
        {
            let mut attempt_stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO attempts (run_id, input_idx, repetition, attempt, output, error, latency_ms,
                    input_tokens, output_tokens, call_attempts, judge_calls, cells, reasons, passed, published, cache_key)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
            )?;
            let mut input_stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO inputs (run_id, idx, input_id, fields) VALUES (?1, ?2, ?3, ?4)",
            )?;
            let mut sample_stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO samples (run_id, input_idx, repetition, cache_key, output, error, latency_ms,
                    input_tokens, output_tokens, call_attempts, cells, reasons)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )?;
            let mut recheck_stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO rechecks (run_id, input_idx, repetition, cells, reasons)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            let mut judgement_stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO judgements (cache_key, verdict, reasons, raw) VALUES (?1, ?2, ?3, ?4)",
            )?;
            let mut op = Some(first);
            let mut n = 0;
            let mut totals = None;
            let mut inputs_seen: Option<usize> = None;
            while let Some(next) = op.take() {
                match next {
                    WriteOp::Totals(t) => totals = Some(t),
                    WriteOp::Flush(ack) => {
                        acks.push(ack);
                        // Answered once committed: commit now.
                        break;
                    }
                    WriteOp::Judgement(j) => {
                        judgement_stmt.execute(params![
                            j.cache_key,
                            j.pass,
                            serde_json::to_string(&j.reasons).unwrap_or_default(),
                            j.raw,
                        ])?;
                        n += 1;
                    }
                    WriteOp::Attempt(a) => {
                        let cells: Vec<u8> = a.cells.iter().map(|&c| cell_byte(c)).collect();
                        let reasons = (!a.reasons.is_empty())
                            .then(|| serde_json::to_string(&a.reasons).unwrap_or_default());
                        attempt_stmt.execute(params![
                            run,
                            a.input_idx as i64,
                            a.repetition as i64,
                            a.attempt as i64,
                            a.output,
                            a.error,
                            a.latency_ms,
                            a.input_tokens.map(|v| v as i64),
                            a.output_tokens.map(|v| v as i64),
                            a.call_attempts as i64,
                            a.judge_calls as i64,
                            cells,
                            reasons,
                            a.passed,
                            a.published,
                            // Only an output is cached: errors are asked again.
                            a.cache_key.as_ref().filter(|_| a.output.is_some()),
                        ])?;
                        n += 1;
                    }
                    WriteOp::Input(idx, input) => {
                        inputs_seen = inputs_seen.max(Some(idx + 1));
                        input_stmt.execute(params![
                            run,
                            idx as i64,
                            input.id,
                            serde_json::Value::Object(input.fields).to_string()
                        ])?;
                        n += 1;
                    }
                    WriteOp::Sample(s) => {
                        let cells: Vec<u8> = s.cells.iter().map(|&c| cell_byte(c)).collect();
                        let reasons = (!s.reasons.is_empty())
                            .then(|| serde_json::to_string(&s.reasons).unwrap_or_default());
                        if recheck {
                            recheck_stmt.execute(params![
                                run,
                                s.input_idx as i64,
                                s.repetition as i64,
                                cells,
                                reasons,
                            ])?;
                        } else {
                            sample_stmt.execute(params![
                                run,
                                s.input_idx as i64,
                                s.repetition as i64,
                                s.cache_key,
                                s.output,
                                s.error,
                                s.latency_ms,
                                s.input_tokens.map(|v| v as i64),
                                s.output_tokens.map(|v| v as i64),
                                s.call_attempts as i64,
                                cells,
                                reasons,
                            ])?;
                        }
                        n += 1;
                    }
                }
                if n < BATCH {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    op = rx.recv_timeout(left).ok();
                }
            }
            written += n as u64;
            if let Some(seen) = inputs_seen {
                tx.execute(
                    "UPDATE runs SET inputs = MAX(inputs, ?2) WHERE id = ?1",
                    params![run, seen as i64],
                )?;
            }
            if let Some(t) = totals {
                tx.execute(
                    "UPDATE runs SET model_calls = ?2, judge_calls = ?3, tokens = ?4,
                     judge_calls_by_check = ?5 WHERE id = ?1",
                    params![
                        run,
                        t.model_calls as i64,
                        t.judge_calls as i64,
                        t.tokens as i64,
                        serde_json::to_string(&t.judge_calls_by_check).unwrap_or_default()
                    ],
                )?;
            }
        }
        tx.commit()?;
        for ack in acks {
            let _ = ack.send(());
        }
    }
    Ok(written)
}

/// Refresh this process's lease on `run` on `conn` (the writer's own
/// connection).
fn refresh_lease_on(conn: &Connection, run: i64) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE leases SET refreshed_at = ?2 WHERE run_id = ?1 AND pid = ?3 AND host = ?4",
        params![run, now_s(), i64::from(std::process::id()), host_name()],
    )
    .map(|_| ())
}

/// The sending side of the batched writer. Dropping it (or calling
/// [`Writer::finish`]) flushes everything sent.
pub struct Writer {
    /// Shared with [`JudgementSink`]s; taken when the writer stops, so no
    /// clone keeps the thread alive.
    tx: Arc<Mutex<Option<mpsc::SyncSender<WriteOp>>>>,
    handle: Mutex<Option<JoinHandle<Result<u64, StoreError>>>>,
    path: PathBuf,
}

impl Writer {
    /// Queue the run's counts so far (written with the next batch).
    pub fn send_totals(&self, totals: RunTotals) -> Result<(), StoreError> {
        self.op(WriteOp::Totals(totals))
    }

    /// Queue one sample for writing.
    pub fn send(&self, row: SampleRow) -> Result<(), StoreError> {
        self.op(WriteOp::Sample(row))
    }

    /// Queue one attempt of a guarded sample for writing.
    pub fn send_attempt(&self, row: AttemptRow) -> Result<(), StoreError> {
        self.op(WriteOp::Attempt(row))
    }

    /// Queue one input for writing (live traffic adds inputs as they come).
    pub fn send_input(&self, idx: usize, input: Input) -> Result<(), StoreError> {
        self.op(WriteOp::Input(idx, input))
    }

    /// Queue one judgement for the judge cache.
    pub fn send_judgement(&self, row: JudgementRow) -> Result<(), StoreError> {
        self.op(WriteOp::Judgement(row))
    }

    /// Resolves once everything queued so far is committed (at once, with
    /// an error, when the writer has stopped).
    pub fn flushed(&self) -> tokio::sync::oneshot::Receiver<()> {
        let (ack, done) = tokio::sync::oneshot::channel();
        let _ = send(&self.tx, WriteOp::Flush(ack));
        done
    }

    /// A handle that queues judgements on this writer (the judge cache's
    /// writes go through the same batched transactions as the samples).
    /// Judgements sent after the writer stopped are dropped.
    pub fn judgement_sink(&self) -> JudgementSink {
        JudgementSink {
            tx: self.tx.clone(),
        }
    }

    fn op(&self, op: WriteOp) -> Result<(), StoreError> {
        send(&self.tx, op).ok_or_else(|| StoreError::Writer {
            path: self.path.clone(),
            what: "the writer thread has stopped (see the error it reported)".into(),
        })
    }

    /// Flush and stop; returns how many samples were written.
    pub fn finish(self) -> Result<u64, StoreError> {
        self.stop()
    }

    /// Flush and stop through a shared reference (a writer held by shared
    /// state); later sends fail. Returns how many rows were written, 0 when
    /// already stopped.
    pub fn close(&self) -> Result<u64, StoreError> {
        self.stop()
    }

    fn stop(&self) -> Result<u64, StoreError> {
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        let handle = self.handle.lock().ok().and_then(|mut h| h.take());
        match handle {
            Some(h) => h.join().unwrap_or_else(|_| {
                Err(StoreError::Writer {
                    path: self.path.clone(),
                    what: "the writer thread panicked".into(),
                })
            }),
            None => Ok(0),
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

fn send(tx: &Mutex<Option<mpsc::SyncSender<WriteOp>>>, op: WriteOp) -> Option<()> {
    tx.lock().ok()?.as_ref()?.send(op).ok()
}

/// Queues judgements on a [`Writer`] (see [`Writer::judgement_sink`]).
#[derive(Clone)]
pub struct JudgementSink {
    tx: Arc<Mutex<Option<mpsc::SyncSender<WriteOp>>>>,
}

impl JudgementSink {
    /// Queue `row`; `false` when the writer has stopped.
    pub fn send(&self, row: JudgementRow) -> bool {
        send(&self.tx, WriteOp::Judgement(row)).is_some()
    }
}

/// Where judges' successful judgements are kept and looked up (the judge
/// cache). A lookup that fails is a miss: the judge is called.
pub trait JudgementCache: Send + Sync {
    fn get(&self, key: &str) -> Option<JudgementRow>;
    fn put(&self, row: JudgementRow);
}

/// A judge cache in memory (library use, tests).
#[derive(Debug, Default)]
pub struct MemoryJudgements {
    rows: Mutex<HashMap<String, JudgementRow>>,
}

impl JudgementCache for MemoryJudgements {
    fn get(&self, key: &str) -> Option<JudgementRow> {
        self.rows.lock().ok()?.get(key).cloned()
    }

    fn put(&self, row: JudgementRow) {
        if let Ok(mut rows) = self.rows.lock() {
            rows.insert(row.cache_key.clone(), row);
        }
    }
}

/// The judge cache in the run store: lookups on a connection of its own,
/// writes queued on the run's batched writer (so a judgement is as durable
/// as the sample it belongs to, and written in the same transactions).
/// Judgements written by this process are also kept in memory until the
/// writer has committed them.
pub struct StoreJudgements {
    conn: Mutex<Connection>,
    sink: Option<JudgementSink>,
    recent: MemoryJudgements,
}

impl Store {
    /// The judge cache of this store; `sink` (a writer's) to keep new
    /// judgements, `None` to only read.
    pub fn judgements(&self, sink: Option<JudgementSink>) -> Result<StoreJudgements, StoreError> {
        Ok(StoreJudgements {
            conn: Mutex::new(open_connection(&self.path)?),
            sink,
            recent: MemoryJudgements::default(),
        })
    }

    /// A cached judgement, if any.
    pub fn judgement(&self, key: &str) -> Result<Option<JudgementRow>, StoreError> {
        lookup_judgement(&self.conn, key).map_err(|e| self.err(e))
    }

    /// How many judgements the cache holds.
    pub fn judgement_count(&self) -> Result<u64, StoreError> {
        self.conn
            .query_row("SELECT COUNT(*) FROM judgements", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }

    /// Mark runs named `name` still marked running whose writer is gone as
    /// interrupted, except `keep`; returns how many. A writer is gone when
    /// its run has no lease, when the lease was not refreshed for
    /// [`LEASE_STALE_S`], or when its process no longer exists on this
    /// host. Runs whose lease is alive — another `probity serve` replica
    /// recording the same configuration — are left running.
    pub fn interrupt_abandoned(&self, name: &str, keep: Option<i64>) -> Result<usize, StoreError> {
        self.interrupt_abandoned_named(Some(name), keep)
    }

    /// [`Store::interrupt_abandoned`] for every run, whatever its name: a
    /// `probity run` or `probity revalidate` killed outright (`kill -9`, a
    /// crash) reads as interrupted once its process is gone, instead of
    /// running for ever. A run marked so can still be resumed
    /// (`--resume` takes any unfinished run).
    pub fn interrupt_all_abandoned(&self) -> Result<usize, StoreError> {
        self.interrupt_abandoned_named(None, None)
    }

    /// Runs still marked running whose writer is gone, named `name` (any
    /// name: `None`), except `keep`, marked interrupted; how many.
    fn interrupt_abandoned_named(
        &self,
        name: Option<&str>,
        keep: Option<i64>,
    ) -> Result<usize, StoreError> {
        let (now, host) = (now_s(), host_name());
        // (run, lease holder's pid, host, last refresh) — no lease: None.
        type Held = (i64, Option<i64>, Option<String>, Option<f64>);
        let running: Vec<Held> = self.query_all(
            "SELECT runs.id, leases.pid, leases.host, leases.refreshed_at FROM runs
             LEFT JOIN leases ON leases.run_id = runs.id
             WHERE (?1 IS NULL OR runs.name = ?1) AND runs.status = 'running' AND (?2 IS NULL OR runs.id != ?2)",
            params![name, keep],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?;
        let mut n = 0;
        for (run, pid, holder, seen) in running {
            let gone = match (pid, holder, seen) {
                (Some(pid), Some(holder), Some(seen)) => {
                    now - seen > LEASE_STALE_S || (holder == host && process_gone(pid))
                }
                _ => true,
            };
            if gone {
                n += self
                    .conn
                    .execute(
                        "UPDATE runs SET status = 'interrupted' WHERE id = ?1 AND status = 'running'",
                        params![run],
                    )
                    .map_err(|e| self.err(e))?;
                self.conn
                    .execute("DELETE FROM leases WHERE run_id = ?1", params![run])
                    .map_err(|e| self.err(e))?;
            }
        }
        Ok(n)
    }
}

fn lookup_judgement(conn: &Connection, key: &str) -> rusqlite::Result<Option<JudgementRow>> {
    conn.prepare_cached("SELECT verdict, reasons, raw FROM judgements WHERE cache_key = ?1")?
        .query_row(params![key], |r| {
            let reasons: String = r.get(1)?;
            Ok(JudgementRow {
                cache_key: key.to_string(),
                pass: r.get::<_, i64>(0)? != 0,
                reasons: serde_json::from_str(&reasons).unwrap_or_default(),
                raw: r.get(2)?,
            })
        })
        .optional()
}

impl JudgementCache for StoreJudgements {
    fn get(&self, key: &str) -> Option<JudgementRow> {
        if let Some(row) = self.recent.get(key) {
            return Some(row);
        }
        let conn = self.conn.lock().ok()?;
        lookup_judgement(&conn, key).ok().flatten()
    }

    fn put(&self, row: JudgementRow) {
        if let Some(sink) = &self.sink {
            if sink.send(row.clone()) {
                // Only needed until the writer commits: kept bounded.
                if let Ok(mut rows) = self.recent.rows.lock() {
                    if rows.len() >= 4096 {
                        rows.clear();
                    }
                    rows.insert(row.cache_key.clone(), row);
                }
            }
        }
    }
}

/// Where the outputs of guarded attempts are looked up before the system is
/// called (the output cache of attempts; the runner finds first attempts in
/// `samples` itself). Only outputs are cached, never errors. A lookup that
/// fails is a miss: the system is called.
pub trait OutputCache: Send + Sync {
    fn get(&self, key: &str) -> Option<CachedOutput>;
    /// Keep a new output under `key`.
    fn put(&self, key: &str, output: CachedOutput);
}

/// An output cache in memory (library use, tests).
#[derive(Debug, Default)]
pub struct MemoryOutputs {
    rows: Mutex<HashMap<String, CachedOutput>>,
}

impl OutputCache for MemoryOutputs {
    fn get(&self, key: &str) -> Option<CachedOutput> {
        self.rows.lock().ok()?.get(key).cloned()
    }

    fn put(&self, key: &str, output: CachedOutput) {
        if let Ok(mut rows) = self.rows.lock() {
            rows.insert(key.to_string(), output);
        }
    }
}

/// The output cache in the run store: lookups on a connection of its own
/// in `attempts` (by `cache_key`, outputs only) and then in `samples` (a
/// first attempt's key is its sample's). New outputs are not written here:
/// the runner stores each attempt row with its key.
pub struct StoreOutputs {
    conn: Mutex<Connection>,
    /// The run whose outputs are served.
    from: i64,
}

impl Store {
    /// The outputs of run `from` (its attempts' and samples'), as a read
    /// only output cache: `probity run --reuse`.
    pub fn outputs(&self, from: i64) -> Result<StoreOutputs, StoreError> {
        Ok(StoreOutputs {
            conn: Mutex::new(open_connection(&self.path)?),
            from,
        })
    }
}

fn lookup_output(
    conn: &Connection,
    key: &str,
    from: i64,
) -> rusqlite::Result<Option<CachedOutput>> {
    let read = |r: &rusqlite::Row<'_>| {
        Ok(CachedOutput {
            output: r.get(0)?,
            latency_ms: r.get(1)?,
            input_tokens: r.get::<_, Option<i64>>(2)?.map(|v| v as u64),
            output_tokens: r.get::<_, Option<i64>>(3)?.map(|v| v as u64),
        })
    };
    let hit = conn
        .prepare_cached(
            "SELECT output, latency_ms, input_tokens, output_tokens FROM attempts
             WHERE cache_key = ?1 AND run_id = ?2 AND output IS NOT NULL LIMIT 1",
        )?
        .query_row(params![key, from], read)
        .optional()?;
    if hit.is_some() {
        return Ok(hit);
    }
    conn.prepare_cached(
        "SELECT output, latency_ms, input_tokens, output_tokens FROM samples
         WHERE cache_key = ?1 AND run_id = ?2 AND error IS NULL AND output IS NOT NULL LIMIT 1",
    )?
    .query_row(params![key, from], read)
    .optional()
}

impl OutputCache for StoreOutputs {
    fn get(&self, key: &str) -> Option<CachedOutput> {
        let conn = self.conn.lock().ok()?;
        lookup_output(&conn, key, self.from).ok().flatten()
    }

    fn put(&self, _key: &str, _output: CachedOutput) {}
}
