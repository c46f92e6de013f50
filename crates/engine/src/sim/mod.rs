//! The simulator: a built-in, seeded, stochastic "model" with known true
//! failure rates.
//!
//! It is the default provider (the quickstart runs with no API key) and the
//! test double for everything downstream: because the true rates are known
//! ([`SimModel::true_rates`]), tests can check that probity's estimates and
//! intervals cover the truth.
//!
//! The simulated assistant answers in a few sentences that echo the topic of
//! the last user message, and can misbehave in the three ways the paper's
//! example validators (§2.1) and a JSON validator detect:
//!
//! * **contractions** — with probability `contractions` the reply uses at
//!   least four apostrophe contractions ("I'm", "can't", "don't", …), so
//!   `count(output, "'") <= 3` fails; otherwise it has at most two
//!   apostrophes in total (counting the one in "You're welcome").
//! * **omit_welcome** — when the last user message contains `Thank you`
//!   (case-sensitive, as the paper's validator checks), the reply starts with
//!   "You're welcome" unless this event fires (probability `omit_welcome`).
//!   Replies to other messages never contain "You're welcome".
//! * **invalid_json** — when the last user message contains `JSON`
//!   (uppercase), the reply is a JSON object `{"answer", "topic",
//!   "confidence"}`, truncated (so it does not parse) with probability
//!   `invalid_json`. The answer field holds the normal reply, so the other
//!   two events still apply and are never cut off by truncation.
//!
//! The events are independent of each other and of `error_rate` (a call
//! failing with a simulated HTTP 500). Every output is a pure function of
//! `(config, messages, repetition, attempt)`, stable across platforms and
//! versions (see `rng.rs`).

pub mod agent;
pub(crate) mod model;
pub(crate) mod protocol;
pub(crate) mod rates;
pub(crate) mod rng;
#[cfg(feature = "server")]
pub mod server;
pub mod shop;
mod text;

pub use model::{SimConfig, SimModel, SimOutput};
pub use rates::{SimEvents, TrueRates};
