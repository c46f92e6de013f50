//! A comparison of two runs in HTML: a `<section id="comparison">` on a
//! run's page (`probity run --baseline`), or a small page of its own
//! (`probity compare --format html`). One row per check with its change
//! as an interval bar around zero (`svg::diff_bar`). The markup is the
//! `comparison` macro of `templates/macros.html`; this module gathers its
//! data as plain text.

use crate::document::comparison::ComparisonReport;
use crate::facts::comparison::{
    inputs_line, p_value, points, points_abs, points_interval, settings_line,
};
use crate::html::page::PageShell;
use crate::html::template::{markup, render};
use crate::numbers::pct;
use crate::svg::{diff_axis, diff_bar, diff_span};
use minijinja::Value;
use probity_core::compare::Direction;
use serde::Serialize;

#[derive(Serialize)]
pub(crate) struct ComparisonContext {
    class: &'static str,
    conclusion: String,
    baseline: Side,
    candidate: Side,
    settings: String,
    inputs: String,
    axis: Value,
    adjusted_head: Value,
    checks: Vec<CheckRow>,
}

#[derive(Serialize)]
struct Side {
    id: i64,
    name: String,
    system: String,
}

#[derive(Serialize)]
struct CheckRow {
    name: String,
    class: &'static str,
    word: &'static str,
    baseline: String,
    candidate: String,
    change: String,
    bar: Value,
    paired: String,
    unpaired: String,
    mde: String,
    p: String,
    p_adjusted: String,
}

/// The data of the comparison section.
pub(crate) fn context(r: &ComparisonReport) -> ComparisonContext {
    let c = &r.comparison;
    let span = diff_span(c);
    let side = |i: &crate::document::info::RunInfo| Side {
        id: i.id,
        name: i.name.clone(),
        system: i.system_label.clone(),
    };
    ComparisonContext {
        class: if r.regressed() { "fail" } else { "pass" },
        conclusion: r.conclusion(),
        baseline: side(&r.baseline),
        candidate: side(&r.candidate),
        settings: settings_line(c),
        inputs: inputs_line(c),
        axis: markup(diff_axis(span)),
        adjusted_head: markup(match c.options.multiple {
            probity_core::stats::MultipleTesting::Holm => "Holm-<br>adjusted p",
            probity_core::stats::MultipleTesting::None => "adjusted p<br>(no correction)",
        }),
        checks: c
            .checks
            .iter()
            .map(|k| CheckRow {
                name: k.name.clone(),
                class: match k.direction {
                    Direction::Regressed => "fail",
                    Direction::Improved => "pass",
                    _ => "neutral",
                },
                word: k.direction.words(),
                baseline: pct(k.baseline.estimate),
                candidate: pct(k.candidate.estimate),
                change: points(k.decisive().mean_diff),
                bar: markup(diff_bar(k, span)),
                paired: k.paired.as_ref().map_or("–".to_string(), points_interval),
                unpaired: points_interval(&k.unpaired),
                mde: points_abs(k.mde),
                p: p_value(k.p_value),
                p_adjusted: p_value(k.p_adjusted),
            })
            .collect(),
    }
}

#[derive(Serialize)]
struct Page {
    page: PageShell,
    comparison: ComparisonContext,
}

/// A small self-contained page holding the comparison section.
pub(crate) fn page(r: &ComparisonReport) -> String {
    render(
        "comparison.html",
        Page {
            page: PageShell::small(format!(
                "probity compare {} → {}",
                r.baseline.id, r.candidate.id
            )),
            comparison: context(r),
        },
    )
}
