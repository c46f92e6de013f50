//! The guarded system beside its prediction (paper §4.2) on a run's HTML
//! page: the attempts histogram (with the counts the joint rate
//! predicts), the measured P(success within m) and attempts used beside
//! the three models' predictions with interval bars, calls and tokens
//! spent, and whether the prediction held. Every figure is probity's own.

use crate::facts::guarded::{
    attempts_band, headline, joint, measured_success, missed, outcome, pct_band, rows, spent_line,
    Outcome, RULE,
};
use crate::numbers::{pct, threshold_pct};
use crate::sanitize::html_escape as esc;
use crate::svg::{attempts_axis, band_bar, bar_axis, nice_step, open, FAIL, GREY, NEUTRAL, PASS};
use probity_core::guarded::RetryCheck;
use std::fmt::Write;

fn attempts_histogram(h: &mut String, check: &RetryCheck) {
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
    let predicted: Option<Vec<f64>> = joint(check).map(|j| {
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
        "<figure id=\"attempts-histogram\">\n<figcaption><strong>Attempts histogram.</strong> Requests whose output was published at attempt 1 … {m}, and those where no attempt passed.{} Hover a bar for its figures.</figcaption>\n<div class=\"scroll\">{}\n",
        if predicted.is_some() {
            " Black ticks: the counts the geometric model predicts at the measured joint pass rate."
        } else {
            ""
        },
        open(Some("histogram"), width, height, "attempts histogram", false)
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

/// The section of the guarded system of a run with a retry policy; its
/// P(success within m) bars on the page's one scale from `lo`.
pub(crate) fn section(check: &RetryCheck, lo: f64) -> String {
    let mut h = String::new();
    section_into(&mut h, check, lo);
    h
}

fn section_into(h: &mut String, check: &RetryCheck, lo: f64) {
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
            "Rule: {RULE}. The measured {} outside — attempts are not independent of each other, or feedback changes the pass rate.",
            missed(check)
        ),
        Outcome::Untested => "No output was judged on every deciding check: there is no pass rate to predict from.".to_string(),
    };
    let _ = writeln!(
        h,
        "<p class=\"verdict {class}\" id=\"guard-verdict\">{word}<span class=\"rule\">{}</span></p>",
        esc(&detail)
    );
    attempts_histogram(h, check);

    // Measured vs predicted.
    let rows = rows(check);
    let hi_attempts = f64::from(g.m.max(2));
    let measured_s = measured_success(g);
    let j = joint(check);
    let _ = write!(
        h,
        "<h3>Measured and predicted</h3>\n<p class=\"note\">Bars: {} intervals (a point for independence, which has none); the grey band behind a prediction is the measured interval it is compared with. The verdict uses the per-input row: the measured figures must lie inside its intervals.</p>\n<div class=\"scroll\"><table class=\"guarded\"><thead><tr><th></th><th class=\"num\">P(pass) per attempt</th><th>P(success within {m})<br>{}</th><th>attempts used<br>{}</th><th>vs measured</th></tr></thead><tbody>\n",
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
            GREY
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
