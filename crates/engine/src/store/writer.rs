//! The batched writer: one thread and connection per run being written,
//! fed through a bounded queue, committing in transactions of up to
//! [`BATCH`] rows at least every [`COMMIT_EVERY`] (or the window a live
//! run asks for).

use super::error::StoreError;
use super::lease::{refresh_lease_on, LEASE_REFRESH_S};
use super::records::{cell_byte, AttemptRow, JudgementRow, RunTotals, SampleRow};
use super::sqlite::{open_connection, Store};
use probity_core::Input;
use rusqlite::{params, Connection};
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

/// Rows per write transaction at most.
const BATCH: usize = 8192;

/// How long a write transaction stays open for more rows: every sample is
/// committed within this of arriving, and a fast run writes few, large
/// transactions (each commit rewrites the pages it touched).
const COMMIT_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// Operations queued for the writer at most: a run that samples faster
/// than the disk takes its rows waits, instead of growing memory.
const QUEUE: usize = 16_384;

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

impl Store {
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
