//! A trend in HTML (`probity report --trend NAME --format html`): a small
//! page (`templates/trend.html`) with one chart (`svg::trend_chart`) and
//! one table per check.

use crate::document::trend::TrendReport;
use crate::html::page::PageShell;
use crate::html::template::{markup, render};
use crate::numbers::{interval, pct};
use crate::svg::trend_chart;
use minijinja::Value;
use serde::Serialize;

#[derive(Serialize)]
pub(crate) struct TrendCheck {
    name: String,
    chart: Value,
    rows: Vec<TrendRow>,
}

#[derive(Serialize)]
struct TrendRow {
    id: i64,
    created: String,
    system: String,
    config: String,
    /// [`crate::document::trend::TrendRun::marks_line`].
    marks: String,
    rate: String,
    interval: String,
}

/// Per check: its chart and a row per run.
pub(crate) fn checks(t: &TrendReport) -> Vec<TrendCheck> {
    t.checks
        .iter()
        .enumerate()
        .map(|(k, name)| TrendCheck {
            name: name.clone(),
            chart: markup(trend_chart(t, k)),
            rows: t
                .runs
                .iter()
                .map(|r| {
                    let (rate, iv) = match r.rates.get(k) {
                        Some(Some((rate, _))) if rate.n > 0 => (
                            pct(rate.estimate),
                            interval(rate.interval.lower, rate.interval.upper),
                        ),
                        Some(Some(_)) => ("no data".into(), String::new()),
                        _ => ("–".into(), String::new()),
                    };
                    TrendRow {
                        id: r.run.id,
                        created: r.run.created_at.clone(),
                        system: r.run.system_label.clone(),
                        config: r.run.config_hash.chars().take(8).collect(),
                        marks: r.marks_line(),
                        rate,
                        interval: iv,
                    }
                })
                .collect(),
        })
        .collect()
}

#[derive(Serialize)]
struct Page {
    page: PageShell,
    name: String,
    runs: usize,
    checks: Vec<TrendCheck>,
}

/// The trend as a self-contained HTML page: one chart and one table per
/// check.
pub(crate) fn page(t: &TrendReport) -> String {
    render(
        "trend.html",
        Page {
            page: PageShell::small(format!("probity trend: {}", t.name)),
            name: t.name.clone(),
            runs: t.runs.len(),
            checks: checks(t),
        },
    )
}
