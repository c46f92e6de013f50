//! How every run that writes verdicts ends in the store — a run, a resumed
//! run, a worker of a shared run, each variant of a variants run, and a
//! revalidation alike: its sequential outcome, its tensor and causes (so
//! its report need not rebuild them from the samples), and its status,
//! counts and one decision per check (so `probity runs` need not either).

use crate::store::{RunStatus, RunTotals, Store, StoreError};
use probity_core::causes::Causes;
use probity_core::sequential::SequentialOutcome;
use probity_core::{ReliabilityTensor, Summary};
use std::time::Duration;

/// What a run ends with.
pub(crate) struct Closing<'a> {
    pub status: RunStatus,
    /// The run's counts when they are set whole (a revalidation); `None`
    /// when its writer added each process's own as it went (a run).
    pub totals: Option<RunTotals>,
    /// Samples served without a call (a run), or written (a revalidation).
    pub samples: u64,
    pub duration: Duration,
    /// The verdicts; `None` when none could be built.
    pub summary: Option<&'a Summary>,
    /// A sequential run's outcome (its stop rule, its sequences).
    pub sequential: Option<&'a SequentialOutcome>,
    pub tensor: Option<&'a ReliabilityTensor>,
    pub causes: &'a Causes,
}

/// Close run `run_id` in `store` with what `closing` holds.
pub(crate) fn close_run(
    store: &Store,
    run_id: i64,
    closing: Closing<'_>,
) -> Result<(), StoreError> {
    if let Some(o) = closing.sequential {
        store.set_sequential(run_id, o)?;
    }
    if let Some(t) = closing.tensor {
        store.put_snapshot(run_id, t, closing.causes)?;
    }
    let verdicts: Option<Vec<_>> = closing
        .summary
        .map(|s| s.checks.iter().map(|c| c.verdict.decision).collect());
    store.finish_run(
        run_id,
        closing.status,
        closing.totals,
        closing.samples,
        closing.duration.as_secs_f64(),
        verdicts.as_deref(),
    )
}
