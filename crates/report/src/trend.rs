//! A check's success percentage over the runs of one name
//! (`probity report --trend NAME`): a text table and an HTML page with one
//! hand-drawn SVG chart per check (point and interval per run, the
//! threshold dashed).

use crate::compare::{system_label, PAGE_STYLE};
use crate::numbers::{interval, pct, threshold_pct};
use crate::sanitize::{html_escape, html_short, terminal_line};
use crate::RunInfo;
use probity_core::RateEstimate;
use serde_json::{json, Value};
use std::fmt::Write;

/// One run of a trend.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendRun {
    pub run: RunInfo,
    /// Per check of [`Trend::checks`]: the run's rate and the check's
    /// minimum success percentage, `None` when the run has no such check.
    pub rates: Vec<Option<(RateEstimate, f64)>>,
}

/// Rates of checks over runs, oldest run first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trend {
    /// The runs' name.
    pub name: String,
    /// Check names (the union over runs, in order of first appearance).
    pub checks: Vec<String>,
    pub runs: Vec<TrendRun>,
}

fn cell(r: &Option<(RateEstimate, f64)>) -> String {
    match r {
        Some((rate, _)) if rate.n > 0 => format!(
            "{} {}",
            pct(rate.estimate),
            interval(rate.interval.lower, rate.interval.upper)
        ),
        Some(_) => "no data".into(),
        None => "–".into(),
    }
}

/// The trend as a text table: one row per run, one column per check.
pub fn text(t: &Trend) -> String {
    let clean = |s: &str| terminal_line(s, 30);
    let mut out = format!(
        "trend of {} over {} {} (success %, {} intervals clustered by input)\n\n",
        clean(&t.name),
        t.runs.len(),
        crate::plural(t.runs.len(), "run"),
        t.runs
            .first()
            .and_then(|r| r.rates.iter().flatten().next())
            .map_or("95%".to_string(), |(r, _)| threshold_pct(r.confidence))
    );
    let mut header = vec![
        "run".to_string(),
        "created".to_string(),
        "system".to_string(),
    ];
    header.extend(t.checks.iter().map(|c| clean(c)));
    let rows: Vec<Vec<String>> = t
        .runs
        .iter()
        .map(|r| {
            let mut row = vec![
                r.run.id.to_string(),
                clean(&r.run.created_at),
                clean(&system_label(&r.run.system)),
            ];
            row.extend(r.rates.iter().map(cell));
            row
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| -> String {
        let mut s = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ");
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    out.push_str(&line(&header));
    for r in &rows {
        out.push_str(&line(r));
    }
    out
}

/// The trend as JSON (`probity.trend.v1`).
pub fn json_value(t: &Trend) -> Value {
    let num = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
    json!({
        "schema": "probity.trend.v1",
        "name": t.name,
        "checks": t.checks,
        "runs": t.runs.iter().map(|r| json!({
            "id": r.run.id,
            "created_at": r.run.created_at,
            "system": r.run.system,
            "config_hash": r.run.config_hash,
            "rates": r.rates.iter().map(|x| match x {
                Some((rate, th)) => json!({
                    "estimate": num(rate.estimate),
                    "lower": num(rate.interval.lower),
                    "upper": num(rate.interval.upper),
                    "n": rate.n,
                    "threshold": num(*th),
                }),
                None => Value::Null,
            }).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

const W: f64 = 640.0;
const H: f64 = 220.0;
const LEFT: f64 = 48.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 40.0;

/// One SVG chart of check `k` over the runs.
pub fn chart(t: &Trend, k: usize) -> String {
    let pts: Vec<(usize, &TrendRun, RateEstimate, f64)> = t
        .runs
        .iter()
        .enumerate()
        .filter_map(|(x, r)| match r.rates.get(k) {
            Some(Some((rate, th))) if rate.n > 0 => Some((x, r, *rate, *th)),
            _ => None,
        })
        .collect();
    let name = t.checks.get(k).map_or("", String::as_str);
    // Vertical domain: from below the lowest lower bound or threshold, in
    // steps of 10 %, to 100 %.
    let low = pts
        .iter()
        .flat_map(|(_, _, r, th)| [r.interval.lower, *th])
        .filter(|v| v.is_finite())
        .fold(1.0_f64, f64::min);
    let lo = ((low * 10.0).floor() / 10.0).clamp(0.0, 0.9);
    let y = |p: f64| TOP + (1.0 - (p.clamp(lo, 1.0) - lo) / (1.0 - lo)) * (H - TOP - BOTTOM);
    let n = t.runs.len().max(1);
    let step = (W - LEFT - RIGHT) / n as f64;
    let x = |i: usize| LEFT + step * (i as f64 + 0.5);
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"trend\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{0}\"><title>{0}</title>",
        html_escape(&format!("success rate of {name} over runs"))
    );
    // Grid and axis labels: round steps counted down from 100 %, so the
    // top (where minimums usually sit) is always labelled.
    let grid_step = if 1.0 - lo > 0.5 { 0.2 } else { 0.1 };
    let grid: Vec<f64> = (0..=10)
        .map(|n| 1.0 - n as f64 * grid_step)
        .take_while(|g| *g >= lo - 1e-9)
        .collect();
    for g in grid {
        let (x2, yy, lx) = (W - RIGHT, y(g), LEFT - 6.0);
        let _ = write!(
            s,
            "<line x1=\"{LEFT}\" x2=\"{x2:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#e5e7eb\"/><text x=\"{lx:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\" fill=\"#4b5563\">{}%</text>",
            yy + 4.0,
            (g * 100.0).round()
        );
    }
    // Threshold (of the latest run that has the check).
    if let Some((_, _, _, th)) = pts.last() {
        if th.is_finite() && *th >= lo {
            let _ = write!(
                s,
                "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{1:.1}\" y2=\"{1:.1}\" stroke=\"#b45309\" stroke-dasharray=\"5 4\"><title>minimum {2}</title></line>",
                W - RIGHT,
                y(*th),
                threshold_pct(*th)
            );
        }
    }
    // Line through the points, then interval bars and points.
    let path: Vec<String> = pts
        .iter()
        .map(|(i, _, r, _)| format!("{:.1},{:.1}", x(*i), y(r.estimate)))
        .collect();
    if path.len() > 1 {
        let _ = write!(
            s,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"#93c5fd\" stroke-width=\"1.5\"/>",
            path.join(" ")
        );
    }
    for (i, r, rate, th) in &pts {
        let colour = if rate.estimate >= *th {
            "#15803d"
        } else {
            "#b91c1c"
        };
        let tip = format!(
            "run {} ({}): {} {}, n {}",
            r.run.id,
            r.run.created_at,
            pct(rate.estimate),
            interval(rate.interval.lower, rate.interval.upper),
            rate.n
        );
        let (cx, y1, y2, cy) = (
            x(*i),
            y(rate.interval.lower),
            y(rate.interval.upper),
            y(rate.estimate),
        );
        let _ = write!(
            s,
            "<g><title>{}</title><line x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{y1:.1}\" y2=\"{y2:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/><circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"4\" fill=\"{colour}\"/></g>",
            html_escape(&tip)
        );
    }
    // Run labels on the x axis.
    let every = (t.runs.len() / 12).max(1);
    for (i, r) in t.runs.iter().enumerate() {
        if i % every == 0 || i + 1 == t.runs.len() {
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#374151\">#{}</text>",
                x(i),
                H - BOTTOM + 16.0,
                r.run.id
            );
        }
    }
    let _ = write!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#6b7280\">run</text></svg>",
        LEFT + (W - LEFT - RIGHT) / 2.0,
        H - 6.0
    );
    s
}

/// The trend as a self-contained HTML page: one chart and one table per
/// check.
pub fn html(t: &Trend) -> String {
    let mut h = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <title>{}</title>\n<style>{PAGE_STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n<p class=\"note\">Success rate of each check per run, oldest first, with its interval (clustered by input); the dashed line is the minimum success percentage. Hover a point for its figures.</p>\n",
        html_escape(&format!("probity trend: {}", t.name)),
        html_escape(&format!("Trend of {} over {} runs", t.name, t.runs.len()))
    );
    for (k, name) in t.checks.iter().enumerate() {
        let _ = write!(
            h,
            "<section><h2>{}</h2>\n<figure>{}</figure>\n<table><tr><th>run</th><th>created</th><th>system</th><th>config</th><th class=\"num\">success</th><th>interval</th></tr>\n",
            html_short(name, 80),
            chart(t, k)
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
    h.push_str("</body>\n</html>\n");
    h
}
