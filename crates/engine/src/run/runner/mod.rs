//! The runner: sample the system N×M times (§2.2.3), check every output
//! with the K checks (§3.2), fill the tensor (§3.6), and record everything
//! as it completes.
//!
//! Every sample goes through the [`crate::retry::guard::Guard`]: without a
//! retry policy it is a single attempt; with one, the guarded system is
//! measured (§4.2) and every attempt is recorded. Calls run concurrently (a
//! fixed pool of workers, bounded by `concurrency`), behind client-side
//! rate limits, with per-call timeouts and retries with backoff on rate
//! limits, 5xx and timeouts (one [`crate::provider::call::Caller`] makes
//! them all). A call that still fails becomes Error cells — never a
//! failure in disguise, never an abort.
//!
//! Into the store ([`Sink::Store`]), outputs already stored (this run's,
//! when resuming) are not requested again, and `--reuse` serves another
//! run's. In memory ([`Sink::Memory`]) every sample is a call.
//!
//! A run is opened ([`open`]: refusals, the guard, the run new, resumed or
//! joined), then driven as a state machine ([`session::RunSession`]: one
//! method per event) whose work comes from one [`source::WorkSource`]
//! (every cell, sequential rounds, or shared claims) and is sampled by a
//! pool of [`workers`] through one [`sampler::Sampler`]; it ends in
//! [`session::RunSession::finish`], which closes the run in the store as
//! every run kind does ([`crate::run::finish`]).

mod budget;
mod control;
mod identity;
mod open;
mod recorder;
mod sampler;
mod session;
mod source;
mod tally;
mod workers;

pub use budget::{FIRST_CALLS, FIRST_OUTPUTS};
pub use control::{Control, ErrorClass, OnProgress, RunError, Sink};

use crate::run::experiment::Experiment;
use crate::run::outcome::RunOutcome;
use std::time::Instant;

/// Run `experiment` into `sink`.
pub async fn run(experiment: &Experiment, sink: Sink<'_>) -> Result<RunOutcome, RunError> {
    run_with(experiment, sink, Control::default()).await
}

/// Run `experiment` into `sink`, steered by `control`: open the run, drive
/// its session until every worker has ended, finish it.
pub async fn run_with(
    experiment: &Experiment,
    sink: Sink<'_>,
    mut control: Control<'_>,
) -> Result<RunOutcome, RunError> {
    let started = Instant::now();
    let opened = open::open(experiment, sink, &control).await?;
    let cancel = control.cancel.take();
    let mut session = session::RunSession::start(experiment, opened, control, started).await?;
    session.drive(cancel).await?;
    session.finish().await
}
