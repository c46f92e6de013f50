//! What every handler of a running guard shares: the guard, its settings,
//! the run's writer and the metrics `/metrics` exports.

use super::config::NothingPassed;
use crate::retry::guard::Guard;
use crate::store::Writer;
use probity_core::Cell;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// One check's cell in one kind of attempt: `attempt` is `first` (the
/// system's own reliability) or `published` (the attempt answered).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CellLabels {
    pub check: String,
    pub attempt: String,
    pub cell: String,
}

/// The guard's metrics since it started, registered with the Prometheus
/// client (`prometheus-client`): counts only — never a request, an
/// output, a reason or a header.
#[derive(Debug)]
pub struct Metrics {
    pub registry: Registry,
    pub requests: Counter,
    pub published: Counter,
    pub nothing_passed: Counter,
    pub rejected: Counter,
    pub attempts: Counter,
    pub attempt_errors: Counter,
    pub unauthorized: Counter,
    /// Requests whose client went away before the answer: their upstream
    /// calls were cancelled and they are not recorded.
    pub cancelled: Counter,
    pub streamed: Counter,
    /// Cells per check, attempt kind and verdict.
    pub cells: Family<CellLabels, Counter>,
    /// Time spent guarding a request (from its body read to its answer).
    pub latency: Histogram,
    pub pass_rate: Gauge<f64, AtomicU64>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let mut counter = |name: &str, help: &str| {
            let c = Counter::default();
            registry.register(name, help, c.clone());
            c
        };
        let requests = counter("probity_requests", "Chat completion requests guarded.");
        let published = counter(
            "probity_published",
            "Requests answered with an output that passed.",
        );
        let nothing_passed = counter(
            "probity_nothing_passed",
            "Requests where no attempt passed.",
        );
        let rejected = counter(
            "probity_rejected",
            "Requests answered with an error because nothing passed.",
        );
        let attempts = counter("probity_attempts", "Attempts (upstream generations) made.");
        let attempt_errors = counter(
            "probity_attempt_errors",
            "Attempts whose upstream call failed.",
        );
        let unauthorized = counter(
            "probity_unauthorized",
            "Requests refused for a missing or wrong token.",
        );
        let cancelled = counter(
            "probity_cancelled",
            "Requests whose client went away before the answer (upstream calls cancelled, not recorded).",
        );
        let streamed = counter(
            "probity_streamed",
            "Requests answered as server-sent events.",
        );
        let cells = Family::<CellLabels, Counter>::default();
        registry.register(
            "probity_check_cells",
            "Verdicts per check: attempt = first (the system's own) or published (the answer).",
            cells.clone(),
        );
        // 0.5 ms to about 65 s, doubling.
        let latency = Histogram::new(exponential_buckets(0.0005, 2.0, 18));
        registry.register(
            "probity_request_duration_seconds",
            "Time spent guarding a request.",
            latency.clone(),
        );
        let pass_rate = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "probity_pass_rate",
            "Share of finished requests that published an output.",
            pass_rate.clone(),
        );
        Metrics {
            registry,
            requests,
            published,
            nothing_passed,
            rejected,
            attempts,
            attempt_errors,
            unauthorized,
            cancelled,
            streamed,
            cells,
            latency,
            pass_rate,
        }
    }
}

impl Metrics {
    /// Count `cells` of the checks `names` for an attempt of `kind`.
    pub fn count_cells(&self, names: &[String], kind: &str, cells: &[Cell]) {
        for (name, cell) in names.iter().zip(cells) {
            let cell = match cell {
                Cell::Pass => "pass",
                Cell::Fail => "fail",
                Cell::Error => "error",
                Cell::Missing => "missing",
            };
            self.cells
                .get_or_create(&CellLabels {
                    check: name.clone(),
                    attempt: kind.to_string(),
                    cell: cell.to_string(),
                })
                .inc();
        }
    }

    /// Refresh the pass-rate gauge from the counters.
    pub fn update_pass_rate(&self) {
        let published = self.published.get();
        let done = published + self.nothing_passed.get();
        if done > 0 {
            self.pass_rate.set(published as f64 / done as f64);
        }
    }
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
    /// The checks' names, in column order (the metrics' labels).
    pub check_names: Vec<String>,
    pub writer: Writer,
    pub run_id: i64,
    pub next_input: AtomicU64,
    pub metrics: Metrics,
}

impl ServeState {
    /// The index of the next request.
    pub fn next_index(&self) -> usize {
        self.next_input.fetch_add(1, Ordering::Relaxed) as usize
    }
}
