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
//! The helpers here (row order, per-cell counts, the colour scale) are
//! shared with the HTML report so both draw the same picture.

use crate::numbers::pct;
use crate::sanitize::terminal_line;
use crate::Report;
use probity_core::stats::{Counts, ErrorPolicy};
use probity_core::{Cell, ReliabilityTensor};

/// Inputs shown as rows of the terminal heatmap (the worst first).
pub const TERMINAL_MAX_INPUTS: usize = 40;
/// Inputs shown per check in the terminal's input × repetition lines.
pub const TERMINAL_PATTERN_INPUTS: usize = 5;
/// Repetitions shown per line in the terminal's input × repetition lines.
pub const TERMINAL_MAX_REPETITIONS: usize = 100;
const LABEL_CHARS: usize = 24;

/// `(successes, trials)` of `c` under `policy`, as a rate; `None` when
/// nothing was judged.
pub(crate) fn rate_of(c: &Counts, policy: ErrorPolicy) -> Option<f64> {
    let (x, n) = c.successes_of(policy);
    (n > 0).then(|| x as f64 / n as f64)
}

/// Per input, the counts of each check: `cells[i][k]`.
pub(crate) fn input_check_counts(t: &ReliabilityTensor) -> Vec<Vec<Counts>> {
    let (n, _, k) = t.shape();
    let mut cells = vec![vec![Counts::default(); k]; n];
    t.for_each(|i, _, kk, cell| cell.tally(&mut cells[i][kk]));
    cells
}

/// Input indices, the worst first: by the Input Reliability Profile of
/// the summary when it covers every input, else by the rate over all of
/// an input's cells. Inputs with nothing judged come last.
pub(crate) fn inputs_worst_first(r: &Report, t: &ReliabilityTensor) -> Vec<usize> {
    let n = t.inputs();
    let profile = &r.summary.input_profile;
    if profile.len() == n && profile.iter().enumerate().all(|(i, e)| e.index == i) {
        return probity_core::profile::worst_first(profile)
            .iter()
            .map(|e| e.index)
            .collect();
    }
    let policy = r.summary.options.errors;
    let totals: Vec<Counts> = input_check_counts(t)
        .into_iter()
        .map(|row| row.into_iter().fold(Counts::default(), |a, b| a + b))
        .collect();
    order_by_rate(&totals, policy)
}

/// Indices of `counts` by rate, lowest first; nothing judged last.
pub(crate) fn order_by_rate(counts: &[Counts], policy: ErrorPolicy) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..counts.len()).collect();
    idx.sort_by(|&a, &b| {
        let ra = rate_of(&counts[a], policy);
        let rb = rate_of(&counts[b], policy);
        ra.is_none()
            .cmp(&rb.is_none())
            .then(ra.unwrap_or(2.0).total_cmp(&rb.unwrap_or(2.0)))
            .then(a.cmp(&b))
    });
    idx
}

/// The colour of a success rate: dark red at 0, red, amber at 80 %,
/// yellow at 90 %, light green at 97 %, green at 100 %. Most of the scale
/// is spent above 80 %, where reliability targets live.
pub(crate) fn rate_rgb(p: f64) -> (u8, u8, u8) {
    const STOPS: [(f64, (f64, f64, f64)); 6] = [
        (0.0, (127.0, 29.0, 29.0)),
        (0.5, (220.0, 38.0, 38.0)),
        (0.8, (245.0, 158.0, 11.0)),
        (0.9, (250.0, 204.0, 21.0)),
        (0.97, (134.0, 239.0, 172.0)),
        (1.0, (22.0, 163.0, 74.0)),
    ];
    let p = if p.is_finite() {
        p.clamp(0.0, 1.0)
    } else {
        0.0
    };
    for w in STOPS.windows(2) {
        let (a, ca) = w[0];
        let (b, cb) = w[1];
        if p <= b {
            let t = if b > a { (p - a) / (b - a) } else { 0.0 };
            let mix = |x: f64, y: f64| (x + (y - x) * t).round() as u8;
            return (mix(ca.0, cb.0), mix(ca.1, cb.1), mix(ca.2, cb.2));
        }
    }
    (22, 163, 74)
}

/// Whether dark text reads better than white on `rgb`.
pub(crate) fn dark_text_on(rgb: (u8, u8, u8)) -> bool {
    let l = 0.2126 * rgb.0 as f64 + 0.7152 * rgb.1 as f64 + 0.0722 * rgb.2 as f64;
    l > 140.0
}

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
pub fn heatmap(report: &Report, color: bool) -> String {
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
    let counts = input_check_counts(t);
    let mut out = String::new();
    if shown < n {
        out.push_str(&format!(
            "input × check success rate · worst {shown} of {n} inputs first\n"
        ));
    } else {
        out.push_str(&format!(
            "input × check success rate · {n} {}, worst first\n",
            crate::plural(n, "input")
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
        for c in &counts[i] {
            let p = rate_of(c, policy);
            let g = shade(p).to_string().repeat(2);
            let cell = match p {
                Some(p) => paint(color, shade_colour(p), &g),
                None => g,
            };
            line.push_str(&cell);
            line.push(' ');
        }
        let total = counts[i].iter().fold(Counts::default(), |a, b| a + *b);
        let rate = match irp.get(i).filter(|e| e.index == i) {
            Some(e) => crate::facts::rate_with_interval(&e.rate),
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
            crate::plural(n - shown, "input")
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
    fn colour_scale_ends_and_is_monotone_in_green() {
        assert_eq!(rate_rgb(0.0), (127, 29, 29));
        assert_eq!(rate_rgb(1.0), (22, 163, 74));
        assert_eq!(rate_rgb(0.8), (245, 158, 11));
        assert_eq!(rate_rgb(f64::NAN), (127, 29, 29));
        assert!(dark_text_on(rate_rgb(0.9)));
        assert!(!dark_text_on(rate_rgb(0.1)));
    }

    #[test]
    fn shades() {
        assert_eq!(shade(None), ' ');
        assert_eq!(shade(Some(1.0)), '█');
        assert_eq!(shade(Some(0.96)), '▓');
        assert_eq!(shade(Some(0.8)), '▒');
        assert_eq!(shade(Some(0.5)), '░');
        assert_eq!(shade(Some(0.1)), '·');
    }

    #[test]
    fn ordering_puts_unjudged_last() {
        let c = |pass, fail| Counts {
            pass,
            fail,
            error: 0,
            missing: 0,
        };
        let v = [c(5, 5), c(0, 0), c(1, 9), c(10, 0)];
        assert_eq!(order_by_rate(&v, ErrorPolicy::AsFailure), vec![2, 0, 3, 1]);
    }
}
