//! What every handler of a running guard shares: the guard, its settings,
//! the run's writer and the metrics `/metrics` exports.

use super::config::NothingPassed;
use crate::retry::guard::Guard;
use crate::store::Writer;
use probity_core::stats::{BettingSequence, Interval};
use probity_core::Cell;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Which attempt a cost is for.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AttemptLabel {
    pub attempt: String,
}

/// One check's live rate in one kind of attempt.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RateLabels {
    pub check: String,
    pub attempt: String,
}

/// The anytime-valid confidence sequences of every check's live pass rate
/// (the betting sequences of `probity_core::stats::BettingSequence`, the
/// same the sequential mode uses): each request's first attempt and its
/// published answer are one observation each (1 pass, 0 fail; errors and
/// missing cells are not observations). Valid however often `/metrics` is
/// read — P(the true rate ever leaves its sequence) ≤ 1 − `confidence` —
/// for requests that are independent draws from one traffic (a rate that
/// drifts is what a window or a change test would follow: issue 20).
#[derive(Debug)]
pub struct LiveRates {
    first: Vec<Mutex<BettingSequence>>,
    published: Vec<Mutex<BettingSequence>>,
}

impl LiveRates {
    /// One pair of sequences per check, at `confidence`.
    pub fn new(checks: usize, confidence: f64) -> Result<Self, String> {
        let one = || {
            BettingSequence::new(confidence, &[])
                .map(Mutex::new)
                .map_err(|e| format!("confidence: {e}"))
        };
        Ok(LiveRates {
            first: (0..checks).map(|_| one()).collect::<Result<_, _>>()?,
            published: (0..checks).map(|_| one()).collect::<Result<_, _>>()?,
        })
    }

    /// Observe `cells` of an attempt of `kind` (`first`, `published`).
    pub fn observe(&self, kind: &str, cells: &[Cell]) {
        let sequences = if kind == "first" {
            &self.first
        } else {
            &self.published
        };
        for (seq, cell) in sequences.iter().zip(cells) {
            let x = match cell {
                Cell::Pass => 1.0,
                Cell::Fail => 0.0,
                Cell::Error | Cell::Missing => continue,
            };
            if let Ok(mut seq) = seq.lock() {
                let _ = seq.observe(x);
            }
        }
    }

    /// Each check's (kind, observations, mean, interval).
    fn each(&self) -> impl Iterator<Item = (usize, &'static str, u64, f64, Interval)> + '_ {
        let kinds = [("first", &self.first), ("published", &self.published)];
        kinds.into_iter().flat_map(|(kind, seqs)| {
            seqs.iter().enumerate().filter_map(move |(k, seq)| {
                let seq = seq.lock().ok()?;
                Some((k, kind, seq.observations(), seq.mean(), seq.interval()))
            })
        })
    }
}

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
    /// Tokens (prompt + completion) by attempt: `first`, or `retry` (the
    /// cost of reliability).
    pub tokens: Family<AttemptLabel, Counter>,
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
    /// Each check's live rate and its confidence sequence's bounds, set
    /// from [`LiveRates`] when the metrics are read.
    pub rate: Family<RateLabels, Gauge<f64, AtomicU64>>,
    pub rate_lower: Family<RateLabels, Gauge<f64, AtomicU64>>,
    pub rate_upper: Family<RateLabels, Gauge<f64, AtomicU64>>,
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
        let tokens = Family::<AttemptLabel, Counter>::default();
        registry.register(
            "probity_tokens",
            "Tokens (prompt + completion) the upstream reported: attempt = first, or retry (what reliability cost).",
            tokens.clone(),
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
        let gauges = |registry: &mut Registry, name: &str, help: &str| {
            let g = Family::<RateLabels, Gauge<f64, AtomicU64>>::default();
            registry.register(name, help, g.clone());
            g
        };
        let rate = gauges(
            &mut registry,
            "probity_check_pass_rate",
            "Each check's live pass rate: attempt = first (the system's own) or published.",
        );
        let rate_lower = gauges(
            &mut registry,
            "probity_check_pass_rate_lower",
            "Lower bound of the rate's anytime-valid confidence sequence (valid however often it is read).",
        );
        let rate_upper = gauges(
            &mut registry,
            "probity_check_pass_rate_upper",
            "Upper bound of the rate's anytime-valid confidence sequence.",
        );
        Metrics {
            registry,
            rate,
            rate_lower,
            rate_upper,
            requests,
            published,
            nothing_passed,
            rejected,
            attempts,
            attempt_errors,
            tokens,
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

    /// Set the live-rate gauges from `rates` (checks named `names`).
    pub fn update_rates(&self, names: &[String], rates: &LiveRates) {
        for (k, kind, n, mean, interval) in rates.each() {
            let (Some(name), true) = (names.get(k), n > 0) else {
                continue;
            };
            let labels = RateLabels {
                check: name.clone(),
                attempt: kind.to_string(),
            };
            self.rate.get_or_create(&labels).set(mean);
            self.rate_lower.get_or_create(&labels).set(interval.lower);
            self.rate_upper.get_or_create(&labels).set(interval.upper);
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
    pub live: LiveRates,
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
