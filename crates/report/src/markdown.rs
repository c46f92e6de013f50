//! The Markdown format (GitHub-flavoured), for `$GITHUB_STEP_SUMMARY` or a
//! pull-request comment.
//!
//! | document | shows |
//! | --- | --- |
//! | run | a heading with the overall PASS/FAIL, the calls, tokens, cost in money (when priced) and reuse, a table of checks (BROKEN for a check that could not judge any output), the inputs, scope and consistency of each check's rate, the errors apart from failures with their causes, the aggregate, the worst inputs, the failing checks with one example output each in a fenced code block beside its input's fields, the guarded system beside its prediction (a run with a retry policy), the retry plan, then the comparison with a baseline |
//! | comparison | a `###` section: the conclusion, the runs, the correction across checks, a table of changes per check with p-values |
//! | trend | a `### probity trend` section holding the text table ([`crate::text`]) in a code block |
//! | plan | a `### probity retry plan` section holding the text plan in a code block |
//! | variants | ([`variants`]) the conclusion, the variant × check matrix, the cost per variant, the differences against the reference (or every pair) with Holm-adjusted p |
//!
//! Text from the run is escaped with [`md_cell`] / [`md_inline`] (pipes,
//! backticks, markup, HTML, newlines) and outputs are put in code blocks
//! whose fence no output can close ([`md_code_block`]).

use crate::document::comparison::ComparisonReport;
use crate::document::run::RunReport;
use crate::document::Document;
use crate::facts::causes;
use crate::facts::comparison::{
    inputs_line, p_value, points, points_abs, points_interval, settings_line,
};
use crate::facts::guarded::{
    attempts_band, headline, histogram_line, outcome, pct_band, rows, spent_line, verdict_line,
    Outcome,
};
use crate::facts::run as facts;
use crate::facts::sequential;
use crate::numbers::{decision_word, duration, interval, pct, plural};
use crate::sanitize::{md_cell, md_code_block, md_inline, terminal_line, truncate_chars};
use probity_core::compare::Direction;
use probity_core::guarded::RetryCheck;
use probity_core::stats::Decision;
use probity_core::stats::MultipleTesting;

mod variants;

/// Longest model output shown in a code block, in characters.
pub const EXAMPLE_MAX_CHARS: usize = 1000;

fn badge(d: Decision) -> &'static str {
    match d {
        Decision::Pass => "✅",
        Decision::Fail => "❌",
        Decision::Inconclusive => "⚠️",
    }
}

/// Render `doc` as Markdown.
pub(crate) fn render(doc: Document<'_>) -> String {
    match doc {
        Document::Run(r) => match &r.baseline {
            Some(c) => format!("{}\n{}", run(r), comparison(c)),
            None => run(r),
        },
        Document::Comparison(c) => comparison(c),
        Document::Trend(t) => quoted("probity trend", &crate::text::trend::render(t)),
        Document::Plan(p) => quoted("probity retry plan", &crate::text::plan::render(p)),
        Document::Variants(v) => variants::render(v),
    }
}

/// A `###` section holding `text` (probity's plain text of a document) in
/// a code block.
fn quoted(heading: &str, text: &str) -> String {
    format!("### {heading}\n\n{}\n", md_code_block(text, "text"))
}

/// The report of a run (without its comparison).
fn run(r: &RunReport) -> String {
    let mut md = String::new();
    run_heading(&mut md, r);
    checks_section(&mut md, r);
    worst_inputs_section(&mut md, r);
    failing_section(&mut md, r);
    if let Some(g) = &r.guarded {
        md.push_str(&guarded_section(g));
    }
    if let Some(l) = &r.live {
        md.push_str(&live_section(l));
    }
    retry_section(&mut md, r);
    md
}

/// The heading with the overall verdict, the conclusion, the run's shape,
/// calls, duration, system and config, the statistics used, and a
/// sequential run's stop with its sequences.
fn run_heading(md: &mut String, r: &RunReport) {
    let s = &r.summary;
    let (n, m, k) = s.shape;
    let overall = if r.passed() {
        Decision::Pass
    } else {
        Decision::Fail
    };
    let (icon, word) = if r.broken().is_empty() {
        (badge(overall), decision_word(overall))
    } else {
        ("⛔", "NO VERDICT".to_string())
    };
    md.push_str(&format!(
        "## {icon} probity: {word} — {} (run #{})\n\n",
        md_inline(&r.run.name),
        r.run.id
    ));
    md.push_str(&format!("**{}**\n\n", md_inline(&r.conclusion())));

    let mut facts_line = vec![format!(
        "{n} {} × {m} {} × {k} {}",
        plural(n, "input"),
        plural(m, "output"),
        plural(k, "check")
    )];
    // The check names are run data: escaped; the rest is probity's own.
    let mut run = r.run.clone();
    for (name, _) in &mut run.judge_calls_by_check {
        *name = md_inline(name);
    }
    facts_line.push(facts::calls_line(&run));
    if let Some(d) = r.run.duration_s {
        facts_line.push(duration(d));
    }
    let system = [&r.run.system_label, &r.run.system]
        .into_iter()
        .find(|s| !s.is_empty());
    if let Some(system) = system {
        facts_line.push(format!("system {}", md_inline(system)));
    }
    if !r.run.config_hash.is_empty() {
        facts_line.push(format!("config {}", md_inline(&r.run.config_hash)));
    }
    if !r.run.complete {
        facts_line.push("**run incomplete**".to_string());
    }
    md.push_str(&facts_line.join(" · "));
    md.push_str("  \n");
    md.push_str(&calls_time_md(r));
    md.push_str(&facts::statistics_line(r));
    md.push_str("\n\n");
    if let Some(o) = &s.sequential {
        md.push_str(&format!(
            "**{}**  \n{}\n\n",
            md_inline(&sequential::headline(o)),
            md_inline(&sequential::method_line(o))
        ));
        for c in &o.checks {
            md.push_str(&format!(
                "- {}\n",
                sequential::check_line(c, s.shape.1 as u64, &|n| md_inline(n))
            ));
        }
        md.push('\n');
    }
}

/// The checks table, then (when there are checks) their statistics,
/// calibration, errors and the aggregate.
fn checks_section(md: &mut String, r: &RunReport) {
    let s = &r.summary;
    if s.checks.is_empty() {
        return;
    }
    md.push_str("| check | success | interval | threshold | verdict | established |\n");
    md.push_str("| --- | ---: | --- | --- | --- | --- |\n");
    for (idx, c) in s.checks.iter().enumerate() {
        let shown = crate::facts::calibration::shown_rate(c, s.sequential.is_some());
        let (rate, iv) = if shown.n == 0 {
            ("–".to_string(), "no outputs judged".to_string())
        } else {
            (
                pct(shown.estimate),
                interval(shown.interval.lower, shown.interval.upper),
            )
        };
        let (verdict, established) = match r.broken_cause(idx) {
            Some(_) => (
                "⛔ BROKEN".to_string(),
                "no verdict about the system".to_string(),
            ),
            None => (
                format!(
                    "{} {}",
                    badge(c.verdict.decision),
                    decision_word(c.verdict.decision)
                ),
                md_cell(&facts::established(c)),
            ),
        };
        md.push_str(&format!(
            "| {} | {} | {} | {} | {verdict} | {established} |\n",
            md_cell(&c.info.name),
            rate,
            iv,
            facts::threshold(c),
        ));
    }
    md.push('\n');
    statistics_table(md, r);
    calibration_section(md, r);
    errors_section(md, r);
    // Aggregate: probity's figures; the check name is escaped.
    md.push_str(&format!(
        "**Aggregate:** {}\n\n",
        facts::aggregate_line(r, &|name| format!("`{}`", md_code_span(name)))
    ));
}

/// The three worst inputs with their rates (a run of more than one input).
fn worst_inputs_section(md: &mut String, r: &RunReport) {
    let worst = facts::worst_inputs(r, 3);
    if r.summary.shape.0 <= 1 || worst.is_empty() {
        return;
    }
    md.push_str("**Worst inputs**\n\n| input | success | interval |\n| --- | ---: | --- |\n");
    for e in &worst {
        md.push_str(&format!(
            "| {} | {} | {} |\n",
            md_cell(&r.input_label(e.index)),
            pct(e.rate.estimate),
            interval(e.rate.interval.lower, e.rate.interval.upper)
        ));
    }
    md.push('\n');
}

/// The checks not passing, each in detail ([`failing_check`]).
fn failing_section(md: &mut String, r: &RunReport) {
    let s = &r.summary;
    let failing: Vec<usize> = (0..s.checks.len())
        .filter(|&i| facts::not_passing(&s.checks[i]))
        .collect();
    if !failing.is_empty() {
        md.push_str("### Checks not passing\n\n");
    }
    for idx in failing {
        failing_check(md, r, idx);
    }
}

/// One check not passing: its message, figures, errors and worst input,
/// then one failing output in a code block with the judge's reason and its
/// input's fields.
fn failing_check(md: &mut String, r: &RunReport, idx: usize) {
    let s = &r.summary;
    let c = &s.checks[idx];
    md.push_str(&format!(
        "#### {} {} — {}\n\n",
        badge(c.verdict.decision),
        md_inline(&c.info.name),
        decision_word(c.verdict.decision)
    ));
    if !c.info.message.is_empty() {
        md.push_str(&format!("> {}\n\n", md_inline(&c.info.message)));
    }
    let mut notes = vec![
        md_inline(&facts::figures(c, s.sequential.is_some())),
        md_inline(&facts::established(c)),
    ];
    if let Some(e) = facts::errors(&c.rate, s.options.errors) {
        notes.push(e);
    }
    if let Some(w) = &c.worst_input {
        if s.shape.0 > 1 {
            notes.push(format!(
                "worst input {}: {}",
                md_inline(&r.input_label(w.index)),
                facts::rate_with_interval(&w.rate)
            ));
        }
    }
    for note in notes {
        md.push_str(&format!("- {note}\n"));
    }
    md.push('\n');
    let Some(ex) = r.example_for(idx) else {
        return;
    };
    md.push_str(&format!(
        "Example failing output (input {}, output #{}):\n\n",
        md_inline(&r.input_label(ex.input)),
        ex.repetition
    ));
    md.push_str(&md_code_block(
        &truncate_chars(&ex.output, EXAMPLE_MAX_CHARS),
        "text",
    ));
    md.push('\n');
    if let Some(reason) = &ex.reason {
        md.push_str(&format!("Reason: {}\n\n", md_inline(reason)));
    }
    if let Some(fields) = r.input_fields_of(ex.input) {
        md.push_str(&format!(
            "Its input {}:\n\n",
            md_inline(&r.input_label(ex.input))
        ));
        let json = serde_json::to_string_pretty(fields).unwrap_or_default();
        md.push_str(&md_code_block(
            &truncate_chars(&json, EXAMPLE_MAX_CHARS),
            "json",
        ));
        md.push('\n');
    }
}

/// The retry plan, folded in a `<details>` block.
fn retry_section(md: &mut String, r: &RunReport) {
    let retry = facts::retry_lines(r);
    if retry.is_empty() {
        return;
    }
    md.push_str("<details><summary>Retry plan</summary>\n\n");
    for line in retry {
        md.push_str(&format!("- {line}\n"));
    }
    md.push_str("\n</details>\n");
}

/// Per calibrated verifier: its judge's sensitivity and specificity, the
/// corrected rate beside the raw one, and a warning when the judge is too
/// weak (`facts::calibration`).
/// The wall and call time, structured output and auto concurrency lines
/// ([`crate::facts::upstream`]), escaped, each ending a Markdown line;
/// empty when the store has none.
fn calls_time_md(r: &RunReport) -> String {
    let Some(c) = &r.run.calls else {
        return String::new();
    };
    crate::facts::upstream::lines(c)
        .iter()
        .map(|line| format!("{}  \n", md_inline(line)))
        .collect()
}

fn calibration_section(md: &mut String, r: &RunReport) {
    let calibrated: Vec<_> = r
        .summary
        .checks
        .iter()
        .filter(|c| c.calibration.is_some())
        .collect();
    if calibrated.is_empty() {
        return;
    }
    md.push_str("#### Judges calibrated on labelled sets\n\n");
    for c in calibrated {
        md.push_str(&format!("- **{}**\n", md_inline(&c.info.name)));
        for line in crate::facts::calibration::lines(c, r.summary.sequential.is_some()) {
            md.push_str(&format!("  - {}\n", md_inline(&line)));
        }
        if let Some(w) = crate::facts::calibration::warning(c) {
            md.push_str(&format!("  - ⚠️ {}\n", md_inline(&w)));
        }
    }
    md.push('\n');
}

/// Per check: the inputs its rate is over, what its interval is about,
/// and its consistency (pass^k, pass@k).
fn statistics_table(md: &mut String, r: &RunReport) {
    let s = &r.summary;
    md.push_str("| check | inputs | interval is about | pass^k | pass@k |\n");
    md.push_str("| --- | ---: | --- | --- | --- |\n");
    for (k, c) in s.checks.iter().enumerate() {
        let about = match facts::scope_note(&c.rate) {
            _ if r.broken_cause(k).is_some() => "no verdict: broken".to_string(),
            Some(note) => format!("⚠️ {note}"),
            None if c.rate.n == 0 => "–".to_string(),
            None => "the system (inputs drawn from a population)".to_string(),
        };
        let (all, any) = match &c.consistency {
            Some(k) if k.mean_pass_all_k.n > 0 => (
                format!(
                    "k = {}: {}",
                    k.k,
                    facts::rate_with_interval(&k.mean_pass_all_k)
                ),
                format!(
                    "k = {}: {}",
                    k.k,
                    facts::rate_with_interval(&k.mean_pass_any_k)
                ),
            ),
            Some(k) => (
                format!("k = {}: no input with {} judged outputs", k.k, k.k),
                "–".to_string(),
            ),
            None => ("–".to_string(), "–".to_string()),
        };
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            md_cell(&c.info.name),
            c.rate.inputs,
            md_cell(&about),
            md_cell(&all),
            md_cell(&any)
        ));
    }
    md.push('\n');
    if let Some(scope) = facts::scope_note(&s.aggregate.rate) {
        md.push_str(&format!("⚠️ Aggregate: {}\n\n", md_inline(&scope)));
    }
}

/// Errors apart from failures: broken checks, calls to the system that
/// failed (not measured), outputs a check could not judge; each group with
/// its most common causes.
fn errors_section(md: &mut String, r: &RunReport) {
    let groups = causes::groups(r);
    if groups.is_empty() {
        return;
    }
    md.push_str("### Errors (not failures)\n\n");
    let clean = |s: &str| md_inline(s);
    for (k, cause) in r.broken() {
        md.push_str(&format!(
            "⛔ **{}** {}\n\n",
            md_inline(&r.check_name(k)),
            causes::broken_line(r, cause, &clean)
        ));
    }
    for (k, g) in groups {
        let head = match k {
            None => causes::system_head(g),
            Some(k) => format!(
                "{} {}",
                md_code_span_quoted(&r.check_name(k)),
                causes::check_head(g)
            ),
        };
        md.push_str(&format!("{head}:\n\n"));
        for c in g.causes.iter().take(causes::CAUSES_SHOWN) {
            md.push_str(&format!("- {}\n", causes::cause_line(r, c, &clean)));
        }
        if let Some(rest) = causes::rest(g, causes::CAUSES_SHOWN) {
            md.push_str(&format!("- {rest}\n"));
        }
        md.push('\n');
    }
}

/// A check name in a code span.
fn md_code_span_quoted(s: &str) -> String {
    format!("`{}`", md_code_span(s))
}

/// Text for inside a single-backtick code span: backticks cannot be
/// escaped there, so they are replaced by `ʼ`; controls are dropped.
fn md_code_span(s: &str) -> String {
    terminal_line(s, 80).replace('`', "ʼ")
}

/// The guarded system (§4.2): headline, the measured-vs-predicted table,
/// calls and tokens, and the verdict with its rule. Every figure is
/// probity's own; nothing here comes from the run's text.
fn guarded_section(check: &RetryCheck) -> String {
    let g = &check.measured;
    let mut md = String::from("### Guarded system (§4.2)\n\n");
    md.push_str(&format!(
        "{} · published at attempt {} · spent {}\n\n",
        md_inline(&headline(g)),
        md_inline(&histogram_line(g)),
        md_inline(&spent_line(g))
    ));
    md.push_str("| | P(pass) per attempt | P(success within m) | attempts used |\n");
    md.push_str("| --- | ---: | ---: | ---: |\n");
    for row in rows(check) {
        let label = if row.label == "measured" {
            "**measured**".to_string()
        } else {
            format!("{} model", md_cell(&row.label))
        };
        md.push_str(&format!(
            "| {label} | {} | {} | {} |\n",
            row.p.as_ref().map_or("–".to_string(), pct_band),
            pct_band(&row.success_within),
            attempts_band(&row.attempts)
        ));
    }
    let b = match outcome(check) {
        Outcome::Held => badge(Decision::Pass),
        Outcome::NotHeld => badge(Decision::Fail),
        Outcome::Untested => badge(Decision::Inconclusive),
    };
    md.push_str(&format!("\n{b} {}\n\n", md_inline(&verdict_line(check))));
    md
}

/// A serve run's live rates: the guarantee, one row per check and
/// attempt kind, what each column is.
fn live_section(l: &probity_core::monitor::LiveSnapshot) -> String {
    use crate::facts::live;
    let mut md = format!("### Live rates\n\n{}\n\n", md_inline(&live::headline(l)));
    md.push_str(&format!("| {} |\n", live::HEADS.join(" | ")));
    md.push_str("| --- | --- | ---: | --- | --- | --- | --- |\n");
    for row in live::rows(l) {
        let mut cells = row.cells(&md_cell);
        if row.alarmed {
            cells[6] = format!("❌ {}", cells[6]);
        }
        md.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    md.push_str(&format!("\n{}\n\n", md_inline(&live::method_line(l))));
    md
}

/// The comparison as Markdown (a section: `###` heading).
fn comparison(r: &ComparisonReport) -> String {
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
        md_inline(&r.baseline.system_label),
        r.candidate.id,
        md_inline(&r.candidate.created_at),
        md_inline(&r.candidate.system_label),
        md_inline(&settings_line(c)),
        md_inline(&inputs_line(c)),
    ));
    if !c.checks.is_empty() {
        let adjusted = match c.options.multiple {
            MultipleTesting::Holm => "Holm-adjusted p",
            MultipleTesting::None => "adjusted p (no correction)",
        };
        md.push_str(&format!("| check | verdict | baseline | candidate | change (pts) | paired interval | unpaired interval | smallest detectable | p | {adjusted} |\n"));
        md.push_str("| --- | --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |\n");
        for k in &c.checks {
            let icon = match k.direction {
                Direction::Regressed => "❌ regressed",
                Direction::Improved => "⬆️ improved",
                Direction::NoDetectableChange => "➖ no detectable change",
                Direction::NoData => "⚠️ no data",
            };
            md.push_str(&format!(
                "| {} | {icon} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                md_cell(&k.name),
                pct(k.baseline.estimate),
                pct(k.candidate.estimate),
                points(k.decisive().mean_diff),
                k.paired.as_ref().map_or("–".to_string(), points_interval),
                points_interval(&k.unpaired),
                points_abs(k.mde),
                md_cell(&p_value(k.p_value)),
                md_cell(&p_value(k.p_adjusted)),
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
            plural(r.changed_inputs.len(), "input")
        ));
    }
    md
}
