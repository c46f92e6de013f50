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

pub mod bounds;
pub mod cache_key;
pub mod call;
pub mod check;
pub mod compare;
pub mod config;
pub mod example;
pub mod experiment;
pub mod guard;
pub mod inputs;
pub mod limits;
pub mod openai_wire;
pub mod outcome;
pub mod program;
pub mod provider;
pub mod recording;
pub mod redact;
pub mod retry_policy;
pub mod revalidate;
mod rounds;
pub mod runner;
pub mod serve;
pub mod settings;
pub mod sim;
pub mod store;
pub mod stored;
pub mod template;
pub mod toml_error;
pub mod validator_table;
pub mod verifier;

pub use call::{CallSettings, Caller};
pub use check::{Checks, Judging};
pub use experiment::Experiment;
pub use guard::{Guard, GuardOutcome};
pub use outcome::{Progress, RunOutcome};
pub use retry_policy::RetryPolicy;
pub use runner::{run, run_with, Control, RunError, Sink};
pub use settings::Analysis;
