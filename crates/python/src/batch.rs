//! One output's plain Python predicates made in one hand-over to a caller
//! thread ([`crate::calls`]), one after another: the engine checks an
//! output's validators in column order on one thread
//! (`Checks::validate`), so the first plain predicate's column hands all
//! of them over and the later columns take their verdicts as they come,
//! each still waited for at most its own timeout. Three predicates cost
//! one hand-over per output, not three.
//!
//! The hand-over is remembered per thread with the run, input, output and
//! next column it serves; a column asked for anything else (another
//! output, a column out of order, a hand-over given up after a timeout)
//! hands its own calls over afresh, so the order is an optimisation,
//! never an assumption a verdict depends on.

use crate::calls::{self, Handle, Waited};
use crate::predicate::Predicate;
use probity_core::{Input, Verdict};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The plain (not `async def`) predicates of one run, in column order.
pub struct Plain {
    /// Tells this run's hand-overs from another's.
    run: u64,
    pub predicates: Vec<Arc<Predicate>>,
}

impl Plain {
    pub fn new(predicates: Vec<Arc<Predicate>>) -> Self {
        static RUNS: AtomicU64 = AtomicU64::new(0);
        Plain {
            run: RUNS.fetch_add(1, Ordering::Relaxed),
            predicates,
        }
    }
}

/// A hand-over of predicates `first..` for one output, and the next one
/// whose verdict is to be taken.
struct Current {
    run: u64,
    first: usize,
    next: usize,
    input_id: String,
    output: Arc<str>,
    handle: Handle,
}

thread_local! {
    static CURRENT: RefCell<Option<Current>> = const { RefCell::new(None) };
}

/// The verdict of plain predicate `p` of `plain` for `output`. Called
/// without the GIL.
pub fn verdict(plain: &Arc<Plain>, p: usize, input: &Input, output: &str) -> Verdict {
    let predicate = &plain.predicates[p];
    let remembered = CURRENT.with(|c| {
        let mut c = c.borrow_mut();
        let matches = c.as_ref().is_some_and(|cur| {
            cur.run == plain.run
                && cur.next == p
                && cur.input_id == input.id
                && *cur.output == *output
        });
        if matches {
            c.take()
        } else {
            None
        }
    });
    let mut current = remembered.unwrap_or_else(|| hand_over(plain, p, input, output));
    let mut waited = current.handle.wait(
        p - current.first,
        predicate.timeout,
        &predicate.workers.abandoned,
        &predicate.workers.stop,
    );
    if matches!(waited, Waited::GivenUp) {
        current = hand_over(plain, p, input, output);
        waited = current.handle.wait(
            0,
            predicate.timeout,
            &predicate.workers.abandoned,
            &predicate.workers.stop,
        );
    }
    let verdict = match waited {
        Waited::Done(v) => v,
        _ if predicate
            .workers
            .stop
            .load(std::sync::atomic::Ordering::Relaxed) =>
        {
            return Verdict::error("not judged: the run was interrupted".to_string())
        }
        Waited::TimedOut | Waited::GivenUp => return Verdict::error(predicate.timed_out()),
    };
    current.next = p + 1;
    if current.next < plain.predicates.len() {
        CURRENT.with(|c| *c.borrow_mut() = Some(current));
    }
    verdict
}

/// Hand predicates `p..` over for this output.
fn hand_over(plain: &Arc<Plain>, p: usize, input: &Input, output: &str) -> Current {
    let output: Arc<str> = Arc::from(output);
    let needs_input = plain.predicates[p..].iter().any(|q| q.arity == 2);
    let work: calls::Work = {
        let plain = plain.clone();
        let input = needs_input.then(|| input.clone());
        let output = output.clone();
        Box::new(move |py, i| plain.predicates[p + i].call(py, input.as_ref(), &output))
    };
    Current {
        run: plain.run,
        first: p,
        next: p,
        input_id: input.id.clone(),
        output,
        handle: calls::submit(work, plain.predicates.len() - p),
    }
}
