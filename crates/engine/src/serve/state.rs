//! What every handler of a running guard shares: the guard, its settings,
//! the run's writer and the metrics `/metrics` exports.

use super::config::NothingPassed;
use super::monitor::Monitor;
use crate::retry::guard::Guard;
use crate::store::Writer;
use probity_core::monitor::{AlarmKind, LiveCorrection};
use probity_core::Cell;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Which attempt a cost is for.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct AttemptLabel {
    pub attempt: String,
}

/// Which attempt a cost is for, and its currency.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CostLabels {
    pub attempt: String,
    pub currency: String,
}

/// One check's live rate in one kind of attempt.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RateLabels {
    pub check: String,
    pub attempt: String,
}

/// One check's cell in one kind of attempt: `attempt` is `first` (the
/// system's own reliability) or `published` (the attempt answered).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CellLabels {
    pub check: String,
    pub attempt: String,
    pub cell: String,
}

/// The guard's metrics since it started, registered with the Prometheus
/// client (`prometheus-client`): counts only — never a request, an
/// output, a reason or a header.
#[derive(Debug)]
pub(crate) struct Metrics {
    pub registry: Registry,
    pub requests: Counter,
    pub published: Counter,
    /// Outcome `nothing-passed`: the checks failed every output.
    pub nothing_passed: Counter,
    /// Outcome `check-error`: a check could not judge the output.
    pub unjudged: Counter,
    /// Requests answered HTTP 429 at once: `requests_per_minute` would
    /// have queued them longer than `queue_wait_s`.
    pub queue_full: Counter,
    /// 1 while the store's commits are stalled (slow, or down and tried
    /// again every second).
    pub store_stalled: Gauge,
    /// Outcome `upstream-error`: no attempt produced an output.
    pub upstream_failed: Counter,
    pub rejected: Counter,
    pub attempts: Counter,
    pub attempt_errors: Counter,
    /// Tokens (prompt + completion) by attempt: `first`, or `retry` (the
    /// cost of reliability).
    pub tokens: Family<AttemptLabel, Counter>,
    /// What the upstream's tokens cost at `[upstream] price`, by attempt
    /// and currency (judges' calls not included; nothing without a price).
    pub cost: Family<CostLabels, Counter<f64, AtomicU64>>,
    pub unauthorized: Counter,
    /// Requests whose client went away before the answer: their upstream
    /// calls were cancelled and they are not recorded.
    pub cancelled: Counter,
    pub streamed: Counter,
    /// Requests refused before they were guarded: a body too large (413),
    /// too slow (408) or not a request (400).
    pub malformed: Counter,
    /// Requests answered but not recorded: the store's writer refused
    /// their record (its queue full, or the writer stopped).
    pub unrecorded: Counter,
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
    /// The rate over the display window (a snapshot, not a sequence).
    pub rate_window: Family<RateLabels, Gauge<f64, AtomicU64>>,
    /// A calibrated verifier's rate corrected for its judge's errors, and
    /// the bounds of its anytime-valid interval (`LiveJudge::correct`).
    pub corrected: Family<RateLabels, Gauge<f64, AtomicU64>>,
    pub corrected_lower: Family<RateLabels, Gauge<f64, AtomicU64>>,
    pub corrected_upper: Family<RateLabels, Gauge<f64, AtomicU64>>,
    /// A calibrated verifier's judge on its labelled set: sensitivity and
    /// specificity (point estimates), set once at startup.
    pub judge_sensitivity: Family<CheckLabel, Gauge<f64, AtomicU64>>,
    pub judge_specificity: Family<CheckLabel, Gauge<f64, AtomicU64>>,
    /// 1 while an alarm of its kind holds for the check, 0 once it
    /// resolved.
    pub alarm: Family<AlarmLabels, Gauge>,
    /// Alarms of the kind raised so far for the check (each incident).
    pub alarms_raised: Family<AlarmLabels, Gauge>,
}

/// A check.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CheckLabel {
    pub check: String,
}

/// An alarm's check, attempt kind and rule.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct AlarmLabels {
    pub check: String,
    pub attempt: String,
    pub kind: String,
}

/// The live rates' gauges, the judges' and the alarms', registered.
struct LiveFamilies {
    rate: Family<RateLabels, Gauge<f64, AtomicU64>>,
    rate_lower: Family<RateLabels, Gauge<f64, AtomicU64>>,
    rate_upper: Family<RateLabels, Gauge<f64, AtomicU64>>,
    rate_window: Family<RateLabels, Gauge<f64, AtomicU64>>,
    corrected: Family<RateLabels, Gauge<f64, AtomicU64>>,
    corrected_lower: Family<RateLabels, Gauge<f64, AtomicU64>>,
    corrected_upper: Family<RateLabels, Gauge<f64, AtomicU64>>,
    judge_sensitivity: Family<CheckLabel, Gauge<f64, AtomicU64>>,
    judge_specificity: Family<CheckLabel, Gauge<f64, AtomicU64>>,
    alarm: Family<AlarmLabels, Gauge>,
    alarms_raised: Family<AlarmLabels, Gauge>,
}

/// A family of f64 gauges registered under `name` with `help`.
fn gauge_family<L>(
    registry: &mut Registry,
    name: &str,
    help: &str,
) -> Family<L, Gauge<f64, AtomicU64>>
where
    L: Clone
        + std::hash::Hash
        + Eq
        + prometheus_client::encoding::EncodeLabelSet
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let g = Family::<L, Gauge<f64, AtomicU64>>::default();
    registry.register(name, help, g.clone());
    g
}

impl LiveFamilies {
    fn register(registry: &mut Registry) -> LiveFamilies {
        let rate = gauge_family(
            registry,
            "probity_check_pass_rate",
            "Each check's live pass rate as its cells say: attempt = first (the system's own) or published. For a calibrated verifier, its judge's own rate, not corrected for the judge's errors: see probity_check_corrected_pass_rate.",
        );
        let rate_lower = gauge_family(
            registry,
            "probity_check_pass_rate_lower",
            "Lower bound of the rate's anytime-valid confidence sequence (valid however often it is read).",
        );
        let rate_upper = gauge_family(
            registry,
            "probity_check_pass_rate_upper",
            "Upper bound of the rate's anytime-valid confidence sequence.",
        );
        let rate_window = gauge_family(
            registry,
            "probity_check_pass_rate_window",
            "The rate over the last [monitor] window requests (a snapshot, not a sequence).",
        );
        let corrected = gauge_family(
            registry,
            "probity_check_corrected_pass_rate",
            "A calibrated verifier's live pass rate corrected for its judge's errors (Rogan-Gladen; the judge measured on its labelled set at startup).",
        );
        let corrected_lower = gauge_family(
            registry,
            "probity_check_corrected_pass_rate_lower",
            "Lower bound of the corrected rate's interval: the all-traffic sequence and the judge's sensitivity and specificity together, valid however often it is read.",
        );
        let corrected_upper = gauge_family(
            registry,
            "probity_check_corrected_pass_rate_upper",
            "Upper bound of the corrected rate's interval (valid however often it is read).",
        );
        let judge_sensitivity = gauge_family(
            registry,
            "probity_judge_sensitivity",
            "A calibrated verifier's judge on its labelled set: P(judge PASS | labelled PASS).",
        );
        let judge_specificity = gauge_family(
            registry,
            "probity_judge_specificity",
            "A calibrated verifier's judge on its labelled set: P(judge FAIL | labelled FAIL).",
        );
        let alarm = Family::<AlarmLabels, Gauge>::default();
        registry.register(
            "probity_alarm",
            "1 while a check's live rate is detected below its minimum (kind = below_minimum) or established to differ from the baseline run (differs_from_baseline); 0 once it recovered (the watch re-armed).",
            alarm.clone(),
        );
        let alarms_raised = Family::<AlarmLabels, Gauge>::default();
        registry.register(
            "probity_alarms_raised",
            "Alarms raised so far per check, attempt and kind (below_minimum, differs_from_baseline, rate_changed: a confidence sequence emptied, the rate changed); each incident counts once.",
            alarms_raised.clone(),
        );
        LiveFamilies {
            rate,
            rate_lower,
            rate_upper,
            rate_window,
            corrected,
            corrected_lower,
            corrected_upper,
            judge_sensitivity,
            judge_specificity,
            alarm,
            alarms_raised,
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let mut counter = |name: &str, help: &str| {
            let c = Counter::default();
            registry.register(name, help, c.clone());
            c
        };
        let requests = counter(
            "probity_requests",
            "Requests guarded (Chat Completions and the Responses API).",
        );
        let published = counter(
            "probity_published",
            "Requests answered with an output that passed.",
        );
        let nothing_passed = counter(
            "probity_nothing_passed",
            "Requests whose every output a check failed (outcome nothing-passed).",
        );
        let unjudged = counter(
            "probity_unjudged",
            "Requests whose output no check failed but one could not judge (outcome check-error).",
        );
        let upstream_failed = counter(
            "probity_upstream_failed",
            "Requests for which the upstream produced no output (outcome upstream-error).",
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
        let malformed = counter(
            "probity_malformed",
            "Requests refused before they were guarded: a body too large (413), too slow to arrive (408) or not a chat completions request (400).",
        );
        let unrecorded = counter(
            "probity_unrecorded",
            "Requests answered but not recorded: the store did not keep up (slow, reconnecting) or its writer stopped (the log says why).",
        );
        let queue_full = counter(
            "probity_queue_full",
            "Requests answered HTTP 429 with Retry-After at once: requests_per_minute would have queued them longer than queue_wait_s.",
        );
        let streamed = counter(
            "probity_streamed",
            "Requests that asked for server-sent events (`stream: true`), counted on arrival: answered, refused or cancelled.",
        );
        let tokens = Family::<AttemptLabel, Counter>::default();
        registry.register(
            "probity_tokens",
            "Tokens (prompt + completion) the upstream reported: attempt = first, or retry (what reliability cost).",
            tokens.clone(),
        );
        let cost = Family::<CostLabels, Counter<f64, AtomicU64>>::default();
        registry.register(
            "probity_cost",
            "What the upstream's tokens cost at [upstream] price, in its currency: attempt = first, or retry (what reliability cost). Judges' calls are not included; absent without a price.",
            cost.clone(),
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
        // NaN until a request finishes: no share is known, and 0 would read
        // as "nothing published".
        pass_rate.set(f64::NAN);
        registry.register(
            "probity_pass_rate",
            "Share of finished requests that published an output (NaN before the first).",
            pass_rate.clone(),
        );
        let store_stalled = Gauge::default();
        registry.register(
            "probity_store_stalled",
            "1 while the store's commits are stalled (a commit under way for more than 2 s: slow, or down and tried again every second); answers go on, records are held in memory.",
            store_stalled.clone(),
        );
        let LiveFamilies {
            rate,
            rate_lower,
            rate_upper,
            rate_window,
            corrected,
            corrected_lower,
            corrected_upper,
            judge_sensitivity,
            judge_specificity,
            alarm,
            alarms_raised,
        } = LiveFamilies::register(&mut registry);
        Metrics {
            registry,
            rate,
            rate_lower,
            rate_upper,
            rate_window,
            corrected,
            corrected_lower,
            corrected_upper,
            judge_sensitivity,
            judge_specificity,
            alarm,
            alarms_raised,
            queue_full,
            store_stalled,
            requests,
            published,
            nothing_passed,
            unjudged,
            upstream_failed,
            rejected,
            attempts,
            attempt_errors,
            tokens,
            cost,
            unauthorized,
            cancelled,
            streamed,
            malformed,
            unrecorded,
            cells,
            latency,
            pass_rate,
        }
    }
}

impl Metrics {
    /// Count `cells` of the checks `names` for an attempt of `kind`.
    pub(crate) fn count_cells(&self, names: &[String], kind: &str, cells: &[Cell]) {
        for (name, cell) in names.iter().zip(cells) {
            let cell = match cell {
                Cell::Pass => "pass",
                Cell::Fail => "fail",
                Cell::Error => "error",
                Cell::Missing => "missing",
                Cell::NotApplicable => "not_applicable",
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

    /// Set the live-rate and alarm gauges from `monitor`.
    pub(crate) fn update_rates(&self, monitor: &Monitor) {
        monitor.each(|name, kind, watch| {
            if watch.requests() == 0 {
                return;
            }
            let labels = RateLabels {
                check: name.to_string(),
                attempt: kind.to_string(),
            };
            let (mean, interval) = watch.all();
            self.rate.get_or_create(&labels).set(mean);
            self.rate_lower.get_or_create(&labels).set(interval.lower);
            self.rate_upper.get_or_create(&labels).set(interval.upper);
            self.rate_window
                .get_or_create(&labels)
                .set(watch.window().rate());
            if let Some(LiveCorrection::Corrected(c)) = watch.corrected() {
                self.corrected.get_or_create(&labels).set(c.estimate);
                self.corrected_lower
                    .get_or_create(&labels)
                    .set(c.interval.lower);
                self.corrected_upper
                    .get_or_create(&labels)
                    .set(c.interval.upper);
            }
            for alarm_kind in [
                AlarmKind::BelowMinimum,
                AlarmKind::DiffersFromBaseline,
                AlarmKind::RateChanged,
            ] {
                let labels = AlarmLabels {
                    check: name.to_string(),
                    attempt: kind.to_string(),
                    kind: alarm_kind.name().to_string(),
                };
                let raised = watch.incidents(alarm_kind);
                if alarm_kind != AlarmKind::RateChanged {
                    let holds = watch.active().iter().any(|a| a.kind == alarm_kind);
                    // A kind that was never raised has no series until it
                    // is (a 0 for every check would crowd the page).
                    if holds || raised > 0 {
                        self.alarm.get_or_create(&labels).set(i64::from(holds));
                    }
                }
                if raised > 0 {
                    self.alarms_raised.get_or_create(&labels).set(raised as i64);
                }
            }
        });
    }

    /// Set the judge gauges of the calibrated checks among `names` (by
    /// column) from `labels`, what each judge answered on its labelled set.
    pub(crate) fn set_judges(
        &self,
        names: &[String],
        labels: &[Option<probity_core::stats::LabelCounts>],
    ) {
        for (name, counts) in names.iter().zip(labels) {
            let Some(c) = counts else { continue };
            let label = CheckLabel {
                check: name.clone(),
            };
            if c.pass_labels > 0 {
                self.judge_sensitivity
                    .get_or_create(&label)
                    .set(c.judged_pass as f64 / c.pass_labels as f64);
            }
            if c.fail_labels > 0 {
                self.judge_specificity
                    .get_or_create(&label)
                    .set(c.judged_fail as f64 / c.fail_labels as f64);
            }
        }
    }

    /// Refresh the pass-rate gauge from the counters.
    pub(crate) fn update_pass_rate(&self) {
        let published = self.published.get();
        let done = published
            + self.nothing_passed.get()
            + self.unjudged.get()
            + self.upstream_failed.get();
        if done > 0 {
            self.pass_rate.set(published as f64 / done as f64);
        }
    }
}

/// How often each check could not judge an output (a broken expression, a
/// judge that did not answer), told on standard error the 1st, 2nd, 4th,
/// 8th … time for each check: an operator sees a broken check with the
/// first request, and the log grows with the logarithm of the traffic.
pub(crate) struct CheckErrors {
    counts: Vec<AtomicU64>,
}

impl CheckErrors {
    pub fn new(checks: usize) -> CheckErrors {
        CheckErrors {
            counts: (0..checks).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Count the checks that erred on `a`'s output (an attempt without
    /// one is the upstream's failure, not theirs); the lines to log.
    pub fn note(&self, names: &[String], a: &crate::retry::guard::Attempt) -> Vec<String> {
        if a.output.is_none() {
            return Vec::new();
        }
        let mut lines = Vec::new();
        for (k, cell) in a.cells.iter().enumerate() {
            if *cell != Cell::Error {
                continue;
            }
            let Some(count) = self.counts.get(k) else {
                continue;
            };
            let n = count.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                let why = a
                    .reasons
                    .iter()
                    .find(|(kk, _)| *kk == k)
                    .map_or("no reason given", |(_, r)| r.as_str());
                lines.push(format!(
                    "check {} could not judge an output ({n} so far; answered as outcome check-error unless another check failed it): {}",
                    names.get(k).map_or("?", String::as_str),
                    crate::provider::redact::one_line(why)
                ));
            }
        }
        lines
    }
}

/// A running guard's shared state.
pub(crate) struct ServeState {
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
    pub live: Monitor,
    /// Attempts per class of request, when configured.
    pub classes: Option<super::classes::Classes>,
    pub writer: Writer,
    pub run_id: i64,
    pub next_input: AtomicU64,
    pub metrics: Metrics,
    pub check_errors: CheckErrors,
    /// Requests admitted per minute (`requests_per_minute`), waited for at
    /// most `queue_wait`.
    pub admission: crate::provider::limits::RateLimiter,
    pub queue_wait: Duration,
    /// Records handed to the store's writer (those it refused are
    /// `metrics.unrecorded`).
    pub recorded: AtomicU64,
    /// The prices its calls are made at (the upstream's and the judges'),
    /// as stored with its run.
    pub prices: probity_core::cost::RunPrices,
}

impl ServeState {
    /// The index of the next request.
    pub(crate) fn next_index(&self) -> usize {
        self.next_input.fetch_add(1, Ordering::Relaxed) as usize
    }
}
