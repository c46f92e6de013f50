//! The judge cache and the output cache: in memory, or read from (and
//! written through) the store.

use super::error::StoreError;
use super::records::{CachedOutput, JudgementRow};
use super::sqlite::{open_connection, Store};
use super::writer::JudgementSink;
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;
use std::sync::Mutex;

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

    /// The outputs of run `from` (its attempts' and samples'), as a read
    /// only output cache: `probity run --reuse`.
    pub fn outputs(&self, from: i64) -> Result<StoreOutputs, StoreError> {
        Ok(StoreOutputs {
            conn: Mutex::new(open_connection(&self.path)?),
            from,
        })
    }
}
