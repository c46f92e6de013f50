//! The HTML report: one self-contained page (no network, no CDN, no
//! external fonts) with
//!
//! * the verdict of every check, its interval drawn as a bar against its
//!   minimum;
//! * heatmaps of the reliability tensor (paper §3.6.6): input × check
//!   success rate, input × repetition per check (a selector shows one),
//!   and check × check correlation (phi);
//! * the input, output and validator reliability profiles (IRP, ORP, VRP),
//!   worst first, with interval bars;
//! * the retry plan: `P_pass` under independence against the measured
//!   joint rate, attempts for the target, attempts per input;
//! * for a run with a retry policy, the guarded system (§4.2): the
//!   attempts histogram (with the counts the joint rate predicts), the
//!   measured P(success within m) and attempts used beside the three
//!   models' predictions with interval bars, calls and tokens spent, and
//!   whether the prediction held;
//! * a browser of failing outputs with the checks that failed and why;
//! * filters by check and by input: a few lines of vanilla JavaScript that
//!   toggle `hidden` on rows by their `data-` attributes, driven by the
//!   URL hash (`#validator=1&input=3`). Without JavaScript the page shows
//!   everything.
//!
//! Charts are hand-written SVG rather than a plotting crate (plotters'
//! SVG backend): the charts are rectangles, lines and text, a few dozen
//! lines each; hand-written SVG is smaller, compiles with no dependency,
//! and lets every cell carry a `<title>` with its exact figures and stay
//! legible in print.
//!
//! Security: every piece of run data (outputs, input ids, check names and
//! messages, reasons, run names) goes through [`html_escape`]. The one
//! `<script>` is a constant that reads no run data but `data-` attributes
//! and option values; a Content-Security-Policy allows only that script
//! (by its SHA-256 hash), no inline event handlers, and no network
//! access at all, so an escaping slip could still not run script or
//! phone home.

use crate::facts;
use crate::heatmap::{
    dark_text_on, input_check_counts, inputs_worst_first, order_by_rate, rate_of, rate_rgb,
};
use crate::numbers::{decision_word, duration, interval, name, pct, pct_num, threshold_pct};
use crate::sanitize::{html_escape as esc, html_short, truncate_chars};
use crate::{plural, Report};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use probity_core::profile::worst_first;
use probity_core::stats::Decision;
use probity_core::{Cell, ProfileEntry, RateEstimate, ReliabilityTensor};
use sha2::{Digest, Sha256};
use std::fmt::Write;

/// Failing outputs listed in the browser; the page says when there are
/// more.
pub const FAILURES_SHOWN: usize = 500;
/// Inputs drawn in the heatmaps (the worst by IRP when there are more).
pub const HEATMAP_MAX_INPUTS: usize = 200;
/// Repetitions drawn in the input × repetition heatmaps.
pub const HEATMAP_MAX_REPETITIONS: usize = 100;
/// Rows of a profile table (the worst when there are more).
pub const PROFILE_MAX_ROWS: usize = 200;
/// Characters of one output shown in the failure browser.
pub const OUTPUT_MAX_CHARS: usize = 4000;
/// Longest label (input id, check name) in charts and tables.
const LABEL_CHARS: usize = 40;
const CHART_LABEL_CHARS: usize = 26;
/// Room right of a chart for the last rotated column label.
const LABEL_OVERHANG: f64 = 160.0;

const PASS: &str = "#15803d";
const FAIL: &str = "#b91c1c";
const UNDECIDED: &str = "#b45309";
const NEUTRAL: &str = "#1d4ed8";

/// The page's only script. It reads nothing from the run but option
/// values and `data-` attributes; the filter state lives in the URL hash
/// (`#validator=K&input=I`), applied on load. It marks the body
/// `data-ready="1"` when done (the browser test looks for it).
pub const SCRIPT: &str = r##"
(function () {
  "use strict";
  var d = document;
  var fv = d.getElementById("f-validator");
  var fi = d.getElementById("f-input");
  var rv = d.getElementById("rep-validator");
  var count = d.getElementById("f-count");
  function has(sel, v) {
    if (!sel) return false;
    for (var n = 0; n < sel.options.length; n++) if (sel.options[n].value === v) return true;
    return false;
  }
  function okValidator(el, v) {
    if (v === "") return true;
    var a = el.getAttribute("data-validators");
    if (a !== null) return (" " + a + " ").indexOf(" " + v + " ") >= 0;
    a = el.getAttribute("data-validator");
    return a === null || a === v;
  }
  function okInput(el, i) {
    if (i === "") return true;
    var a = el.getAttribute("data-input");
    return a === null || a === i;
  }
  function apply() {
    var v = fv ? fv.value : "", i = fi ? fi.value : "";
    d.querySelectorAll(".filterable").forEach(function (el) {
      el.hidden = !(okValidator(el, v) && okInput(el, i));
    });
    if (count) {
      var all = d.querySelectorAll(".failure").length;
      var shown = d.querySelectorAll(".failure:not([hidden])").length;
      count.textContent = shown + " of " + all + " shown";
    }
  }
  function showRep() {
    if (!rv) return;
    d.querySelectorAll("figure.rep").forEach(function (f) {
      f.hidden = f.getAttribute("data-rep") !== rv.value;
    });
  }
  function fromHash() {
    var p = new URLSearchParams(location.hash.slice(1));
    var v = p.get("validator"), i = p.get("input");
    if (fv) fv.value = v !== null && has(fv, v) ? v : "";
    if (fi) fi.value = i !== null && has(fi, i) ? i : "";
    if (v !== null && has(rv, v)) rv.value = v;
  }
  function toHash() {
    var h = [];
    if (fv && fv.value !== "") h.push("validator=" + fv.value);
    if (fi && fi.value !== "") h.push("input=" + fi.value);
    history.replaceState(null, "", h.length ? "#" + h.join("&") : location.pathname + location.search);
  }
  if (fv) fv.addEventListener("change", function () { if (has(rv, fv.value)) rv.value = fv.value; showRep(); apply(); toHash(); });
  if (fi) fi.addEventListener("change", function () { apply(); toHash(); });
  if (rv) rv.addEventListener("change", showRep);
  window.addEventListener("hashchange", function () {
    // Section links (#checks) keep the filters; only #key=value sets them.
    if (location.hash.indexOf("=") < 0) return;
    fromHash(); showRep(); apply();
  });
  d.querySelectorAll(".needs-js").forEach(function (el) { el.hidden = false; });
  fromHash();
  showRep();
  apply();
  d.body.setAttribute("data-ready", "1");
})();
"##;

const STYLE: &str = r#"
:root { --fg: #111827; --muted: #4b5563; --line: #d1d5db; --bg: #ffffff; --soft: #f3f4f6; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1200px; padding: 0 1.25rem 3rem; color: var(--fg); background: var(--bg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  -webkit-print-color-adjust: exact; print-color-adjust: exact; }
h1 { font-size: 1.5rem; margin: 1.2rem 0 .3rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 .5rem; border-bottom: 1px solid var(--line); padding-bottom: .2rem; }
h3 { font-size: 1rem; margin: 1.2rem 0 .4rem; }
p.note, .muted { color: var(--muted); }
.verdict { font-weight: 700; font-size: 1.1rem; padding: .5rem .8rem; border-radius: 6px; border-left: 6px solid; }
.verdict.pass { background: #f0fdf4; border-color: #15803d; color: #14532d; }
.verdict.fail { background: #fef2f2; border-color: #b91c1c; color: #7f1d1d; }
.verdict.inconclusive { background: #fffbeb; border-color: #b45309; color: #78350f; }
.verdict .rule { display: block; font-weight: 400; font-size: .9rem; }
td.nowrap, table.cmp td { white-space: nowrap; }
table.guarded .fig { display: block; font-variant-numeric: tabular-nums; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; margin: .6rem 0; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; }
nav { display: flex; gap: 1rem; flex-wrap: wrap; padding: .4rem 0; border-bottom: 1px solid var(--line); }
nav a { color: #1d4ed8; text-decoration: none; }
.filters { position: sticky; top: 0; background: #f9fafb; border: 1px solid var(--line); border-radius: 6px;
  padding: .4rem .7rem; margin: .7rem 0; z-index: 2; display: flex; gap: 1.2rem; flex-wrap: wrap; align-items: center; }
.filters[hidden], [hidden] { display: none !important; }
select { font: inherit; max-width: 22rem; }
table { border-collapse: collapse; margin: .4rem 0; }
th, td { text-align: left; padding: .25rem .6rem; border-bottom: 1px solid var(--line); vertical-align: middle; }
th { font-weight: 600; background: var(--soft); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.badge { display: inline-block; font-weight: 700; font-size: .8rem; padding: .05rem .45rem; border-radius: 4px; color: #fff; }
.badge.pass { background: #15803d; } .badge.fail { background: #b91c1c; } .badge.inconclusive { background: #b45309; }
.badge.neutral { background: #6b7280; }
.msg { color: var(--muted); font-size: .9em; }
.scroll { overflow-x: auto; max-width: 100%; }
figure { margin: .8rem 0 1.4rem; }
figcaption { color: var(--muted); margin-bottom: .3rem; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; }
svg.bar { display: block; }
.failure { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .8rem; margin: .6rem 0; }
.failure h3 { margin: 0 0 .3rem; font-size: .95rem; }
.failure ul { margin: .3rem 0; padding-left: 1.2rem; }
pre.output { white-space: pre-wrap; word-break: break-word; background: var(--soft); padding: .5rem .7rem;
  border-radius: 4px; max-height: 18em; overflow: auto; margin: .3rem 0; font: 13px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
code { font: 13px ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
footer { margin-top: 3rem; color: var(--muted); font-size: .85rem; }
@media print {
  nav, .filters, .needs-js { display: none !important; }
  figure.rep[hidden] { display: block !important; }
  pre.output { max-height: none; overflow: visible; }
  h2 { break-after: avoid; }
  tr, .failure, figure { break-inside: avoid; }
}
"#;

/// `'sha256-…'` of [`SCRIPT`] for the Content-Security-Policy.
fn script_hash() -> String {
    format!(
        "'sha256-{}'",
        STANDARD.encode(Sha256::digest(SCRIPT.as_bytes()))
    )
}

/// The Content-Security-Policy of the page: nothing from the network,
/// inline styles, and only the page's own script.
pub fn content_security_policy() -> String {
    format!(
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src {}; \
         base-uri 'none'; form-action 'none'",
        script_hash()
    )
}

/// Render the page.
pub fn render(r: &Report) -> String {
    let mut h = String::with_capacity(64 * 1024);
    let title = format!("probity: run #{} {}", r.run.id, r.run.name);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        esc(&content_security_policy()),
        esc(&title)
    );
    header(&mut h, r);
    nav(&mut h, r);
    filters(&mut h, r);
    checks(&mut h, r);
    heatmaps(&mut h, r);
    profiles(&mut h, r);
    retry(&mut h, r);
    guarded(&mut h, r);
    failures(&mut h, r);
    let _ = write!(
        h,
        "<footer>Generated by probity {} · report format html · a single file with no external resources.</footer>\n\
         <script>{SCRIPT}</script>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
    h
}

fn header(h: &mut String, r: &Report) {
    let s = &r.summary;
    let (n, m, k) = s.shape;
    let _ = write!(
        h,
        "<header>\n<h1>Reliability report: run #{} {}</h1>\n<p class=\"verdict {}\" id=\"conclusion\">{}</p>\n<dl class=\"meta\">\n",
        r.run.id,
        esc(&r.run.name),
        if r.passed() { "pass" } else { "fail" },
        esc(&r.conclusion())
    );
    let mut row = |dt: &str, dd: String| {
        let _ = writeln!(h, "<dt>{dt}</dt><dd>{dd}</dd>");
    };
    row(
        "experiment",
        format!(
            "{n} {} × {m} {} per input × {k} {}",
            plural(n, "input"),
            plural(m, "output"),
            plural(k, "check")
        ),
    );
    if !r.run.system.is_empty() {
        row("system", format!("<code>{}</code>", esc(&r.run.system)));
    }
    if !r.run.config_hash.is_empty() {
        row(
            "config",
            format!("<code>{}</code>", esc(&r.run.config_hash)),
        );
    }
    if !r.run.created_at.is_empty() {
        row("created", esc(&r.run.created_at));
    }
    let mut calls = format!(
        "{} model {}, {} served from cache",
        r.run.model_calls,
        plural(r.run.model_calls as usize, "call"),
        r.run.cached
    );
    if let Some(d) = r.run.duration_s {
        calls.push_str(&format!(", {}", duration(d)));
    }
    if !r.run.complete {
        calls.push_str(" · <strong>run incomplete</strong>");
    }
    row("run", calls);
    row("statistics", esc(&crate::facts::statistics_line(s)));
    let c = &s.counts;
    row(
        "cells",
        format!(
            "{} pass · {} fail · {} error · {} missing",
            c.pass, c.fail, c.error, c.missing
        ),
    );
    row(
        "aggregate",
        esc(&facts::aggregate_line(r, &|s| s.to_string())),
    );
    h.push_str("</dl>\n</header>\n");
}

fn nav(h: &mut String, r: &Report) {
    h.push_str("<nav aria-label=\"sections\"><a href=\"#checks\">Checks</a><a href=\"#tensor\">Heatmaps</a><a href=\"#profiles\">Profiles</a><a href=\"#retry\">Retry plan</a>");
    if r.guarded.is_some() {
        h.push_str("<a href=\"#guarded\">Guarded system</a>");
    }
    let _ = writeln!(
        h,
        "<a href=\"#failures\">Failing outputs ({})</a></nav>",
        failing_total(r)
    );
}

/// Inputs offered by the input filter: those in the (capped) tables and
/// failure list.
fn filter_inputs(r: &Report) -> Vec<usize> {
    let mut v: Vec<usize> = worst_first(&r.summary.input_profile)
        .iter()
        .take(PROFILE_MAX_ROWS)
        .map(|e| e.index)
        .chain(r.failures.iter().take(FAILURES_SHOWN).map(|f| f.input))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn filters(h: &mut String, r: &Report) {
    h.push_str("<div class=\"filters needs-js\" id=\"filters\" hidden>\n<label>Check <select id=\"f-validator\"><option value=\"\">all checks</option>");
    for k in 0..r.summary.checks.len() {
        let _ = write!(
            h,
            "<option value=\"{k}\">{}. {}</option>",
            k + 1,
            html_short(&r.check_name(k), LABEL_CHARS)
        );
    }
    h.push_str("</select></label>\n<label>Input <select id=\"f-input\"><option value=\"\">all inputs</option>");
    for i in filter_inputs(r) {
        let _ = write!(
            h,
            "<option value=\"{i}\">{}</option>",
            html_short(&r.input_label(i), LABEL_CHARS)
        );
    }
    h.push_str("</select></label>\n<span class=\"muted\">failing outputs: <span id=\"f-count\"></span></span> <span class=\"muted\">(the filter is kept in the address: <code>#validator=K&amp;input=I</code>)</span>\n</div>\n");
}

// ---------------------------------------------------------------- bars

/// Left end of a shared bar scale: a tenth below the lowest value shown,
/// so intervals near 100 % are not squeezed into a sliver.
fn domain_low(values: impl Iterator<Item = f64>) -> f64 {
    let min = values.filter(|v| v.is_finite()).fold(1.0f64, f64::min);
    (((min - 0.02) * 10.0).floor() / 10.0).clamp(0.0, 0.9)
}

const BAR_W: f64 = 240.0;
const BAR_H: f64 = 18.0;
const BAR_PAD: f64 = 6.0;

fn bar_x(p: f64, lo: f64) -> f64 {
    let p = if p.is_finite() { p.clamp(lo, 1.0) } else { lo };
    BAR_PAD + (p - lo) / (1.0 - lo) * (BAR_W - 2.0 * BAR_PAD)
}

/// A rate's interval as a bar on `[lo, 100 %]`, the point estimate as a
/// dot, the threshold (when given) as a dashed line.
fn bar(rate: &RateEstimate, threshold: Option<f64>, lo: f64, colour: &str) -> String {
    let mut label = if rate.n == 0 {
        "no outputs judged".to_string()
    } else {
        format!(
            "{} {} at {} confidence, n = {}",
            pct(rate.estimate),
            interval(rate.interval.lower, rate.interval.upper),
            threshold_pct(rate.confidence),
            rate.n
        )
    };
    if let Some(t) = threshold {
        label.push_str(&format!("; minimum {}", threshold_pct(t)));
    }
    let mut s = format!(
        "<svg class=\"bar\" width=\"{BAR_W}\" height=\"{BAR_H}\" viewBox=\"0 0 {BAR_W} {BAR_H}\" role=\"img\" aria-label=\"{0}\"><title>{0}</title>\
         <rect x=\"{BAR_PAD}\" y=\"8\" width=\"{1:.1}\" height=\"2\" fill=\"#e5e7eb\"/>",
        esc(&label),
        BAR_W - 2.0 * BAR_PAD
    );
    if rate.n > 0 {
        let x0 = bar_x(rate.interval.lower, lo);
        let x1 = bar_x(rate.interval.upper, lo);
        let _ = write!(
            s,
            "<rect x=\"{x0:.1}\" y=\"4\" width=\"{:.1}\" height=\"10\" rx=\"2\" fill=\"{colour}\" fill-opacity=\"0.35\" stroke=\"{colour}\"/>\
             <circle cx=\"{:.1}\" cy=\"9\" r=\"3.5\" fill=\"{colour}\"/>",
            (x1 - x0).max(1.5),
            bar_x(rate.estimate, lo)
        );
    }
    if let Some(t) = threshold {
        let x = bar_x(t, lo);
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"0\" y2=\"{BAR_H}\" stroke=\"#111827\" stroke-width=\"1.5\" stroke-dasharray=\"3 2\"/>"
        );
    }
    s.push_str("</svg>");
    s
}

/// The scale of a bar column, for its header.
fn bar_axis(lo: f64) -> String {
    let mut s = format!(
        "<svg class=\"bar\" width=\"{BAR_W}\" height=\"16\" viewBox=\"0 0 {BAR_W} 16\" role=\"img\" aria-label=\"scale {} to 100%\">",
        pct_num(lo)
    );
    // Round ticks counted down from 100 %, so the top is always labelled.
    let range = 1.0 - lo;
    let step = if range <= 0.1 {
        0.02
    } else if range <= 0.25 {
        0.05
    } else if range <= 0.5 {
        0.1
    } else {
        0.2
    };
    let mut ticks = Vec::new();
    let mut n = 0.0;
    while 1.0 - n * step >= lo - 1e-9 {
        ticks.push(1.0 - n * step);
        n += 1.0;
    }
    for p in ticks.into_iter().rev() {
        let x = bar_x(p, lo);
        let (tx, anchor) = if x < 14.0 {
            (x - 2.0, "start")
        } else if x > BAR_W - 14.0 {
            (x + 2.0, "end")
        } else {
            (x, "middle")
        };
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"12\" y2=\"16\" stroke=\"#6b7280\"/><text x=\"{tx:.1}\" y=\"10\" font-size=\"10\" fill=\"#374151\" text-anchor=\"{anchor}\">{}%</text>",
            crate::numbers::trim_number(p * 100.0, 1)
        );
    }
    s.push_str("</svg>");
    s
}

fn decision_colour(d: Decision) -> &'static str {
    match d {
        Decision::Pass => PASS,
        Decision::Fail => FAIL,
        Decision::Inconclusive => UNDECIDED,
    }
}

// ---------------------------------------------------------------- checks

fn checks(h: &mut String, r: &Report) {
    let s = &r.summary;
    h.push_str("<section id=\"checks\">\n<h2>Checks</h2>\n");
    if s.checks.is_empty() {
        h.push_str("<p>No checks to judge.</p>\n</section>\n");
        return;
    }
    let lo = domain_low(
        s.checks
            .iter()
            .flat_map(|c| [c.rate.interval.lower, c.verdict.threshold]),
    );
    let _ = write!(
        h,
        "<p class=\"note\">Each check's success rate over all outputs, its {} interval (bar) and its minimum (dashed line).</p>\n\
         <div class=\"scroll\"><table class=\"checks\">\n<thead><tr><th>verdict</th><th>check</th><th class=\"num\">rate</th><th>interval vs minimum<br>{}</th><th class=\"num\">minimum</th><th class=\"num\">n</th><th>settled?</th></tr></thead>\n<tbody>\n",
        threshold_pct(s.options.confidence),
        bar_axis(lo)
    );
    for (k, c) in s.checks.iter().enumerate() {
        let d = c.verdict.decision;
        let mut notes = Vec::new();
        if let Some(e) = facts::errors(&c.rate, s.options.errors) {
            notes.push(e);
        }
        if let Some(d) = facts::design_effect(&c.rate) {
            notes.push(d);
        }
        if let Some(w) = &c.worst_input {
            notes.push(format!(
                "worst input {}: {}",
                truncate_chars(&r.input_label(w.index), LABEL_CHARS),
                facts::rate_with_interval(&w.rate)
            ));
        }
        if c.breakdown_below > 0 {
            notes.push(format!(
                "{} of {} {} below the minimum",
                c.breakdown_below,
                c.breakdown.len(),
                match s.strategy {
                    probity_core::Strategy::Columns => "repetitions",
                    _ => "inputs",
                }
            ));
        }
        let _ = writeln!(
            h,
            "<tr class=\"filterable\" data-validator=\"{k}\" id=\"check-{k}\"><td><span class=\"badge {}\">{}</span></td>\
             <td><strong>{}</strong> <span class=\"muted\">({})</span><div class=\"msg\">{}</div>{}</td>\
             <td class=\"num\">{}</td><td>{}</td><td class=\"num\">≥ {}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            name(d),
            decision_word(d),
            html_short(&c.info.name, 80),
            name(c.info.kind),
            html_short(&c.info.message, 300),
            if notes.is_empty() {
                String::new()
            } else {
                format!("<div class=\"msg\">{}</div>", esc(&notes.join(" · ")))
            },
            if c.rate.n == 0 {
                "–".to_string()
            } else {
                esc(&format!(
                    "{} {}",
                    pct(c.rate.estimate),
                    interval(c.rate.interval.lower, c.rate.interval.upper)
                ))
            },
            bar(&c.rate, Some(c.verdict.threshold), lo, decision_colour(d)),
            threshold_pct(c.verdict.threshold),
            c.rate.n,
            esc(&facts::established(c))
        );
    }
    h.push_str("</tbody></table></div>\n</section>\n");
}

// ---------------------------------------------------------------- heatmaps

fn rgb_hex(c: (u8, u8, u8)) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

fn legend_rates(h: &mut String) {
    let stops = [0.0, 0.25, 0.5, 0.65, 0.8, 0.85, 0.9, 0.95, 0.97, 0.99, 1.0];
    let w = 44.0;
    let _ = write!(
        h,
        "<svg class=\"legend\" width=\"{}\" height=\"38\" role=\"img\" aria-label=\"colour scale of success rates, from dark red at 0% through amber at 80% and yellow at 90% to green at 100%\"><title>colour scale of success rates</title>",
        stops.len() as f64 * w + 90.0
    );
    for (n, p) in stops.iter().enumerate() {
        let x = n as f64 * w;
        let c = rate_rgb(*p);
        let _ = write!(
            h,
            "<rect x=\"{x}\" y=\"0\" width=\"{w}\" height=\"18\" fill=\"{}\" stroke=\"#fff\"/><text x=\"{}\" y=\"32\" font-size=\"11\" text-anchor=\"middle\" fill=\"#374151\">{}%</text>",
            rgb_hex(c),
            x + w / 2.0,
            crate::numbers::trim_number(p * 100.0, 1)
        );
    }
    let x = stops.len() as f64 * w + 8.0;
    let _ = writeln!(
        h,
        "<rect x=\"{x}\" y=\"0\" width=\"{w}\" height=\"18\" fill=\"#e5e7eb\" stroke=\"#9ca3af\" stroke-dasharray=\"2 2\"/><text x=\"{}\" y=\"32\" font-size=\"11\" text-anchor=\"middle\" fill=\"#374151\">none judged</text></svg>",
        x + w / 2.0
    );
}

fn heatmaps(h: &mut String, r: &Report) {
    h.push_str("<section id=\"tensor\">\n<h2>Heatmaps of the reliability tensor</h2>\n");
    let Some(t) = &r.tensor else {
        h.push_str("<p class=\"note\">Heatmaps are not available: this report was made without the tensor of results.</p>\n");
        phi_matrix(h, r);
        h.push_str("</section>\n");
        return;
    };
    let (n, m, k) = t.shape();
    if n == 0 || m == 0 || k == 0 {
        let _ = writeln!(
            h,
            "<p class=\"note\">The tensor is empty ({n} inputs × {m} outputs × {k} checks): nothing to draw.</p>"
        );
        h.push_str("</section>\n");
        return;
    }
    let order = inputs_worst_first(r, t);
    let rows: Vec<usize> = order.iter().copied().take(HEATMAP_MAX_INPUTS).collect();
    input_check_heatmap(h, r, t, &rows);
    repetition_heatmaps(h, r, t);
    phi_matrix(h, r);
    h.push_str("</section>\n");
}

fn capped_note(shown: usize, total: usize, what: &str, by: &str) -> String {
    if shown < total {
        format!(" Showing the {shown} worst of {total} {what} {by}.")
    } else {
        String::new()
    }
}

/// Rotated column labels for `k` columns starting at `x0`, `cw` apart.
fn column_labels(h: &mut String, r: &Report, k: usize, x0: f64, cw: f64, top: f64) {
    for kk in 0..k {
        let x = x0 + kk as f64 * cw + cw / 2.0;
        let name = r.check_name(kk);
        let _ = write!(
            h,
            "<text transform=\"translate({x:.1},{:.1}) rotate(-40)\" font-size=\"12\" fill=\"#111827\"><title>check {}: {}</title>{}. {}</text>",
            top - 6.0,
            kk + 1,
            esc(&name),
            kk + 1,
            html_short(&name, CHART_LABEL_CHARS)
        );
    }
}

fn input_check_heatmap(h: &mut String, r: &Report, t: &ReliabilityTensor, rows: &[usize]) {
    let (n, m, k) = t.shape();
    let policy = r.summary.options.errors;
    let counts = input_check_counts(t);
    let cw = if k <= 16 { 52.0 } else { 24.0 };
    let ch = 20.0;
    let left = 210.0;
    let top = 150.0;
    let width = left + k as f64 * cw + LABEL_OVERHANG;
    let height = top + rows.len() as f64 * ch + 8.0;
    let _ = write!(
        h,
        "<figure id=\"heatmap-input-check\">\n<figcaption><strong>Input × check success rate.</strong> One cell per input and check: the share of the input's {m} {} that passed the check. Rows are inputs, worst first by input reliability (IRP).{} Hover a cell for its counts.</figcaption>\n<div class=\"scroll\"><svg class=\"heatmap\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"input by check success rate heatmap\">\n",
        plural(m, "output"),
        capped_note(rows.len(), n, "inputs", "by IRP")
    );
    column_labels(h, r, k, left, cw, top);
    for (row, &i) in rows.iter().enumerate() {
        let y = top + row as f64 * ch;
        let label = r.input_label(i);
        let _ = write!(
            h,
            "\n<g class=\"hm-row\" data-input=\"{i}\"><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\" fill=\"#111827\"><title>{}</title>{}</text>",
            left - 6.0,
            y + ch * 0.7,
            esc(&label),
            html_short(&label, CHART_LABEL_CHARS)
        );
        for (kk, c) in counts[i].iter().enumerate() {
            let x = left + kk as f64 * cw;
            let p = rate_of(c, policy);
            let (x_pass, n_judged) = c.successes_of(policy);
            let fill = p.map_or("#e5e7eb".to_string(), |p| rgb_hex(rate_rgb(p)));
            let title = match p {
                Some(p) => format!(
                    "{} × {}: {} ({x_pass} of {n_judged} passed; {} failed, {} errors, {} missing)",
                    label,
                    r.check_name(kk),
                    pct(p),
                    c.fail,
                    c.error,
                    c.missing
                ),
                None => format!(
                    "{} × {}: nothing judged ({} missing, {} errors)",
                    label,
                    r.check_name(kk),
                    c.missing,
                    c.error
                ),
            };
            let _ = write!(
                h,
                "<rect class=\"hm-cell\" data-input=\"{i}\" data-validator=\"{kk}\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\" stroke=\"#ffffff\"><title>{}</title></rect>",
                cw,
                ch,
                esc(&title)
            );
            if cw >= 40.0 {
                let text = p.map_or("–".to_string(), pct_num);
                let dark = p.is_none_or(|p| dark_text_on(rate_rgb(p)));
                let _ = write!(
                    h,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"{}\" pointer-events=\"none\">{text}</text>",
                    x + cw / 2.0,
                    y + ch * 0.68,
                    if dark { "#111827" } else { "#ffffff" }
                );
            }
        }
        h.push_str("</g>");
    }
    h.push_str("\n</svg></div>\n");
    legend_rates(h);
    h.push_str("</figure>\n");
}

fn repetition_heatmaps(h: &mut String, r: &Report, t: &ReliabilityTensor) {
    let (n, m, k) = t.shape();
    let policy = r.summary.options.errors;
    let worst_check = r
        .summary
        .aggregate
        .worst_validator
        .filter(|&w| w < k)
        .unwrap_or(0);
    let mcols = m.min(HEATMAP_MAX_REPETITIONS);
    let _ = write!(
        h,
        "<h3 id=\"heatmap-repetitions\">Input × repetition, per check</h3>\n<p class=\"note\">Every output of the worst inputs for one check: pass (light), fail (dark red), error (purple), missing (white). Rows are that check's worst inputs first.{}{}</p>\n\
         <p class=\"needs-js\" hidden><label>Check <select id=\"rep-validator\">",
        capped_note(n.min(HEATMAP_MAX_INPUTS), n, "inputs", "for each check"),
        if mcols < m {
            format!(" Showing the first {mcols} of {m} repetitions.")
        } else {
            String::new()
        }
    );
    for kk in 0..k {
        let _ = write!(
            h,
            "<option value=\"{kk}\"{}>{}. {}</option>",
            if kk == worst_check { " selected" } else { "" },
            kk + 1,
            html_short(&r.check_name(kk), LABEL_CHARS)
        );
    }
    h.push_str("</select></label></p>\n");
    let cw = (640.0 / mcols.max(1) as f64).clamp(4.0, 14.0).floor();
    let ch = 14.0;
    let left = 210.0;
    let top = 22.0;
    let width = left + mcols as f64 * cw + 20.0;
    for kk in 0..k {
        let per_input = t.input_counts_for(kk);
        let rows: Vec<usize> = order_by_rate(&per_input, policy)
            .into_iter()
            .take(HEATMAP_MAX_INPUTS)
            .collect();
        let height = top + rows.len() as f64 * ch + 6.0;
        let name = r.check_name(kk);
        let _ = write!(
            h,
            "<figure class=\"rep\" data-rep=\"{kk}\"><figcaption><strong>{}. {}</strong>: outputs by input (rows) and repetition (columns)</figcaption>\n<div class=\"scroll\"><svg class=\"heatmap\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"input by repetition pass and fail for check {}\">",
            kk + 1,
            html_short(&name, 80),
            kk + 1
        );
        for j in (0..mcols).step_by(10) {
            let _ = write!(
                h,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#4b5563\">#{j}</text>",
                left + j as f64 * cw,
                top - 6.0
            );
        }
        let mut cells = String::new();
        for (row, &i) in rows.iter().enumerate() {
            let y = top + row as f64 * ch;
            let label = r.input_label(i);
            let c = &per_input[i];
            let (x_pass, n_judged) = c.successes_of(policy);
            let mut failed = Vec::new();
            let mut errored = Vec::new();
            cells.clear();
            for j in 0..mcols {
                let cell = t.get(i, j, kk).unwrap_or(Cell::Missing);
                let fill = match cell {
                    Cell::Pass => continue,
                    Cell::Fail => {
                        failed.push(format!("#{j}"));
                        "#991b1b"
                    }
                    Cell::Error => {
                        errored.push(format!("#{j}"));
                        "#7e22ce"
                    }
                    Cell::Missing => "#ffffff",
                };
                let _ = write!(
                    cells,
                    "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{cw:.1}\" height=\"{ch:.1}\" fill=\"{fill}\" stroke=\"#ffffff\" stroke-width=\"0.5\"/>",
                    left + j as f64 * cw
                );
            }
            let mut title = format!("{label} × {name}: {x_pass} of {n_judged} passed");
            if !failed.is_empty() {
                title.push_str(&format!("; failed at {}", failed.join(", ")));
            }
            if !errored.is_empty() {
                title.push_str(&format!("; errors at {}", errored.join(", ")));
            }
            let _ = write!(
                h,
                "\n<g class=\"rep-row\" data-input=\"{i}\"><title>{}</title><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\" fill=\"#111827\">{}</text><rect x=\"{left}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{ch:.1}\" fill=\"#bbf7d0\"/>{cells}</g>",
                esc(&title),
                left - 6.0,
                y + ch * 0.75,
                html_short(&label, CHART_LABEL_CHARS),
                mcols as f64 * cw
            );
        }
        h.push_str("\n</svg></div></figure>\n");
    }
}

fn phi_rgb(v: f64) -> (u8, u8, u8) {
    let v = v.clamp(-1.0, 1.0);
    let white = (248.0, 250.0, 252.0);
    let end = if v >= 0.0 {
        (234.0, 88.0, 12.0)
    } else {
        (37.0, 99.0, 235.0)
    };
    let t = v.abs();
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    (
        mix(white.0, end.0),
        mix(white.1, end.1),
        mix(white.2, end.2),
    )
}

fn phi_matrix(h: &mut String, r: &Report) {
    let Some(e) = &r.summary.retry.empirical else {
        return;
    };
    let k = e.phi.len();
    if k < 2 {
        return;
    }
    let cw = 52.0;
    let left = 210.0;
    let top = 150.0;
    let width = left + k as f64 * cw + LABEL_OVERHANG;
    let height = top + k as f64 * cw * 0.5 + 8.0;
    let ch = cw * 0.5;
    let _ = write!(
        h,
        "<figure id=\"heatmap-phi\"><figcaption><strong>Check × check correlation (phi).</strong> Phi coefficient between the pass/fail verdicts of two checks on the same outputs: 0 independent, +1 they fail together, −1 they fail on different outputs. Orange positive, blue negative; n/a when a check never varied.</figcaption>\n<div class=\"scroll\"><svg class=\"heatmap\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"phi correlation matrix of the checks\">"
    );
    column_labels(h, r, k, left, cw, top);
    for a in 0..k {
        let y = top + a as f64 * ch;
        let name_a = r.check_name(a);
        let _ = write!(
            h,
            "\n<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\" fill=\"#111827\"><title>{}</title>{}. {}</text>",
            left - 6.0,
            y + ch * 0.7,
            esc(&name_a),
            a + 1,
            html_short(&name_a, CHART_LABEL_CHARS)
        );
        for b in 0..k {
            let x = left + b as f64 * cw;
            let v = e.phi.get(a).and_then(|row| row.get(b)).copied().flatten();
            let (fill, text, title) = match v {
                Some(v) => (
                    rgb_hex(phi_rgb(v)),
                    format!("{v:.2}"),
                    format!("phi({}, {}) = {v:.3}", name_a, r.check_name(b)),
                ),
                None => (
                    "#e5e7eb".to_string(),
                    "n/a".to_string(),
                    format!(
                        "phi({}, {}) not defined: a check never varied",
                        name_a,
                        r.check_name(b)
                    ),
                ),
            };
            let dark = v.is_none_or(|v| v.abs() < 0.6);
            let _ = write!(
                h,
                "<rect class=\"phi-cell\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{cw}\" height=\"{ch}\" fill=\"{fill}\" stroke=\"#ffffff\"><title>{}</title></rect><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"{}\" pointer-events=\"none\">{text}</text>",
                esc(&title),
                x + cw / 2.0,
                y + ch * 0.68,
                if dark { "#111827" } else { "#ffffff" }
            );
        }
    }
    h.push_str("\n</svg></div></figure>\n");
}

// ---------------------------------------------------------------- profiles

struct ProfileRow {
    attr: String,
    label: String,
    rate: RateEstimate,
    extra: String,
}

fn profile_table(h: &mut String, title: &str, note: &str, first: &str, rows: &[ProfileRow]) {
    let _ = write!(h, "<h3>{title}</h3>\n<p class=\"note\">{note}</p>\n");
    if rows.is_empty() {
        h.push_str("<p>Nothing to show.</p>\n");
        return;
    }
    let lo = domain_low(
        rows.iter()
            .filter(|r| r.rate.n > 0)
            .map(|r| r.rate.interval.lower),
    );
    let _ = writeln!(
        h,
        "<div class=\"scroll\"><table class=\"profile\"><thead><tr><th>{first}</th><th class=\"num\">rate</th><th>interval<br>{}</th><th class=\"num\">n</th><th>notes</th></tr></thead><tbody>",
        bar_axis(lo)
    );
    for row in rows {
        let _ = writeln!(
            h,
            "<tr{}><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"msg\">{}</td></tr>",
            row.attr,
            row.label,
            esc(&facts::rate_with_interval(&row.rate)),
            bar(&row.rate, None, lo, NEUTRAL),
            row.rate.n,
            row.extra
        );
    }
    h.push_str("</tbody></table></div>\n");
}

fn rate_notes(r: &Report, rate: &RateEstimate) -> String {
    let mut v = Vec::new();
    if let Some(e) = facts::errors(rate, r.summary.options.errors) {
        v.push(e);
    }
    if let Some(d) = facts::design_effect(rate) {
        v.push(d);
    }
    esc(&v.join(" · "))
}

fn profiles(h: &mut String, r: &Report) {
    let s = &r.summary;
    h.push_str("<section id=\"profiles\">\n<h2>Reliability profiles</h2>\n");
    // IRP
    let irp = worst_first(&s.input_profile);
    let rows: Vec<ProfileRow> = irp
        .iter()
        .take(PROFILE_MAX_ROWS)
        .map(|e| ProfileRow {
            attr: format!(" class=\"filterable\" data-input=\"{}\"", e.index),
            label: html_short(&r.input_label(e.index), LABEL_CHARS),
            rate: e.rate,
            extra: rate_notes(r, &e.rate),
        })
        .collect();
    profile_table(
        h,
        "Inputs (IRP)",
        &format!(
            "Success rate of each input over its outputs and all checks, worst first.{}",
            capped_note(rows.len(), irp.len(), "inputs", "")
        ),
        "input",
        &rows,
    );
    // ORP
    let orp = worst_first(&s.output_profile);
    let rows: Vec<ProfileRow> = orp
        .iter()
        .take(PROFILE_MAX_ROWS)
        .map(|e: &ProfileEntry| ProfileRow {
            attr: String::new(),
            label: format!("output #{}", e.index),
            rate: e.rate,
            extra: rate_notes(r, &e.rate),
        })
        .collect();
    profile_table(
        h,
        "Repetitions (ORP)",
        &format!(
            "Success rate of the j-th output of every input over all checks, worst first; large differences point at state carried between calls (caches, sessions, ordering).{}",
            capped_note(rows.len(), orp.len(), "repetitions", "")
        ),
        "repetition",
        &rows,
    );
    // VRP
    let entries: Vec<ProfileEntry> = s
        .checks
        .iter()
        .enumerate()
        .map(|(index, c)| ProfileEntry {
            index,
            rate: c.rate,
        })
        .collect();
    let rows: Vec<ProfileRow> = worst_first(&entries)
        .iter()
        .map(|e| ProfileRow {
            attr: format!(" class=\"filterable\" data-validator=\"{}\"", e.index),
            label: format!(
                "{}. {}",
                e.index + 1,
                html_short(&r.check_name(e.index), LABEL_CHARS)
            ),
            rate: e.rate,
            extra: rate_notes(r, &e.rate),
        })
        .collect();
    profile_table(
        h,
        "Checks (VRP)",
        "Success rate of each check over all inputs and outputs, worst first (clustered by input).",
        "check",
        &rows,
    );
    h.push_str("</section>\n");
}

// ---------------------------------------------------------------- retry

fn retry(h: &mut String, r: &Report) {
    let plan = &r.summary.retry;
    h.push_str("<section id=\"retry\">\n<h2>Retry plan</h2>\n");
    if r.summary.checks.is_empty() && plan.rates.is_empty() {
        h.push_str("<p>No checks: nothing to plan.</p>\n</section>\n");
        return;
    }
    let target = r.retry_target;
    let tp = threshold_pct(target);
    let _ = write!(
        h,
        "<p class=\"note\">How many attempts a guarded call needs so that {tp} of calls publish an output passing every check. Attempts = retries + 1.</p>\n<table class=\"retry\"><tbody>\n"
    );
    let mut row = |k: &str, v: String| {
        let _ = writeln!(h, "<tr><th>{k}</th><td>{v}</td></tr>");
    };
    row(
        "P(pass all) under independence",
        format!(
            "{} <span class=\"muted\">= Π p<sub>k</sub> of {}</span>",
            pct(plan.p_independent),
            esc(&plan
                .rates
                .iter()
                .map(|p| pct(*p))
                .collect::<Vec<_>>()
                .join(" × "))
        ),
    );
    let lo_joint;
    if let Some(e) = &plan.empirical {
        lo_joint = domain_low(
            std::iter::once(e.overall.interval.lower).chain(std::iter::once(plan.p_independent)),
        );
        row(
            "measured joint pass rate",
            format!(
                "{}{}",
                esc(&facts::rate_with_interval(&e.overall)),
                bar(&e.overall, Some(plan.p_independent), lo_joint, NEUTRAL)
            ),
        );
        if let Some(ratio) = plan.dependence_ratio() {
            let what = if ratio > 1.05 {
                " — checks tend to fail on the same outputs"
            } else if ratio < 0.95 {
                " — checks tend to fail on different outputs"
            } else {
                " — close to independent"
            };
            row(
                "ratio measured / independent",
                format!("{ratio:.2}<span class=\"muted\">{what} (dashed line above: the independent rate)</span>"),
            );
        }
        row(
            &format!("attempts for {tp}"),
            format!(
                "{} at the measured rate; {} at its lower bound ({})",
                esc(&facts::attempts(plan.measured(), target)),
                esc(&facts::attempts(plan.conservative(), target)),
                pct(e.overall.interval.lower)
            ),
        );
        if let Some(g) = plan.measured() {
            if let Some(a) = g.expected_attempts() {
                row(
                    "expected attempts per call",
                    format!("{a:.2} ({:.2} retries)", a - 1.0),
                );
            }
            if let Some(m) = plan.conservative().and_then(|c| c.attempts_for(target)) {
                row(
                    &format!("with {m} attempts"),
                    format!(
                        "P(no output published) {} at the measured rate; expected calls {:.2}",
                        pct(g.no_output(m)),
                        g.expected_calls(m)
                    ),
                );
            }
        }
    } else {
        row(
            &format!("attempts for {tp}"),
            esc(&facts::attempts(Some(plan.independent()), target)),
        );
    }
    h.push_str("</tbody></table>\n");
    if let Some(e) = &plan.empirical {
        let attempts = plan.attempts_per_input(target);
        let entries: Vec<ProfileEntry> = e
            .per_input
            .iter()
            .enumerate()
            .map(|(index, rate)| ProfileEntry { index, rate: *rate })
            .collect();
        let sorted = worst_first(&entries);
        let shown: Vec<&ProfileEntry> = sorted.iter().take(PROFILE_MAX_ROWS).collect();
        let lo = domain_low(
            shown
                .iter()
                .filter(|e| e.rate.n > 0)
                .map(|e| e.rate.interval.lower),
        );
        let _ = write!(
            h,
            "<h3>Per input</h3>\n<p class=\"note\">Joint pass rate of each input's outputs and the attempts that input needs for {tp}, worst first.{}</p>\n<div class=\"scroll\"><table class=\"profile\"><thead><tr><th>input</th><th class=\"num\">joint pass rate</th><th>interval<br>{}</th><th class=\"num\">attempts for {tp}</th></tr></thead><tbody>\n",
            capped_note(shown.len(), sorted.len(), "inputs", ""),
            bar_axis(lo)
        );
        for e in shown {
            let a = match attempts.get(e.index).copied().flatten() {
                Some(m) => m.to_string(),
                None => "never passed".to_string(),
            };
            let _ = writeln!(
                h,
                "<tr class=\"filterable\" data-input=\"{}\"><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{a}</td></tr>",
                e.index,
                html_short(&r.input_label(e.index), LABEL_CHARS),
                esc(&facts::rate_with_interval(&e.rate)),
                bar(&e.rate, None, lo, NEUTRAL)
            );
        }
        h.push_str("</tbody></table></div>\n");
    }
    h.push_str("</section>\n");
}

// ---------------------------------------------------------------- guarded

/// Position of `v` on a bar scale `[lo, hi]` (as [`bar_x`] for `hi` = 1).
fn scale_x(v: f64, lo: f64, hi: f64) -> f64 {
    let v = if v.is_finite() { v.clamp(lo, hi) } else { lo };
    BAR_PAD + (v - lo) / (hi - lo) * (BAR_W - 2.0 * BAR_PAD)
}

/// A band as a bar on `[lo, hi]` (a point as a dot), drawn like [`bar`];
/// `behind`, when given, is shaded grey underneath (the measured interval
/// a prediction is compared with).
fn band_bar(
    b: &probity_core::guarded::Band,
    lo: f64,
    hi: f64,
    colour: &str,
    behind: Option<&probity_core::guarded::Band>,
    label: &str,
) -> String {
    let mut s = format!(
        "<svg class=\"bar\" width=\"{BAR_W}\" height=\"{BAR_H}\" viewBox=\"0 0 {BAR_W} {BAR_H}\" role=\"img\" aria-label=\"{0}\"><title>{0}</title>\
         <rect x=\"{BAR_PAD}\" y=\"8\" width=\"{1:.1}\" height=\"2\" fill=\"#e5e7eb\"/>",
        esc(label),
        BAR_W - 2.0 * BAR_PAD
    );
    if let Some(m) = behind {
        let x0 = scale_x(m.lower, lo, hi);
        let x1 = scale_x(m.upper, lo, hi);
        let _ = write!(
            s,
            "<rect class=\"measured-band\" x=\"{x0:.1}\" y=\"1\" width=\"{:.1}\" height=\"16\" fill=\"#9ca3af\" fill-opacity=\"0.3\"/>",
            (x1 - x0).max(1.5)
        );
    }
    if b.estimate.is_finite() {
        let x0 = scale_x(b.lower, lo, hi);
        let x1 = scale_x(b.upper, lo, hi);
        if x1 - x0 >= 0.5 {
            let _ = write!(
                s,
                "<rect x=\"{x0:.1}\" y=\"4\" width=\"{:.1}\" height=\"10\" rx=\"2\" fill=\"{colour}\" fill-opacity=\"0.35\" stroke=\"{colour}\"/>",
                x1 - x0
            );
        }
        let _ = write!(
            s,
            "<circle cx=\"{:.1}\" cy=\"9\" r=\"3.5\" fill=\"{colour}\"/>",
            scale_x(b.estimate, lo, hi)
        );
    }
    s.push_str("</svg>");
    s
}

/// The scale of an attempts column: integer ticks on `[1, hi]`.
fn attempts_axis(hi: f64) -> String {
    let mut s = format!(
        "<svg class=\"bar\" width=\"{BAR_W}\" height=\"16\" viewBox=\"0 0 {BAR_W} 16\" role=\"img\" aria-label=\"scale 1 to {} attempts\">",
        trim_num(hi)
    );
    let top = hi.floor() as u32;
    let step = top.div_ceil(8).max(1);
    let mut a = 1;
    while a <= top {
        let x = scale_x(f64::from(a), 1.0, hi);
        let (tx, anchor) = if x < 14.0 {
            (x - 2.0, "start")
        } else if x > BAR_W - 14.0 {
            (x + 2.0, "end")
        } else {
            (x, "middle")
        };
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"12\" y2=\"16\" stroke=\"#6b7280\"/><text x=\"{tx:.1}\" y=\"10\" font-size=\"10\" fill=\"#374151\" text-anchor=\"{anchor}\">{a}</text>"
        );
        a += step;
    }
    s.push_str("</svg>");
    s
}

fn trim_num(x: f64) -> String {
    crate::numbers::trim_number(x, 2)
}

/// A round step for about four gridlines up to `max`.
fn nice_step(max: u64) -> u64 {
    let raw = (max as f64 / 4.0).max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|f| f * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    step.round().max(1.0) as u64
}

/// The attempts histogram: requests published at attempt 1 … m and those
/// where nothing was published, with the counts the joint rate predicts
/// (when there is one) as black ticks.
fn attempts_histogram(h: &mut String, check: &probity_core::guarded::RetryCheck) {
    let g = &check.measured;
    let m = g.histogram.len();
    let counts: Vec<u64> = g
        .histogram
        .iter()
        .copied()
        .chain(std::iter::once(g.nothing_published))
        .collect();
    let total = g.samples.max(1) as f64;
    // Expected counts at the joint rate: N·p(1−p)^(a−1), nothing N(1−p)^m.
    let predicted: Option<Vec<f64>> = crate::guarded::joint(check).map(|j| {
        let p = j.p.estimate.clamp(0.0, 1.0);
        let n = g.samples as f64;
        (0..m)
            .map(|a| n * p * (1.0 - p).powi(a as i32))
            .chain(std::iter::once(n * (1.0 - p).powi(m as i32)))
            .collect()
    });
    let ymax_value = counts
        .iter()
        .map(|c| *c as f64)
        .chain(predicted.iter().flatten().copied())
        .fold(1.0f64, f64::max)
        .ceil() as u64;
    let step = nice_step(ymax_value);
    let ymax = ymax_value.div_ceil(step) * step;
    let cols = counts.len() as f64;
    let cw = (480.0 / cols).clamp(16.0, 64.0);
    let (left, top, plot_h, bottom) = (52.0, 22.0, 150.0, 44.0);
    let width = left + cols * cw + 16.0;
    let height = top + plot_h + bottom;
    let y = |v: f64| top + plot_h - v / ymax as f64 * plot_h;
    let _ = write!(
        h,
        "<figure id=\"attempts-histogram\">\n<figcaption><strong>Attempts histogram.</strong> Requests whose output was published at attempt 1 … {m}, and those where no attempt passed.{} Hover a bar for its figures.</figcaption>\n<div class=\"scroll\"><svg class=\"histogram\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"attempts histogram\">\n",
        if predicted.is_some() {
            " Black ticks: the counts the geometric model predicts at the measured joint pass rate."
        } else {
            ""
        }
    );
    let mut v = 0;
    while v <= ymax {
        let yy = y(v as f64);
        let _ = write!(
            h,
            "<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#e5e7eb\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#374151\">{v}</text>",
            left + cols * cw,
            left - 6.0,
            yy + 3.5
        );
        v += step;
    }
    for (a, &c) in counts.iter().enumerate() {
        let nothing = a == m;
        let x = left + a as f64 * cw;
        let bw = cw * 0.7;
        let bx = x + (cw - bw) / 2.0;
        let yy = y(c as f64);
        let label_y = predicted
            .as_ref()
            .and_then(|p| p.get(a))
            .map_or(yy, |p| yy.min(y(*p)))
            - 5.0;
        let what = if nothing {
            "nothing published".to_string()
        } else {
            format!("published at attempt {}", a + 1)
        };
        let mut title = format!(
            "{what}: {c} of {} requests ({})",
            g.samples,
            pct(c as f64 / total)
        );
        if let Some(p) = predicted.as_ref().and_then(|p| p.get(a)) {
            title.push_str(&format!("; predicted at the joint rate {p:.1}"));
        }
        let _ = write!(
            h,
            "\n<g class=\"hist-bar\"><rect x=\"{bx:.1}\" y=\"{yy:.1}\" width=\"{bw:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}</title></rect><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#111827\">{c}</text>",
            (top + plot_h - yy).max(0.0),
            if nothing { FAIL } else { NEUTRAL },
            esc(&title),
            x + cw / 2.0,
            label_y
        );
        if let Some(p) = predicted.as_ref().and_then(|p| p.get(a)) {
            let py = y(*p);
            let _ = write!(
                h,
                "<line class=\"predicted\" x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{py:.1}\" y2=\"{py:.1}\" stroke=\"#111827\" stroke-width=\"2.5\"/>",
                bx - 3.0,
                bx + bw + 3.0
            );
        }
        let _ = write!(
            h,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#111827\">{}</text></g>",
            x + cw / 2.0,
            top + plot_h + 15.0,
            if nothing {
                "none".to_string()
            } else {
                (a + 1).to_string()
            }
        );
    }
    let _ = writeln!(
        h,
        "\n<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#6b7280\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#4b5563\">attempt that published the output</text></svg></div></figure>",
        left + cols * cw,
        top + plot_h,
        top + plot_h,
        left + cols * cw / 2.0,
        top + plot_h + 34.0
    );
}

fn guarded(h: &mut String, r: &Report) {
    use crate::guarded::{
        attempts_band, headline, joint, measured_success, outcome, pct_band, rows, spent_line,
        Outcome, RULE,
    };
    let Some(check) = &r.guarded else {
        return;
    };
    let g = &check.measured;
    h.push_str("<section id=\"guarded\">\n<h2>Guarded system (§4.2)</h2>\n");
    let _ = writeln!(
        h,
        "<p class=\"note\">This run sampled every input × repetition as a guarded request: {}. The first attempts make up the single-attempt tensor the rest of this report is about; from it the geometric model predicts P(success within m) = 1 − (1 − p)<sup>m</sup> and the attempts used, (1 − (1 − p)<sup>m</sup>) / p, under independence (p = Π p<sub>k</sub>), at the measured joint pass rate with its interval, and per input (§4.2.3). Here they stand beside what the guarded requests measured.</p>",
        esc(&headline(g))
    );
    let (class, word) = match outcome(check) {
        Outcome::Held => ("pass", "Prediction held"),
        Outcome::NotHeld => ("fail", "Prediction did not hold"),
        Outcome::Untested => ("inconclusive", "Prediction not tested"),
    };
    let detail = match outcome(check) {
        Outcome::Held => format!("Rule: {RULE}."),
        Outcome::NotHeld => format!(
            "Rule: {RULE}. It misses {} — attempts are not independent, feedback changes the pass rate, or inputs differ.",
            crate::guarded::missed(check)
        ),
        Outcome::Untested => "No output was judged on every deciding check: there is no joint pass rate to predict from.".to_string(),
    };
    let _ = writeln!(
        h,
        "<p class=\"verdict {class}\" id=\"guard-verdict\">{word}<span class=\"rule\">{}</span></p>",
        esc(&detail)
    );
    attempts_histogram(h, check);

    // Measured vs predicted.
    let rows = rows(check);
    let lo = domain_low(rows.iter().map(|r| r.success_within.lower));
    let hi_attempts = f64::from(g.m.max(2));
    let measured_s = measured_success(g);
    let j = joint(check);
    let _ = write!(
        h,
        "<h3>Measured and predicted</h3>\n<p class=\"note\">Bars: {} intervals (a point for independence, which has none); the grey band behind a prediction is the measured interval it is compared with. The verdict uses the joint row.</p>\n<div class=\"scroll\"><table class=\"guarded\"><thead><tr><th></th><th class=\"num\">P(pass) per attempt</th><th>P(success within {m})<br>{}</th><th>attempts used<br>{}</th><th>vs measured</th></tr></thead><tbody>\n",
        threshold_pct(g.success.confidence),
        bar_axis(lo),
        attempts_axis(hi_attempts),
        m = g.m
    );
    for row in &rows {
        let measured = row.label == "measured";
        let colour = if measured {
            NEUTRAL
        } else if row.label == "joint" {
            if check.held {
                PASS
            } else {
                FAIL
            }
        } else {
            "#6b7280"
        };
        let name = if measured {
            "<strong>measured</strong>".to_string()
        } else {
            format!("{} model", esc(&row.label))
        };
        let vs = if measured {
            String::new()
        } else {
            let s_ok = row.success_within.overlaps(&measured_s);
            let a_ok = row.attempts.overlaps(&g.attempts);
            match (s_ok, a_ok) {
                (true, true) => "overlaps both".to_string(),
                (false, false) => "misses both".to_string(),
                (true, false) => "misses attempts used".to_string(),
                (false, true) => "misses P(success)".to_string(),
            }
        };
        let behind_s = (!measured).then_some(&measured_s);
        let behind_a = (!measured).then_some(&g.attempts);
        let _ = writeln!(
            h,
            "<tr class=\"guard-row\" data-model=\"{}\"><td class=\"nowrap\">{name}</td><td class=\"num\">{}</td><td><span class=\"fig\">{}</span>{}</td><td><span class=\"fig\">{}</span>{}</td><td class=\"msg\">{vs}</td></tr>",
            esc(&row.label),
            row.p.as_ref().map_or("–".to_string(), |b| esc(&pct_band(b))),
            esc(&pct_band(&row.success_within)),
            band_bar(
                &row.success_within,
                lo,
                1.0,
                colour,
                behind_s,
                &format!("{}: P(success within {}) {}", row.label, g.m, pct_band(&row.success_within))
            ),
            esc(&attempts_band(&row.attempts)),
            band_bar(
                &row.attempts,
                1.0,
                hi_attempts,
                colour,
                behind_a,
                &format!("{}: attempts used {}", row.label, attempts_band(&row.attempts))
            ),
        );
    }
    h.push_str("</tbody></table></div>\n<table class=\"retry\"><tbody>\n");
    let _ = writeln!(h, "<tr><th>spent</th><td>{}</td></tr>", esc(&spent_line(g)));
    if let Some(j) = j {
        let _ = writeln!(
            h,
            "<tr><th>joint pass rate per attempt</th><td>{} <span class=\"muted\">(from the single-attempt tensor over the deciding checks)</span></td></tr>",
            esc(&pct_band(&j.p))
        );
    }
    h.push_str("</tbody></table>\n</section>\n");
}

// ---------------------------------------------------------------- failures

/// Outputs failing at least one check: counted on the tensor when there is
/// one, else the length of `failures`.
fn failing_total(r: &Report) -> usize {
    let counted = r.tensor.as_ref().map_or(0, |t| {
        let (n, m, _) = t.shape();
        let mut cells = Vec::new();
        let mut total = 0;
        for i in 0..n {
            for j in 0..m {
                t.output_cells(i, j, &mut cells);
                if cells.iter().any(|c| matches!(c, Cell::Fail | Cell::Error)) {
                    total += 1;
                }
            }
        }
        total
    });
    counted.max(r.failures.len())
}

fn failures(h: &mut String, r: &Report) {
    let total = failing_total(r);
    let shown = r.failures.len().min(FAILURES_SHOWN);
    let _ = write!(
        h,
        "<section id=\"failures\">\n<h2>Failing outputs</h2>\n<p class=\"note\">{}</p>\n",
        if total == 0 {
            "No output failed a check.".to_string()
        } else if shown == 0 {
            format!(
                "{total} {} failed at least one check; this report carries none of them.",
                plural(total, "output")
            )
        } else if shown < total {
            format!("Showing the first {shown} of {total} outputs that failed at least one check.")
        } else {
            format!(
                "All {total} {} that failed at least one check.",
                plural(total, "output")
            )
        }
    );
    for (n, f) in r.failures.iter().take(shown).enumerate() {
        let mut ks: Vec<usize> = f.failed.iter().chain(&f.errored).copied().collect();
        ks.sort_unstable();
        ks.dedup();
        let attr = ks
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join(" ");
        let _ = write!(
            h,
            "<article class=\"failure filterable\" id=\"failure-{n}\" data-input=\"{}\" data-validators=\"{attr}\">\n<h3>{} · output #{}</h3>\n<ul>\n",
            f.input,
            html_short(&r.input_label(f.input), 120),
            f.repetition
        );
        for (k, what) in f
            .failed
            .iter()
            .map(|k| (*k, "failed"))
            .chain(f.errored.iter().map(|k| (*k, "error")))
        {
            let message = r
                .summary
                .checks
                .get(k)
                .map(|c| c.info.message.as_str())
                .unwrap_or("");
            let _ = write!(
                h,
                "<li><span class=\"badge {}\">{what}</span> <strong>{}</strong>",
                if what == "failed" {
                    "fail"
                } else {
                    "inconclusive"
                },
                html_short(&r.check_name(k), 120)
            );
            if !message.is_empty() {
                let _ = write!(
                    h,
                    " <span class=\"msg\">— {}</span>",
                    html_short(message, 300)
                );
            }
            for (_, reason) in f.reasons.iter().filter(|(kk, _)| *kk == k) {
                let _ = write!(
                    h,
                    "<div class=\"msg\">reason: {}</div>",
                    html_short(reason, 2000)
                );
            }
            h.push_str("</li>\n");
        }
        h.push_str("</ul>\n");
        if let Some(e) = &f.error {
            let _ = writeln!(h, "<p class=\"msg\">error: {}</p>", html_short(e, 2000));
        }
        match &f.output {
            Some(o) => {
                let len = o.chars().count();
                let _ = writeln!(
                    h,
                    "<pre class=\"output\">{}</pre>",
                    esc(&truncate_chars(o, OUTPUT_MAX_CHARS))
                );
                if len > OUTPUT_MAX_CHARS {
                    let _ = writeln!(
                        h,
                        "<p class=\"msg\">output cut at {OUTPUT_MAX_CHARS} of {len} characters</p>"
                    );
                }
            }
            None => h.push_str("<p class=\"msg\">(no output)</p>\n"),
        }
        h.push_str("</article>\n");
    }
    h.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_is_constant_and_hashed() {
        assert!(!SCRIPT.contains("</"));
        assert!(content_security_policy().contains("'sha256-"));
        assert_eq!(script_hash().len(), "'sha256-'".len() + 44);
    }

    #[test]
    fn domain_starts_below_the_lowest_value() {
        assert_eq!(domain_low([0.95, 0.97].into_iter()), 0.9);
        assert!((domain_low([0.85].into_iter()) - 0.8).abs() < 1e-9);
        assert_eq!(domain_low([0.01].into_iter()), 0.0);
        assert_eq!(domain_low(std::iter::empty()), 0.9);
    }
}
