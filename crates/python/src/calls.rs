//! Where plain (not `async def`) Python predicates run: on the package's
//! caller threads, Rust threads that keep a Python thread state
//! ([`crate::thread_state`]). The engine's thread hands calls over
//! ([`submit`]) and waits for each without the GIL for at most its timeout
//! ([`Handle::wait`]); a call that takes longer is abandoned and its cell
//! is an Error, so a predicate that loops forever, or sleeps in C code,
//! costs one timeout, not the run.
//!
//! Abandoning a call that runs raises `probity.CallAbandoned` in its
//! thread (`PyThreadState_SetAsyncExc`): Python code stops at its next
//! instruction. Code stuck in C (`time.sleep`) stops only when it
//! returns; a call queued behind it for [`STALL`] wakes or starts another
//! caller thread, as does one behind a call waiting on I/O, so such calls
//! overlap. Caller threads end after [`IDLE`] without work, and never keep
//! the interpreter from exiting (Python does not wait for threads it did
//! not start).
//!
//! One caller thread is active while calls keep coming: it takes them off
//! the queue one after another holding the GIL, so a call costs a queue
//! push and a wake-up of the thread waiting for it, with no Python code of
//! the package per call. (Before, every call went through
//! `probity._workers`' Python thread pool: about 15 µs a call against 4 µs
//! for a call made on the engine's thread with no timeout at all, which
//! could not abandon code stuck in C.)

use probity_core::Verdict;
use pyo3::ffi;
use pyo3::prelude::*;
use std::collections::VecDeque;
use std::os::raw::c_long;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How long an idle caller thread waits for another call before it ends.
pub const IDLE: Duration = Duration::from_secs(30);

/// How long a call may wait in the queue before its waiter starts another
/// caller thread: the busy one may be stuck, or waiting on I/O.
pub const STALL: Duration = Duration::from_millis(2);

/// The calls of one hand-over: `work(py, i)` makes call `i` of `0..n`,
/// with the GIL held, on a caller thread.
pub type Work = Box<dyn FnMut(Python<'_>, usize) -> Verdict + Send>;

/// Where a hand-over's calls are.
struct Stage {
    /// Each call's verdict, once it finished.
    verdicts: Vec<Option<Verdict>>,
    /// The call running and its thread's Python thread id, and since when.
    running: Option<(usize, c_long, Instant)>,
    /// The calls not begun yet are not to be made (one was abandoned).
    given_up: bool,
    /// The call abandoned while it ran: `CallAbandoned` was raised in its
    /// thread.
    interrupted: bool,
    /// A caller thread took the hand-over.
    taken: bool,
}

/// A hand-over's stage, shared by the thread that waits for its calls and
/// the caller thread that makes them.
struct Ticket {
    stage: Mutex<Stage>,
    /// Unparked when a call finishes.
    waiter: Thread,
}

impl Ticket {
    fn lock(&self) -> MutexGuard<'_, Stage> {
        self.stage.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct Job {
    work: Work,
    ticket: Arc<Ticket>,
}

/// The queue of calls and the caller threads' count, in two states:
/// active (taking calls off the queue, or about to) and idle (waiting to
/// be woken).
#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    active: usize,
    idle: usize,
    /// Wake-ups given to idle threads and not yet taken.
    wakeups: usize,
}

/// The process's caller threads.
struct Callers {
    queue: Mutex<Queue>,
    ready: Condvar,
}

fn callers() -> &'static Callers {
    static CALLERS: OnceLock<Callers> = OnceLock::new();
    CALLERS.get_or_init(|| Callers {
        queue: Mutex::new(Queue::default()),
        ready: Condvar::new(),
    })
}

impl Callers {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue `job`. An active caller thread takes it after the calls
    /// before it, holding the GIL throughout; with none active, an idle
    /// one is woken, or one started.
    fn submit(&'static self, job: Job) {
        let mut q = self.lock();
        q.jobs.push_back(job);
        if q.active == 0 {
            self.another(q);
        }
    }

    /// A call waited [`STALL`] in the queue: the active threads may be
    /// stuck (C code, I/O), so wake or start another.
    fn help(&'static self) {
        let q = self.lock();
        if !q.jobs.is_empty() {
            self.another(q);
        }
    }

    /// One more active caller thread: an idle one woken, or a new one.
    fn another(&'static self, mut q: MutexGuard<'_, Queue>) {
        q.active += 1;
        if q.idle > 0 {
            q.idle -= 1;
            q.wakeups += 1;
            drop(q);
            self.ready.notify_one();
            return;
        }
        drop(q);
        let started = std::thread::Builder::new()
            .name("probity-call".into())
            .spawn(move || self.work());
        if started.is_err() {
            // No thread to be had: the calls wait for a busy one (and, at
            // worst, time out).
            self.lock().active -= 1;
        }
    }

    /// The next job for an active thread; `None` (the thread now idle)
    /// when the queue is empty.
    fn take(&self) -> Option<Job> {
        let mut q = self.lock();
        let job = q.jobs.pop_front();
        if job.is_none() {
            q.active -= 1;
            q.idle += 1;
        }
        job
    }

    /// An idle thread waits to be woken (true, now active) or for [`IDLE`]
    /// (false: it ends).
    fn wait(&self) -> bool {
        let mut q = self.lock();
        loop {
            if q.wakeups > 0 {
                q.wakeups -= 1;
                return true;
            }
            let (guard, waited) = self
                .ready
                .wait_timeout(q, IDLE)
                .unwrap_or_else(PoisonError::into_inner);
            q = guard;
            if waited.timed_out() && q.wakeups == 0 {
                q.idle -= 1;
                return false;
            }
        }
    }

    /// A caller thread (started active): runs the queue's calls, holding
    /// the GIL while there are more.
    fn work(&self) {
        crate::thread_state::keep();
        let Ok(me) = Python::attach(ident) else {
            self.lock().active -= 1;
            return;
        };
        loop {
            if let Some(first) = self.take() {
                Python::attach(|py| {
                    let mut job = first;
                    loop {
                        run(py, me, job);
                        match self.take() {
                            Some(next) => job = next,
                            None => break,
                        }
                    }
                });
            }
            if !self.wait() {
                return;
            }
        }
    }
}

/// This thread's Python thread id (what `PyThreadState_SetAsyncExc` takes).
fn ident(py: Python<'_>) -> PyResult<c_long> {
    py.import("threading")?.call_method0("get_ident")?.extract()
}

/// Make a job's calls in order, unless given up, leaving each verdict on
/// its ticket.
fn run(py: Python<'_>, me: c_long, job: Job) {
    let Job { mut work, ticket } = job;
    let n = ticket.lock().verdicts.len();
    for i in 0..n {
        {
            let mut stage = ticket.lock();
            stage.taken = true;
            if stage.given_up {
                return;
            }
            stage.running = Some((i, me, Instant::now()));
        }
        let verdict = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(py, i)))
            .unwrap_or_else(|_| Verdict::error("could not be called: the call panicked"));
        let mut stage = ticket.lock();
        stage.running = None;
        if stage.interrupted {
            // `CallAbandoned` may still be pending if the call returned
            // from C code without running Python code since: clear it, or
            // it would go off in this thread's next call.
            // SAFETY: the GIL is held; a null exception clears a pending one.
            unsafe {
                ffi::PyThreadState_SetAsyncExc(me, std::ptr::null_mut());
            }
            return;
        }
        stage.verdicts[i] = Some(verdict);
        drop(stage);
        ticket.waiter.unpark();
    }
}

/// What a call came to.
pub enum Waited {
    Done(Verdict),
    /// Not back within the timeout: abandoned, and the hand-over's later
    /// calls with it.
    TimedOut,
    /// The hand-over was given up before this call began: make it anew.
    GivenUp,
}

/// Calls handed over to a caller thread, waited for one by one by the
/// thread that handed them over.
pub struct Handle {
    ticket: Arc<Ticket>,
    submitted: Instant,
}

/// Hand `n` calls over (`work(py, i)` makes call `i`), made one after
/// another on a caller thread. Call without the GIL; wait for each with
/// [`Handle::wait`] on this thread.
pub fn submit(work: Work, n: usize) -> Handle {
    let ticket = Arc::new(Ticket {
        stage: Mutex::new(Stage {
            verdicts: (0..n).map(|_| None).collect(),
            running: None,
            given_up: false,
            interrupted: false,
            taken: false,
        }),
        waiter: std::thread::current(),
    });
    callers().submit(Job {
        work,
        ticket: ticket.clone(),
    });
    Handle {
        ticket,
        submitted: Instant::now(),
    }
}

/// How often a wait looks at the run's stop flag.
const STOP_POLL: Duration = Duration::from_millis(100);

impl Handle {
    /// Wait for call `i` at most `timeout` from when it began (or, while
    /// its hand-over waits in the queue, from when it was handed over);
    /// abandon it after, with the calls after it. `abandoned` is the
    /// exception raised in a call abandoned while it runs
    /// (`probity.CallAbandoned`). Once `stop` is set (the run was
    /// interrupted) it is abandoned as at its timeout, within
    /// [`STOP_POLL`]. Call without the GIL.
    pub fn wait(
        &self,
        i: usize,
        timeout: Duration,
        abandoned: &Py<PyAny>,
        stop: &std::sync::atomic::AtomicBool,
    ) -> Waited {
        let callers = callers();
        let waiting_since = Instant::now();
        let mut queued_since = self.submitted;
        loop {
            let now = Instant::now();
            let mut stage = self.ticket.lock();
            if let Some(verdict) = stage.verdicts.get_mut(i).and_then(Option::take) {
                return Waited::Done(verdict);
            }
            if stage.given_up {
                return Waited::GivenUp;
            }
            let began = match stage.running {
                Some((r, _, at)) if r == i => at,
                _ if !stage.taken => self.submitted,
                _ => waiting_since,
            };
            let deadline = began + timeout;
            if now >= deadline || stop.load(std::sync::atomic::Ordering::Relaxed) {
                if matches!(stage.running, Some((r, _, _)) if r == i) {
                    drop(stage);
                    self.interrupt(i, abandoned);
                } else {
                    stage.given_up = true;
                }
                return Waited::TimedOut;
            }
            let mut wake = deadline;
            if !stage.taken {
                drop(stage);
                if now.duration_since(queued_since) >= STALL {
                    callers.help();
                    queued_since = now;
                }
                wake = wake.min(queued_since + STALL);
            } else {
                drop(stage);
            }
            wake = wake.min(now + STOP_POLL);
            std::thread::park_timeout(wake.saturating_duration_since(now));
        }
    }

    /// Interrupt call `i` if it still runs. Under the GIL, which its
    /// thread holds when it records the call's end, so the call is still
    /// in its thread when the exception is set there.
    fn interrupt(&self, i: usize, abandoned: &Py<PyAny>) {
        Python::attach(|_py| {
            let mut stage = self.ticket.lock();
            stage.given_up = true;
            if let Some((r, thread, _)) = stage.running {
                if r == i {
                    // SAFETY: the GIL is held; the function takes its own
                    // reference to the exception.
                    unsafe {
                        ffi::PyThreadState_SetAsyncExc(thread, abandoned.as_ptr());
                    }
                    stage.interrupted = true;
                }
            }
        });
    }
}
