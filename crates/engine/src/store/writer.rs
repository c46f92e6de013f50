//! The batched writer: one thread and connection per run being written,
//! fed through a bounded queue, committing in transactions of up to
//! [`BATCH`] rows as soon as no more arrive within [`LINGER`] (group
//! commit), and at least every [`COMMIT_EVERY`] (or the window a live run
//! asks for).

use super::backend::{Batch, BatchWriter, WriterFactory};
use super::error::StoreError;
use super::lease::{claim_ttl, LEASE_REFRESH_S};
use super::location::StoreLocation;
use super::records::{AttemptRow, JudgementRow, RunTotals, SampleRow};
use probity_core::Input;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

/// Rows per write transaction at most.
const BATCH: usize = 8192;

/// How long a write transaction stays open for more rows at most, under a
/// steady stream of them: every sample is committed within this of
/// arriving, and usually within [`LINGER`] (group commit, `write_loop`).
pub(super) const COMMIT_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// How long the writer waits for the next operation before it commits
/// what it has: a sample's rows arrive back to back, well within it.
const LINGER: std::time::Duration = std::time::Duration::from_millis(2);

/// Operations queued for the writer at most: a run that samples faster
/// than the disk takes its rows waits, instead of growing memory.
const QUEUE: usize = 16_384;

/// How long a commit may be under way before the store counts as stalled
/// (slow, or reconnecting: up to a minute for PostgreSQL) and a run stops
/// starting calls whose samples could not be stored ([`WriterHealth`]).
pub const STALL: std::time::Duration = std::time::Duration::from_secs(2);

/// What the writer thread and its senders share: whether it is stuck in a
/// commit (read by a run before it starts a call, so that a store that is
/// down does not let the run keep paying for calls it may never store),
/// and, for live traffic, that a failed commit is tried again until the
/// writer is closed. Cloned freely.
#[derive(Clone)]
pub struct WriterHealth(Arc<HealthState>);

struct HealthState {
    /// When the commit under way began, in milliseconds after `epoch`
    /// plus one; 0 while none is.
    committing_since: AtomicU64,
    epoch: std::time::Instant,
    /// Live traffic: a failed commit is tried again (the store may come
    /// back) rather than stopping the writer.
    keep_trying: AtomicBool,
    /// The writer is being closed: no more trying.
    closing: AtomicBool,
    /// Why the last commit failed, while it is being tried again.
    failing: Mutex<Option<String>>,
}

impl WriterHealth {
    fn new() -> WriterHealth {
        WriterHealth(Arc::new(HealthState {
            committing_since: Default::default(),
            epoch: std::time::Instant::now(),
            keep_trying: Default::default(),
            closing: Default::default(),
            failing: Mutex::new(None),
        }))
    }

    /// Milliseconds since `epoch`, plus one (0 stands for "no commit").
    fn now(&self) -> u64 {
        self.0.epoch.elapsed().as_millis() as u64 + 1
    }

    /// A commit has been under way for longer than [`STALL`].
    pub fn stalled(&self) -> bool {
        match self.0.committing_since.load(Relaxed) {
            0 => false,
            since => self.now().saturating_sub(since) > STALL.as_millis() as u64,
        }
    }

    /// Commit `batch`, timed for [`WriterHealth::stalled`]; for live
    /// traffic, a failure is tried again (after a pause, the reason kept
    /// for the senders) until it succeeds or the writer is being closed.
    fn commit(&self, out: &mut dyn BatchWriter, batch: &Batch) -> Result<(), StoreError> {
        self.0.committing_since.store(self.now(), Relaxed);
        let mut failures: u64 = 0;
        let result = loop {
            match out.commit(batch) {
                Err(e) if self.0.keep_trying.load(Relaxed) && !self.0.closing.load(Relaxed) => {
                    failures += 1;
                    if failures.is_power_of_two() {
                        crate::stderr::line(format_args!(
                            "warning: {e} ({failures} tries so far); {} rows are held and tried again every second",
                            batch.rows()
                        ));
                    }
                    if let Ok(mut f) = self.0.failing.lock() {
                        *f = Some(e.to_string());
                    }
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
                done => break done,
            }
        };
        if failures > 0 && result.is_ok() {
            crate::stderr::line(format_args!(
                "the store took the held rows after {failures} failed tries"
            ));
        }
        if let Ok(mut f) = self.0.failing.lock() {
            *f = None;
        }
        self.0.committing_since.store(0, Relaxed);
        result
    }

    /// Why the commit under way is failing, while it is tried again.
    fn failing(&self) -> Option<String> {
        self.0.failing.lock().ok().and_then(|f| f.clone())
    }
}

/// What the writer thread writes.
enum WriteOp {
    Sample(SampleRow),
    Attempt(AttemptRow),
    Input(usize, Input),
    Judgement(JudgementRow),
    /// This session's counts so far, added to the run's with the batch (so
    /// a killed run keeps the calls it made).
    Totals(RunTotals),
    /// Answered once everything queued before it is committed.
    Flush(tokio::sync::oneshot::Sender<()>),
    /// A call about to be sent, counted in these totals ([`CallMarks`]):
    /// answered once the batch it joins is committed. Unlike a flush it
    /// does not cut the batch short: it rides with the operations arriving
    /// within the group-commit window.
    Started(RunTotals, tokio::sync::oneshot::Sender<()>),
    /// Inputs of a shared run whose every sample was queued before: marked
    /// done with the batch that commits the last of them. The first makes
    /// the writer a shared run's: it keeps this process's claims alive.
    Done(Vec<usize>),
    /// One request of live traffic whole (its input, attempts, sample and
    /// the session's counts), queued at once so it is kept or dropped
    /// whole.
    Record(Box<LiveRecord>),
}

/// One request of live traffic, as [`Writer::send_record`] queues it.
pub struct LiveRecord {
    pub input: (usize, Input),
    pub attempts: Vec<AttemptRow>,
    pub sample: SampleRow,
    pub totals: RunTotals,
}

/// The writer's queue, shared with its [`JudgementSink`]s: its sending
/// end (taken when the writer stops, so no clone keeps the thread alive)
/// and whether a full queue is waited on (a batch run: the run slows to
/// the store's pace) or refused at once (live traffic: an answer never
/// waits for the store).
struct Queue {
    tx: Option<mpsc::SyncSender<WriteOp>>,
    wait_when_full: bool,
}

/// Why an operation was not queued.
enum Unsent {
    /// The writer has stopped.
    Stopped,
    /// The queue is full and the writer does not wait.
    Full,
}

/// The writer thread: every queued operation, in batches of up to
/// [`BATCH`] rows gathered while they keep coming (each within [`LINGER`]
/// of the last) for at most `window` (a flush commits at once),
/// each committed in one transaction by the backend's [`BatchWriter`]. The
/// run's lease is refreshed from here every [`LEASE_REFRESH_S`], busy or
/// idle, so a process whose only writes are this thread's (`probity
/// serve`) keeps its lease without touching the store from anywhere else.
/// A shared run's writer (one sent [`WriteOp::Done`]) also extends this
/// process's claims, every third of [`claim_ttl`] and with every batch of
/// samples: a claim lives [`claim_ttl`] past the last progress, however
/// long the runner waits on the store.
fn write_loop(
    mut out: Box<dyn BatchWriter>,
    window: std::time::Duration,
    rx: mpsc::Receiver<WriteOp>,
    health: WriterHealth,
) -> Result<u64, StoreError> {
    let mut refresh_every = std::time::Duration::from_secs_f64(LEASE_REFRESH_S);
    let mut refreshed = std::time::Instant::now();
    let mut written = 0;
    // This session's counts already added to the run's.
    let mut added = RunTotals::default();
    // A shared run's: how long a claim lives.
    let mut claims: Option<std::time::Duration> = None;
    loop {
        if refreshed.elapsed() >= refresh_every {
            out.refresh_lease()?;
            if let Some(ttl) = claims {
                // Best effort: the runner refreshes them too, and a store
                // that cannot take this fails the next commit, reported.
                let _ = out.refresh_claims(ttl);
            }
            refreshed = std::time::Instant::now();
        }
        let first = match rx.recv_timeout(refresh_every.saturating_sub(refreshed.elapsed())) {
            Ok(op) => op,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let deadline = std::time::Instant::now() + window;
        let mut acks = Vec::new();
        let mut batch = Batch::default();
        // The session's counts as last sent in this batch.
        let mut latest = None;
        let mut op = Some(first);
        while let Some(next) = op.take() {
            match next {
                WriteOp::Totals(t) => latest = Some(newest(latest.take(), t)),
                WriteOp::Started(t, ack) => {
                    latest = Some(newest(latest.take(), t));
                    acks.push(ack);
                }
                WriteOp::Done(inputs) => {
                    if claims.is_none() {
                        let ttl = claim_ttl();
                        refresh_every = refresh_every.min(ttl / 3);
                        claims = Some(ttl);
                    }
                    batch.finished.extend(inputs);
                }
                WriteOp::Flush(ack) => {
                    acks.push(ack);
                    // Answered once committed: commit now.
                    break;
                }
                WriteOp::Record(r) => {
                    let LiveRecord {
                        input,
                        attempts,
                        sample,
                        totals,
                    } = *r;
                    batch.inputs.push(input);
                    batch.attempts.extend(attempts);
                    batch.samples.push(sample);
                    latest = Some(newest(latest.take(), totals));
                }
                WriteOp::Judgement(j) => batch.judgements.push(j),
                WriteOp::Attempt(a) => batch.attempts.push(a),
                WriteOp::Input(idx, input) => batch.inputs.push((idx, input)),
                WriteOp::Sample(s) => batch.samples.push(s),
            }
            if batch.rows() < BATCH {
                // Group commit: gather what arrives within LINGER of the
                // last operation (a sample's attempts, row and counts come
                // together), and commit as soon as nothing more is coming.
                // A run faster than the disk fills the queue while a
                // commit runs, so its batches grow by themselves; a slow
                // (paid) run commits each sample within about LINGER of
                // its call, so a kill -9 loses almost no completed call.
                //
                // What is queued is taken at once; when nothing is, the
                // thread sleeps for LINGER and looks again rather than
                // waiting on the channel: a waiting receiver is woken by
                // every send (a futex call for the sender, a thread switch
                // for both), which at thousands of requests a second was
                // a tenth of `probity serve`'s CPU (bench/guard.sh,
                // Figure 4); a sleeping one is not.
                op = rx.try_recv().ok();
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if op.is_none() && !left.is_zero() {
                    std::thread::sleep(left.min(LINGER));
                    op = rx.try_recv().ok();
                }
            }
        }
        if let Some(t) = latest {
            // Never less than already added (readings of several tasks).
            let t = t.latest(added.clone());
            batch.totals = Some(t.since(&added));
            added = t;
        }
        if !batch.samples.is_empty() {
            batch.claims_ttl = claims;
        }
        if !batch.is_empty() {
            health.commit(out.as_mut(), &batch)?;
        }
        written += batch.rows() as u64;
        for ack in acks {
            let _ = ack.send(());
        }
    }
    Ok(written)
}

/// The newer of two readings of this session's counts: each count the
/// larger ([`RunTotals::latest`]; readings of several tasks arrive in any
/// order).
fn newest(earlier: Option<RunTotals>, t: RunTotals) -> RunTotals {
    match earlier {
        Some(e) => t.latest(e),
        None => t,
    }
}

/// The sending side of the batched writer. Dropping it (or calling
/// [`Writer::finish`]) flushes everything sent.
pub struct Writer {
    /// Shared with [`JudgementSink`]s.
    queue: Arc<Mutex<Queue>>,
    handle: Mutex<Option<JoinHandle<Result<u64, StoreError>>>>,
    store: StoreLocation,
    /// The message of the error that stopped the thread, once met.
    stopped_by: Mutex<Option<String>>,
    health: WriterHealth,
}

impl Writer {
    /// Queue this session's counts so far: what is new since the last is
    /// added to the run's with the next batch, so every process writing a
    /// run adds its own.
    pub fn send_totals(&self, totals: RunTotals) -> Result<(), StoreError> {
        self.op(WriteOp::Totals(totals))
    }

    /// Queue a shared run's `inputs` (every sample of theirs already sent)
    /// to be marked done in the transaction that commits their last
    /// samples: the caller never waits for the commit, and an input is
    /// never marked done before its samples are stored. From the first
    /// call on, the writer also keeps this process's claims alive (see
    /// [`write_loop`]).
    pub fn send_done(&self, inputs: Vec<usize>) -> Result<(), StoreError> {
        self.op(WriteOp::Done(inputs))
    }

    /// Queue one sample for writing.
    pub fn send(&self, row: SampleRow) -> Result<(), StoreError> {
        self.op(WriteOp::Sample(row))
    }

    /// Queue one attempt of a guarded sample for writing.
    pub(crate) fn send_attempt(&self, row: AttemptRow) -> Result<(), StoreError> {
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

    /// A handle telling whether this writer is stuck in a commit.
    pub fn health(&self) -> WriterHealth {
        self.health.clone()
    }

    /// Queue one request of live traffic whole (see [`LiveRecord`]).
    pub fn send_record(&self, record: LiveRecord) -> Result<(), StoreError> {
        self.op(WriteOp::Record(Box::new(record)))
    }

    /// This writer, refusing an operation when its queue is full instead
    /// of waiting for room (`probity serve`: a store that is slow or
    /// reconnecting must not hold the answers; the refused record is the
    /// caller's to count).
    pub(crate) fn never_waiting(self) -> Writer {
        if let Ok(mut q) = self.queue.lock() {
            q.wait_when_full = false;
        }
        // Nor does it give up: a store that comes back after any outage
        // gets the records held meanwhile; those refused are counted.
        self.health.0.keep_trying.store(true, Relaxed);
        self
    }

    /// Resolves once everything queued so far is committed (at once, with
    /// an error, when the writer has stopped).
    pub fn flushed(&self) -> tokio::sync::oneshot::Receiver<()> {
        let (ack, done) = tokio::sync::oneshot::channel();
        let _ = send(&self.queue, WriteOp::Flush(ack));
        done
    }

    /// A handle that counts calls on this writer before they are sent (a
    /// shared run's [`CallMarks`]).
    pub fn call_marks(&self) -> CallMarks {
        CallMarks {
            queue: self.queue.clone(),
        }
    }

    /// A handle that queues judgements on this writer (the judge cache's
    /// writes go through the same batched transactions as the samples).
    /// Judgements sent after the writer stopped are dropped.
    pub fn judgement_sink(&self) -> JudgementSink {
        JudgementSink {
            queue: self.queue.clone(),
        }
    }

    /// Queue `op`. When the writer has stopped (its store failed for
    /// good), the error is the one that stopped it: the first caller to
    /// meet it gets it whole, later ones its message.
    fn op(&self, op: WriteOp) -> Result<(), StoreError> {
        match send(&self.queue, op) {
            Ok(()) => return Ok(()),
            Err(Unsent::Full) => {
                let why = match self.health.failing() {
                    Some(e) => format!("its commits fail ({e}), tried again"),
                    None => "the store is not keeping up (slow, or reconnecting)".into(),
                };
                return Err(StoreError::Writer {
                    store: self.store.clone(),
                    what: format!("its queue is full ({QUEUE} rows): {why}; not recorded"),
                });
            }
            Err(Unsent::Stopped) => {}
        }
        let why = match self.stop() {
            Err(e) => {
                let message = e.to_string();
                if let Ok(mut stopped) = self.stopped_by.lock() {
                    stopped.get_or_insert(message);
                }
                return Err(e);
            }
            Ok(_) => self
                .stopped_by
                .lock()
                .ok()
                .and_then(|s| s.clone())
                .unwrap_or_else(|| "it was closed".into()),
        };
        Err(StoreError::Writer {
            store: self.store.clone(),
            what: why,
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
        self.health.0.closing.store(true, Relaxed);
        if let Ok(mut q) = self.queue.lock() {
            q.tx.take();
        }
        let handle = self.handle.lock().ok().and_then(|mut h| h.take());
        match handle {
            Some(h) => h.join().unwrap_or_else(|_| {
                Err(StoreError::Writer {
                    store: self.store.clone(),
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

fn send(queue: &Mutex<Queue>, op: WriteOp) -> Result<(), Unsent> {
    let q = queue.lock().map_err(|_| Unsent::Stopped)?;
    let tx = q.tx.as_ref().ok_or(Unsent::Stopped)?;
    if q.wait_when_full {
        return tx.send(op).map_err(|_| Unsent::Stopped);
    }
    tx.try_send(op).map_err(|e| match e {
        mpsc::TrySendError::Full(_) => Unsent::Full,
        mpsc::TrySendError::Disconnected(_) => Unsent::Stopped,
    })
}

/// Queues judgements on a [`Writer`] (see [`Writer::judgement_sink`]).
#[derive(Clone)]
pub struct JudgementSink {
    queue: Arc<Mutex<Queue>>,
}

impl JudgementSink {
    /// Queue `row`; `false` when the writer has stopped (or, never
    /// waiting, its queue is full: the judgement is not cached).
    pub fn send(&self, row: JudgementRow) -> bool {
        send(&self.queue, WriteOp::Judgement(row)).is_ok()
    }
}

/// Counts a session's calls in the store before they are sent (issue 38,
/// item 5; [`crate::provider::call::Caller::mark_calls_on`]): the
/// session's counts, which count the call about to be sent, join the
/// writer's next batch — with the samples arriving within its group-commit
/// window, never a commit of their own unless nothing else is being
/// written — and the caller may wait for that commit. A worker killed with
/// calls in flight has then counted them: the run's calls are every call
/// the provider saw, and `model_calls - calls_ended` those lost in flight.
#[derive(Clone)]
pub struct CallMarks {
    queue: Arc<Mutex<Queue>>,
}

impl std::fmt::Debug for CallMarks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallMarks")
    }
}

impl CallMarks {
    /// Queue `totals` (counting the calls started so far) for the next
    /// batch; with `wait`, a receiver resolving once it is committed (at
    /// once, with an error, when the writer stops). `None` without `wait`,
    /// or when the writer has stopped or its queue is full (live traffic
    /// never waits for the store).
    pub fn started(
        &self,
        totals: RunTotals,
        wait: bool,
    ) -> Option<tokio::sync::oneshot::Receiver<()>> {
        if !wait {
            let _ = send(&self.queue, WriteOp::Totals(totals));
            return None;
        }
        let (ack, done) = tokio::sync::oneshot::channel();
        send(&self.queue, WriteOp::Started(totals, ack)).ok()?;
        Some(done)
    }
}

impl Writer {
    /// Start the writer thread: `factory` opens its connection there; an
    /// error opening it is returned here.
    pub(super) fn start(
        store: StoreLocation,
        factory: WriterFactory,
        window: std::time::Duration,
    ) -> Result<Writer, StoreError> {
        let (tx, rx) = mpsc::sync_channel::<WriteOp>(QUEUE);
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<(), StoreError>>(1);
        let health = WriterHealth::new();
        let watched = health.clone();
        let handle = std::thread::Builder::new()
            .name("probity-store-writer".into())
            .spawn(move || {
                let out = match factory() {
                    Ok(out) => {
                        let _ = ready_tx.send(Ok(()));
                        out
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return Ok(0);
                    }
                };
                write_loop(out, window, rx, watched)
            })
            .map_err(|e| StoreError::Writer {
                store: store.clone(),
                what: e.to_string(),
            })?;
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(StoreError::Writer {
                    store,
                    what: "the writer thread stopped while connecting".into(),
                })
            }
        }
        Ok(Writer {
            queue: Arc::new(Mutex::new(Queue {
                tx: Some(tx),
                wait_when_full: true,
            })),
            handle: Mutex::new(Some(handle)),
            store,
            stopped_by: Mutex::new(None),
            health,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::backend::Batch;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A store whose commits wait until `gate` is released (dropped): a
    /// store that is slow, or reconnecting.
    struct Stuck {
        gate: mpsc::Receiver<()>,
        samples: Arc<AtomicUsize>,
    }

    impl BatchWriter for Stuck {
        fn commit(&mut self, batch: &Batch) -> Result<(), StoreError> {
            let _ = self.gate.recv();
            self.samples
                .fetch_add(batch.samples.len(), Ordering::SeqCst);
            Ok(())
        }
        fn refresh_lease(&mut self) -> Result<(), StoreError> {
            Ok(())
        }
        fn refresh_claims(&mut self, _: std::time::Duration) -> Result<(), StoreError> {
            Ok(())
        }
    }

    fn record(i: usize) -> LiveRecord {
        LiveRecord {
            input: (i, Input::text(format!("r{i}"), "hi")),
            attempts: Vec::new(),
            sample: SampleRow {
                input_idx: i,
                repetition: 0,
                cache_key: String::new(),
                output: Some("ok".into()),
                error: None,
                latency_ms: None,
                input_tokens: None,
                output_tokens: None,
                call_attempts: 1,
                cells: Vec::new(),
                reasons: Vec::new(),
            },
            totals: RunTotals::default(),
        }
    }

    /// A never-waiting writer on a stuck store refuses a record at once
    /// when its queue is full (a waiting one would hold the caller: under
    /// `probity serve`, the answer), and commits every record it took once
    /// the store moves again.
    #[test]
    fn a_never_waiting_writer_refuses_when_full_and_keeps_what_it_took() {
        let (release, gate) = mpsc::channel::<()>();
        let samples = Arc::new(AtomicUsize::new(0));
        let counted = samples.clone();
        let factory: WriterFactory = Box::new(move || {
            Ok(Box::new(Stuck {
                gate,
                samples: counted,
            }) as Box<dyn BatchWriter>)
        });
        let writer = Writer::start(
            StoreLocation::Sqlite("stuck.db".into()),
            factory,
            std::time::Duration::from_millis(50),
        )
        .unwrap()
        .never_waiting();
        let refused = (0..QUEUE + BATCH + 2)
            .find_map(|i| writer.send_record(record(i)).err().map(|e| (i, e)))
            .expect("a full queue refuses");
        let (taken, e) = refused;
        assert!(e.to_string().contains("queue is full"), "{e}");
        // The queue's records, and those the thread holds in its batch.
        assert!((QUEUE..=QUEUE + BATCH).contains(&taken), "{taken}");
        drop(release);
        writer.finish().unwrap();
        assert_eq!(samples.load(Ordering::SeqCst), taken);
    }

    /// A store that fails its first `failures` commits, then takes them.
    struct Flaky {
        failures: usize,
        samples: Arc<AtomicUsize>,
    }

    impl BatchWriter for Flaky {
        fn commit(&mut self, batch: &Batch) -> Result<(), StoreError> {
            if self.failures > 0 {
                self.failures -= 1;
                return Err(StoreError::Writer {
                    store: StoreLocation::Sqlite("flaky.db".into()),
                    what: "down".into(),
                });
            }
            self.samples
                .fetch_add(batch.samples.len(), Ordering::SeqCst);
            Ok(())
        }
        fn refresh_lease(&mut self) -> Result<(), StoreError> {
            Ok(())
        }
        fn refresh_claims(&mut self, _: std::time::Duration) -> Result<(), StoreError> {
            Ok(())
        }
    }

    fn flaky_writer(failures: usize, samples: &Arc<AtomicUsize>) -> Writer {
        let counted = samples.clone();
        let factory: WriterFactory = Box::new(move || {
            Ok(Box::new(Flaky {
                failures,
                samples: counted,
            }) as Box<dyn BatchWriter>)
        });
        Writer::start(
            StoreLocation::Sqlite("flaky.db".into()),
            factory,
            std::time::Duration::from_millis(5),
        )
        .unwrap()
    }

    /// Live traffic's writer holds its records through failed commits and
    /// stores them all once the store takes them again; a batch run's
    /// writer stops at the first failure (the run names it and stops).
    #[test]
    fn a_live_writer_tries_again_until_the_store_is_back() {
        let samples = Arc::new(AtomicUsize::new(0));
        let live = flaky_writer(2, &samples).never_waiting();
        for i in 0..10 {
            live.send_record(record(i)).unwrap();
        }
        let flushed = live.flushed();
        flushed.blocking_recv().unwrap();
        live.finish().unwrap();
        assert_eq!(samples.load(Ordering::SeqCst), 10);

        let samples = Arc::new(AtomicUsize::new(0));
        let batch = flaky_writer(1, &samples);
        batch.send_record(record(0)).unwrap();
        assert!(batch.finish().is_err());
        assert_eq!(samples.load(Ordering::SeqCst), 0);
    }

    /// A store counting its commits and the calls committed so far.
    struct Counting {
        commits: Arc<AtomicUsize>,
        calls: Arc<AtomicUsize>,
    }

    impl BatchWriter for Counting {
        fn commit(&mut self, batch: &Batch) -> Result<(), StoreError> {
            self.commits.fetch_add(1, Ordering::SeqCst);
            if let Some(t) = &batch.totals {
                self.calls
                    .fetch_add(t.model_calls as usize, Ordering::SeqCst);
            }
            Ok(())
        }
        fn refresh_lease(&mut self) -> Result<(), StoreError> {
            Ok(())
        }
        fn refresh_claims(&mut self, _: std::time::Duration) -> Result<(), StoreError> {
            Ok(())
        }
    }

    /// Issue 38, item 5: a call's count marked right after the sample of
    /// the call before it (as a shared run's worker does) rides in that
    /// sample's commit — 30 calls, 31 commits, not 60 — and is committed
    /// when its mark is answered; a mark with nothing else to write is
    /// committed on its own (the first call).
    #[test]
    fn call_marks_ride_in_the_samples_commits() {
        let (commits, calls) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (c, k) = (commits.clone(), calls.clone());
        let factory: WriterFactory = Box::new(move || {
            Ok(Box::new(Counting {
                commits: c,
                calls: k,
            }) as Box<dyn BatchWriter>)
        });
        let writer = Writer::start(
            StoreLocation::Sqlite("counting.db".into()),
            factory,
            COMMIT_EVERY,
        )
        .unwrap();
        let marks = writer.call_marks();
        let totals = |n: u64| RunTotals {
            model_calls: n,
            calls_ended: n - 1,
            ..RunTotals::default()
        };
        let mark = |n: u64| {
            let done = marks.started(totals(n), true).expect("the writer runs");
            done.blocking_recv().expect("committed");
            assert_eq!(calls.load(Ordering::SeqCst), n as usize, "call {n} counted");
        };
        mark(1);
        assert_eq!(commits.load(Ordering::SeqCst), 1);
        for n in 1..=30u64 {
            // The call's answer: its sample and counts, then the next
            // call's mark at once.
            std::thread::sleep(std::time::Duration::from_millis(20));
            writer.send(record(n as usize).sample).unwrap();
            writer.send_totals(totals(n)).unwrap();
            if n < 30 {
                mark(n + 1);
            }
        }
        writer.finish().unwrap();
        // One commit per sample; a thread descheduled for longer than
        // LINGER between a sample and the next mark (a loaded machine)
        // splits them, rarely. Marks committed on their own would make 60.
        let made = commits.load(Ordering::SeqCst);
        assert!((31..=35).contains(&made), "{made} commits for 30 samples");
        assert_eq!(calls.load(Ordering::SeqCst), 30);
    }
}
