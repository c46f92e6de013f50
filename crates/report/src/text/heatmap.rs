//! The reliability tensor as a heatmap in the terminal (paper §3.6.6), for
//! a quick look over SSH.
//!
//! ```text
//! input × check success rate · worst 3 of 3 inputs first
//!                           1  2  3   input rate
//! thanks-3                 ▒▒ ░░ ██   61.0% [51.2, 70.0]
//! bye                      ▓▓ ▒▒ ██   90.0% [82.6, 94.5]
//! hello                    ██ ▓▓ ██   98.0% [93.0, 99.4]
//! checks  1 contraction_validator · 2 politeness_validator · 3 json
//! shades  ██ 100%  ▓▓ ≥95%  ▒▒ ≥80%  ░░ ≥50%  ·· <50%  (blank) nothing judged
//!
//! check 1 contraction_validator, outputs of its worst inputs (. pass, X fail, E error, blank missing)
//!   thanks-3               ..X..X....XX........   16 of 20
//! ```
//!
//! Input ids and check names go through [`terminal_line`].
//!
//! Rows are ordered and counted as in the HTML report's heatmaps
//! (`facts::tensor`), so both draw the same picture.

use crate::document::run::RunReport;
use crate::facts::run::rate_with_interval;
use crate::facts::tensor::{check_counts_of_input, inputs_worst_first, order_by_rate, rate_of};
use crate::numbers::{pct, plural};
use crate::sanitize::terminal_line;
use probity_core::stats::Counts;
use probity_core::Cell;

/// Inputs shown as rows of the terminal heatmap (the worst first).
pub const TERMINAL_MAX_INPUTS: usize = 40;
/// Inputs shown per check in the terminal's input × repetition lines.
pub const TERMINAL_PATTERN_INPUTS: usize = 5;
/// Repetitions shown per line in the terminal's input × repetition lines.
pub const TERMINAL_MAX_REPETITIONS: usize = 100;
const LABEL_CHARS: usize = 24;

fn shade(p: Option<f64>) -> char {
    match p {
        None => ' ',
        Some(p) if p >= 1.0 => '█',
        Some(p) if p >= 0.95 => '▓',
        Some(p) if p >= 0.8 => '▒',
        Some(p) if p >= 0.5 => '░',
        Some(_) => '·',
    }
}

/// `s` in xterm-256 colour `code` when `color` (256 colours rather than
/// 24-bit: they work in more terminals, and over more SSH and tmux setups).
fn paint(color: bool, code: u8, s: &str) -> String {
    if color {
        format!("\x1b[38;5;{code}m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

/// The xterm-256 colour of a shade level: dark red, orange-red, amber,
/// light green, green (the HTML scale, quantised).
fn shade_colour(p: f64) -> u8 {
    match p {
        p if p >= 1.0 => 34,
        p if p >= 0.95 => 149,
        p if p >= 0.8 => 214,
        p if p >= 0.5 => 202,
        _ => 124,
    }
}

fn label(s: &str) -> String {
    let l = terminal_line(s, LABEL_CHARS);
    let w = l.chars().count();
    format!("{l}{}", " ".repeat(LABEL_CHARS.saturating_sub(w)))
}

/// The input × check heatmap for a terminal: rows are the worst
/// [`TERMINAL_MAX_INPUTS`] inputs (labelled by id, with their input
/// rate), columns the checks (numbered, with a legend of names), each cell
/// a shade of its success rate (`█ ▓ ▒ ░ ·`), coloured from red to green
/// when `color`. Then, per check, the pass/fail pattern over repetitions
/// of its worst inputs. Plain text (no escape sequences) when `color` is
/// false. Needs `report.tensor`; without it, says so in one line.
pub fn heatmap(report: &RunReport, color: bool) -> String {
    let Some(t) = &report.tensor else {
        return "no heatmap: this report carries no tensor of results\n".to_string();
    };
    let (n, m, k) = t.shape();
    if n == 0 || k == 0 {
        return format!(
            "no heatmap: the tensor is empty ({n} inputs × {m} outputs × {k} checks)\n"
        );
    }
    let policy = report.summary.options.errors;
    let order = inputs_worst_first(report, t);
    let shown = order.len().min(TERMINAL_MAX_INPUTS);
    let mut out = String::new();
    if shown < n {
        out.push_str(&format!(
            "input × check success rate · worst {shown} of {n} inputs first\n"
        ));
    } else {
        out.push_str(&format!(
            "input × check success rate · {n} {}, worst first\n",
            plural(n, "input")
        ));
    }
    // Column header: check numbers, right-aligned in 2 of 3 characters.
    let mut head = " ".repeat(LABEL_CHARS + 1);
    for kk in 0..k {
        head.push_str(&format!("{:>2} ", (kk + 1) % 100));
    }
    head.push_str("  input rate\n");
    out.push_str(&head);
    let irp = &report.summary.input_profile;
    for &i in order.iter().take(shown) {
        let mut line = format!("{} ", label(&report.input_label(i)));
        let counts = check_counts_of_input(t, i);
        for c in &counts {
            let p = rate_of(c, policy);
            let g = shade(p).to_string().repeat(2);
            let cell = match p {
                Some(p) => paint(color, shade_colour(p), &g),
                None => g,
            };
            line.push_str(&cell);
            line.push(' ');
        }
        let total = counts.iter().fold(Counts::default(), |a, b| a + *b);
        let rate = match irp.get(i).filter(|e| e.index == i) {
            Some(e) => rate_with_interval(&e.rate),
            None => rate_of(&total, policy).map_or_else(|| "–".to_string(), pct),
        };
        line.push_str(&format!("  {rate}"));
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if shown < n {
        out.push_str(&format!(
            "… {} more {} not shown\n",
            n - shown,
            plural(n - shown, "input")
        ));
    }
    let names: Vec<String> = (0..k)
        .map(|kk| {
            format!(
                "{} {}",
                kk + 1,
                terminal_line(&report.check_name(kk), LABEL_CHARS * 2)
            )
        })
        .collect();
    out.push_str(&format!("checks  {}\n", names.join(" · ")));
    let sw = |p: f64, s: &str| paint(color, shade_colour(p), s);
    out.push_str(&format!(
        "shades  {} 100%  {} ≥95%  {} ≥80%  {} ≥50%  {} <50%  (blank) nothing judged\n",
        sw(1.0, "██"),
        sw(0.96, "▓▓"),
        sw(0.85, "▒▒"),
        sw(0.6, "░░"),
        sw(0.2, "··")
    ));
    // Per check: the repetitions of its worst inputs.
    let mcols = m.min(TERMINAL_MAX_REPETITIONS);
    for kk in 0..k {
        out.push_str(&format!(
            "\ncheck {} {}, outputs of its worst inputs (. pass, X fail, E error, blank missing)\n",
            kk + 1,
            terminal_line(&report.check_name(kk), LABEL_CHARS * 2)
        ));
        let per_input = t.input_counts_for(kk);
        let worst: Vec<usize> = order_by_rate(&per_input, policy)
            .into_iter()
            .filter(|&i| per_input[i].fail + per_input[i].error > 0)
            .take(TERMINAL_PATTERN_INPUTS)
            .collect();
        if worst.is_empty() {
            out.push_str("  no output failed this check\n");
            continue;
        }
        for i in worst {
            // Runs of equal cells share one colour sequence.
            let mut pattern = String::new();
            let mut run: Option<(Cell, usize)> = None;
            let flush = |pattern: &mut String, run: Option<(Cell, usize)>| {
                if let Some((cell, len)) = run {
                    let (ch, code) = match cell {
                        Cell::Pass => ('.', 34),
                        Cell::Fail => ('X', 196),
                        Cell::Error => ('E', 165),
                        Cell::Missing => (' ', 0),
                        Cell::NotApplicable => ('-', 0),
                    };
                    let s = ch.to_string().repeat(len);
                    pattern.push_str(&if code == 0 { s } else { paint(color, code, &s) });
                }
            };
            for j in 0..mcols {
                let cell = t.get(i, j, kk).unwrap_or(Cell::Missing);
                match &mut run {
                    Some((c, len)) if *c == cell => *len += 1,
                    _ => {
                        flush(&mut pattern, run);
                        run = Some((cell, 1));
                    }
                }
            }
            flush(&mut pattern, run);
            if m > mcols {
                pattern.push_str(&format!(" …+{}", m - mcols));
            }
            let (x, nn) = per_input[i].successes_of(policy);
            out.push_str(&format!(
                "  {} {pattern}   {x} of {nn}\n",
                label(&report.input_label(i))
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shades() {
        assert_eq!(shade(None), ' ');
        assert_eq!(shade(Some(1.0)), '█');
        assert_eq!(shade(Some(0.96)), '▓');
        assert_eq!(shade(Some(0.8)), '▒');
        assert_eq!(shade(Some(0.5)), '░');
        assert_eq!(shade(Some(0.1)), '·');
    }
}
