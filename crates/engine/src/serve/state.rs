//! What every handler of a running guard shares: the guard, its settings,
//! the run's writer and the counters `/metrics` shows.

use super::config::NothingPassed;
use crate::retry::guard::Guard;
use crate::store::Writer;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// Counts since the server started.
#[derive(Debug, Default)]
pub struct Metrics {
    pub requests: AtomicU64,
    pub published: AtomicU64,
    pub nothing_passed: AtomicU64,
    pub attempts: AtomicU64,
    pub attempt_errors: AtomicU64,
    pub rejected: AtomicU64,
    pub unauthorized: AtomicU64,
    /// Requests whose client went away before the answer: their upstream
    /// calls were cancelled and they are not recorded.
    pub cancelled: AtomicU64,
    pub streamed: AtomicU64,
    pub latency_us: AtomicU64,
}

/// A running guard's shared state.
pub struct ServeState {
    pub guard: Guard,
    pub policy: NothingPassed,
    pub token: Option<String>,
    pub pin: Vec<String>,
    pub body_timeout: Duration,
    pub max_body_bytes: usize,
    pub keepalive: Duration,
    /// The model `GET /v1/models` lists and answers name when the
    /// upstream does not say.
    pub model: String,
    pub writer: Writer,
    pub run_id: i64,
    pub next_input: AtomicU64,
    pub metrics: Metrics,
}
