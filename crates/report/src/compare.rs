//! The report of a comparison of two runs (`probity compare`, and the
//! baseline section of `probity run --baseline`): text, JSON (schema
//! `probity.compare.v1`, see `SCHEMA.md`), Markdown, JUnit XML test cases
//! `regression: CHECK`, and an HTML section or page.
//!
//! The baseline is A, the candidate B; changes are `B − A` in percentage
//! points, positive is better. Names and ids are untrusted and escaped for
//! each medium.

use crate::numbers::{interval, name, pct};
use crate::sanitize::{html_escape, md_cell, md_inline, terminal_line, xml_attr, xml_text};
use crate::{Format, RunInfo};
use probity_core::compare::{Basis, CheckComparison, Comparison, Direction};
use probity_core::stats::Difference;
use serde_json::{json, Value};

/// Schema name of the JSON comparison.
pub const SCHEMA: &str = "probity.compare.v1";

/// Everything a comparison report shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparisonReport {
    /// Run A.
    pub baseline: RunInfo,
    /// Run B.
    pub candidate: RunInfo,
    pub comparison: Comparison,
    /// Shared input ids whose content differs between the runs.
    pub changed_inputs: Vec<String>,
}

impl ComparisonReport {
    /// True when some check regressed significantly (the CLI exits 1).
    pub fn regressed(&self) -> bool {
        self.comparison.regressed()
    }

    /// One line: `REGRESSED: 1 of 2 checks regressed (B − A, 95% intervals)`.
    pub fn conclusion(&self) -> String {
        let (imp, reg, same, none) = self.comparison.tally();
        let k = self.comparison.checks.len();
        let mut parts = Vec::new();
        if reg > 0 {
            parts.push(format!("{reg} regressed"));
        }
        if imp > 0 {
            parts.push(format!("{imp} improved"));
        }
        if same > 0 {
            parts.push(format!("{same} no detectable change"));
        }
        if none > 0 {
            parts.push(format!("{none} without data"));
        }
        let head = if reg > 0 {
            "REGRESSED"
        } else if imp > 0 {
            "IMPROVED"
        } else {
            "NO DETECTABLE CHANGE"
        };
        if k == 0 {
            return "NO CHECKS IN COMMON".to_string();
        }
        format!(
            "{head}: of {k} {}, {}",
            crate::plural(k, "check"),
            parts.join(", ")
        )
    }
}

/// A compact label of a provider fingerprint (the runs' `system`):
/// `openai/gpt-4o-mini`, `anthropic/claude-…`, `sim seed 42`,
/// `http host/path`, `command prog`. Unknown forms are cut to 40
/// characters. Not escaped: escape for the medium.
pub fn system_label(system: &str) -> String {
    let mut parts = system.splitn(3, '|');
    let provider = parts.next().unwrap_or("");
    let second = parts.next().unwrap_or("");
    let third = parts.next();
    let json_of = |s: &str| serde_json::from_str::<Value>(s).ok();
    let field = |v: &Option<Value>, k: &str| -> Option<String> {
        v.as_ref().and_then(|v| v.get(k)).and_then(|x| match x {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        })
    };
    let label = match provider {
        "openai" | "anthropic" => {
            let v = third.and_then(json_of);
            match field(&v, "model") {
                Some(m) => format!("{provider}/{m}"),
                None => provider.to_string(),
            }
        }
        "sim" => {
            let v = third.and_then(json_of);
            let mut s = "sim".to_string();
            if let Some(seed) = field(&v, "seed") {
                s.push_str(&format!(" seed {seed}"));
            }
            s
        }
        "http" => {
            let v = json_of(second);
            match field(&v, "url") {
                Some(u) => {
                    let u = u.split("://").nth(1).unwrap_or(&u).to_string();
                    format!("http {}", u.split('?').next().unwrap_or(""))
                }
                None => "http".to_string(),
            }
        }
        "command" => {
            let v = json_of(second);
            let cmd = v
                .as_ref()
                .and_then(|v| v.get("command"))
                .and_then(|c| match c {
                    Value::Array(a) => a.first().and_then(Value::as_str).map(str::to_string),
                    Value::String(s) => s.split_whitespace().next().map(str::to_string),
                    _ => None,
                });
            match cmd {
                Some(c) => format!("command {}", c.rsplit('/').next().unwrap_or(&c)),
                None => "command".to_string(),
            }
        }
        _ => system.to_string(),
    };
    crate::sanitize::truncate_chars(&label, 40).into_owned()
}

/// A change in percentage points, signed: `+1.2`, `-14.7`, `0.0`.
pub fn points(d: f64) -> String {
    if !d.is_finite() {
        return "–".to_string();
    }
    let v = d * 100.0;
    let s = format!("{v:+.1}");
    if s == "+0.0" || s == "-0.0" {
        "0.0".to_string()
    } else {
        s
    }
}

/// `[-18.0, -11.4]` in points.
pub fn points_interval(d: &Difference) -> String {
    format!(
        "[{}, {}]",
        points(d.interval.lower),
        points(d.interval.upper)
    )
}

fn word(d: Direction) -> &'static str {
    match d {
        Direction::Improved => "IMPROVED",
        Direction::Regressed => "REGRESSED",
        Direction::NoDetectableChange => "no detectable change",
        Direction::NoData => "no data",
    }
}

fn run_line(label: &str, r: &RunInfo, clean: &dyn Fn(&str) -> String) -> String {
    let sys = system_label(&r.system);
    format!(
        "{label} run {} {} ({}{}{})",
        r.id,
        clean(&r.name),
        clean(&r.created_at),
        if sys.is_empty() { "" } else { ", " },
        clean(&sys)
    )
}

fn inputs_line(c: &Comparison) -> String {
    format!(
        "{} shared {} paired by id; {} only in baseline, {} only in candidate (left out of the paired part)",
        c.shared_inputs,
        crate::plural(c.shared_inputs, "input"),
        c.only_baseline_inputs,
        c.only_candidate_inputs
    )
}

fn settings_line(c: &Comparison) -> String {
    format!(
        "change = candidate − baseline in percentage points; {} intervals; smallest detectable change at α = {} and {} power",
        crate::numbers::threshold_pct(c.options.confidence),
        crate::numbers::trim_number(1.0 - c.options.confidence, 4),
        crate::numbers::threshold_pct(c.options.power)
    )
}

/// The figures of one check, one line each (no escaping needed but the
/// name, which is not included).
fn check_lines(c: &CheckComparison) -> Vec<String> {
    let mut lines = vec![format!(
        "baseline {} {} → candidate {} {}",
        pct(c.baseline.estimate),
        interval(c.baseline.interval.lower, c.baseline.interval.upper),
        pct(c.candidate.estimate),
        interval(c.candidate.interval.lower, c.candidate.interval.upper)
    )];
    let d = c.decisive();
    let mut change = format!("change {} pts", points(d.mean_diff));
    match &c.paired {
        Some(p) => change.push_str(&format!(
            "; paired over {} {} {}{}; unpaired {}",
            c.paired_inputs,
            crate::plural(c.paired_inputs, "input"),
            points_interval(p),
            if c.basis == Basis::Paired {
                " (decides)"
            } else {
                ""
            },
            points_interval(&c.unpaired)
        )),
        None => change.push_str(&format!(
            "; unpaired {} (no shared inputs)",
            points_interval(&c.unpaired)
        )),
    }
    lines.push(change);
    let mut mde = format!("smallest detectable change {} pts", points_abs(c.mde));
    if let Some(mp) = c.mde_paired {
        mde.push_str(&format!(
            " (paired {}, unpaired {})",
            points_abs(mp),
            points_abs(c.mde_unpaired)
        ));
    }
    if c.paired_excluded > 0 {
        mde.push_str(&format!(
            "; {} shared {} without judged outputs left out",
            c.paired_excluded,
            crate::plural(c.paired_excluded, "input")
        ));
    }
    lines.push(mde);
    lines
}

fn points_abs(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    format!("{:.1}", x * 100.0)
}

/// The comparison as terminal text.
pub fn text(r: &ComparisonReport, color: bool) -> String {
    let paint = |code: &str, s: &str| {
        if color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    };
    let clean = |s: &str| terminal_line(s, 60);
    let c = &r.comparison;
    let mut t = String::new();
    t.push_str(&format!(
        "{}\n{}\n{}\n{}\n\n",
        paint("1", "probity compare"),
        run_line("baseline (A) ", &r.baseline, &clean),
        run_line("candidate (B)", &r.candidate, &clean),
        paint("2", &settings_line(c))
    ));
    t.push_str(&format!("{}\n", inputs_line(c)));
    if !r.changed_inputs.is_empty() {
        t.push_str(&format!(
            "warning: {} shared {} changed content between the runs (e.g. {})\n",
            r.changed_inputs.len(),
            crate::plural(r.changed_inputs.len(), "input"),
            clean(&r.changed_inputs[0])
        ));
    }
    t.push('\n');
    let width = c
        .checks
        .iter()
        .map(|k| clean(&k.name).chars().count())
        .max()
        .unwrap_or(0);
    for k in &c.checks {
        let w = word(k.direction);
        let w = match k.direction {
            Direction::Regressed => paint("1;31", &format!("{w:<20}")),
            Direction::Improved => paint("1;32", &format!("{w:<20}")),
            _ => format!("{w:<20}"),
        };
        t.push_str(&format!(
            "{w}  {:<width$}  {} pts  {}\n",
            clean(&k.name),
            points(k.decisive().mean_diff),
            points_interval(k.decisive())
        ));
        for line in check_lines(k) {
            t.push_str(&format!("{:22}{}\n", "", paint("2", &line)));
        }
    }
    for (names, side) in [
        (&c.only_baseline_checks, "baseline"),
        (&c.only_candidate_checks, "candidate"),
    ] {
        if !names.is_empty() {
            let list: Vec<String> = names.iter().map(|n| clean(n)).collect();
            t.push_str(&format!(
                "only in the {side} (not compared): {}\n",
                list.join(", ")
            ));
        }
    }
    t.push('\n');
    let concl = r.conclusion();
    t.push_str(&if r.regressed() {
        paint("1;31", &concl)
    } else {
        paint("1", &concl)
    });
    t.push('\n');
    t
}

fn num(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

fn diff_json(d: &Difference) -> Value {
    json!({
        "difference": num(d.mean_diff),
        "se": num(d.se),
        "lower": num(d.interval.lower),
        "upper": num(d.interval.upper),
        "n": d.n,
        "significant": d.is_significant(),
    })
}

fn run_json(r: &RunInfo) -> Value {
    json!({
        "id": r.id,
        "name": r.name,
        "created_at": r.created_at,
        "config_hash": r.config_hash,
        "system": r.system,
        "system_label": system_label(&r.system),
        "complete": r.complete,
    })
}

fn rate_json(r: &probity_core::RateEstimate) -> Value {
    json!({
        "estimate": num(r.estimate),
        "lower": num(r.interval.lower),
        "upper": num(r.interval.upper),
        "n": r.n,
        "effective_n": num(r.effective_n),
    })
}

/// The comparison as a JSON value (schema [`SCHEMA`]).
pub fn json_value(r: &ComparisonReport) -> Value {
    let c = &r.comparison;
    let checks: Vec<Value> = c
        .checks
        .iter()
        .map(|k| {
            json!({
                "name": k.name,
                "direction": name(k.direction),
                "basis": name(k.basis),
                "difference": num(k.decisive().mean_diff),
                "lower": num(k.decisive().interval.lower),
                "upper": num(k.decisive().interval.upper),
                "baseline": rate_json(&k.baseline),
                "candidate": rate_json(&k.candidate),
                "paired": k.paired.as_ref().map(diff_json),
                "unpaired": diff_json(&k.unpaired),
                "paired_inputs": k.paired_inputs,
                "paired_excluded": k.paired_excluded,
                "mde": num(k.mde),
                "mde_paired": k.mde_paired.map(num),
                "mde_unpaired": num(k.mde_unpaired),
            })
        })
        .collect();
    let (imp, reg, same, none) = c.tally();
    json!({
        "schema": SCHEMA,
        "baseline": run_json(&r.baseline),
        "candidate": run_json(&r.candidate),
        "options": {
            "confidence": num(c.options.confidence),
            "power": num(c.options.power),
            "errors": name(c.options.errors),
        },
        "inputs": {
            "shared": c.shared_inputs,
            "only_baseline": c.only_baseline_inputs,
            "only_candidate": c.only_candidate_inputs,
            "changed": r.changed_inputs,
        },
        "regressed": r.regressed(),
        "summary": {
            "improved": imp,
            "regressed": reg,
            "no_detectable_change": same,
            "no_data": none,
            "conclusion": r.conclusion(),
        },
        "checks": checks,
        "only_baseline_checks": c.only_baseline_checks,
        "only_candidate_checks": c.only_candidate_checks,
    })
}

/// The comparison as Markdown (a section: `###` heading).
pub fn markdown(r: &ComparisonReport) -> String {
    let c = &r.comparison;
    let badge = if r.regressed() { "❌" } else { "✅" };
    let mut md = format!(
        "### {badge} Comparison with baseline run #{} ({})\n\n**{}**\n\n",
        r.baseline.id,
        md_inline(&r.baseline.name),
        md_inline(&r.conclusion())
    );
    md.push_str(&format!(
        "Baseline (A): run #{} · {} · {}  \nCandidate (B): run #{} · {} · {}  \n{}  \n{}\n\n",
        r.baseline.id,
        md_inline(&r.baseline.created_at),
        md_inline(&system_label(&r.baseline.system)),
        r.candidate.id,
        md_inline(&r.candidate.created_at),
        md_inline(&system_label(&r.candidate.system)),
        md_inline(&settings_line(c)),
        md_inline(&inputs_line(c)),
    ));
    if !c.checks.is_empty() {
        md.push_str("| check | verdict | baseline | candidate | change (pts) | paired interval | unpaired interval | smallest detectable |\n");
        md.push_str("| --- | --- | ---: | ---: | ---: | --- | --- | ---: |\n");
        for k in &c.checks {
            let icon = match k.direction {
                Direction::Regressed => "❌ regressed",
                Direction::Improved => "⬆️ improved",
                Direction::NoDetectableChange => "➖ no detectable change",
                Direction::NoData => "⚠️ no data",
            };
            md.push_str(&format!(
                "| {} | {icon} | {} | {} | {} | {} | {} | {} |\n",
                md_cell(&k.name),
                pct(k.baseline.estimate),
                pct(k.candidate.estimate),
                points(k.decisive().mean_diff),
                k.paired.as_ref().map_or("–".to_string(), points_interval),
                points_interval(&k.unpaired),
                points_abs(k.mde),
            ));
        }
        md.push('\n');
    }
    for (names, side) in [
        (&c.only_baseline_checks, "baseline"),
        (&c.only_candidate_checks, "candidate"),
    ] {
        if !names.is_empty() {
            let list: Vec<String> = names.iter().map(|n| md_inline(n)).collect();
            md.push_str(&format!(
                "Only in the {side} (not compared): {}\n\n",
                list.join(", ")
            ));
        }
    }
    if !r.changed_inputs.is_empty() {
        md.push_str(&format!(
            "⚠️ {} shared {} changed content between the runs.\n\n",
            r.changed_inputs.len(),
            crate::plural(r.changed_inputs.len(), "input")
        ));
    }
    md
}

/// JUnit `<testcase>` elements `regression: CHECK`, one per compared
/// check, failing (`type="regression"`) when the check regressed; and the
/// number of failures.
pub fn junit_cases(r: &ComparisonReport, classname: &str, indent: &str) -> (String, usize) {
    let mut x = String::new();
    let mut failures = 0;
    for k in &r.comparison.checks {
        x.push_str(&format!(
            "{indent}<testcase classname=\"{}\" name=\"{}\" time=\"0\">\n",
            xml_attr(classname),
            xml_attr(&format!("regression: {}", k.name))
        ));
        let lines = check_lines(k).join("\n");
        let headline = format!(
            "{} against baseline run {}: change {} pts, interval {}",
            k.direction.words(),
            r.baseline.id,
            points(k.decisive().mean_diff),
            points_interval(k.decisive())
        );
        if k.direction == Direction::Regressed {
            failures += 1;
            x.push_str(&format!(
                "{indent}  <failure message=\"{}\" type=\"regression\">{}</failure>\n",
                xml_attr(&headline),
                xml_text(&lines)
            ));
        }
        x.push_str(&format!(
            "{indent}  <system-out>{}</system-out>\n{indent}</testcase>\n",
            xml_text(&format!("{headline}\n{lines}"))
        ));
    }
    (x, failures)
}

/// The comparison alone as a JUnit XML document.
pub fn junit(r: &ComparisonReport) -> String {
    let name = format!("probity compare: {} -> {}", r.baseline.id, r.candidate.id);
    let (cases, failures) = junit_cases(r, &format!("probity.{}", r.candidate.name), "    ");
    let k = r.comparison.checks.len();
    let counts = format!(r#"tests="{k}" failures="{failures}" errors="0" skipped="0" time="0""#);
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"probity\" {counts}>\n  <testsuite name=\"{}\" {counts}>\n{cases}  </testsuite>\n</testsuites>\n",
        xml_attr(&name)
    )
}

/// The comparison as an HTML `<section id="comparison">` (for a run's
/// page; styles of the run report apply).
pub fn html_section(r: &ComparisonReport) -> String {
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
    h.push_str(&format!("<div class=\"scroll\"><table class=\"cmp\">\n<tr><th>check</th><th>verdict</th><th class=\"num\">baseline</th><th class=\"num\">candidate</th><th class=\"num\">change<br>(pts)</th><th>deciding interval<br>{}</th><th>paired interval</th><th>unpaired interval</th><th class=\"num\">smallest<br>detectable</th></tr>\n", diff_axis(span)));
    for k in &c.checks {
        let cls = match k.direction {
            Direction::Regressed => "fail",
            Direction::Improved => "pass",
            _ => "neutral",
        };
        h.push_str(&format!(
            "<tr><td>{}</td><td><span class=\"badge {cls}\">{}</span></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>\n",
            crate::sanitize::html_short(&k.name, 80),
            html_escape(k.direction.words()),
            pct(k.baseline.estimate),
            pct(k.candidate.estimate),
            points(k.decisive().mean_diff),
            diff_bar(k, span),
            k.paired.as_ref().map_or("–".to_string(), points_interval),
            points_interval(&k.unpaired),
            points_abs(k.mde),
        ));
    }
    h.push_str("</table></div>\n</section>\n");
    h
}

const DIFF_W: f64 = 150.0;
const DIFF_PAD: f64 = 8.0;

/// Half-width of the difference scale: the largest |bound| of a deciding
/// interval, rounded up to 5 points (at least 5, at most 100).
fn diff_span(c: &Comparison) -> f64 {
    let m = c
        .checks
        .iter()
        .flat_map(|k| {
            let d = k.decisive();
            [
                d.interval.lower.abs(),
                d.interval.upper.abs(),
                d.mean_diff.abs(),
            ]
        })
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    ((m * 20.0).ceil() / 20.0).clamp(0.05, 1.0)
}

fn diff_x(d: f64, span: f64) -> f64 {
    let d = if d.is_finite() {
        d.clamp(-span, span)
    } else {
        0.0
    };
    DIFF_W / 2.0 + d / span * (DIFF_W / 2.0 - DIFF_PAD)
}

/// The scale of the difference column: −span, 0, +span in points.
fn diff_axis(span: f64) -> String {
    let mut s = format!(
        "<svg width=\"{DIFF_W}\" height=\"16\" viewBox=\"0 0 {DIFF_W} 16\" role=\"img\" aria-label=\"scale {} to {} points\">",
        points(-span),
        points(span)
    );
    for (v, anchor) in [(-span, "start"), (0.0, "middle"), (span, "end")] {
        let x = diff_x(v, span);
        let tx = match anchor {
            "start" => x - 4.0,
            "end" => x + 4.0,
            _ => x,
        };
        s.push_str(&format!(
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"12\" y2=\"16\" stroke=\"#6b7280\"/><text x=\"{tx:.1}\" y=\"10\" font-size=\"10\" fill=\"#374151\" text-anchor=\"{anchor}\">{}</text>",
            points(v)
        ));
    }
    s.push_str("</svg>");
    s
}

/// The deciding difference B − A of one check as an interval bar around
/// zero (dashed), coloured by its direction.
fn diff_bar(k: &CheckComparison, span: f64) -> String {
    let d = k.decisive();
    let colour = match k.direction {
        Direction::Regressed => "#b91c1c",
        Direction::Improved => "#15803d",
        _ => "#6b7280",
    };
    let label = format!(
        "{}: change {} pts {}",
        k.name,
        points(d.mean_diff),
        points_interval(d)
    );
    let zero = diff_x(0.0, span);
    let mut s = format!(
        "<svg width=\"{DIFF_W}\" height=\"18\" viewBox=\"0 0 {DIFF_W} 18\" role=\"img\" aria-label=\"{0}\"><title>{0}</title>\
         <rect x=\"{DIFF_PAD}\" y=\"8\" width=\"{1:.1}\" height=\"2\" fill=\"#e5e7eb\"/>\
         <line x1=\"{zero:.1}\" x2=\"{zero:.1}\" y1=\"0\" y2=\"18\" stroke=\"#111827\" stroke-width=\"1\" stroke-dasharray=\"3 2\"/>",
        html_escape(&label),
        DIFF_W - 2.0 * DIFF_PAD
    );
    if k.direction != Direction::NoData && d.mean_diff.is_finite() {
        let x0 = diff_x(d.interval.lower, span);
        let x1 = diff_x(d.interval.upper, span);
        s.push_str(&format!(
            "<rect x=\"{x0:.1}\" y=\"4\" width=\"{:.1}\" height=\"10\" rx=\"2\" fill=\"{colour}\" fill-opacity=\"0.35\" stroke=\"{colour}\"/><circle cx=\"{:.1}\" cy=\"9\" r=\"3.5\" fill=\"{colour}\"/>",
            (x1 - x0).max(1.5),
            diff_x(d.mean_diff, span)
        ));
    }
    s.push_str("</svg>");
    s
}

/// A minimal self-contained HTML page holding [`html_section`].
pub fn html_page(r: &ComparisonReport) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <title>probity compare {} → {}</title>\n<style>{}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
        r.baseline.id,
        r.candidate.id,
        PAGE_STYLE,
        html_section(r)
    )
}

pub(crate) const PAGE_STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:1rem 2rem;color:#111827}\
table{border-collapse:collapse}th,td{text-align:left;padding:.25rem .6rem;border-bottom:1px solid #e5e7eb}\
th{background:#f3f4f6}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}\
.badge{font-weight:700;font-size:.8rem;padding:.05rem .45rem;border-radius:4px;color:#fff}\
.badge.pass{background:#15803d}.badge.fail{background:#b91c1c}.badge.inconclusive{background:#6b7280}.badge.neutral{background:#6b7280}\
.verdict{font-weight:700;padding:.5rem .8rem;border-left:6px solid}.verdict.pass{border-color:#15803d}\
.verdict.fail{border-color:#b91c1c}.note{color:#4b5563}\
table.cmp td{white-space:nowrap}svg text{font-family:system-ui,sans-serif}";

/// Render a comparison on its own in `format`.
pub fn render(r: &ComparisonReport, format: Format, color: bool) -> String {
    match format {
        Format::Text => text(r, color),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&json_value(r)).unwrap_or_default();
            s.push('\n');
            s
        }
        Format::Markdown => markdown(r),
        Format::Junit => junit(r),
        Format::Html => html_page(r),
    }
}

/// Render a run's report with its comparison against a baseline: the
/// text, Markdown and HTML reports get a comparison section, the JSON
/// report a `comparison` field, and JUnit one test case
/// `regression: CHECK` per compared check in the run's test suite.
pub fn render_with_baseline(
    report: &crate::Report,
    cmp: &ComparisonReport,
    format: Format,
    color: bool,
) -> String {
    match format {
        Format::Text => format!(
            "{}\n{}",
            crate::render(report, format, color),
            text(cmp, color)
        ),
        Format::Markdown => format!("{}\n{}", crate::markdown::render(report), markdown(cmp)),
        Format::Json => {
            let base = crate::json::render(report);
            match serde_json::from_str::<Value>(&base) {
                Ok(Value::Object(mut m)) => {
                    m.insert("comparison".into(), json_value(cmp));
                    let mut s = serde_json::to_string_pretty(&Value::Object(m)).unwrap_or_default();
                    s.push('\n');
                    s
                }
                _ => base,
            }
        }
        Format::Junit => crate::junit::render_with(report, Some(cmp)),
        Format::Html => {
            let page = crate::html::render(report).replacen(
                "<a href=\"#failures\">",
                "<a href=\"#comparison\">Comparison</a><a href=\"#failures\">",
                1,
            );
            match page.find("<footer>") {
                Some(at) => format!("{}{}{}", &page[..at], html_section(cmp), &page[at..]),
                None => page,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_labels() {
        assert_eq!(
            system_label(
                r#"openai|https://api.openai.com/v1|{"model":"gpt-4o-mini","temperature":null}"#
            ),
            "openai/gpt-4o-mini"
        );
        assert_eq!(
            system_label(r#"sim|v1|{"seed":42,"contractions":0.1}"#),
            "sim seed 42"
        );
        assert_eq!(
            system_label(r#"http|{"url":"https://x.example/api?k=1","method":"POST"}"#),
            "http x.example/api"
        );
        assert_eq!(
            system_label(r#"command|{"command":["/usr/bin/python3","m.py"]}"#),
            "command python3"
        );
        assert_eq!(system_label("weird"), "weird");
        assert_eq!(system_label(""), "");
    }

    #[test]
    fn points_are_signed() {
        assert_eq!(points(-0.147), "-14.7");
        assert_eq!(points(0.012), "+1.2");
        assert_eq!(points(-0.0001), "0.0");
        assert_eq!(points(f64::NAN), "–");
    }

    fn hostile() -> ComparisonReport {
        use probity_core::compare::{compare_check, CompareOptions};
        use probity_core::Counts;
        let c = |pass, fail| Counts {
            pass,
            fail,
            ..Counts::default()
        };
        let pairs: Vec<_> = (0..10).map(|i| (i, i)).collect();
        let mut k = compare_check(
            &vec![c(9, 1); 10],
            &vec![c(5, 5); 10],
            &pairs,
            &CompareOptions::default(),
        );
        k.name = "x\x1b[31m|<b>&\"'`\u{202e}\n".into();
        let run = |id| RunInfo {
            id,
            name: "<script>\x1b]0;t\x07".into(),
            system: r#"sim|v1|{"seed":1}"#.into(),
            ..RunInfo::default()
        };
        ComparisonReport {
            baseline: run(1),
            candidate: run(2),
            comparison: Comparison {
                options: CompareOptions::default(),
                shared_inputs: 10,
                only_baseline_inputs: 0,
                only_candidate_inputs: 0,
                checks: vec![k],
                only_baseline_checks: vec!["<i>".into()],
                only_candidate_checks: vec![],
            },
            changed_inputs: vec!["\x1b[2J".into()],
        }
    }

    #[test]
    fn every_format_escapes_untrusted_names() {
        let r = hostile();
        assert!(r.regressed());
        let t = text(&r, false);
        assert!(!t.contains('\x1b') && !t.contains('\u{202e}'), "{t}");
        assert!(t.contains("REGRESSED"));
        let md = markdown(&r);
        assert!(
            md.contains("x\\|&lt;b&gt;") && !md.contains("<script>"),
            "{md}"
        );
        let x = junit(&r);
        assert!(!x.contains('\x1b') && !x.contains("<b>") && x.contains("type=\"regression\""));
        let h = html_page(&r);
        assert!(!h.contains("<script>") && !h.contains("<b>"));
        let j = json_value(&r);
        assert_eq!(j["checks"][0]["direction"], "regressed");
        assert_eq!(j["regressed"], true);
    }
}
