//! `GET /metrics` of `probity collect`: OpenMetrics text (`prometheus-
//! client`), counts and rates only — never a span's content. Spans
//! received, mapped and not (by reason and convention: nothing dropped
//! unseen), refused for back-pressure, not recorded; every check's live
//! rate with its anytime-valid bounds and alarms, over all spans and per
//! group.

use super::ingest::Ingest;
use crate::serve::monitor::Monitor;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the receiver counts itself.
#[derive(Debug, Default)]
pub struct Receiving {
    /// Exports answered 429 (the pending spans were at their bound).
    pub throttled: AtomicU64,
    /// Exports answered 503 (the store is stalled).
    pub unavailable: AtomicU64,
    /// Exports refused as malformed (400, 413, 415).
    pub malformed: AtomicU64,
    /// Spans received, not yet checked.
    pub pending: AtomicU64,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UnmappedLabels {
    reason: String,
    convention: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabel {
    operation: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RateLabels {
    check: String,
    group: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AlarmLabels {
    check: String,
    group: String,
    kind: String,
}

type Rates = Family<RateLabels, Gauge<f64, AtomicU64>>;

/// The metrics text, as of now.
pub fn render(ingest: &Ingest, r: &Receiving) -> String {
    let mut reg = Registry::default();
    let c = &ingest.counts;
    let mut counter = |name: &str, help: &str, v: u64| {
        let k = Counter::<u64>::default();
        k.inc_by(v);
        reg.register(name, help, k);
    };
    counter(
        "probity_traces_spans",
        "Spans received.",
        c.spans.load(Ordering::Relaxed),
    );
    counter(
        "probity_traces_mapped",
        "Spans mapped to an input and output, and checked.",
        c.mapped.load(Ordering::Relaxed),
    );
    counter(
        "probity_traces_unrecorded",
        "Mapped spans checked but not stored (the store did not keep up, or stopped).",
        c.unrecorded.load(Ordering::Relaxed),
    );
    counter("probity_traces_throttled_exports", "Exports answered 429 with Retry-After: the spans waiting to be checked were at max_pending_spans.", r.throttled.load(Ordering::Relaxed));
    counter(
        "probity_traces_unavailable_exports",
        "Exports answered 503 with Retry-After: the store is stalled.",
        r.unavailable.load(Ordering::Relaxed),
    );
    counter(
        "probity_traces_malformed_exports",
        "Exports refused: not OTLP (400), too large (413) or of a content type not taken (415).",
        r.malformed.load(Ordering::Relaxed),
    );
    let s = &ingest.sampler;
    if s.samples() {
        counter(
            "probity_traces_judged_spans",
            "Mapped spans the verifiers judged: a random sample (judge_share), within judge_budget_per_hour.",
            s.judged.load(Ordering::Relaxed),
        );
        counter(
            "probity_traces_unjudged_spans",
            "Mapped spans the verifiers did not judge because they were not drawn into the sample (judge_share).",
            s.not_sampled.load(Ordering::Relaxed),
        );
        counter(
            "probity_traces_over_budget_spans",
            "Spans drawn for the verifiers but not judged: the hour's judge_budget_per_hour was spent.",
            s.over_budget.load(Ordering::Relaxed),
        );
    }
    if let Some((sent, failed)) = ingest.exported() {
        counter(
            "probity_traces_evaluation_events_exported",
            "gen_ai.evaluation.result events the export endpoint accepted.",
            sent,
        );
        counter(
            "probity_traces_evaluation_events_not_exported",
            "gen_ai.evaluation.result events not delivered (queue full, endpoint refused or unreachable).",
            failed,
        );
    }
    let pending = Gauge::<i64>::default();
    pending.set(r.pending.load(Ordering::Relaxed) as i64);
    reg.register(
        "probity_traces_pending_spans",
        "Spans received and not yet checked.",
        pending,
    );
    let unmapped = Family::<UnmappedLabels, Counter>::default();
    if let Ok(m) = c.unmapped.lock() {
        for ((reason, convention), n) in m.iter() {
            unmapped
                .get_or_create(&UnmappedLabels {
                    reason: reason.to_string(),
                    convention: convention.to_string(),
                })
                .inc_by(*n);
        }
    }
    reg.register("probity_traces_unmapped", "Spans not mapped, by reason: not_llm (no LLM convention), no_content (content capture is off), unknown_shape (the log names the attribute), filtered ([traces] operations).", unmapped);
    let ops = Family::<OperationLabel, Counter>::default();
    if let Ok(m) = c.operations.lock() {
        for (op, n) in m.iter() {
            ops.get_or_create(&OperationLabel {
                operation: op.clone(),
            })
            .inc_by(*n);
        }
    }
    reg.register(
        "probity_traces_mapped_by_operation",
        "Mapped spans by operation (chat, invoke_agent, execute_tool, …).",
        ops,
    );
    let rate = Rates::default();
    let lower = Rates::default();
    let upper = Rates::default();
    let alarm = Family::<AlarmLabels, Gauge>::default();
    let set = |group: &str, m: &Monitor| {
        m.each(|check, kind, watch| {
            if kind != "first" || watch.requests() == 0 {
                return;
            }
            let l = RateLabels {
                check: check.to_string(),
                group: group.to_string(),
            };
            let (mean, interval) = watch.all();
            rate.get_or_create(&l).set(mean);
            lower.get_or_create(&l).set(interval.lower);
            upper.get_or_create(&l).set(interval.upper);
            // The alarms in force: a resolved one goes back to 0 (it
            // re-arms, so the next incident pages again).
            for a in watch.active() {
                let kind = a.kind.name();
                alarm
                    .get_or_create(&AlarmLabels {
                        check: check.to_string(),
                        group: group.to_string(),
                        kind: kind.to_string(),
                    })
                    .set(1);
            }
        });
    };
    set("(all)", &ingest.all);
    if let Ok(groups) = ingest.groups.lock() {
        for (g, m) in groups.iter() {
            set(g, m);
        }
    }
    reg.register("probity_traces_check_pass_rate", "Each check's pass rate over the mapped spans, all of them (group=\"(all)\") and per group.", rate);
    reg.register("probity_traces_check_pass_rate_lower", "Lower bound of the rate's anytime-valid confidence sequence (valid however often it is read).", lower);
    reg.register(
        "probity_traces_check_pass_rate_upper",
        "Upper bound of the rate's anytime-valid confidence sequence.",
        upper,
    );
    reg.register("probity_traces_alarm", "1 once a check's rate is established below its minimum (kind = below_minimum) or to differ from the baseline run.", alarm);
    let mut text = String::new();
    let _ = prometheus_client::encoding::text::encode(&mut text, &reg);
    text
}
