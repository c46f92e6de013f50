//! The guarded system beside its retry plan's prediction (paper §4.2), as
//! every format says it.
//!
//! A run with a `[retry]` policy samples each `(i, j)` as a guarded
//! request (up to `m` attempts until one passes the deciding checks). The
//! run store gives a [`RetryCheck`]: what the guarded requests measured
//! (attempts histogram, P(success within m), attempts used, calls and
//! tokens) and what the geometric model predicts from the single-attempt
//! tensor under independence, at the joint rate (with its interval) and
//! per input. The prediction **held** when the measured share published
//! and the measured attempts used both lie inside the per-input model's
//! intervals ([`RULE`]; issue 35 item 3).
//!
//! Every format draws the same [`rows`] with the same sentences.

use crate::numbers::{interval, pct};
use probity_core::guarded::{Band, GuardedMeasurement, Prediction, RetryCheck};

/// The rule the verdict applies, after "the prediction held when …".
pub const RULE: &str = "the measured P(success within m) and attempts used lie inside the per-input model's intervals (each input at its own rate)";

/// The verdict on the prediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Both measured figures lie inside the per-input prediction's
    /// intervals.
    Held,
    /// At least one lies outside.
    NotHeld,
    /// There is no joint-rate prediction (no output was judged on every
    /// deciding check), so nothing could be tested.
    Untested,
}

/// The verdict of `check`.
pub fn outcome(check: &RetryCheck) -> Outcome {
    if check.held {
        Outcome::Held
    } else if per_input(check).is_none() {
        Outcome::Untested
    } else {
        Outcome::NotHeld
    }
}

/// The joint-rate prediction, when there is one.
pub fn joint(check: &RetryCheck) -> Option<&Prediction> {
    check.predictions.iter().find(|p| p.model == "joint")
}

/// The per-input prediction (the one the verdict tests), when there is one.
pub fn per_input(check: &RetryCheck) -> Option<&Prediction> {
    check.predictions.iter().find(|p| p.model == "per-input")
}

/// The measured P(success within m) as a band.
pub fn measured_success(g: &GuardedMeasurement) -> Band {
    Band {
        estimate: g.success.estimate,
        lower: g.success.interval.lower,
        upper: g.success.interval.upper,
    }
}

/// Calls per guarded request (judge calls included); 0 without requests.
pub fn calls_per_request(g: &GuardedMeasurement) -> f64 {
    if g.samples == 0 {
        0.0
    } else {
        g.calls as f64 / g.samples as f64
    }
}

/// One row of the measured-vs-predicted table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// `measured`, or the model: `independence`, `joint`, `per-input`.
    pub label: String,
    /// The per-attempt pass probability (none for the measured row).
    pub p: Option<Band>,
    pub success_within: Band,
    pub attempts: Band,
}

/// The measured row, then one per prediction.
pub fn rows(check: &RetryCheck) -> Vec<Row> {
    let g = &check.measured;
    std::iter::once(Row {
        label: "measured".to_string(),
        p: None,
        success_within: measured_success(g),
        attempts: g.attempts,
    })
    .chain(check.predictions.iter().map(|p| Row {
        label: p.model.clone(),
        p: Some(p.p),
        success_within: p.success_within,
        attempts: p.attempts,
    }))
    .collect()
}

/// Whether a band is a single point (independence has no interval).
pub fn is_point(b: &Band) -> bool {
    (b.upper - b.lower).abs() < 1e-12
}

/// A probability band in percent: `97.3% [96.1, 98.2]`, or `97.9%` for a point.
pub fn pct_band(b: &Band) -> String {
    if is_point(b) {
        pct(b.estimate)
    } else {
        format!("{} {}", pct(b.estimate), interval(b.lower, b.upper))
    }
}

/// Attempts with two decimals: `1.51 [1.47, 1.55]`, or `1.48` for a point.
pub fn attempts_band(b: &Band) -> String {
    let f = |x: f64| {
        if x.is_finite() {
            format!("{x:.2}")
        } else {
            "–".to_string()
        }
    };
    if is_point(b) {
        f(b.estimate)
    } else {
        format!("{} [{}, {}]", f(b.estimate), f(b.lower), f(b.upper))
    }
}

/// `at most 3 attempts per request (2 retries), 400 requests`.
pub fn headline(g: &GuardedMeasurement) -> String {
    let retries = g.m.saturating_sub(1);
    format!(
        "at most {} attempt{} per request ({retries} retr{}), {} request{}",
        g.m,
        if g.m == 1 { "" } else { "s" },
        if retries == 1 { "y" } else { "ies" },
        g.samples,
        if g.samples == 1 { "" } else { "s" }
    )
}

/// `1: 250 · 2: 100 · 3: 30; nothing published: 20`.
pub fn histogram_line(g: &GuardedMeasurement) -> String {
    let hist: Vec<String> = g
        .histogram
        .iter()
        .enumerate()
        .map(|(a, n)| format!("{}: {n}", a + 1))
        .collect();
    format!(
        "{}; nothing published: {}",
        hist.join(" · "),
        g.nothing_published
    )
}

/// `1234 calls (3.09 per request, judge calls included), 56789 tokens (45.9
/// per attempt); on retries: 400 calls (32%), 20000 tokens (35%)`.
pub fn spent_line(g: &GuardedMeasurement) -> String {
    let share = |part: u64, whole: u64| {
        if whole == 0 {
            "0%".to_string()
        } else {
            format!("{:.0}%", 100.0 * part as f64 / whole as f64)
        }
    };
    // Attempts made in all: the mean attempts used times the requests.
    let attempts = (g.attempts.estimate * g.samples as f64).round();
    let per_attempt = if attempts >= 1.0 {
        format!(" ({:.1} per attempt)", g.tokens as f64 / attempts)
    } else {
        String::new()
    };
    format!(
        "{} call{} ({:.2} per request, judge calls included), {} tokens{per_attempt}; on retries: {} calls ({}), {} tokens ({})",
        g.calls,
        if g.calls == 1 { "" } else { "s" },
        calls_per_request(g),
        g.tokens,
        g.retry_calls,
        share(g.retry_calls, g.calls),
        g.retry_tokens,
        share(g.retry_tokens, g.tokens)
    )
}

/// The verdict as a sentence, with its rule.
pub fn verdict_line(check: &RetryCheck) -> String {
    match outcome(check) {
        Outcome::Held => format!("prediction held: {RULE}"),
        Outcome::NotHeld => format!(
            "prediction did not hold: the measured {} outside the per-input model's interval (attempts are not independent of each other, or feedback changes the pass rate)",
            missed(check)
        ),
        Outcome::Untested => {
            "prediction not tested: no output was judged on every deciding check, so there is no joint rate to predict from".to_string()
        }
    }
}

/// Which measured figures lie outside the per-input prediction's
/// intervals: `P(success within m) … lies`, `attempts used … lie`, or
/// both.
pub fn missed(check: &RetryCheck) -> String {
    let Some(j) = per_input(check) else {
        return "P(success within m) and attempts used lie".to_string();
    };
    let g = &check.measured;
    let outside = |b: &Band, x: f64| x < b.lower - 1e-12 || x > b.upper + 1e-12;
    let s = outside(&j.success_within, g.success.estimate);
    let a = outside(&j.attempts, g.attempts.estimate);
    match (s, a) {
        (true, true) | (false, false) => "P(success within m) and attempts used lie".to_string(),
        (true, false) => "P(success within m) lies".to_string(),
        (false, true) => "attempts used lie".to_string(),
    }
}
