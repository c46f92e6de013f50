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

// A line for a person goes through `stderr_line!`, which a closed
// standard error cannot turn into a panic.
#![deny(clippy::print_stderr)]

pub mod agent;
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
#[cfg(feature = "server")]
pub mod traces;
#[cfg(feature = "server")]
pub mod view;

// The modules by their earlier, flat names, for users of the crate.
pub use checks::{cache_key, check, program, validator_table, verifier};
pub use config::{bounds, example, inputs, template, toml_error};
pub use provider::{call, limits, openai_wire, redact};
pub use retry::{guard, policy as retry_policy};
pub use run::{compare, experiment, outcome, recording, revalidate, runner, stored, variants};
pub use store::settings;

pub use call::{CallSettings, Caller};
pub use check::{Checks, Judging};
pub use experiment::Experiment;
pub use guard::{Guard, GuardOutcome};
pub use outcome::{Progress, RunOutcome};
pub use retry_policy::RetryPolicy;
pub use runner::{run, run_with, Control, ErrorClass, RunError, Sink};
pub use settings::Analysis;
