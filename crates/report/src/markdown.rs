//! The Markdown report (GitHub-flavoured), for `$GITHUB_STEP_SUMMARY` or a
//! pull-request comment: a heading with the overall PASS/FAIL, a table of
//! checks, the aggregate, the worst inputs, the failing checks with one
//! example output each in a fenced code block, the guarded system beside
//! its prediction (a run with a retry policy), and the retry plan.
//!
//! Text from the run is escaped with [`md_cell`] / [`md_inline`] (pipes,
//! backticks, markup, HTML, newlines) and outputs are put in code blocks
//! whose fence no output can close ([`md_code_block`]).

use crate::facts;
use crate::numbers::{decision_word, duration, interval, pct};
use crate::sanitize::{md_cell, md_code_block, md_inline, truncate_chars};
use crate::{plural, Report};
use probity_core::stats::Decision;

/// Longest model output shown in a code block, in characters.
pub const EXAMPLE_MAX_CHARS: usize = 1000;

fn badge(d: Decision) -> &'static str {
    match d {
        Decision::Pass => "✅",
        Decision::Fail => "❌",
        Decision::Inconclusive => "⚠️",
    }
}

/// Render the Markdown report.
pub fn render(r: &Report) -> String {
    let s = &r.summary;
    let (n, m, k) = s.shape;
    let mut md = String::new();
    let overall = if r.passed() {
        Decision::Pass
    } else {
        Decision::Fail
    };
    md.push_str(&format!(
        "## {} probity: {} — {} (run #{})\n\n",
        badge(overall),
        decision_word(overall),
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
    facts_line.push(format!(
        "{} model {}, {} served from cache",
        r.run.model_calls,
        if r.run.model_calls == 1 {
            "call"
        } else {
            "calls"
        },
        r.run.cached
    ));
    if let Some(d) = r.run.duration_s {
        facts_line.push(duration(d));
    }
    if !r.run.system.is_empty() {
        facts_line.push(format!("system {}", md_inline(&r.run.system)));
    }
    if !r.run.config_hash.is_empty() {
        facts_line.push(format!("config {}", md_inline(&r.run.config_hash)));
    }
    if !r.run.complete {
        facts_line.push("**run incomplete**".to_string());
    }
    md.push_str(&facts_line.join(" · "));
    md.push_str("  \n");
    md.push_str(&crate::facts::statistics_line(s));
    md.push_str("\n\n");

    // Checks table.
    if !s.checks.is_empty() {
        md.push_str("| check | success | interval | threshold | verdict | established |\n");
        md.push_str("| --- | ---: | --- | --- | --- | --- |\n");
        for c in &s.checks {
            let (rate, iv) = if c.rate.n == 0 {
                ("–".to_string(), "no outputs judged".to_string())
            } else {
                (
                    pct(c.rate.estimate),
                    interval(c.rate.interval.lower, c.rate.interval.upper),
                )
            };
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} {} | {} |\n",
                md_cell(&c.info.name),
                rate,
                iv,
                facts::threshold(c),
                badge(c.verdict.decision),
                decision_word(c.verdict.decision),
                md_cell(&facts::established(c))
            ));
        }
        md.push('\n');
        // Aggregate: probity's figures; the check name is escaped.
        md.push_str(&format!(
            "**Aggregate:** {}\n\n",
            facts::aggregate_line(r, &|name| format!("`{}`", md_code_span(name)))
        ));
    }

    // Worst inputs.
    let worst = facts::worst_inputs(r, 3);
    if n > 1 && !worst.is_empty() {
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

    // Failing checks in detail.
    let failing: Vec<usize> = (0..s.checks.len())
        .filter(|&i| facts::not_passing(&s.checks[i]))
        .collect();
    if !failing.is_empty() {
        md.push_str("### Checks not passing\n\n");
    }
    for &idx in &failing {
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
            md_inline(&facts::figures(c)),
            md_inline(&facts::established(c)),
        ];
        if let Some(e) = facts::errors(&c.rate, s.options.errors) {
            notes.push(e);
        }
        if let Some(w) = &c.worst_input {
            if n > 1 {
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
        if let Some(ex) = r.example_for(idx) {
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
        }
    }

    // The guarded system beside its prediction.
    if let Some(g) = &r.guarded {
        md.push_str(&guarded_section(g));
    }

    // Retry plan.
    let retry = facts::retry_lines(r);
    if !retry.is_empty() {
        md.push_str("<details><summary>Retry plan</summary>\n\n");
        for line in retry {
            md.push_str(&format!("- {line}\n"));
        }
        md.push_str("\n</details>\n");
    }
    md
}

/// Text for inside a single-backtick code span: backticks cannot be
/// escaped there, so they are replaced by `ʼ`; controls are dropped.
fn md_code_span(s: &str) -> String {
    crate::sanitize::terminal_line(s, 80).replace('`', "ʼ")
}

/// The guarded system (§4.2): headline, the measured-vs-predicted table,
/// calls and tokens, and the verdict with its rule. Every figure is
/// probity's own; nothing here comes from the run's text.
fn guarded_section(check: &probity_core::guarded::RetryCheck) -> String {
    use crate::guarded::{
        attempts_band, headline, histogram_line, outcome, pct_band, rows, spent_line, verdict_line,
        Outcome,
    };
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
