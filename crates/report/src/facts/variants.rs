//! A variants report's sentences as every format says them: the
//! conclusion, each established difference, each pair's line, a cell of
//! the matrix, a variant's cost.

use crate::document::variants::VariantsReport;
use crate::facts::comparison::{p_value, points, points_interval};
use crate::numbers::{decision_word, duration, interval, pct, plural, threshold_pct, trim_number};
use probity_core::compare::{CheckComparison, Direction};
use probity_core::cost::RunCost;
use probity_core::stats::MultipleTesting;
use probity_core::variants::{VariantCost, VariantsComparison};
use probity_core::CheckSummary;

/// `94.0% [91.2, 96.1] pass` (or `–` without data): a cell of the matrix.
pub fn cell(c: Option<&CheckSummary>) -> String {
    match c {
        Some(c) if c.rate.n > 0 => format!(
            "{} {} {}",
            pct(c.rate.estimate),
            interval(c.rate.interval.lower, c.rate.interval.upper),
            decision_word(c.verdict.decision)
        ),
        Some(_) => "no data".to_string(),
        None => "–".to_string(),
    }
}

/// How the variants were compared, as one sentence.
pub fn method_line(c: &VariantsComparison) -> String {
    if c.tests == 0 {
        return format!(
            "no pair of variants to compare ({} {}): each variant's rates only, {} intervals; no test made",
            c.names.len(),
            plural(c.names.len(), "variant"),
            threshold_pct(c.options.confidence)
        );
    }
    let pairs = match c.reference {
        Some(r) => format!(
            "each variant against the reference {:?}",
            c.names.get(r).map_or("", String::as_str)
        ),
        None => "every pair of variants".to_string(),
    };
    let correction = match c.options.multiple {
        MultipleTesting::Holm => format!(
            "p-values Holm-adjusted across all {} {} (pairs × checks): with no true difference, the chance that any variant is called better or worse is at most α = {}",
            c.tests,
            plural(c.tests, "test"),
            trim_number(1.0 - c.options.confidence, 4)
        ),
        MultipleTesting::None => format!(
            "no correction across the {} {}",
            c.tests,
            plural(c.tests, "test")
        ),
    };
    format!(
        "{pairs}, paired by input; change = B − A in percentage points, {} intervals; {correction}",
        threshold_pct(c.options.confidence)
    )
}

/// What a difference says, in words: `better`, `worse`,
/// `no established difference`, `no data`.
pub fn verdict(d: Direction) -> &'static str {
    match d {
        Direction::Improved => "better",
        Direction::Regressed => "worse",
        Direction::NoDetectableChange => "no established difference",
        Direction::NoData => "no data",
    }
}

/// `-12.3 pts [-18.0, -6.6], p = 0.0001, Holm-adjusted 0.0004`.
pub fn difference(c: &CheckComparison, m: MultipleTesting) -> String {
    let d = c.decisive();
    let p = match m {
        MultipleTesting::Holm => format!(
            "p = {}, Holm-adjusted {}",
            p_value(c.p_value),
            p_value(c.p_adjusted)
        ),
        MultipleTesting::None => format!("p = {} (uncorrected)", p_value(c.p_value)),
    };
    format!(
        "{} pts {}, {} {}; {p}",
        points(d.mean_diff),
        points_interval(d),
        d.n,
        if c.basis == probity_core::compare::Basis::Paired {
            "paired inputs"
        } else {
            "(unpaired)"
        }
    )
}

/// The conclusion: which variant is better than which, on what, only
/// where established; else that no difference is.
pub fn conclusion(r: &VariantsReport) -> String {
    let c = &r.comparison;
    let v = r.variants.len();
    let head = format!("{v} {}", plural(v, "variant"));
    let found = c.better();
    if c.pairs.is_empty() {
        return format!("{head}: nothing to compare");
    }
    if found.is_empty() {
        return format!("{head}: no established difference between variants on any check");
    }
    let parts: Vec<String> = found
        .iter()
        .map(|e| {
            format!(
                "{} better than {} on {}",
                c.names[e.better], c.names[e.worse], e.check.name
            )
        })
        .collect();
    format!(
        "{head}: {} established {}: {}",
        found.len(),
        plural(found.len(), "difference"),
        parts.join("; ")
    )
}

/// A variant's cost: `412 calls (12 to judges) · 30,100 tokens · cost
/// 0.0412 USD · latency mean 210 ms, p50 180 ms, p95 420 ms · 4.2 s`; the
/// money (`money`, its run's) when it was priced
/// ([`crate::facts::cost::cost_phrase`]).
pub fn cost_line(c: &VariantCost, money: &RunCost) -> String {
    let mut parts = vec![format!("{} calls", c.calls)];
    if c.judge_calls > 0 {
        parts[0].push_str(&format!(" ({} to judges)", c.judge_calls));
    }
    if c.cached > 0 {
        parts.push(format!("{} outputs reused", c.cached));
    }
    parts.push(if c.tokens > 0 {
        format!("{} tokens", c.tokens)
    } else {
        "tokens not reported".to_string()
    });
    parts.extend(crate::facts::cost::cost_phrase(money));
    parts.push(match &c.latency_ms {
        Some(l) => format!(
            "latency mean {} ms, p50 {} ms, p95 {} ms",
            ms(l.mean),
            ms(l.p50),
            ms(l.p95)
        ),
        None => "latency not recorded".to_string(),
    });
    if let Some(d) = c.duration_s {
        parts.push(duration(d));
    }
    parts.join(" · ")
}

/// Milliseconds: whole above 10, two decimals below (an in-process
/// simulator answers in hundredths of a millisecond).
fn ms(x: f64) -> String {
    if x >= 10.0 {
        trim_number(x, 0)
    } else {
        trim_number(x, 2)
    }
}
