//! The guarded system beside its prediction (§4.2) as a terminal block:
//! part of the report of a run with a retry policy and of the plan of
//! such a run (`probity plan RUN`); JUnit quotes it uncoloured.

use crate::facts::guarded::{
    attempts_band, headline, histogram_line, outcome, pct_band, rows, spent_line, verdict_line,
    Outcome,
};
use crate::sanitize::terminal_line;
use probity_core::guarded::RetryCheck;

/// The terminal block: headline, histogram, the measured-vs-predicted
/// table, calls and tokens, and the verdict. `color` paints the verdict.
pub(crate) fn block(check: &RetryCheck, color: bool) -> String {
    let g = &check.measured;
    let mut s = format!("Guarded system (§4.2): {}\n", headline(g));
    s.push_str(&format!("  published at attempt   {}\n", histogram_line(g)));
    let rows = rows(check);
    let cells: Vec<[String; 4]> = rows
        .iter()
        .map(|r| {
            [
                if r.label == "measured" {
                    r.label.clone()
                } else {
                    format!("{} model", r.label)
                },
                r.p.as_ref().map(pct_band).unwrap_or_default(),
                pct_band(&r.success_within),
                attempts_band(&r.attempts),
            ]
        })
        .collect();
    let head = [
        "",
        "P(pass) per attempt",
        "P(success within m)",
        "attempts used",
    ];
    let width = |c: usize| {
        cells
            .iter()
            .map(|r| r[c].chars().count())
            .chain(std::iter::once(head[c].chars().count()))
            .max()
            .unwrap_or(0)
    };
    let (w0, w1, w2, w3) = (width(0), width(1), width(2), width(3));
    let line = format!(
        "  {:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}",
        head[0], head[1], head[2], head[3]
    );
    s.push_str(line.trim_end());
    s.push('\n');
    for c in &cells {
        let line = format!(
            "  {:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}",
            c[0], c[1], c[2], c[3]
        );
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s.push_str(&format!("  spent: {}\n", spent_line(g)));
    let verdict = terminal_line(&verdict_line(check), 0);
    let verdict = match (color, outcome(check)) {
        (false, _) => verdict,
        (true, Outcome::Held) => format!("\x1b[1;32m{verdict}\x1b[0m"),
        (true, Outcome::NotHeld) => format!("\x1b[1;31m{verdict}\x1b[0m"),
        (true, Outcome::Untested) => format!("\x1b[1;33m{verdict}\x1b[0m"),
    };
    s.push_str(&format!("  {verdict}\n"));
    s
}
