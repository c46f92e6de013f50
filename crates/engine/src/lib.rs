//! # probity-engine
//!
//! Everything that does I/O: providers, the simulator, the runner with its
//! concurrency, rate limits, retries and timeouts, and the run store.

pub mod provider;
pub mod sim;
pub mod template;
