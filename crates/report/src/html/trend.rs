//! A trend in HTML (`probity report --trend NAME --format html`): a small
//! page with one chart (`svg::trend_chart`) and one table per
//! check. Names go through [`html_escape`].

use crate::document::info::system_label;
use crate::document::trend::TrendReport;
use crate::html::page::small_page;
use crate::numbers::{interval, pct};
use crate::sanitize::{html_escape, html_short};
use crate::svg::trend_chart;
use std::fmt::Write;

/// The trend as a self-contained HTML page: one chart and one table per
/// check.
pub(crate) fn page(t: &TrendReport) -> String {
    let mut h = format!(
        "<h1>{}</h1>\n<p class=\"note\">Success rate of each check per run, oldest first, with its interval (clustered by input); the dashed line is the minimum success percentage. Hover a point for its figures.</p>\n",
        html_escape(&format!("Trend of {} over {} runs", t.name, t.runs.len()))
    );
    for (k, name) in t.checks.iter().enumerate() {
        let _ = write!(
            h,
            "<section><h2>{}</h2>\n<figure>{}</figure>\n<table><tr><th>run</th><th>created</th><th>system</th><th>config</th><th class=\"num\">success</th><th>interval</th></tr>\n",
            html_short(name, 80),
            trend_chart(t, k)
        );
        for r in &t.runs {
            let (rate, iv) = match r.rates.get(k) {
                Some(Some((rate, _))) if rate.n > 0 => (
                    pct(rate.estimate),
                    interval(rate.interval.lower, rate.interval.upper),
                ),
                Some(Some(_)) => ("no data".into(), String::new()),
                _ => ("–".into(), String::new()),
            };
            let _ = writeln!(
                h,
                "<tr><td>#{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td class=\"num\">{}</td><td>{}</td></tr>",
                r.run.id,
                html_escape(&r.run.created_at),
                html_short(&system_label(&r.run.system), 40),
                html_escape(&r.run.config_hash.chars().take(8).collect::<String>()),
                rate,
                iv
            );
        }
        h.push_str("</table></section>\n");
    }
    small_page(&format!("probity trend: {}", t.name), &h)
}
