//! A serve run's live rates as a terminal block: part of the report of a
//! serve run, and the page `probity monitor` refreshes.

use crate::facts::live::{headline, method_line, rows, HEADS};
use crate::sanitize::terminal_line;
use probity_core::monitor::LiveSnapshot;

/// Longest check name in the table.
const NAME_CHARS: usize = 28;

/// The block: the guarantee, then one row per check and attempt kind
/// (alarmed rows in bold red when `color`), then what each column is.
pub fn block(l: &LiveSnapshot, color: bool) -> String {
    let mut s = format!("Live rates: {}\n", terminal_line(&headline(l), 0));
    s.push_str(&table(l, color));
    s.push_str(&format!("  {}\n", terminal_line(&method_line(l), 0)));
    s
}

/// The table alone, aligned.
pub fn table(l: &LiveSnapshot, color: bool) -> String {
    let rows = rows(l);
    let name = |n: &str| terminal_line(n, NAME_CHARS);
    let cells: Vec<[String; 7]> = rows.iter().map(|r| r.cells(&name)).collect();
    let width = |c: usize| {
        cells
            .iter()
            .map(|r| r[c].chars().count())
            .chain(std::iter::once(HEADS[c].chars().count()))
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..HEADS.len()).map(width).collect();
    let line = |cells: &[&str]| {
        let mut out = String::from(" ");
        for (k, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            // Numbers right-aligned, words left.
            if k == 2 {
                out.push_str(&format!(" {cell:>w$}"));
            } else {
                out.push_str(&format!(" {cell:<w$}"));
            }
        }
        out.trim_end().to_string()
    };
    let mut s = line(&HEADS);
    s.push('\n');
    for (r, c) in rows.iter().zip(&cells) {
        let refs: Vec<&str> = c.iter().map(String::as_str).collect();
        let text = line(&refs);
        if color && r.alarmed {
            s.push_str(&format!("\x1b[1;31m{text}\x1b[0m\n"));
        } else {
            s.push_str(&text);
            s.push('\n');
        }
    }
    s
}

/// An alarm as one terminal line (the check's name made safe).
pub fn alarm_line(
    check: &str,
    kind: probity_core::monitor::AttemptKind,
    alarm: &probity_core::monitor::Alarm,
) -> String {
    terminal_line(
        &crate::facts::live::alarm_sentence(&terminal_line(check, NAME_CHARS), kind, alarm),
        0,
    )
}
