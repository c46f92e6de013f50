//! # probity-engine
//!
//! Everything that does I/O: providers, the simulator, the runner with its
//! concurrency, rate limits, retries and timeouts, and the run store.

pub mod compare;
pub mod config;
pub mod example;
pub mod guard;
pub mod inputs;
pub mod limits;
pub mod provider;
pub mod runner;
pub mod serve;
pub mod sim;
pub mod store;
pub mod stored;
pub mod template;
pub mod verifier;
