//! The SQLite schema, its version and the connection settings (WAL,
//! synchronous NORMAL, a busy timeout).

use rusqlite::Connection;

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

pub(super) const SCHEMA: &str = r#"
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
pub(super) const LATE_INDEXES: &str = r#"
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

pub(super) fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({table})"))?;
    let names = stmt.query_map([], |r| r.get::<_, String>(1))?;
    for name in names {
        if name? == column {
            return Ok(true);
        }
    }
    Ok(false)
}
