//! The SQLite schema: the baseline (schema 9) and the numbered migrations
//! after it (see [`crate::store::schema`]).

use rusqlite::Connection;

/// The baseline, schema 9: every table at once (`IF NOT EXISTS`: an older
/// store keeps its tables, and [`super::Sqlite::open`] adds the columns it
/// lacks).
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
/// known to exist (see [`super::Sqlite::open`]).
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

/// Migration 10 (with `leases.holder`, the holder's token, added when
/// missing): the claims of a shared run's inputs (`probity work`).
/// `expires_at`: seconds since the epoch by SQLite's clock; `done`: every
/// sample of the input is stored.
pub(super) const MIGRATION_10: &str = r#"
CREATE TABLE IF NOT EXISTS claims (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    input_idx INTEGER NOT NULL,
    holder TEXT,
    pid INTEGER,
    host TEXT,
    expires_at REAL,
    done INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, input_idx)
) WITHOUT ROWID;
"#;

/// Migration 11, after `runs.variant` (which variant of a variants run a
/// run is, `[[variant]]`: its tag as JSON) and `runs.variant_group` (the id
/// of the group's first run) are added: their index.
pub(super) const MIGRATION_11: &str = r#"
CREATE INDEX IF NOT EXISTS runs_by_variant_group ON runs(variant_group);
"#;

/// Migration 12: the judges' verdicts on the pairs of verifiers' labelled
/// sets (`calibration = …`), by the key of the judge's request, so a run
/// whose judge would ask the same question reads them instead of calling
/// it (`crate::checks::calibration`). `verdict`: 1 PASS, 0 FAIL; `reasons`:
/// a JSON list. Only readable verdicts are kept.
pub(super) const MIGRATION_12: &str = r#"
CREATE TABLE IF NOT EXISTS calibration_verdicts (
    cache_key TEXT PRIMARY KEY,
    verdict INTEGER NOT NULL,
    reasons TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
) WITHOUT ROWID;
"#;

/// Migration 13: the claims' tries (how often an input was claimed) and
/// dead letters (`given_up`: claimed [`crate::store::CLAIM_TRIES`] times
/// without being finished; marked done and named). SQLite has one writer
/// at a time, so its run counts stay on the run's row.
pub(super) const MIGRATION_13: &str = r#"
ALTER TABLE claims ADD COLUMN tries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE claims ADD COLUMN given_up INTEGER NOT NULL DEFAULT 0;
"#;

/// Now, in seconds since the epoch, by SQLite's clock.
pub(super) const NOW_S: &str = "((julianday('now') - 2440587.5) * 86400.0)";
