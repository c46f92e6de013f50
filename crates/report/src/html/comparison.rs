//! A comparison of two runs in HTML: a `<section id="comparison">` on a
//! run's page (`probity run --baseline`), or a small page of its own
//! (`probity compare --format html`). One row per check with its change
//! as an interval bar around zero (`svg::diff_bar`). Names go
//! through [`html_escape`].

use crate::document::comparison::ComparisonReport;
use crate::document::info::system_label;
use crate::facts::comparison::{
    inputs_line, p_value, points, points_abs, points_interval, settings_line,
};
use crate::html::page::small_page;
use crate::numbers::pct;
use crate::sanitize::{html_escape, html_short};
use crate::svg::{diff_axis, diff_bar, diff_span};
use probity_core::compare::Direction;

/// The comparison as an HTML `<section id="comparison">` (for a run's
/// page; styles of the run report apply).
pub(crate) fn section(r: &ComparisonReport) -> String {
    let c = &r.comparison;
    let mut h = String::from("<section id=\"comparison\">\n<h2>Comparison with baseline</h2>\n");
    h.push_str(&format!(
        "<p class=\"verdict {}\">{}</p>\n<p class=\"note\">Baseline (A): run #{} {} ({}) · candidate (B): run #{} {} ({}).<br>{}.<br>{}.</p>\n",
        if r.regressed() { "fail" } else { "pass" },
        html_escape(&r.conclusion()),
        r.baseline.id,
        html_escape(&r.baseline.name),
        html_escape(&system_label(&r.baseline.system)),
        r.candidate.id,
        html_escape(&r.candidate.name),
        html_escape(&system_label(&r.candidate.system)),
        html_escape(&settings_line(c)),
        html_escape(&inputs_line(c)),
    ));
    let span = diff_span(c);
    h.push_str(&format!("<div class=\"scroll\"><table class=\"cmp\">\n<tr><th>check</th><th>verdict</th><th class=\"num\">baseline</th><th class=\"num\">candidate</th><th class=\"num\">change<br>(pts)</th><th>deciding interval<br>{}</th><th>paired interval</th><th>unpaired interval</th><th class=\"num\">smallest<br>detectable</th><th class=\"num\">p</th><th class=\"num\">{}</th></tr>\n", diff_axis(span), match c.options.multiple {
        probity_core::stats::MultipleTesting::Holm => "Holm-<br>adjusted p",
        probity_core::stats::MultipleTesting::None => "adjusted p<br>(no correction)",
    }));
    for k in &c.checks {
        let cls = match k.direction {
            Direction::Regressed => "fail",
            Direction::Improved => "pass",
            _ => "neutral",
        };
        h.push_str(&format!(
            "<tr><td>{}</td><td><span class=\"badge {cls}\">{}</span></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
            html_short(&k.name, 80),
            html_escape(k.direction.words()),
            pct(k.baseline.estimate),
            pct(k.candidate.estimate),
            points(k.decisive().mean_diff),
            diff_bar(k, span),
            k.paired.as_ref().map_or("–".to_string(), points_interval),
            points_interval(&k.unpaired),
            points_abs(k.mde),
            html_escape(&p_value(k.p_value)),
            html_escape(&p_value(k.p_adjusted)),
        ));
    }
    h.push_str("</table></div>\n</section>\n");
    h
}

/// A small self-contained page holding [`section`].
pub(crate) fn page(r: &ComparisonReport) -> String {
    small_page(
        &format!("probity compare {} → {}", r.baseline.id, r.candidate.id),
        &section(r),
    )
}
