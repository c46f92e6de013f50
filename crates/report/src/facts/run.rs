//! Sentences about a run's checks, its aggregate and its retry plan,
//! shared by the formats so they say the same thing the same way.

use crate::document::run::RunReport;
use crate::numbers::{interval, name, pct, threshold_pct, trim_number};
use probity_core::stats::{Decision, ErrorPolicy};
use probity_core::{CheckSummary, Geometric, RateEstimate};

/// The settings every rate of the report was computed with, as one line:
/// confidence and method, how outputs are clustered, the verdict mode, the
/// error policy and the strategy.
pub fn statistics_line(s: &probity_core::Summary) -> String {
    let o = &s.options;
    let clustering = if s.shape.0 > 1 {
        "clustered by input"
    } else {
        "one input: no clustering"
    };
    format!(
        "{} intervals ({}, {clustering}) · verdict: {} · errors {} · strategy {}",
        threshold_pct(o.confidence),
        name(o.interval),
        name(o.verdict),
        match o.errors {
            ErrorPolicy::AsFailure => "count as failures",
            ErrorPolicy::Exclude => "excluded",
        },
        name(s.strategy)
    )
}

/// Design effects at or below this are not worth a mention.
pub const DEFF_SHOWN_ABOVE: f64 = 1.05;

/// Samples beyond `n` that would settle an unestablished verdict.
pub fn more_samples(c: &CheckSummary) -> Option<u64> {
    if c.verdict.established {
        return None;
    }
    c.verdict
        .samples_needed
        .map(|s| s.saturating_sub(c.rate.n))
        .filter(|&m| m > 0)
}

/// `established`, `not established: ~N more samples would settle it`, or
/// `not established`.
pub fn established(c: &CheckSummary) -> String {
    if c.verdict.established {
        "established".to_string()
    } else if let Some(m) = more_samples(c) {
        format!(
            "not established: ~{m} more {} would settle it",
            if m == 1 { "sample" } else { "samples" }
        )
    } else {
        "not established".to_string()
    }
}

/// `3 errors counted as failures`, `3 errors excluded`, `2 missing`, joined.
pub fn errors(rate: &RateEstimate, policy: ErrorPolicy) -> Option<String> {
    let mut parts = Vec::new();
    let e = rate.counts.error;
    if e > 0 {
        let noun = if e == 1 { "error" } else { "errors" };
        parts.push(match policy {
            ErrorPolicy::AsFailure => format!("{e} {noun} counted as failures"),
            ErrorPolicy::Exclude => format!("{e} {noun} excluded"),
        });
    }
    if rate.counts.missing > 0 {
        parts.push(format!("{} missing (not judged)", rate.counts.missing));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// `design effect 2.31, effective n 432 of 1000` when the design effect
/// exceeds [`DEFF_SHOWN_ABOVE`].
pub fn design_effect(rate: &RateEstimate) -> Option<String> {
    (rate.design_effect.is_finite() && rate.design_effect > DEFF_SHOWN_ABOVE).then(|| {
        format!(
            "design effect {:.2}, effective n {} of {}",
            rate.design_effect,
            trim_number(rate.effective_n.round(), 0),
            rate.n
        )
    })
}

/// `96.2% [94.1, 97.6]`, or `no outputs judged` when `n == 0`.
pub fn rate_with_interval(rate: &RateEstimate) -> String {
    if rate.n == 0 {
        "no outputs judged".to_string()
    } else {
        format!(
            "{} {}",
            pct(rate.estimate),
            interval(rate.interval.lower, rate.interval.upper)
        )
    }
}

/// The figures behind a verdict, on one line:
/// `rate 85.0% [80.1, 88.9] at 95% confidence, minimum 90%, n = 200`.
pub fn figures(c: &CheckSummary) -> String {
    let mut s = format!(
        "rate {} at {} confidence, minimum {}, n = {}",
        rate_with_interval(&c.rate),
        threshold_pct(c.rate.confidence),
        threshold_pct(c.verdict.threshold),
        c.rate.n
    );
    if let Some(d) = design_effect(&c.rate) {
        s.push_str(&format!(" ({d})"));
    }
    s
}

/// `≥ 95%`.
pub fn threshold(c: &CheckSummary) -> String {
    format!("≥ {}", threshold_pct(c.verdict.threshold))
}

/// Whether a check needs attention (its message, example are shown).
pub fn not_passing(c: &CheckSummary) -> bool {
    c.verdict.decision != Decision::Pass
}

/// Attempts and retries, e.g. `4 attempts (3 retries)`; `never` when the
/// pass rate is 0.
pub fn attempts(g: Option<Geometric>, target: f64) -> String {
    match g.and_then(|g| g.attempts_for(target)) {
        Some(m) => format!(
            "{m} {} ({} {})",
            if m == 1 { "attempt" } else { "attempts" },
            m - 1,
            if m == 2 { "retry" } else { "retries" }
        ),
        None => "no number of attempts (pass rate 0)".to_string(),
    }
}

/// The retry plan as lines of text (no markup), or empty when there is
/// nothing to plan (no checks).
pub fn retry_lines(r: &RunReport) -> Vec<String> {
    let plan = &r.summary.retry;
    if r.summary.checks.is_empty() && plan.rates.is_empty() {
        return Vec::new();
    }
    let target = r.retry_target;
    let tp = threshold_pct(target);
    let mut out = vec![format!(
        "P(pass all) under independence: {}",
        pct(plan.p_independent)
    )];
    if let Some(e) = &plan.empirical {
        let mut line = format!(
            "measured joint pass rate: {}",
            rate_with_interval(&e.overall)
        );
        if let Some(ratio) = plan.dependence_ratio() {
            line.push_str(&format!("; ratio to independence {ratio:.2}"));
            if ratio > 1.05 {
                line.push_str(" (checks tend to fail on the same outputs)");
            } else if ratio < 0.95 {
                line.push_str(" (checks tend to fail on different outputs)");
            }
        }
        out.push(line);
        out.push(format!(
            "attempts for {tp} of calls to publish: {} at the measured rate, {} at its lower bound",
            attempts(plan.measured(), target),
            attempts(plan.conservative(), target)
        ));
        if let Some(a) = plan.measured().and_then(|g| g.expected_attempts()) {
            out.push(format!(
                "expected attempts per call: {a:.2} ({:.2} retries)",
                a - 1.0
            ));
        }
    } else {
        out.push(format!(
            "attempts for {tp} of calls to publish: {}",
            attempts(Some(plan.independent()), target)
        ));
        if let Some(a) = plan.independent().expected_attempts() {
            out.push(format!(
                "expected attempts per call: {a:.2} ({:.2} retries)",
                a - 1.0
            ));
        }
    }
    out
}

/// The aggregate on one line: `min 85.0% [78.0, 90.1], worst check
/// politeness_validator (each at 97.5% confidence)`. `check` renders a
/// check name for the medium.
pub fn aggregate_line(r: &RunReport, check: &dyn Fn(&str) -> String) -> String {
    let a = &r.summary.aggregate;
    let mut s = format!("{} {}", name(a.method), rate_with_interval(&a.rate));
    if a.method == probity_core::Aggregate::Min {
        if let Some(w) = a.worst_validator {
            s.push_str(&format!(", worst check {}", check(&r.check_name(w))));
        }
        if let Some(c) = a.per_validator.first().map(|p| p.confidence) {
            if r.summary.checks.len() > 1 {
                // Bonferroni levels like 98.333…%: two decimals.
                s.push_str(&format!(
                    " (bounds at {}% confidence each)",
                    trim_number(c * 100.0, 2)
                ));
            }
        }
    }
    if let Some(d) = design_effect(&a.rate) {
        s.push_str(&format!("; {d}"));
    }
    s
}

/// The `count` inputs with the lowest success rate in the Input
/// Reliability Profile (inputs with nothing judged left out).
pub fn worst_inputs(r: &RunReport, count: usize) -> Vec<probity_core::ProfileEntry> {
    probity_core::profile::worst_first(&r.summary.input_profile)
        .into_iter()
        .filter(|e| e.rate.n > 0)
        .take(count)
        .collect()
}
