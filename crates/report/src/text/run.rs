//! The terminal report of a run.
//!
//! ```text
//! probity  run #12 greeting-bot: 20 inputs × 10 outputs × 2 checks, 12.3s · 14 calls (0 to judges), 5120 tokens; 186 outputs reused from run #11
//!          system openai/gpt-4o-mini · config 1a2b3c4d · created 2024-08-30T12:00:00Z
//!          95% intervals (profile likelihood, clustered by input) · verdict: point · errors count as failures
//!
//!         PASS  contraction_validator  96.2%  [94.1, 97.6]  ≥ 95%  established
//!               over 20 inputs
//!         FAIL  politeness_validator   85.0%  [80.1, 88.9]  ≥ 90%  not established: ~120 more samples would settle it
//!               System seems to have forgotten its manners
//!               over 20 inputs · 3 errors counted as failures · design effect 2.10, effective n 95 of 200
//!               pass^3 61.0% [50.2, 70.8] · pass@3 97.0% [90.1, 99.2] (means over 20 inputs with ≥ 3 judged outputs)
//!               could not judge 3 outputs (errors, not failures):
//!                 3 × judge answered neither PASS nor FAIL (first: input thanks-3 · output #4)
//!               worst input thanks-3: 40.0% [16.8, 68.7]
//!               example (thanks-3, output #2): Sure, no problem.
//!               input thanks-3: text: Thanks a lot!
//!
//!       errors 2 calls to the system failed after their retries (not measured):
//!                 2 × HTTP 503 (first: input hello · output #7)
//!
//!    aggregate  min 85.0% [78.0, 90.1], worst check politeness_validator
//! worst inputs  thanks-3 56.0% [..] · …
//!  retry plan   …
//!
//! Guarded system (§4.2): at most 3 attempts per request (2 retries), 200 requests
//!   …  (runs with a retry policy: see crate::text::guarded)
//!
//! FAIL: 1 of 2 checks below minimum
//! ```
//!
//! A check that could not judge any output is `BROKEN`, with its message,
//! instead of a verdict; a rate whose interval is about the observed
//! inputs only (fewer than `MIN_INPUTS`) says so under it.
//!
//! A run with a baseline ends with the comparison
//! ([`crate::text::comparison`]).
//!
//! Every piece of text that comes from the run (names, messages, input ids,
//! model outputs) goes through [`terminal_line`], so it cannot carry escape
//! sequences or control characters to the terminal.

use crate::document::run::RunReport;
use crate::facts::calibration;
use crate::facts::causes;
use crate::facts::run as facts;
use crate::facts::sequential;
use crate::numbers::{decision_word, duration, interval, name, pct, plural, threshold_pct};
use crate::sanitize::terminal_line;
use crate::text::paint::{Paint, LEFT};
use probity_core::stats::Decision;
use probity_core::Strategy;

/// Longest model output shown, in characters.
pub const EXAMPLE_MAX_CHARS: usize = 200;
/// Longest check name before it is cut in the table.
pub const NAME_MAX_CHARS: usize = 48;
/// Longest message, reason or input label shown.
pub const LINE_MAX_CHARS: usize = 160;
/// Longest input field value shown beside an example.
pub const FIELD_MAX_CHARS: usize = 120;

fn safe(s: &str) -> String {
    terminal_line(s, LINE_MAX_CHARS)
}

/// The wall and call time, structured output and auto concurrency lines
/// ([`crate::facts::upstream`]), dim, one per line; empty when the store
/// has none.
fn calls_time(r: &RunReport, p: &Paint, indent: &str) -> String {
    let Some(c) = &r.run.calls else {
        return String::new();
    };
    crate::facts::upstream::lines(c)
        .iter()
        .map(|line| format!("{indent}{}\n", p.dim(&safe(line))))
        .collect()
}

/// Render the terminal report; `color` adds ANSI colours and bold.
pub(crate) fn render(r: &RunReport, color: bool) -> String {
    let p = Paint { on: color };
    let indent = " ".repeat(LEFT + 1);
    let mut out = String::new();
    header(&mut out, r, &p, &indent);
    checks_table(&mut out, r, &p, &indent);
    system_errors(&mut out, r, &p, &indent);
    summary_lines(&mut out, r, &p, &indent);
    closing(&mut out, r, &p, color);
    out
}

/// The header: the run's shape, duration and calls; its system, config
/// and creation time; the statistics used; a sequential run's stop.
fn header(out: &mut String, r: &RunReport, p: &Paint, indent: &str) {
    let s = &r.summary;
    let (n, m, k) = s.shape;
    let mut head = format!(
        "run #{} {}: {} {} × {} {} × {} {}",
        r.run.id,
        safe(&r.run.name),
        n,
        plural(n, "input"),
        m,
        plural(m, "output"),
        k,
        plural(k, "check")
    );
    if let Some(d) = r.run.duration_s {
        head.push_str(&format!(", {}", duration(d)));
    }
    head.push_str(&format!(" · {}", safe(&facts::calls_line(&r.run))));
    if !r.run.complete {
        head.push_str(", INCOMPLETE");
    }
    out.push_str(&format!("{} {}\n", p.label("probity"), p.bold(&head)));
    let mut meta = Vec::new();
    // The readable label (`sim seed 7`, `openai/gpt-4o-mini`); the
    // fingerprint whole is in JSON, HTML and JUnit.
    let system = [&r.run.system_label, &r.run.system]
        .into_iter()
        .find(|s| !s.is_empty());
    if let Some(system) = system {
        meta.push(format!("system {}", safe(system)));
    }
    if !r.run.config_hash.is_empty() {
        meta.push(format!("config {}", safe(&r.run.config_hash)));
    }
    if !r.run.created_at.is_empty() {
        meta.push(format!("created {}", safe(&r.run.created_at)));
    }
    if !meta.is_empty() {
        out.push_str(&format!("{indent}{}\n", p.dim(&meta.join(" · "))));
    }
    out.push_str(&calls_time(r, p, indent));
    out.push_str(&format!("{indent}{}\n", p.dim(&facts::statistics_line(r))));
    // A sequential run: why and when it stopped, its sequences.
    // probity's own sentences, whole: cut, a stop reason would end mid-word.
    if let Some(o) = &s.sequential {
        out.push_str(&format!(
            "{indent}{}\n",
            p.bold(&terminal_line(&sequential::headline(o), 0))
        ));
        out.push_str(&format!(
            "{indent}{}\n",
            p.dim(&terminal_line(&sequential::method_line(o), 0))
        ));
        for c in &o.checks {
            let line = sequential::check_line(c, m as u64, &|n| terminal_line(n, NAME_MAX_CHARS));
            out.push_str(&format!("{indent}  {line}\n"));
        }
    }
    out.push('\n');
}

/// The checks table: one aligned row per check, each followed by its
/// notes ([`check_notes`]) and, when it is not passing, its detail
/// ([`failure_detail`]).
fn checks_table(out: &mut String, r: &RunReport, p: &Paint, indent: &str) {
    let s = &r.summary;
    let names: Vec<String> = s
        .checks
        .iter()
        .map(|c| terminal_line(&c.info.name, NAME_MAX_CHARS))
        .collect();
    let is_sequential = s.sequential.is_some();
    let shown: Vec<_> = s
        .checks
        .iter()
        .map(|c| calibration::shown_rate(c, is_sequential))
        .collect();
    let rates: Vec<String> = shown
        .iter()
        .map(|rate| {
            if rate.n == 0 {
                "–".to_string()
            } else {
                pct(rate.estimate)
            }
        })
        .collect();
    let intervals: Vec<String> = shown
        .iter()
        .map(|rate| {
            if rate.n == 0 {
                "no outputs judged".to_string()
            } else {
                interval(rate.interval.lower, rate.interval.upper)
            }
        })
        .collect();
    let thresholds: Vec<String> = s.checks.iter().map(facts::threshold).collect();
    let w = |v: &[String]| v.iter().map(|x| x.chars().count()).max().unwrap_or(0);
    let (wn, wr, wi, wt) = (w(&names), w(&rates), w(&intervals), w(&thresholds));
    for (idx, c) in s.checks.iter().enumerate() {
        let d = c.verdict.decision;
        let broken = r.broken_cause(idx);
        let (word, est) = match broken {
            Some(_) => (
                p.decision(Decision::Fail, &format!("{:>LEFT$}", "BROKEN")),
                p.wrap("33", "no verdict about the system"),
            ),
            None => {
                let est = facts::established(c);
                (
                    p.decision(d, &format!("{:>LEFT$}", decision_word(d))),
                    if c.verdict.established {
                        p.dim(&est)
                    } else {
                        p.wrap("33", &est)
                    },
                )
            }
        };
        out.push_str(&format!(
            "{} {:<wn$}  {:>wr$}  {:<wi$}  {:<wt$}  {}\n",
            word, names[idx], rates[idx], intervals[idx], thresholds[idx], est
        ));
        check_notes(out, r, idx, p, indent);
        if facts::not_passing(c) {
            failure_detail(out, r, idx, p, indent);
        }
    }
    if s.checks.is_empty() {
        out.push_str(&format!("{indent}no checks\n"));
    }
    out.push('\n');
}

/// Under a check's row: why it is broken, its message (not passing), the
/// inputs, errors, design effect and breakdown of its rate, its scope,
/// consistency and calibration, and the causes of what it could not judge.
fn check_notes(out: &mut String, r: &RunReport, idx: usize, p: &Paint, indent: &str) {
    let s = &r.summary;
    let c = &s.checks[idx];
    let broken = r.broken_cause(idx);
    if let Some(cause) = broken {
        out.push_str(&format!(
            "{indent}{}\n",
            p.wrap("1;31", &causes::broken_line(r, cause, &safe))
        ));
    }
    let mut notes = Vec::new();
    if facts::not_passing(c) && !c.info.message.is_empty() {
        out.push_str(&format!("{indent}{}\n", safe(&c.info.message)));
    }
    if let Some(i) = facts::check_inputs_note(c) {
        notes.push(i);
    }
    if let Some(e) = facts::errors(&c.rate, s.options.errors) {
        notes.push(e);
    }
    if let Some(d) = facts::design_effect(&c.rate) {
        notes.push(d);
    }
    if !c.breakdown.is_empty() {
        let what = match s.strategy {
            Strategy::Columns => "outputs",
            _ => "inputs",
        };
        notes.push(format!(
            "{}: {} of {} {what} below {}",
            name(s.strategy),
            c.breakdown_below,
            c.breakdown.len(),
            threshold_pct(c.verdict.threshold)
        ));
    }
    if !notes.is_empty() {
        out.push_str(&format!("{indent}{}\n", p.dim(&notes.join(" · "))));
    }
    if let Some(scope) = facts::scope_note(&c.rate) {
        out.push_str(&format!("{indent}{}\n", p.wrap("33", &scope)));
    }
    if let Some(cons) = &c.consistency {
        out.push_str(&format!(
            "{indent}{}\n",
            p.dim(&facts::consistency_line(cons))
        ));
    }
    for line in calibration::lines(c, s.sequential.is_some()) {
        out.push_str(&format!("{indent}{}\n", p.dim(&line)));
    }
    if let Some(w) = calibration::warning(c) {
        out.push_str(&format!("{indent}{}\n", p.wrap("33", &format!("⚠ {w}"))));
    }
    if let Some(g) = r.causes.checks.get(idx).filter(|g| g.total > 0) {
        if broken.is_none() {
            out.push_str(&cause_block(r, g, &causes::check_head(g), indent));
        }
    }
}

/// A check not passing: its worst input, one failing output with the
/// judge's reason and the fields of its input.
fn failure_detail(out: &mut String, r: &RunReport, idx: usize, p: &Paint, indent: &str) {
    let c = &r.summary.checks[idx];
    if let Some(wi) = &c.worst_input {
        if r.summary.shape.0 > 1 {
            out.push_str(&format!(
                "{indent}worst input {}: {}\n",
                safe(&r.input_label(wi.index)),
                facts::rate_with_interval(&wi.rate)
            ));
        }
    }
    let Some(ex) = r.example_for(idx) else {
        return;
    };
    out.push_str(&format!(
        "{indent}example ({}, output #{}): {}\n",
        safe(&r.input_label(ex.input)),
        ex.repetition,
        terminal_line(&ex.output, EXAMPLE_MAX_CHARS)
    ));
    if let Some(reason) = &ex.reason {
        out.push_str(&format!(
            "{indent}{}\n",
            p.dim(&format!("reason: {}", safe(reason)))
        ));
    }
    if let Some(fields) = r.input_fields_of(ex.input) {
        out.push_str(&format!(
            "{indent}input {}: {}\n",
            safe(&r.input_label(ex.input)),
            facts::fields_line(fields, &|f| terminal_line(f, FIELD_MAX_CHARS))
        ));
    }
}

/// Calls to the system that failed after their retries: not measured.
fn system_errors(out: &mut String, r: &RunReport, p: &Paint, indent: &str) {
    let system = &r.causes.system;
    if system.total > 0 {
        out.push_str(&format!(
            "{} {}",
            p.label("errors"),
            cause_block(r, system, &causes::system_head(system), indent).trim_start()
        ));
        out.push('\n');
    }
}

/// The aggregate over checks, the worst inputs and the retry plan.
fn summary_lines(out: &mut String, r: &RunReport, p: &Paint, indent: &str) {
    let s = &r.summary;
    if !s.checks.is_empty() {
        out.push_str(&format!(
            "{} {}\n",
            p.label("aggregate"),
            facts::aggregate_line(r, &|name| terminal_line(name, NAME_MAX_CHARS))
        ));
        if let Some(scope) = facts::scope_note(&s.aggregate.rate) {
            out.push_str(&format!("{indent}{}\n", p.wrap("33", &scope)));
        }
    }
    let worst = facts::worst_inputs(r, 3);
    if s.shape.0 > 1 && !worst.is_empty() {
        let items: Vec<String> = worst
            .iter()
            .map(|e| {
                format!(
                    "{} {}",
                    terminal_line(&r.input_label(e.index), 40),
                    facts::rate_with_interval(&e.rate)
                )
            })
            .collect();
        out.push_str(&format!(
            "{} {}\n",
            p.label("worst inputs"),
            items.join(" · ")
        ));
    }
    let retry = facts::retry_lines(r);
    for (i, line) in retry.iter().enumerate() {
        let label = if i == 0 {
            p.label("retry plan")
        } else {
            " ".repeat(LEFT)
        };
        out.push_str(&format!("{label} {line}\n"));
    }
    out.push('\n');
}

/// The guarded system beside its prediction (a run with a retry policy),
/// a serve run's live rates (its verdicts above are their sequences'), the
/// conclusion, then the comparison with the baseline when there is one.
fn closing(out: &mut String, r: &RunReport, p: &Paint, color: bool) {
    if let Some(g) = &r.guarded {
        out.push_str(&crate::text::guarded::block(g, color));
        out.push('\n');
    }
    if let Some(l) = &r.live {
        out.push_str(&crate::text::live::block(l, color));
        out.push('\n');
    }
    let d = if r.passed() {
        Decision::Pass
    } else {
        Decision::Fail
    };
    out.push_str(&p.decision(d, &r.conclusion()));
    out.push('\n');
    if let Some(c) = &r.baseline {
        out.push('\n');
        out.push_str(&crate::text::comparison::render(c, color));
    }
}

/// A group of errors: its head line, then its most common causes, one a
/// line (at most [`causes::CAUSES_SHOWN`]), each starting with `indent`.
fn cause_block(
    r: &RunReport,
    g: &probity_core::causes::CauseGroup,
    head: &str,
    indent: &str,
) -> String {
    let mut out = format!("{indent}{head}:\n");
    for c in g.causes.iter().take(causes::CAUSES_SHOWN) {
        out.push_str(&format!("{indent}  {}\n", causes::cause_line(r, c, &safe)));
    }
    if let Some(rest) = causes::rest(g, causes::CAUSES_SHOWN) {
        out.push_str(&format!("{indent}  {rest}\n"));
    }
    out
}
