//! The writer thread's transactions in SQLite: each batch in one
//! transaction of cached prepared statements (`INSERT OR REPLACE`: a row
//! written twice is stored once).

use super::claims::{finish_inputs_on, refresh_claims_on};
use super::db::{err_at, open_connection, Sqlite};
use super::lease::refresh_lease_on;
use crate::store::backend::{Batch, BatchWriter, WriterFactory, Writes};
use crate::store::error::StoreError;
use crate::store::rows::{add_by_check, cell_bytes, reasons_text, usage_plus};
use rusqlite::{params, Connection};
use std::path::PathBuf;

struct Writer {
    path: PathBuf,
    conn: Connection,
    run: i64,
    /// A revalidated run: samples go to `rechecks`, verdicts only.
    recheck: bool,
}

impl Writes for Sqlite {
    fn batch_writer(&self, run: i64, recheck: bool) -> Result<WriterFactory, StoreError> {
        Ok(factory(self.path.clone(), run, recheck))
    }
}

fn factory(path: PathBuf, run: i64, recheck: bool) -> WriterFactory {
    Box::new(move || {
        let conn = open_connection(&path)?;
        Ok(Box::new(Writer {
            path,
            conn,
            run,
            recheck,
        }) as Box<dyn BatchWriter>)
    })
}

impl Writer {
    fn write(&mut self, batch: &Batch) -> rusqlite::Result<()> {
        let run = self.run;
        // Immediate: the write lock is taken (waiting for it, up to the
        // busy timeout) at BEGIN. A deferred transaction whose first
        // statement reads (a batch of counts only: the run's row is read,
        // then updated) holds a read snapshot, and its upgrade to a write
        // fails at once with "database is locked" — without waiting — when
        // another process committed since (SQLite's BUSY_SNAPSHOT): a
        // shared run's workers ended so (bench/store.sh part 3, 6 workers).
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO inputs (run_id, idx, input_id, fields) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for (idx, input) in &batch.inputs {
                stmt.execute(params![run, *idx as i64, input.id, input.fields.as_json()])?;
            }
            if self.recheck {
                let mut stmt = tx.prepare_cached(
                    "INSERT OR REPLACE INTO rechecks (run_id, input_idx, repetition, cells, reasons)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )?;
                for s in &batch.samples {
                    stmt.execute(params![
                        run,
                        s.input_idx as i64,
                        s.repetition as i64,
                        cell_bytes(&s.cells),
                        reasons_text(&s.reasons),
                    ])?;
                }
            } else {
                let mut stmt = tx.prepare_cached(
                    "INSERT OR REPLACE INTO samples (run_id, input_idx, repetition, cache_key, output, error, latency_ms,
                        input_tokens, output_tokens, call_attempts, cells, reasons)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                )?;
                for s in &batch.samples {
                    stmt.execute(params![
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
                        cell_bytes(&s.cells),
                        reasons_text(&s.reasons),
                    ])?;
                }
            }
            let mut stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO attempts (run_id, input_idx, repetition, attempt, output, error, latency_ms,
                    input_tokens, output_tokens, call_attempts, judge_calls, cells, reasons, passed, published, cache_key)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
            )?;
            for a in &batch.attempts {
                stmt.execute(params![
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
                    cell_bytes(&a.cells),
                    reasons_text(&a.reasons),
                    a.passed,
                    a.published,
                    // Only an output is cached: errors are asked again.
                    a.cache_key.as_ref().filter(|_| a.output.is_some()),
                ])?;
            }
            let mut stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO judgements (cache_key, verdict, reasons, raw) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for j in &batch.judgements {
                stmt.execute(params![
                    j.cache_key,
                    j.pass,
                    serde_json::to_string(&j.reasons).unwrap_or_default(),
                    j.raw,
                ])?;
            }
        }
        if let Some(seen) = batch.inputs_seen() {
            tx.execute(
                "UPDATE runs SET inputs = MAX(inputs, ?2) WHERE id = ?1",
                params![run, seen as i64],
            )?;
        }
        if let Some(t) = &batch.totals {
            let (stored, usage): (Option<String>, Option<String>) = tx.query_row(
                "SELECT judge_calls_by_check, usage FROM runs WHERE id = ?1",
                params![run],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            tx.execute(
                "UPDATE runs SET model_calls = model_calls + ?2, judge_calls = judge_calls + ?3,
                 tokens = tokens + ?4, judge_calls_by_check = ?5, usage = ?6,
                 calls_ended = COALESCE(calls_ended, 0) + ?7 WHERE id = ?1",
                params![
                    run,
                    t.model_calls as i64,
                    t.judge_calls as i64,
                    t.tokens as i64,
                    add_by_check(stored, &t.judge_calls_by_check),
                    usage_plus(usage, &t.usage),
                    t.calls_ended as i64,
                ],
            )?;
        }
        finish_inputs_on(&tx, run, &batch.finished)?;
        if let Some(ttl) = batch.claims_ttl {
            refresh_claims_on(&tx, run, ttl)?;
        }
        tx.commit()
    }
}

impl BatchWriter for Writer {
    fn commit(&mut self, batch: &Batch) -> Result<(), StoreError> {
        self.write(batch).map_err(|e| err_at(&self.path, e))
    }

    fn refresh_lease(&mut self) -> Result<(), StoreError> {
        refresh_lease_on(&self.conn, self.run).map_err(|e| err_at(&self.path, e))
    }

    fn refresh_claims(&mut self, ttl: std::time::Duration) -> Result<(), StoreError> {
        refresh_claims_on(&self.conn, self.run, ttl)
            .map(|_| ())
            .map_err(|e| err_at(&self.path, e))
    }
}
