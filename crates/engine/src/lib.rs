//! # probity-engine
//!
//! Everything that does I/O: providers, the simulator, the runner with its
//! concurrency, rate limits, retries and timeouts, verifiers, the guard,
//! and the run store. See `docs/architecture.md` for the data path.
//!
//! The front door is an [`Experiment`] (built in code, or loaded with
//! [`config::Config`]) and [`run`] into a [`Sink`]:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let config = probity_engine::config::Config::load("probity.toml".as_ref())?;
//! let outcome = probity_engine::run(&config.experiment()?, probity_engine::Sink::Memory).await?;
//! outcome.assert_passed();
//! # Ok(()) }
//! ```

// Without the `server` feature (the Python package's build), the wire types
// and helpers only the servers use are unused; gating each of them would
// scatter `cfg`s through shared modules, so dead code is allowed there only.
#![cfg_attr(not(feature = "server"), allow(dead_code))]
// A line for a person goes through `stderr_line!`, which a closed
// standard error cannot turn into a panic.
#![deny(clippy::print_stderr)]

pub mod agent;
pub mod bounds;
pub mod checks;
pub mod config;
#[cfg(feature = "server")]
pub mod http_server;
pub mod provider;
pub mod retry;
pub mod run;
#[cfg(feature = "server")]
pub mod serve;
pub mod sim;
pub mod stderr;
pub mod store;
pub mod system;
pub mod toml_error;
pub mod tools;
#[cfg(feature = "server")]
pub mod traces;
pub mod variants;
#[cfg(feature = "server")]
pub mod view;

pub use checks::check::{Checks, Judging};
pub use provider::call::{CallSettings, Caller};
pub use retry::guard::{Guard, GuardOutcome, Stop};
pub use retry::policy::RetryPolicy;
pub use run::experiment::Experiment;
pub use run::outcome::{Halt, Progress, RunOutcome};
pub use run::runner::{
    run, run_with, Control, ErrorClass, OnProgress, RunError, Sink, FIRST_CALLS, FIRST_OUTPUTS,
};
pub use store::settings::Analysis;
