//! The writer thread's transactions in PostgreSQL: each table's rows of a
//! batch in one `INSERT … SELECT FROM UNNEST(…)` (one round trip per table,
//! not per row), replacing rows already stored, all in one transaction.
//!
//! A lost connection (the server restarted, a network blip) is opened
//! again and the same batch committed again — replacing makes that
//! harmless — for up to [`RECONNECT_FOR`]; past that, the writer stops with
//! the cause, the run stops with it, and `--resume` asks for what was not
//! stored.

use super::claims::{finish_inputs_on, refresh_claims_on};
use super::conn::{connect, connect_when_up, transient, RECONNECT_FOR};
use super::db::Postgres;
use super::lease::refresh_lease_on;
use crate::store::backend::{Batch, BatchWriter, WriterFactory, Writes};
use crate::store::error::StoreError;
use crate::store::identity::me;
use crate::store::location::{PostgresUrl, StoreLocation};
use crate::store::records::{AttemptRow, JudgementRow, RunTotals, SampleRow};
use crate::store::rows::{cell_bytes, reasons_text};
use postgres::{Client, Transaction};
use probity_core::Input;
use std::collections::HashMap;
use std::time::{Duration, Instant};

struct Writer {
    url: PostgresUrl,
    client: Client,
    run: i64,
    /// A revalidated run: samples go to `rechecks`, verdicts only.
    recheck: bool,
    /// This writer's row of `run_counts`: its process's token and a draw
    /// of its own (one process may write a run more than once).
    key: String,
    /// The counts this writer's row holds once its last batch committed.
    counted: RunTotals,
}

impl Writes for Postgres {
    fn batch_writer(&self, run: i64, recheck: bool) -> Result<WriterFactory, StoreError> {
        Ok(factory(self.url.clone(), run, recheck))
    }
}

fn factory(url: PostgresUrl, run: i64, recheck: bool) -> WriterFactory {
    Box::new(move || {
        let client = connect_when_up(&url)?;
        Ok(Box::new(Writer {
            url,
            client,
            run,
            recheck,
            key: format!("{}:{:016x}", me().token, rand::random::<u64>()),
            counted: RunTotals::default(),
        }) as Box<dyn BatchWriter>)
    })
}

/// The indexes of `rows` keeping only the last row of each key (one
/// statement may not touch a row twice).
fn last_of_each<T, K: std::hash::Hash + Eq>(rows: &[T], key: impl Fn(&T) -> K) -> Vec<usize> {
    let mut last: HashMap<K, usize> = HashMap::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        last.insert(key(r), i);
    }
    let mut keep: Vec<usize> = last.into_values().collect();
    keep.sort_unstable();
    keep
}

/// This writer's counts of its run once a batch is committed: its row of
/// `run_counts` (`writer` = `key`), which no other writer touches.
struct Counts<'a> {
    key: &'a str,
    total: RunTotals,
}

/// Commit `batch` in one transaction: its inputs, samples (or a
/// revalidation's cells), attempts and judgements, each one `INSERT …
/// SELECT FROM UNNEST`, this writer's counts, the inputs it finished and
/// its claims' new expiry.
fn write(
    c: &mut Client,
    run: i64,
    recheck: bool,
    batch: &Batch,
    counts: Option<&Counts<'_>>,
) -> Result<(), postgres::Error> {
    let mut tx = c.transaction()?;
    if !batch.inputs.is_empty() {
        write_inputs(&mut tx, run, &batch.inputs)?;
    }
    if !batch.samples.is_empty() {
        write_samples(&mut tx, run, recheck, &batch.samples)?;
    }
    if !batch.attempts.is_empty() {
        write_attempts(&mut tx, run, &batch.attempts)?;
    }
    if !batch.judgements.is_empty() {
        write_judgements(&mut tx, &batch.judgements)?;
    }
    if let Some(counts) = counts {
        write_counts(&mut tx, run, counts)?;
    }
    if !batch.finished.is_empty() {
        finish_inputs_on(&mut tx, run, &batch.finished)?;
    }
    if let Some(ttl) = batch.claims_ttl {
        refresh_claims_on(&mut tx, run, ttl)?;
    }
    tx.commit()
}

/// The batch's inputs (the last of each index), and the run's input count
/// when it grows.
fn write_inputs(
    tx: &mut Transaction<'_>,
    run: i64,
    inputs: &[(usize, Input)],
) -> Result<(), postgres::Error> {
    let keep = last_of_each(inputs, |(i, _)| *i);
    let idx: Vec<i64> = keep.iter().map(|&k| inputs[k].0 as i64).collect();
    let ids: Vec<Vec<u8>> = keep
        .iter()
        .map(|&k| inputs[k].1.id.clone().into_bytes())
        .collect();
    let fields: Vec<String> = keep
        .iter()
        .map(|&k| inputs[k].1.fields.as_json().to_string())
        .collect();
    tx.execute(
        "INSERT INTO inputs (run_id, idx, input_id, fields)
         SELECT $1, * FROM UNNEST($2::BIGINT[], $3::BYTEA[], $4::TEXT[])
         ON CONFLICT (run_id, idx) DO UPDATE SET input_id = EXCLUDED.input_id, fields = EXCLUDED.fields",
        &[&run, &idx, &ids, &fields],
    )?;
    let seen = idx.iter().max().map_or(0, |m| m + 1);
    // The run's row locked only when its count grows.
    tx.execute(
        "UPDATE runs SET inputs = $2 WHERE id = $1 AND inputs < $2",
        &[&run, &seen],
    )?;
    Ok(())
}

/// The batch's samples (the last of each cell): a run's, or a
/// revalidation's cells over its source's outputs (`recheck`).
fn write_samples(
    tx: &mut Transaction<'_>,
    run: i64,
    recheck: bool,
    samples: &[SampleRow],
) -> Result<(), postgres::Error> {
    let keep = last_of_each(samples, |s| (s.input_idx, s.repetition));
    let rows: Vec<_> = keep.iter().map(|&k| &samples[k]).collect();
    let i: Vec<i64> = rows.iter().map(|s| s.input_idx as i64).collect();
    let j: Vec<i64> = rows.iter().map(|s| s.repetition as i64).collect();
    let cells: Vec<Vec<u8>> = rows.iter().map(|s| cell_bytes(&s.cells)).collect();
    let reasons: Vec<Option<String>> = rows.iter().map(|s| reasons_text(&s.reasons)).collect();
    if recheck {
        tx.execute(
            "INSERT INTO rechecks (run_id, input_idx, repetition, cells, reasons)
             SELECT $1, * FROM UNNEST($2::BIGINT[], $3::BIGINT[], $4::BYTEA[], $5::TEXT[])
             ON CONFLICT (run_id, input_idx, repetition)
             DO UPDATE SET cells = EXCLUDED.cells, reasons = EXCLUDED.reasons",
            &[&run, &i, &j, &cells, &reasons],
        )?;
    } else {
        let key: Vec<&str> = rows.iter().map(|s| s.cache_key.as_str()).collect();
        let output: Vec<Option<&[u8]>> = rows
            .iter()
            .map(|s| s.output.as_deref().map(str::as_bytes))
            .collect();
        let error: Vec<Option<&[u8]>> = rows
            .iter()
            .map(|s| s.error.as_deref().map(str::as_bytes))
            .collect();
        let latency: Vec<Option<f64>> = rows.iter().map(|s| s.latency_ms).collect();
        let tin: Vec<Option<i64>> = rows
            .iter()
            .map(|s| s.input_tokens.map(|v| v as i64))
            .collect();
        let tout: Vec<Option<i64>> = rows
            .iter()
            .map(|s| s.output_tokens.map(|v| v as i64))
            .collect();
        let calls: Vec<i64> = rows.iter().map(|s| s.call_attempts as i64).collect();
        tx.execute(
            "INSERT INTO samples (run_id, input_idx, repetition, cache_key, output, error, latency_ms,
                input_tokens, output_tokens, call_attempts, cells, reasons)
             SELECT $1, * FROM UNNEST($2::BIGINT[], $3::BIGINT[], $4::TEXT[], $5::BYTEA[], $6::BYTEA[],
                $7::DOUBLE PRECISION[], $8::BIGINT[], $9::BIGINT[], $10::BIGINT[], $11::BYTEA[], $12::TEXT[])
             ON CONFLICT (run_id, input_idx, repetition) DO UPDATE SET cache_key = EXCLUDED.cache_key,
                output = EXCLUDED.output, error = EXCLUDED.error, latency_ms = EXCLUDED.latency_ms,
                input_tokens = EXCLUDED.input_tokens, output_tokens = EXCLUDED.output_tokens,
                call_attempts = EXCLUDED.call_attempts, cells = EXCLUDED.cells, reasons = EXCLUDED.reasons",
            &[&run, &i, &j, &key, &output, &error, &latency, &tin, &tout, &calls, &cells, &reasons],
        )?;
    }
    Ok(())
}

/// The batch's attempts of a retry policy (the last of each).
fn write_attempts(
    tx: &mut Transaction<'_>,
    run: i64,
    attempts: &[AttemptRow],
) -> Result<(), postgres::Error> {
    let keep = last_of_each(attempts, |a| (a.input_idx, a.repetition, a.attempt));
    let rows: Vec<_> = keep.iter().map(|&k| &attempts[k]).collect();
    let i: Vec<i64> = rows.iter().map(|a| a.input_idx as i64).collect();
    let j: Vec<i64> = rows.iter().map(|a| a.repetition as i64).collect();
    let n: Vec<i64> = rows.iter().map(|a| a.attempt as i64).collect();
    let output: Vec<Option<&[u8]>> = rows
        .iter()
        .map(|a| a.output.as_deref().map(str::as_bytes))
        .collect();
    let error: Vec<Option<&[u8]>> = rows
        .iter()
        .map(|a| a.error.as_deref().map(str::as_bytes))
        .collect();
    let latency: Vec<Option<f64>> = rows.iter().map(|a| a.latency_ms).collect();
    let tin: Vec<Option<i64>> = rows
        .iter()
        .map(|a| a.input_tokens.map(|v| v as i64))
        .collect();
    let tout: Vec<Option<i64>> = rows
        .iter()
        .map(|a| a.output_tokens.map(|v| v as i64))
        .collect();
    let calls: Vec<i64> = rows.iter().map(|a| a.call_attempts as i64).collect();
    let judge: Vec<i64> = rows.iter().map(|a| a.judge_calls as i64).collect();
    let cells: Vec<Vec<u8>> = rows.iter().map(|a| cell_bytes(&a.cells)).collect();
    let reasons: Vec<Option<String>> = rows.iter().map(|a| reasons_text(&a.reasons)).collect();
    let passed: Vec<bool> = rows.iter().map(|a| a.passed).collect();
    let published: Vec<bool> = rows.iter().map(|a| a.published).collect();
    // Only an output is cached: errors are asked again.
    let key: Vec<Option<&str>> = rows
        .iter()
        .map(|a| a.cache_key.as_deref().filter(|_| a.output.is_some()))
        .collect();
    tx.execute(
        "INSERT INTO attempts (run_id, input_idx, repetition, attempt, output, error, latency_ms,
            input_tokens, output_tokens, call_attempts, judge_calls, cells, reasons, passed, published, cache_key)
         SELECT $1, * FROM UNNEST($2::BIGINT[], $3::BIGINT[], $4::BIGINT[], $5::BYTEA[], $6::BYTEA[],
            $7::DOUBLE PRECISION[], $8::BIGINT[], $9::BIGINT[], $10::BIGINT[], $11::BIGINT[], $12::BYTEA[],
            $13::TEXT[], $14::BOOLEAN[], $15::BOOLEAN[], $16::TEXT[])
         ON CONFLICT (run_id, input_idx, repetition, attempt) DO UPDATE SET output = EXCLUDED.output,
            error = EXCLUDED.error, latency_ms = EXCLUDED.latency_ms, input_tokens = EXCLUDED.input_tokens,
            output_tokens = EXCLUDED.output_tokens, call_attempts = EXCLUDED.call_attempts,
            judge_calls = EXCLUDED.judge_calls, cells = EXCLUDED.cells, reasons = EXCLUDED.reasons,
            passed = EXCLUDED.passed, published = EXCLUDED.published, cache_key = EXCLUDED.cache_key",
        &[
            &run, &i, &j, &n, &output, &error, &latency, &tin, &tout, &calls, &judge, &cells,
            &reasons, &passed, &published, &key,
        ],
    )?;
    Ok(())
}

/// The batch's judgements, into the judge cache (the last of each key).
fn write_judgements(
    tx: &mut Transaction<'_>,
    judgements: &[JudgementRow],
) -> Result<(), postgres::Error> {
    let keep = last_of_each(judgements, |j| j.cache_key.clone());
    let rows: Vec<_> = keep.iter().map(|&k| &judgements[k]).collect();
    let key: Vec<&str> = rows.iter().map(|j| j.cache_key.as_str()).collect();
    let pass: Vec<bool> = rows.iter().map(|j| j.pass).collect();
    let reasons: Vec<String> = rows
        .iter()
        .map(|j| serde_json::to_string(&j.reasons).unwrap_or_default())
        .collect();
    let raw: Vec<&[u8]> = rows.iter().map(|j| j.raw.as_bytes()).collect();
    tx.execute(
        "INSERT INTO judgements (cache_key, verdict, reasons, raw)
         SELECT * FROM UNNEST($1::TEXT[], $2::BOOLEAN[], $3::TEXT[], $4::BYTEA[])
         ON CONFLICT (cache_key) DO UPDATE SET verdict = EXCLUDED.verdict,
            reasons = EXCLUDED.reasons, raw = EXCLUDED.raw",
        &[&key, &pass, &reasons, &raw],
    )?;
    Ok(())
}

/// This writer's counts of the run, on its own row of `run_counts`.
fn write_counts(
    tx: &mut Transaction<'_>,
    run: i64,
    Counts { key, total: t }: &Counts<'_>,
) -> Result<(), postgres::Error> {
    // The writer's own row: writers of one run never wait for each
    // other (the run's row, locked by each in turn while their sample
    // rows held its key-share lock, deadlocked them).
    let by_check = serde_json::to_string(&t.judge_calls_by_check).unwrap_or_default();
    let usage = serde_json::to_string(&t.usage).unwrap_or_default();
    tx.execute(
        "INSERT INTO run_counts (run_id, writer, model_calls, judge_calls, tokens, judge_calls_by_check,
            usage, calls_ended)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (run_id, writer) DO UPDATE SET model_calls = EXCLUDED.model_calls,
            judge_calls = EXCLUDED.judge_calls, tokens = EXCLUDED.tokens,
            judge_calls_by_check = EXCLUDED.judge_calls_by_check, usage = EXCLUDED.usage,
            calls_ended = EXCLUDED.calls_ended",
        &[
            &run,
            key,
            &(t.model_calls as i64),
            &(t.judge_calls as i64),
            &(t.tokens as i64),
            &by_check,
            &usage,
            &(t.calls_ended as i64),
        ],
    )?;
    Ok(())
}

impl Writer {
    /// Do `f`; on a lost connection, connect again (backing off, for up to
    /// [`RECONNECT_FOR`]) and do it again.
    fn with_retry(
        &mut self,
        mut f: impl FnMut(&mut Client) -> Result<(), postgres::Error>,
    ) -> Result<(), StoreError> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(100);
        loop {
            let e = match f(&mut self.client) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if !transient(&e) || started.elapsed() >= RECONNECT_FOR {
                return Err(StoreError::Postgres {
                    store: StoreLocation::Postgres(self.url.clone()),
                    source: e,
                });
            }
            // Until a connection is back or the time is up.
            loop {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(5));
                match connect(&self.url) {
                    Ok(c) => {
                        self.client = c;
                        break;
                    }
                    Err(e) if started.elapsed() >= RECONNECT_FOR => return Err(e),
                    Err(_) => {}
                }
            }
        }
    }
}

impl BatchWriter for Writer {
    fn commit(&mut self, batch: &Batch) -> Result<(), StoreError> {
        let (run, recheck) = (self.run, self.recheck);
        let key = self.key.clone();
        // The row's new counts, kept once committed (a batch tried again
        // writes the same values: nothing is counted twice).
        let counts = batch.totals.as_ref().map(|t| Counts {
            key: &key,
            total: self.counted.clone() + t.clone(),
        });
        self.with_retry(|c| write(c, run, recheck, batch, counts.as_ref()))?;
        if let Some(c) = counts {
            self.counted = c.total;
        }
        Ok(())
    }

    fn refresh_lease(&mut self) -> Result<(), StoreError> {
        let run = self.run;
        self.with_retry(|c| refresh_lease_on(c, run))
    }

    fn refresh_claims(&mut self, ttl: Duration) -> Result<(), StoreError> {
        let run = self.run;
        self.with_retry(|c| refresh_claims_on(c, run, ttl).map(|_| ()))
    }
}
