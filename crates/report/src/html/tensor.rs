//! The heatmaps of a run's reliability tensor (paper §3.6.6) on its HTML
//! page: input × check success rate, input × repetition per check (a
//! selector shows one), and check × check correlation (phi). Rows are
//! ordered as in the terminal heatmap (`facts::tensor`); every
//! cell carries a `<title>` with its exact figures.

use crate::document::run::RunReport;
use crate::facts::tensor::{check_counts_of_input, inputs_worst_first, order_by_rate, rate_of};
use crate::html::page::{capped_note, CHART_LABEL_CHARS, LABEL_CHARS};
use crate::numbers::{pct, pct_num, plural};
use crate::sanitize::{html_escape as esc, html_short};
use crate::svg::{dark_text_on, legend_rates, open, phi_rgb, rate_rgb, rgb_hex};
use probity_core::{Cell, ReliabilityTensor};
use std::fmt::Write;

/// Inputs drawn in the heatmaps (the worst by IRP when there are more).
pub const HEATMAP_MAX_INPUTS: usize = 200;
/// Repetitions drawn in the input × repetition heatmaps.
pub const HEATMAP_MAX_REPETITIONS: usize = 100;
/// Room right of a chart for the last rotated column label.
const LABEL_OVERHANG: f64 = 160.0;

/// The section of the heatmaps (SVG charts, each label escaped by
/// `svg`'s rules), or a note when the report has no tensor.
pub(crate) fn heatmaps(r: &RunReport) -> String {
    let mut h = String::new();
    heatmaps_into(&mut h, r);
    h
}

fn heatmaps_into(h: &mut String, r: &RunReport) {
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

fn column_labels(h: &mut String, r: &RunReport, k: usize, x0: f64, cw: f64, top: f64) {
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

fn input_check_heatmap(h: &mut String, r: &RunReport, t: &ReliabilityTensor, rows: &[usize]) {
    let (n, m, k) = t.shape();
    let policy = r.summary.options.errors;
    let cw = if k <= 16 { 52.0 } else { 24.0 };
    let ch = 20.0;
    let left = 210.0;
    let top = 150.0;
    let width = left + k as f64 * cw + LABEL_OVERHANG;
    let height = top + rows.len() as f64 * ch + 8.0;
    let _ = write!(
        h,
        "<figure id=\"heatmap-input-check\">\n<figcaption><strong>Input × check success rate.</strong> One cell per input and check: the share of the input's {m} {} that passed the check. Rows are inputs, worst first by input reliability (IRP).{} Hover a cell for its counts.</figcaption>\n<div class=\"scroll\">{}\n",
        plural(m, "output"),
        capped_note(rows.len(), n, "inputs", "by IRP"),
        open(
            Some("heatmap"),
            width,
            height,
            "input by check success rate heatmap",
            false
        )
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
        for (kk, c) in check_counts_of_input(t, i).iter().enumerate() {
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
    h.push_str(&legend_rates());
    h.push_str("</figure>\n");
}

fn repetition_heatmaps(h: &mut String, r: &RunReport, t: &ReliabilityTensor) {
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
            "<figure class=\"rep\" data-rep=\"{kk}\"><figcaption><strong>{}. {}</strong>: outputs by input (rows) and repetition (columns)</figcaption>\n<div class=\"scroll\">{}",
            kk + 1,
            html_short(&name, 80),
            open(
                Some("heatmap"),
                width,
                height,
                &format!("input by repetition pass and fail for check {}", kk + 1),
                false
            )
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
                    Cell::NotApplicable => "#e5e7eb",
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

fn phi_matrix(h: &mut String, r: &RunReport) {
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
        "<figure id=\"heatmap-phi\"><figcaption><strong>Check × check correlation (phi).</strong> Phi coefficient between the pass/fail verdicts of two checks on the same outputs: 0 independent, +1 they fail together, −1 they fail on different outputs. Orange positive, blue negative; n/a when a check never varied.</figcaption>\n<div class=\"scroll\">{}",
        open(
            Some("heatmap"),
            width,
            height,
            "phi correlation matrix of the checks",
            false
        )
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
