//! The guarded system beside its retry plan's prediction (paper §4.2),
//! shared by every format.
//!
//! A run with a `[retry]` policy samples each `(i, j)` as a guarded
//! request (up to `m` attempts until one passes the deciding checks). The
//! run store gives a [`RetryCheck`]: what the guarded requests measured
//! (attempts histogram, P(success within m), attempts used, calls and
//! tokens) and what the geometric model predicts from the single-attempt
//! tensor under independence, at the joint rate (with its interval) and
//! per input. The prediction **held** when the joint-rate model's bands
//! overlap the measured intervals of both figures ([`RULE`]).
//!
//! [`text`] is the terminal block (also printed by `probity plan RUN`);
//! the other formats draw the same [`rows`].

use crate::numbers::{interval, pct};
use crate::sanitize::terminal_line;
pub use probity_core::guarded::{Band, GuardedMeasurement, Prediction, RetryCheck};

/// The rule the verdict applies, after "the prediction held when …".
pub const RULE: &str = "the joint-rate model's band overlaps the measured interval of both P(success within m) and the attempts used";

/// The verdict on the prediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The joint-rate prediction overlaps both measured intervals.
    Held,
    /// It misses at least one of them.
    NotHeld,
    /// There is no joint-rate prediction (no output was judged on every
    /// deciding check), so nothing could be tested.
    Untested,
}

/// The verdict of `check`.
pub fn outcome(check: &RetryCheck) -> Outcome {
    if check.held {
        Outcome::Held
    } else if joint(check).is_none() {
        Outcome::Untested
    } else {
        Outcome::NotHeld
    }
}

/// The joint-rate prediction, when there is one.
pub fn joint(check: &RetryCheck) -> Option<&Prediction> {
    check.predictions.iter().find(|p| p.model == "joint")
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

/// `1234 calls (3.09 per request, judges included), 56789 tokens`.
pub fn spent_line(g: &GuardedMeasurement) -> String {
    format!(
        "{} call{} ({:.2} per request, judge calls included), {} tokens",
        g.calls,
        if g.calls == 1 { "" } else { "s" },
        calls_per_request(g),
        g.tokens
    )
}

/// The verdict as a sentence, with its rule.
pub fn verdict_line(check: &RetryCheck) -> String {
    match outcome(check) {
        Outcome::Held => format!("prediction held: {RULE}"),
        Outcome::NotHeld => format!(
            "prediction did not hold: the joint-rate model's band misses the measured interval of {} (attempts are not independent, feedback changes the pass rate, or inputs differ)",
            missed(check)
        ),
        Outcome::Untested => {
            "prediction not tested: no output was judged on every deciding check, so there is no joint rate to predict from".to_string()
        }
    }
}

/// Which figures the joint prediction misses: `P(success within m)`,
/// `the attempts used`, or both.
pub fn missed(check: &RetryCheck) -> String {
    let Some(j) = joint(check) else {
        return "both".to_string();
    };
    let g = &check.measured;
    let s = !j.success_within.overlaps(&measured_success(g));
    let a = !j.attempts.overlaps(&g.attempts);
    match (s, a) {
        (true, true) | (false, false) => {
            "both P(success within m) and the attempts used".to_string()
        }
        (true, false) => "P(success within m)".to_string(),
        (false, true) => "the attempts used".to_string(),
    }
}

/// The terminal block: headline, histogram, the measured-vs-predicted
/// table, calls and tokens, and the verdict. `color` paints the verdict.
pub fn text(check: &RetryCheck, color: bool) -> String {
    let g = &check.measured;
    let mut s = format!("Guarded system (§4.2): {}\n", headline(g));
    s.push_str(&format!("  published at attempt   {}\n", histogram_line(g)));
    let rows = rows(check);
    let cells: Vec<[String; 4]> = rows
        .iter()
        .map(|r| {
            [
                if r.label == "measured" {
                    r.label.clone()
                } else {
                    format!("{} model", r.label)
                },
                r.p.as_ref().map(pct_band).unwrap_or_default(),
                pct_band(&r.success_within),
                attempts_band(&r.attempts),
            ]
        })
        .collect();
    let head = [
        "",
        "P(pass) per attempt",
        "P(success within m)",
        "attempts used",
    ];
    let width = |c: usize| {
        cells
            .iter()
            .map(|r| r[c].chars().count())
            .chain(std::iter::once(head[c].chars().count()))
            .max()
            .unwrap_or(0)
    };
    let (w0, w1, w2, w3) = (width(0), width(1), width(2), width(3));
    let line = format!(
        "  {:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}",
        head[0], head[1], head[2], head[3]
    );
    s.push_str(line.trim_end());
    s.push('\n');
    for c in &cells {
        let line = format!(
            "  {:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}",
            c[0], c[1], c[2], c[3]
        );
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s.push_str(&format!("  spent: {}\n", spent_line(g)));
    let verdict = terminal_line(&verdict_line(check), 0);
    let verdict = match (color, outcome(check)) {
        (false, _) => verdict,
        (true, Outcome::Held) => format!("\x1b[1;32m{verdict}\x1b[0m"),
        (true, Outcome::NotHeld) => format!("\x1b[1;31m{verdict}\x1b[0m"),
        (true, Outcome::Untested) => format!("\x1b[1;33m{verdict}\x1b[0m"),
    };
    s.push_str(&format!("  {verdict}\n"));
    s
}
